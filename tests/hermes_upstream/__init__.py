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

Re-checked 2026-11-29 against the newest stored versions: `tests/agent/test_context_engine.py` at
71b19d9c has ABC, default and stub-engine tests the ported version lacks (`test_context_engine_abc.py`);
`tests/tools/test_registry.py` at 6a35ac5e has one (a raising `check_fn`, appended to
`test_registry.py`); `tests/agent/test_memory_provider.py` at f88671f5 has nothing the port
(015e865f) lacks for `MemoryProvider`. `tests/plugins/` upstream tests Hermes' bundled plugins and
its host modules (`plugins/memory/test_contract.py` drives `plugins.memory.contract`, Hermes'
desktop forms and OAuth runners; `config_backends/`, `dashboard_auth/` likewise): nothing there
runs on names a plugin imports, so none is ported.
"""
