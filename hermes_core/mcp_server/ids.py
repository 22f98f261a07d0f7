"""Request ids the MCP SDK does not take, answered in words: the SDK reads a request whose id is
neither a string nor an integer (`1.5`, `1.0`, `true`, `null`, which JSON-RPC allows or tolerates)
as a notification and never answers it (over HTTP a 202, a 400 without a session). `hermes mcp serve`
answers such a request itself, before the SDK sees it, with JSON-RPC error -32600 naming the id's
type, its id echoed as sent."""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["refusal"]

# An "id" key whose value is no string and no plain integer: worth parsing the message to see.
_SUSPECT = re.compile(rb'"id"\s*:\s*(?!"|-?\d+\s*[,}])')


def refusal(body: bytes) -> dict[str, Any] | None:
    """The -32600 answer to the request `body` holds when its id is one the SDK does not take;
    None for anything else (the SDK's to answer)."""
    if not _SUSPECT.search(body):
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str) or "id" not in message:
        return None
    ident = message["id"]
    if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
        return None
    echoed = ident if isinstance(ident, (bool, type(None))) or (isinstance(ident, float) and math.isfinite(ident)) else None
    return {"jsonrpc": "2.0", "id": echoed, "error": {"code": -32600, "message": (
        f"Invalid Request: the request id {_shown(ident)} is {_kind(ident)}; hermes mcp serve takes a string or an "
        f"integer as a request id: send the request again with one (1 or \"1.5\")")}}


def _kind(ident: Any) -> str:
    if isinstance(ident, bool):
        return "a boolean"
    if ident is None:
        return "null"
    if isinstance(ident, float):
        return "a number with a fraction or exponent" if math.isfinite(ident) else "no finite number"
    return "an array" if isinstance(ident, list) else "an object"


def _shown(ident: Any) -> str:
    text = json.dumps(ident)
    return text if len(text) <= 40 else text[:37] + "..."
