"""Hermes Agent's own plugin-surface tests, ported to run against hermes-core.

Each module names, in its header, the upstream file and the commit it was read at
(repository NousResearch/hermes-agent). The tests import the Hermes names as a plugin does
(`from tools.registry import ...`), which hermes-core serves where no Hermes Agent is
installed; their assertions are upstream's, unedited. A test that needs a Hermes module
hermes-core does not serve, or reads a Hermes private that hermes-core has no reason to have,
is kept and skipped with the reason.

Ported: `tests/tools/test_registry.py`, `tests/agent/test_context_engine.py`, and the
`MemoryProvider` tests of `tests/agent/test_memory_provider.py`. Not ported:
`tests/hermes_cli/test_plugins.py` (commit 00ca5a5e951b973713633ec4ae186ebbf75a0a48): its
module imports Hermes' `PluginManager`, `get_plugin_commands`, `get_pre_tool_call_block_message`,
`hermes_cli.middleware`, ... and every test drives Hermes' own plugin manager and reads its
privates (`mgr._plugins`, `mgr._discovered`): none of them needs only names hermes-core serves.
hermes-core's own tests of the same behaviours are in tests/core and tests/hermes.
"""
