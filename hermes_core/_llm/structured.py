"""Structured output: checking what a plugin sends, shaping the request, reading the reply.

Everything a plugin can get wrong is a `PluginLlmInputError` (a `ValueError`) raised before
any request. The reply is JSON when it parses, either whole or as its first fenced code
block; JSON that fails the plugin's schema is a `PluginLlmSchemaError` naming the path.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._errors import PluginLlmInputError, PluginLlmSchemaError
from .._messages import Messages

if TYPE_CHECKING:
    from .routes import Route

__all__ = [
    "MODES", "Structured", "build_messages", "check_messages", "check_schema", "has_images", "parse_reply",
    "refuses_format", "response_format",
]

_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
_validators: dict[str, Any] = {}


def check_messages(messages: Any) -> Messages:
    """`messages` as a list of OpenAI chat messages, or `PluginLlmInputError` saying what is wrong."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise PluginLlmInputError(
            'messages must be a non-empty list of {"role": ..., "content": ...} dicts, '
            f"not {type(messages).__name__}"
        )
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
            raise PluginLlmInputError(
                f"messages[{index}] must be a dict whose role is one of {', '.join(sorted(_ROLES))}, not {message!r:.80}"
            )
    return list(messages)


def has_images(messages: Messages) -> bool:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, Mapping) and p.get("type") == "image_url" for p in content):
            return True
    return False


def _as_dict(block: Any) -> Any:
    """A `PluginLlmTextInput` / `PluginLlmImageInput` as the dict block it stands for."""
    from .results import PluginLlmImageInput, PluginLlmTextInput

    if isinstance(block, PluginLlmTextInput):
        return {"type": "text", "text": block.text}
    if isinstance(block, PluginLlmImageInput):
        found = {"url": block.url} if block.url else {"data": block.data} if block.data is not None else {}
        return {"type": "image", "mime_type": block.mime_type, **found}
    return block


def _part(index: int, block: Any) -> dict[str, Any]:
    where = f"input[{index}]"
    block = _as_dict(block)
    if not isinstance(block, Mapping):
        raise PluginLlmInputError(
            f"{where} must be a dict with a 'type' ('text' or 'image'), a PluginLlmTextInput or a PluginLlmImageInput, "
            f"not {block!r:.80}"
        )
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise PluginLlmInputError(f"{where} is a text block, so it needs 'text' (a string)")
        return {"type": "text", "text": text}
    if kind == "image":
        if "url" in block:
            url = block["url"]
            if not isinstance(url, str) or not url.strip():
                raise PluginLlmInputError(f"{where} is an image block whose 'url' must be a non-empty string")
            return {"type": "image_url", "image_url": {"url": url}}
        data, mime = block.get("data"), block.get("mime_type")
        if not isinstance(data, (bytes, bytearray)) or not data:
            raise PluginLlmInputError(f"{where} is an image block, so it needs 'data' (bytes) and 'mime_type', or 'url'")
        if not isinstance(mime, str) or not mime.startswith("image/"):
            raise PluginLlmInputError(f"{where} needs 'mime_type' such as 'image/png', not {mime!r}")
        encoded = base64.b64encode(bytes(data)).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}}
    raise PluginLlmInputError(f"{where} has type {kind!r}; a block's type is 'text' or 'image'")


def build_messages(instructions: Any, input: Any, system_prompt: str | None) -> Messages:
    """The chat messages of a structured call: the system prompt, then the instructions and
    the input blocks as one user message (plain text when there is no image)."""
    if not isinstance(instructions, str) or not instructions.strip():
        raise PluginLlmInputError("instructions must be a non-empty string saying what to extract")
    if isinstance(input, (str, bytes)) or not isinstance(input, Sequence) or not input:
        raise PluginLlmInputError(
            'input must be a non-empty list of blocks, such as [{"type": "text", "text": notes}]'
        )
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise PluginLlmInputError(f"system_prompt must be a string, not {type(system_prompt).__name__}")
    parts = [{"type": "text", "text": instructions}] + [_part(i, block) for i, block in enumerate(input)]
    content: Any = parts
    if all(part["type"] == "text" for part in parts):
        content = "\n\n".join(part["text"] for part in parts)
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": content}]


def _key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, default=repr)


def check_schema(schema: Any) -> Any:
    """A validator for `schema`, or `PluginLlmInputError` when it is not a valid JSON Schema."""
    key = _key(schema) if isinstance(schema, Mapping) else ""
    validator = _validators.get(key)
    if validator is not None:
        return validator
    import jsonschema

    if not isinstance(schema, Mapping):
        raise PluginLlmInputError(f"json_schema must be a dict (a JSON Schema), not {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the top level"
        raise PluginLlmInputError(f"json_schema is not a valid JSON Schema at {where}: {exc.message}") from None
    if len(_validators) >= 256:  # a plugin that builds schemas per call must not grow this forever
        _validators.clear()
    validator = _validators[key] = cls(schema)
    return validator


def response_format(schema: Mapping[str, Any] | None, json_mode: bool, schema_name: str | None) -> dict[str, Any] | None:
    if schema is not None:
        name = re.sub(r"[^A-Za-z0-9_-]", "_", schema_name or "response")[:64] or "response"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
    return {"type": "json_object"} if json_mode else None


# The steps down from structured output, for servers that refuse a `response_format` type.
MODES = ("json_schema", "json_object", "prompt")
_REFUSAL = re.compile(r"response[_ ]format|json_schema|json_object|structured output", re.IGNORECASE)
_stepped: dict[tuple[str, str, str], int] = {}  # (provider, model, base_url) -> the step it takes, for the process


def refuses_format(exc: BaseException) -> bool:
    """Whether `exc` is a server refusing the request's `response_format` (by what it says, with
    whatever status: llama.cpp's server answers 500, others 400 or 422), not an outage."""
    import openai

    from .transport import error_message

    if not isinstance(exc, openai.APIStatusError) or exc.status_code in (401, 403, 408, 429):
        return False
    return bool(_REFUSAL.search(error_message(exc)))


@attrs.frozen
class Structured:
    """A structured call's wish (a schema, or JSON mode) and how to ask each route for it:
    `json_schema`; else `json_object` with the schema in the instructions (and as `schema`,
    which llama.cpp's servers enforce); else a plain request with the schema in the
    instructions. A route's refusal steps down for that provider and model, for the process."""

    schema: Mapping[str, Any] | None  # None: JSON mode (any JSON), starting at json_object
    schema_name: str | None

    @staticmethod
    def _key(route: Route) -> tuple[str, str, str]:
        return (route.provider, route.model, route.base_url)

    def mode(self, route: Route) -> str:
        first = 0 if self.schema is not None else 1
        return MODES[max(first, _stepped.get(self._key(route), 0))]

    def step_down(self, route: Route, mode: str) -> str | None:
        """Remember that `route` refused `mode`; the next mode to try, or None when none is left."""
        index = MODES.index(mode) + 1
        if index >= len(MODES):
            return None
        key = self._key(route)
        _stepped[key] = max(_stepped.get(key, 0), index)
        return MODES[index]

    def response_format(self, mode: str) -> dict[str, Any] | None:
        if mode == "json_schema":
            return response_format(self.schema, False, self.schema_name)
        if mode == "json_object":
            return {"type": "json_object", **({"schema": dict(self.schema)} if self.schema is not None else {})}
        return None

    def messages(self, messages: Messages, mode: str) -> Messages:
        """`messages`, with the schema (or "JSON only") added to the system prompt below `json_schema`."""
        if mode == "json_schema":
            return messages
        if self.schema is not None:
            wish = ("Reply with only a JSON value, no prose, that matches this JSON Schema:\n"
                    + json.dumps(self.schema, sort_keys=True))
        else:
            wish = "Reply with only a JSON value, no prose."
        if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
            return [{**messages[0], "content": f"{messages[0]['content']}\n\n{wish}"}, *messages[1:]]
        return [{"role": "system", "content": wish}, *messages]


def _json(text: str) -> tuple[bool, Any]:
    """`text` parsed as JSON. Raw control characters inside strings are accepted (`strict=False`):
    some servers' JSON grammars let them through (llama.cpp's lets a literal newline into a string);
    nothing else is loosened, and the schema is checked as ever."""
    try:
        return True, json.loads(text, strict=False)
    except ValueError:
        return False, None


def parse_reply(text: str, validator: Any) -> tuple[Any, str]:
    """`(parsed, "json")` when `text` (or its first fenced block) is JSON, else `(None, "text")`.

    With a validator, JSON that does not match raises `PluginLlmSchemaError`.
    """
    ok, value = _json(text.strip())
    if not ok:
        fence = _FENCE.search(text)
        if fence is None:
            return None, "text"
        ok, value = _json(fence.group(2).strip())
        if not ok:
            return None, "text"
    if validator is not None:
        import jsonschema.exceptions

        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            raise PluginLlmSchemaError(
                f"the model's JSON does not match the schema at {error.json_path}: {error.message:.300}",
                path=error.json_path,
                text=text,
            )
    return value, "json"
