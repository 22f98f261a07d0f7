"""The `hermes` command line: a thin layer over the library API (`hermes_core.PluginManager`).

`main` runs the click command line and `cli` is its click group; both are imported on first
use, so that the console script (`_start`) can answer `hermes plugins list` and `hermes --help`
without importing click. The modules, by what they serve:

- start-up, before click: `_start` (the console script), `_listing` (`plugins list` as rows and
  text, its options declared once), `_command_cache` (the plugins' commands and the help click
  rendered, remembered), `_tables` (tables that fit the terminal, and JSON, as plain strings);
- the click command line: `_main` (the group, errors, plugin commands), `_common` (what the
  commands share), `_plugins` (`hermes plugins ...`), `_pip` (install and remove), `_scaffold`
  (`plugins new`), `_tools` (`tools`, `command`), `_paths`, `_argparse` (a plugin's argparse
  command as `hermes <name>`), `_stdout` (plugin output goes to stderr);
- the reference host: `_agent` (`run`, `chat`, `sessions`), `_prompt` (the chat prompt).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._main import cli, main

__all__ = ["cli", "main"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'hermes_core.cli' has no attribute {name!r}")
    from . import _main

    value = getattr(_main, name)
    globals()[name] = value
    return value
