"""The audit trail of `ctx.llm`: one INFO line per call in `$HERMES_HOME/logs/agent.log`.

    2026-11-22T10:04:05.123Z INFO plugin_llm plugin=tldr provider=openrouter model=x/y purpose=tldr
        tokens_in=812 tokens_out=95 latency_ms=1432.5 attempts=1 outcome=ok

(one line in the file). Values with spaces or quotes are JSON-quoted, so a plugin's
`purpose` cannot forge a line. The same record goes to the `hermes.plugin_llm` logger for
hosts that collect logs their own way.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
import weakref
from pathlib import Path
from typing import Any

__all__ = ["AuditLog"]

log = logging.getLogger("hermes.plugin_llm")


_PLAIN = re.compile(r"[\w.,:;/@+*#%&()\[\]{}<>!?'-]+\Z")


@functools.lru_cache(maxsize=4)
def _second(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _value(value: Any) -> str:
    if value is None or value == "":
        return "-"
    text = str(value)
    return text if _PLAIN.match(text) else json.dumps(text, ensure_ascii=False)


class AuditLog:
    """Appends audit lines to `<home>/logs/agent.log`; never raises (a full disk is a warning)."""

    __slots__ = ("__weakref__", "_fd", "_lock", "_warned", "path")

    def __init__(self, home: Path) -> None:
        self.path = home / "logs" / "agent.log"
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._warned = False

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One unbuffered O_APPEND write per line: lines from several processes never interleave.
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def write(self, plugin: str, call: str, provider: str | None, model: str | None, purpose: str | None,
              tokens_in: int, tokens_out: int, cost_usd: float | None, latency_ms: float, attempts: int,
              outcome: str, mode: str | None = None) -> None:
        """Append one line; free-text values are quoted when they need it. `mode` is how a
        structured call asked for JSON (`json_schema`, `json_object`, `prompt`)."""
        now = time.time()
        cost = "-" if cost_usd is None else f"{cost_usd:.6f}"
        body = (f"plugin={_value(plugin)} call={call} provider={_value(provider)} model={_value(model)} "
                f"purpose={_value(purpose)} tokens_in={tokens_in} tokens_out={tokens_out} cost_usd={cost} "
                f"latency_ms={latency_ms:.1f} {f'format={mode} ' if mode else ''}attempts={attempts} "
                f"outcome={_value(outcome)}")
        stamp = f"{_second(int(now))}.{int(now % 1 * 1000):03d}Z"
        if log.isEnabledFor(logging.INFO):
            log.info("plugin_llm %s", body)
        try:
            with self._lock:
                os.write(self._open(), f"{stamp} INFO plugin_llm {body}\n".encode())
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("cannot write the LLM audit log %s: %s", self.path, os.strerror(exc.errno or 0))
