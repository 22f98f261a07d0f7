"""Hermes' multimodal tool result: what a tool returns when its answer has images or audio.

A handler returns the envelope as a dict (hermes-core passes it on as its JSON text, which the
hooks see like any result):

    {"_multimodal": True,
     "content": [{"type": "text", "text": "The chart:"},
                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}},
                 {"type": "input_audio", "input_audio": {"data": "<base64>", "format": "wav"}}],
     "text_summary": "A bar chart of sales by month."}      # optional: what a text-only reader gets

Parts are OpenAI's content parts: `text`, `image_url` (a `data:` URL or an http(s) one) and
`input_audio`; also `resource_link` (`uri`, `name`, `title`, `mimeType`, `description`) and
`resource` (`resource`: `uri` and `text` or `blob`), as MCP has them. A model that takes images
gets the image parts; every other reader gets `result_text(result)`: its `text_summary`, else the
text parts and a line naming each other part (`[image: image/png]`, `[resource_link: Title <uri>]`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["data_url", "multimodal_parts", "part_placeholder", "result_text", "tool_message_content"]

def _envelope(result: Any) -> dict[str, Any] | None:
    """The multimodal envelope `result` is (or whose JSON text it is), else None."""
    if isinstance(result, str):
        if '"_multimodal": true' not in result or not result.startswith("{"):
            return None
        try:
            result = json.loads(result)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser: a plain result
            return None
    if not (isinstance(result, dict) and result.get("_multimodal") is True and isinstance(result.get("content"), list)):
        return None
    return result


def _parts(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for part in envelope["content"] if isinstance(part, dict) and isinstance(part.get("type"), str)]


def multimodal_parts(result: Any) -> list[dict[str, Any]] | None:
    """The content parts of a multimodal tool result (the envelope, or its JSON text), else None."""
    envelope = _envelope(result)
    return None if envelope is None else _parts(envelope)


def data_url(url: str) -> tuple[str, str] | None:
    """A `data:<mime>;base64,<data>` URL as (mime type, base64 data), else None."""
    head, comma, data = url.partition(",")
    if not (comma and head.startswith("data:") and head.endswith(";base64")):
        return None
    return head[5:-7] or "application/octet-stream", data


def part_placeholder(part: dict[str, Any]) -> str:
    """One line naming a part that is not text, for a reader that takes only text."""
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url", "") if isinstance(image, dict) else image or "")
        found = data_url(url)
        return f"[image: {found[0] if found else url}]"
    if kind == "input_audio":
        audio: dict[str, Any] = part["input_audio"] if isinstance(part.get("input_audio"), dict) else {}
        return f"[audio: {audio.get('format') or 'audio'}]"
    if kind == "resource_link":
        title = part.get("title") or part.get("name") or ""
        mime = f" ({part['mimeType']})" if part.get("mimeType") else ""
        return f"[resource_link: {title + ' ' if title else ''}<{part.get('uri', '')}>{mime}]"
    if kind == "resource":
        resource: dict[str, Any] = part["resource"] if isinstance(part.get("resource"), dict) else {}
        if isinstance(resource.get("text"), str):
            return f"<resource uri=\"{resource.get('uri', '')}\">\n{resource['text']}\n</resource>"
        return f"[resource: <{resource.get('uri', '')}> ({resource.get('mimeType') or 'binary'})]"
    return f"[{kind}]"


def result_text(result: Any) -> str:
    """A tool result as text: itself, or a multimodal result's `text_summary`, else its text
    parts with a line naming each other part."""
    envelope = _envelope(result)
    if envelope is None:
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    summary = envelope.get("text_summary")
    if isinstance(summary, str) and summary.strip():
        return summary
    return "\n".join(str(part.get("text", "")) if part["type"] == "text" else part_placeholder(part)
                     for part in _parts(envelope))


def tool_message_content(result: str, images: bool = True) -> str | list[dict[str, Any]]:
    """A tool result as the content of its `tool` message: its text (`result_text`), or, for a
    multimodal result and a model that takes `images`, its text and image parts (each other part
    named in a text part)."""
    parts = multimodal_parts(result) if images else None
    if parts is None:
        return result_text(result)
    return [part if part["type"] in ("text", "image_url") else {"type": "text", "text": part_placeholder(part)}
            for part in parts]
