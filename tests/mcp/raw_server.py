"""An MCP server that is not the SDK: newline-delimited JSON-RPC over stdio, written by hand to
send what the SDK's own server would refuse to (a tool whose inputSchema is not an object, beside
two good tools, and a tool whose text holds an escaped lone surrogate, which JSON allows; with
`--collide`, also tools `a.b` and `a_b`, whose names are one once made Hermes'). The tests use it as a broken server in the wild; hermes-core's side is the SDK."""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "echo", "description": "Say the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "broken", "description": "A wrong schema.", "inputSchema": ["not", "an object"]},
    {"name": "add", "description": "Add.", "inputSchema": {"type": "object"}},
    {"name": "half", "description": "Half a surrogate pair.", "inputSchema": {"type": "object"}},
]
COLLIDING = [{"name": name, "description": f"Tool {name}.", "inputSchema": {"type": "object"}} for name in ("a.b", "a_b")]


def answer(request: dict) -> dict | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:  # a notification
        return None
    if method == "initialize":
        result = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS + (COLLIDING if "--collide" in sys.argv else [])}
    elif method == "tools/call":
        text = f"echo: {request['params'].get('arguments', {}).get('text', '')}"
        if request["params"].get("name") in ("a.b", "a_b"):
            text = f"this is {request['params']['name']}"
        if request["params"].get("name") == "half":
            text = "half \ud800 pair"  # sent as "\\ud800": json.dumps escapes it
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
