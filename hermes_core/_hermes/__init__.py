"""What hermes-core serves under Hermes' module names that has no home of its own elsewhere.

One module per Hermes module (`constants` is `hermes_constants`, `tool_registry` is
`tools.registry`, ...); `hermes_core._hermes.names.SERVED` says which names each served module
takes from where. Nothing here is imported until a plugin imports the Hermes name.
"""
