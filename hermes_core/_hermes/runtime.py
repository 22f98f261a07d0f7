"""The names of Hermes' `plugin_runtime` a plugin imports beside `PluginContext`: the middleware
kinds and schema tags of `plugin_runtime.dispatch`, the warning category of
`plugin_runtime.compat_warning`, and `PluginToolOverrideError`.

hermes-core's own hosts run no middleware (`ctx.register_middleware` needs a host that serves
"middleware"), so `has_middleware` is False and `invoke_middleware` answers nothing, as Hermes'
do when no plugin registered any.
"""

from __future__ import annotations

from typing import Any

from .._errors import ToolOverrideError

__all__ = ["HERMES_EVENT_NAMESPACE", "HermesPluginCompatWarning", "LLM_EXECUTION_MIDDLEWARE", "LLM_REQUEST_MIDDLEWARE",
           "OBSERVER_SCHEMA_VERSION", "PluginToolOverrideError", "SHELL_UNSUPPORTED_HOOKS", "TOOL_EXECUTION_MIDDLEWARE",
           "TOOL_REQUEST_MIDDLEWARE", "VALID_MIDDLEWARE", "has_middleware", "invoke_middleware"]

OBSERVER_SCHEMA_VERSION = "hermes.observer.v1"
HERMES_EVENT_NAMESPACE = "hermes"
TOOL_REQUEST_MIDDLEWARE = "tool_request"
TOOL_EXECUTION_MIDDLEWARE = "tool_execution"
LLM_REQUEST_MIDDLEWARE = "llm_request"
LLM_EXECUTION_MIDDLEWARE = "llm_execution"
VALID_MIDDLEWARE = frozenset({TOOL_REQUEST_MIDDLEWARE, TOOL_EXECUTION_MIDDLEWARE, LLM_REQUEST_MIDDLEWARE,
                              LLM_EXECUTION_MIDDLEWARE})
# Hooks a shell-command hook cannot serve (Hermes' `hooks:` config): they must return a Python object.
SHELL_UNSUPPORTED_HOOKS = frozenset({"transform_api_error_classification"})

# `register_tool(..., override=True)` without the grant: hermes-core's error, under Hermes' name
# (a `PermissionError`, so `except PermissionError` catches it too).
PluginToolOverrideError = ToolOverrideError


class HermesPluginCompatWarning(FutureWarning):
    """A plugin imported a name from its pre-September-2026 module path (Hermes' category, so that
    `-W error::plugin_runtime.compat_warning.HermesPluginCompatWarning` works; hermes-core serves
    both paths and never issues it)."""


def has_middleware(kind: str) -> bool:
    """Whether any middleware of `kind` runs: never, in hermes-core's hosts."""
    return False


def invoke_middleware(kind: str, **kwargs: Any) -> list[Any]:
    """The results of the middleware of `kind`: none run here."""
    return []
