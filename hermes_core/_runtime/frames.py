"""Messages between the host and an isolated plugin's child process: JSON objects over a socket,
each framed by its length (4 bytes, big-endian), so a plugin printing to stdout never mixes in."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

from .._messages import storable_json

__all__ = ["FrameError", "receive", "send"]

_LENGTH = struct.Struct(">I")


class FrameError(Exception):
    """The other side is gone (EOF) or sent something that is no message."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send `message` (text with a lone surrogate escaped, read back the same); `TypeError` naming
    what cannot cross when it is not JSON."""
    data = storable_json(message, separators=(",", ":")).encode("utf-8")
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise FrameError("the other side closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> dict[str, Any]:
    """The next message; `FrameError` at EOF or for a frame that is no JSON object."""
    (size,) = _LENGTH.unpack(_exactly(sock, _LENGTH.size))
    try:
        message = json.loads(_exactly(sock, size))
    except ValueError as exc:
        raise FrameError(f"not a message: {exc}") from None
    if not isinstance(message, dict):
        raise FrameError("not a message: a JSON object is expected")
    return message
