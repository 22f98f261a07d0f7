"""The audit trail of `ctx.llm`: one INFO line per call in `$HERMES_HOME/logs/agent.log`.

    2026-11-22T10:04:05.123Z INFO plugin_llm plugin=tldr provider=openrouter model=x/y purpose=tldr
        tokens_in=812 tokens_out=95 latency_ms=1432.5 outcome=ok

(one line in the file). Values with spaces or quotes are JSON-quoted, so a plugin's
`purpose` cannot forge a line. The same record goes to the `hermes.plugin_llm` logger for
hosts that collect logs their own way.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any

__all__ = ["AuditLog"]

log = logging.getLogger("hermes.plugin_llm")


def _value(value: Any) -> str:
    text = "-" if value is None or value == "" else str(value)
    if any(c.isspace() or c in '"=\\' for c in text) or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


class AuditLog:
    """Appends audit lines to `<home>/logs/agent.log`; never raises (a full disk is a warning)."""

    __slots__ = ("path", "_file", "_lock", "_warned", "__weakref__")

    def __init__(self, home: Path) -> None:
        self.path = home / "logs" / "agent.log"
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        self._warned = False

    def _open(self) -> IO[str]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the finalizer
            weakref.finalize(self, self._file.close)
        return self._file

    def write(self, **fields: Any) -> None:
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
        body = " ".join(f"{key}={_value(value)}" for key, value in fields.items())
        if log.isEnabledFor(logging.INFO):
            log.info("plugin_llm %s", body)
        try:
            with self._lock:
                handle = self._open()
                handle.write(f"{stamp} INFO plugin_llm {body}\n")
                handle.flush()
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("cannot write the LLM audit log %s: %s", self.path, os.strerror(exc.errno or 0))
