"""A tool's result as MCP content: text, or, for Hermes' multimodal result, its parts as the
content types MCP has (text, image, audio, resource link, embedded resource)."""

from __future__ import annotations

from typing import Any

from hermes_core import data_url, multimodal_parts, storable_text

__all__ = ["mcp_content"]


def mcp_content(result: str) -> list[Any]:
    """The content blocks of a `tools/call` result for `result` (a lone surrogate the SDK cannot
    encode becomes U+FFFD)."""
    import mcp.types as types

    parts = multimodal_parts(result)
    if parts is None:
        return [types.TextContent(type="text", text=storable_text(result))]
    return [block for block in (_block(part, types) for part in parts) if block is not None]


def _block(part: dict[str, Any], types: Any) -> Any:
    kind = part["type"]
    if kind == "text":
        return types.TextContent(type="text", text=storable_text(str(part.get("text", ""))))
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url", "") if isinstance(image, dict) else image or "")
        inline = data_url(url)
        if inline is not None:
            return types.ImageContent(type="image", data=inline[1], mime_type=inline[0])
        return types.ResourceLink(type="resource_link", name=url.rsplit("/", 1)[-1] or "image", uri=url) if url else None
    if kind == "input_audio":
        audio: dict[str, Any] = part["input_audio"] if isinstance(part.get("input_audio"), dict) else {}
        return types.AudioContent(type="audio", data=str(audio.get("data", "")),
                                  mime_type=f"audio/{audio.get('format') or 'wav'}")
    if kind == "resource_link" and part.get("uri"):
        return types.ResourceLink(type="resource_link", uri=str(part["uri"]), name=str(part.get("name") or part["uri"]),
                                  title=part.get("title"), mime_type=part.get("mimeType"),
                                  description=part.get("description"))
    if kind == "resource" and isinstance(part.get("resource"), dict) and part["resource"].get("uri"):
        resource = part["resource"]
        if isinstance(resource.get("text"), str):
            contents: Any = types.TextResourceContents(uri=resource["uri"], mime_type=resource.get("mimeType"),
                                                       text=storable_text(resource["text"]))
        else:
            contents = types.BlobResourceContents(uri=resource["uri"], mime_type=resource.get("mimeType"),
                                                  blob=str(resource.get("blob", "")))
        return types.EmbeddedResource(type="resource", resource=contents)
    return types.TextContent(type="text", text=f"[{kind} not sent over MCP]")
