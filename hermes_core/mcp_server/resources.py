"""What `hermes mcp serve --resources` offers to read: the host's stored sessions (each as its
transcript) and its skills (each `SKILL.md`), read only, with a URI template for each kind.

    hermes://sessions/{session_id}     text/markdown: the conversation, message by message
    hermes://skills/{name}             text/markdown: the skill's SKILL.md

A source is anything with `kind`, `template` (the URI template), `listed()` (the latest
entries: (key, title, description) tuples), `read(key)` (the text, or None when there is no
such entry) and `keys(prefix)` (for completions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol
from urllib.parse import quote, unquote

from hermes_core import message_text

__all__ = ["ResourceSource", "Resources", "SessionResources", "SkillResources"]

SCHEME = "hermes://"
LISTED = 50  # entries of each kind in resources/list
MIME = "text/markdown"


class ResourceSource(Protocol):
    kind: str
    description: str

    def listed(self) -> list[tuple[str, str, str]]: ...

    def read(self, key: str) -> str | None: ...

    def keys(self, prefix: str) -> list[str]: ...


class Resources:
    """The sources a server reads from, by their URIs."""

    def __init__(self, sources: Iterable[ResourceSource]) -> None:
        self.sources = {source.kind: source for source in sources}

    def uri(self, kind: str, key: str) -> str:
        return f"{SCHEME}{kind}/{quote(key, safe='')}"

    def template(self, kind: str) -> str:
        return f"{SCHEME}{kind}/{{{_PARAMETER[kind]}}}"

    def parse(self, uri: str) -> tuple[ResourceSource, str] | None:
        """The source and key a URI names, or None."""
        if not uri.startswith(SCHEME):
            return None
        kind, _, key = uri[len(SCHEME):].partition("/")
        source = self.sources.get(kind)
        return (source, unquote(key)) if source is not None and key else None

    def listing(self) -> list[Any]:
        import mcp.types as types

        return [types.Resource(uri=self.uri(source.kind, key), name=key, title=title or None,
                               description=description or None, mime_type=MIME)
                for source in self.sources.values() for key, title, description in source.listed()]

    def templates(self) -> list[Any]:
        import mcp.types as types

        return [types.ResourceTemplate(uri_template=self.template(kind), name=kind, description=source.description,
                                       mime_type=MIME) for kind, source in self.sources.items()]

    def complete(self, template: str, value: str) -> list[str]:
        for kind, source in self.sources.items():
            if template == self.template(kind):
                return source.keys(value)[:100]
        return []


_PARAMETER = {"sessions": "session_id", "skills": "name"}


class SessionResources:
    """The host's stored sessions (`hermes sessions list`), each read as its transcript."""

    kind = "sessions"
    description = "A stored conversation of this host, message by message (read only)"

    def __init__(self, store: Any) -> None:
        self.store = store  # a hermes_core.agent.SessionStore

    def listed(self) -> list[tuple[str, str, str]]:
        return [(row["id"], row["title"] or "", f"{row['platform'] or 'a'} session, {row['messages']} messages")
                for row in self.store.sessions(LISTED)]

    def read(self, key: str) -> str | None:
        shown = self.store.show(key)
        if shown is None:
            return None
        lines = [f"# {shown['title'] or shown['id']}", ""]
        for message in shown["messages"]:
            if message.get("role") == "system":
                continue
            lines += [f"**{message.get('role', '?')}**: {message_text(message).strip()}", ""]
        return "\n".join(lines)

    def keys(self, prefix: str) -> list[str]:
        return [row["id"] for row in self.store.sessions(500) if row["id"].startswith(prefix)]


class SkillResources:
    """The skills offered on platform `mcp` (`hermes skills list`), each read as its SKILL.md."""

    kind = "skills"
    description = "A skill of this host: its SKILL.md, the instructions it gives (read only)"

    def __init__(self, library: Callable[[], Any]) -> None:
        self.library = library  # () -> a hermes_core.SkillLibrary, as the skills are now

    def listed(self) -> list[tuple[str, str, str]]:
        return [(row["name"], row["name"], row["description"]) for row in self.library().entries()
                if row["enabled"]][:LISTED * 4]

    def read(self, key: str) -> str | None:
        content = self.library().content(key)
        return None if content is None else str(content)

    def keys(self, prefix: str) -> list[str]:
        return [row["name"] for row in self.library().entries() if row["enabled"] and row["name"].startswith(prefix)]
