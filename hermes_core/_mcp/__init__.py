"""MCP both ways: the host's tools served to MCP clients (`serve`), and MCP servers' tools in the host
(`config`, `connection`, `servers`). Only these modules import the optional SDK (`hermes-core[mcp]`),
and only when a server is configured or `hermes mcp serve` runs (`sdk`)."""
