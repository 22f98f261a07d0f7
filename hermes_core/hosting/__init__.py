"""For host authors: what every host of hermes-core shares, written once.

The reference hosts (`hermes_core.agent`, `gateway`, `batch`, `mcp_server`) are built on
hermes-core's public names and on this package; a host of your own can be too.

- files: `write_json` and `write_text` (a file replaced whole), `json_lines` and `read_json` (read
  whatever is in them: invalid UTF-8, a BOM, deep nesting are a `BadLine` or one `ValueError`), `locked` (one writer of a file at a time,
  across processes), `only_one` (one process per job: a gateway per home, a batch run per folder;
  `AlreadyRunningError` otherwise); `loads_sent` (the JSON a client sent, a lone surrogate in it
  read as U+FFFD: every host's door for request bodies and lines);
- serving: `is_loopback`, `secret_matches` (a shared secret or bearer token, in constant time),
  `bearer_token`, `RequireBearer` (ASGI), `serve_asgi` (an ASGI app on uvicorn, on loopback unless
  a token guards it, until a signal; `BoundedRequests`: request bodies bounded in size and time),
  `until_signal` (SIGINT/SIGTERM: stop, then stop now);
- browsers kept out: `BrowserPolicy` (`hosting.allowed_hosts`, `hosting.allowed_origins`),
  `GuardBrowsers` (ASGI: a rebound Host, another site's Origin, a body that is not JSON refused),
  `Refusal` (what `BrowserPolicy.refusal` says, for a server that is not ASGI);
- a turn from a coroutine: `await in_thread(fn, *args)` (a daemon thread, this context copied);
- a handler that stops itself at its own time limit: `keeping_own_limit(fn)` (the tool driver waits
  for it instead of abandoning it at `tools.timeout`);
- retry: `Backoff` (doubling delays up to a cap, `reset()` after a success); processes: `kill_group`
  (a child started with `start_new_session=True`, with everything it started);
- asking a human: `approver_scope(approver)`, `current_approver()` (a turn's tool calls that a `pre_tool_call` hook puts
  to a human are asked of `approver(ApprovalRequest)`, which returns "once", "session", "always"
  or a refusal);
- stopping a turn: `Cancel` (set from any thread; the turn run under `cancel_scope(cancel)` breaks
  off its model request at once and raises `Cancelled`, a `KeyboardInterrupt`, at its next step:
  `cancel_check()`);
- a turn's folder: `workspace_scope(Workspace(root))` (file tools, through `ctx.workspace`, read
  and write inside `root`; a host subclasses `Workspace` to read and write elsewhere, as
  `hermes acp` does through the editor), `current_workspace()`, `WorkspaceError`;
- a running tool's progress (`ctx.report_progress`): `progress_scope(listener)` (calls run inside
  report to `listener(progress, total, message)`), `report_progress`;
- tools: `ToolSelection` (which tools a host offers, by name, toolset or plugin);
- traces (docs/observability.md; no-ops while export is off): `turn_span` (a turn's `invoke_agent`
  span), `served_span` (a request's, continuing the caller's `traceparent`), `new_trace` (a cron
  run's or a batch item's own trace, linked to the batch's), `trace_headers()` (the context, for a
  request onwards), `flush_traces()` (export what is queued: a process about to be killed), `TraceRequests` (ASGI: a span per HTTP request; `serve_asgi` adds it);
- shared state (docs/fleet.md): `state_url(home)` (the `postgresql://` database `state.url` or
  `HERMES_STATE_URL` names, or None: SQLite under the home), `StateUrl` (its password masked),
  `Store` (a stage's tables, in SQLite or that database, written once; `pg_schema_of` its
  schema in PostgreSQL's types), `Hosts` and `Heartbeat`
  (the hosts sharing a home or database, alive while they beat), `host_id`,
  `close_state_pools(where, timeout=)` (close this process's pools on the databases `where`
  picks: before one is dropped, say).

Every name is imported on first use: `import hermes_core.hosting` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._runtime.approvals import ApprovalRequest, approver_scope, current_approver
    from .._runtime.backoff import Backoff
    from .._runtime.cancel import Cancel, Cancelled, cancel_check, cancel_scope
    from .._runtime.invoke import keeping_own_limit
    from .._runtime.progress import ProgressListener, progress_scope, report_progress
    from .._runtime.workers import in_thread
    from .._runtime.workspace import Workspace, WorkspaceError, current_workspace, workspace_scope
    from .._runtime.processes import kill_group
    from .browsers import BrowserPolicy, GuardBrowsers, Refusal
    from .files import BadLine, Held, json_lines, loads_sent, locked, only_one, read_json, write_json, write_text
    from .._net import is_loopback
    from .serving import BoundedRequests, RequireBearer, bearer_token, listening_socket, secret_matches, serve_asgi
    from .signals import STOP_SIGNALS, until_signal
    from .tools import ToolSelection
    from .telemetry import TraceRequests, flush_traces, new_trace, served_span, trace_headers, turn_span
    from .._store import Heartbeat, Hosts, StateUrl, Store, close_state_pools, host_id, pg_schema_of, state_url

_EXPORTS = {
    **dict.fromkeys(["BadLine", "Held", "json_lines", "loads_sent", "locked", "only_one", "read_json", "write_json",
                     "write_text"], "hermes_core.hosting.files"),
    **dict.fromkeys(["BoundedRequests", "RequireBearer", "bearer_token", "listening_socket", "secret_matches",
                     "serve_asgi"], "hermes_core.hosting.serving"),
    "is_loopback": "hermes_core._net",
    **dict.fromkeys(["BrowserPolicy", "GuardBrowsers", "Refusal"], "hermes_core.hosting.browsers"),
    **dict.fromkeys(["STOP_SIGNALS", "until_signal"], "hermes_core.hosting.signals"),
    "Backoff": "hermes_core._runtime.backoff", "kill_group": "hermes_core._runtime.processes",
    "keeping_own_limit": "hermes_core._runtime.invoke", "in_thread": "hermes_core._runtime.workers",
    **dict.fromkeys(["ApprovalRequest", "approver_scope", "current_approver"], "hermes_core._runtime.approvals"),
    **dict.fromkeys(["Cancel", "Cancelled", "cancel_check", "cancel_scope"], "hermes_core._runtime.cancel"),
    **dict.fromkeys(["Workspace", "WorkspaceError", "current_workspace", "workspace_scope"],
                    "hermes_core._runtime.workspace"),
    **dict.fromkeys(["ProgressListener", "progress_scope", "report_progress"], "hermes_core._runtime.progress"),
    "ToolSelection": "hermes_core.hosting.tools",
    **dict.fromkeys(["TraceRequests", "flush_traces", "new_trace", "served_span", "trace_headers", "turn_span"],
                    "hermes_core.hosting.telemetry"),
    **dict.fromkeys(["Heartbeat", "Hosts", "StateUrl", "Store", "close_state_pools", "host_id", "pg_schema_of",
                     "state_url"], "hermes_core._store"),
}

__all__ = ["ApprovalRequest", "Backoff", "BadLine", "BoundedRequests", "BrowserPolicy", "Cancel", "Cancelled",
           "GuardBrowsers", "Heartbeat", "Held", "Hosts", "ProgressListener", "Refusal", "RequireBearer", "STOP_SIGNALS",
           "StateUrl", "Store", "ToolSelection", "Workspace", "WorkspaceError",
           "approver_scope", "bearer_token", "cancel_check", "close_state_pools", "cancel_scope", "current_approver", "current_workspace",
           "host_id", "in_thread", "is_loopback", "json_lines", "keeping_own_limit", "kill_group", "listening_socket",
           "loads_sent", "locked",
           "only_one", "pg_schema_of", "progress_scope", "read_json", "report_progress", "secret_matches", "serve_asgi",
           "state_url", "until_signal", "workspace_scope", "write_json", "write_text",
           "TraceRequests", "flush_traces", "new_trace", "served_span", "trace_headers", "turn_span"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core.hosting' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
