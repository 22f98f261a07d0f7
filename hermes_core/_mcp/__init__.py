"""MCP servers in the host: the servers of `mcp_servers:` in config.yaml, their tools in the
host's registry (`config`, `connection`, `servers`; `host`: wired to a manager), `ctx.call_mcp`, and OAuth for remote servers
(`oauth`: the stored login and the SDK's provider; `login`: `hermes mcp login`). Only these modules (and
the public `hermes_core.mcp_server`, which serves the host's tools to MCP clients) import the
optional SDK (`hermes-core[mcp]`), and only when a server is configured (`sdk`)."""
