"""The capabilities a plugin asks for, read from the `capabilities:` of the plugin.yaml its wheel
ships (Hermes' ids: `tools.override`, `llm.model_override`, ...), in memory: nothing is run."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .scan import members

__all__ = ["capabilities_in", "capability_set_hash", "declared_capabilities", "llm_users", "llm_users_in"]


def capability_set_hash(capabilities: Iterable[str]) -> str:
    """The sha256 of a set of capability ids (order and repeats do not count), as Hermes takes it:
    the ids sorted, one a line. Stored with a consent, it says which set the user answered about."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(set(capabilities))).encode("utf-8")).hexdigest()


def declared_capabilities(wheel: Path) -> dict[str, list[str]]:
    """Each plugin.yaml's `capabilities:` in `wheel`, by the folder it is in (`hermes_foo`)."""
    return capabilities_in(members(wheel))


def capabilities_in(files: Iterable[tuple[str, bytes]]) -> dict[str, list[str]]:
    """Each plugin.yaml's `capabilities:` among `files` ((path, bytes) each), by the folder it is in."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    found: dict[str, list[str]] = {}
    for name, data in files:
        parts = name.split("/")
        if parts[-1] not in ("plugin.yaml", "plugin.yml") or len(parts) < 2 or parts[0].endswith((".dist-info",
                                                                                                  ".data")):
            continue
        try:
            doc = YAML(typ="safe", pure=True).load(data)
        except YAMLError:
            continue
        listed = doc.get("capabilities") if isinstance(doc, dict) else None
        if isinstance(listed, dict):  # `capabilities: {tools.override: true}`
            listed = [key for key, value in listed.items() if value]
        if isinstance(listed, list):
            found["/".join(parts[:-1])] = [str(item) for item in listed]
    return found


def llm_users(wheel: Path) -> set[str]:
    """The top-level packages of `wheel` whose code uses `ctx.llm` (model calls that cost money), read
    with `ast`."""
    return llm_users_in(members(wheel))


def llm_users_in(files: Iterable[tuple[str, bytes]]) -> set[str]:
    """The top-level packages among `files` ((path, bytes) each) whose code uses `ctx.llm`, read with `ast`."""
    import ast

    users = set()
    for name, data in files:
        if not name.endswith(".py") or ".dist-info/" in name:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(n, ast.Attribute) and n.attr == "llm" and isinstance(n.value, ast.Name)
               and n.value.id == "ctx" for n in ast.walk(tree)):
            users.add(name.split("/")[0].removesuffix(".py"))
    return users
