"""Plugins that need Hermes Agent itself, said in one line: "needs the Hermes Agent host (...)".

A plugin written for Hermes can reach past the plugin surface into the host: its gateway's
runner (`gateway.run`), its agent internals (`model_tools`, `hermes_state`, `tools.delegate_tool`,
Hermes' plugin manager `hermes_cli.plugins.get_plugin_manager`). hermes-core serves the Hermes names a plugin imports for a base class or a helper (`names.SERVED`); for
the rest there is nothing to serve, and the honest answer is one line naming what the plugin
needs, never a traceback. Two signals (a distribution's requirement on `hermes-agent` is none:
hermes-core is the plugin API it asks for; what the plugin imports decides):

- an import of a Hermes module that nothing answers (`ModuleNotFoundError` for a name in
  `HERMES_TOP_LEVEL`, or `cannot import name` from a served module): `needed_module(exc)`;
- before any import, a module-level import the plugin's source shows (`_discovery.source_scan`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .._errors import describe_memory_error

__all__ = ["HERMES_ENVIRONMENT", "HERMES_TOP_LEVEL", "HOST_DISTRIBUTION", "describe", "host_line", "needed_module",
           "needs_hermes", "undeclared_package"]

HOST_DISTRIBUTION = "hermes-agent"
# Hermes Agent's own top-level packages and modules (what its distribution installs): importing one
# of these where hermes-core serves nothing (`names.SERVED`) and no real module exists
# needs the Hermes Agent host itself.
HERMES_TOP_LEVEL = frozenset({
    "acp_adapter", "agent", "cron", "gateway", "hermes_cli", "hermes_wisdom", "honcho_integration", "plugins",
    "plugin_runtime", "pm", "providers", "tools", "tui_gateway",
    "batch_runner", "cli", "hermes_bootstrap", "hermes_constants", "hermes_logging", "hermes_state", "hermes_time",
    "hermes_yaml", "mcp_serve", "model_tools", "registration_lifecycle", "rl_cli", "run_agent", "toolset_distributions",
    "toolsets", "trajectory_compressor", "utils",
})
# What Hermes Agent installs with itself (its dependencies, and `yaml` through uvicorn[standard]),
# by import name: a plugin written for Hermes may import these without declaring them.
# hermes-core depends on PyYAML for that reason; for the rest the failure says what to install.
HERMES_ENVIRONMENT = {
    "yaml": "PyYAML", "requests": "requests", "rich": "rich", "jinja2": "jinja2", "dotenv": "python-dotenv",
    "tenacity": "tenacity", "fire": "fire", "croniter": "croniter", "markdown": "Markdown", "jwt": "PyJWT",
    "psutil": "psutil", "websockets": "websockets", "fastapi": "fastapi", "uvicorn": "uvicorn", "PIL": "Pillow",
    "prompt_toolkit": "prompt_toolkit", "tomli_w": "tomli-w", "truststore": "truststore", "pathspec": "pathspec",
    "snowballstemmer": "snowballstemmer", "multipart": "python-multipart",
}
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)'")


def host_line(what: str) -> str:
    """The one line: `needs the Hermes Agent host (imports gateway.run)`."""
    return f"needs the Hermes Agent host ({what})"


def needs_hermes(name: str) -> bool:
    """Whether importing module `name` needs Hermes Agent itself: a Hermes name hermes-core does
    not serve, where no real package of its top-level name can be found (nothing is imported)."""
    top = name.partition(".")[0]
    if top not in HERMES_TOP_LEVEL or _served(name):
        return False
    import importlib.util

    try:
        spec = importlib.util.find_spec(top)  # a top-level name: finding it imports nothing
    except (ImportError, ValueError):
        return True
    # hermes-core's own stand-in (`tools`, `hermes_cli`) and a stray namespace folder have no origin
    return spec is None or spec.origin is None


def _served(name: str) -> bool:
    from .names import SERVED  # not on the listing's path unless a plugin imports a Hermes name

    return name in SERVED


def _statement(exc: BaseException) -> str:
    """The source of the import statement `exc` was raised from (the last frame outside importlib)."""
    import importlib
    import linecache
    import os
    import traceback

    machinery = os.path.dirname(importlib.__file__)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen ") and os.path.dirname(f.filename) != machinery]
    if not frames:
        return ""
    frame = frames[-1]
    last = getattr(frame, "end_lineno", None) or frame.lineno or 0  # a statement over several lines
    return "".join(linecache.getline(frame.filename, n) for n in range(frame.lineno or 0, last + 1))


def _full_name(missing: str, exc: BaseException) -> str:
    """`gateway.run` for a missing `gateway` imported as `from gateway.run import X`."""
    names = [n for n in _DOTTED.findall(_statement(exc)) if n == missing or n.startswith(missing + ".")]
    return max(names, key=len, default=missing)


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 20:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def needed_module(exc: BaseException) -> str | None:
    """The Hermes module whose absence `exc` (or an exception it was raised from) reports, when
    hermes-core does not serve it: `gateway.run`, `tools.delegate_tool`, `hermes_cli.main`."""
    for error in _chain(exc):
        if not isinstance(error, ImportError) or not error.name:
            continue
        if isinstance(error, ModuleNotFoundError):
            name = _full_name(error.name, error)
        else:  # `from hermes_cli import setup`: a name a served module does not have
            match = _CANNOT_IMPORT.search(str(error))
            if match is None or not _served(error.name):
                continue
            name = f"{error.name}.{match.group(1)}"
        if name.partition(".")[0] in HERMES_TOP_LEVEL and not _served(name):
            return name
    return None


def undeclared_package(exc: BaseException) -> str | None:
    """When `exc` is an import of a package Hermes Agent installs with itself and this
    environment lacks (the plugin relied on the host's environment without declaring it), the
    line that says what to install."""
    for error in _chain(exc):
        if isinstance(error, ModuleNotFoundError) and error.name:
            module = error.name.partition(".")[0]
            if module in HERMES_ENVIRONMENT:
                package = HERMES_ENVIRONMENT[module]
                return (f"needs {package} (imports {module}), which Hermes Agent installs with itself and the "
                        f"plugin does not declare: pip install {package}")
    return None


def describe(exc: BaseException) -> str:
    """`exc` in a line for a failure message: what the Hermes host would have provided, else
    `Type: message`."""
    needed = needed_module(exc)
    if needed:
        return host_line(f"imports {needed}")
    return undeclared_package(exc) or describe_memory_error(exc) or f"{type(exc).__name__}: {exc}"
