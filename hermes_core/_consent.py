"""Consent before a plugin is enabled (docs/trust.md), what the CLI (`hermes plugins install|enable`)
and the dashboard both show and store: what a plugin will be able to do (a dry run of its
`register()` in a process of its own, the capabilities its plugin.yaml asks for, read from its files
without importing it), and the grant, stored with the hash of the capability set it answered
(`plugins.entries.<id>.capabilities_consent`, Hermes' shape), so that an update asking for other
capabilities is asked about again and an unchanged one is not."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from ._errors import HermesError
from ._paths import hermes_home

__all__ = ["CONSENT_KEY", "LLM_USE", "Asked", "asked", "asks_before_enabling", "asks_of", "consent_hash", "consent_of", "consented",
           "declared_of", "dry_run", "known_of", "pending_of", "record_consent"]

CONSENT_KEY = "capabilities_consent"  # under plugins.entries.<id>: {hash, granted_at}, as Hermes keeps it

LLM_USE = "ctx.llm"  # not a capability to grant: shown, since the model calls it makes cost money

# What a hook lets a plugin do to every conversation, said when it registers one.
HOOK_REACH = {"pre_tool_call": "can block or change any tool call", "post_tool_call": "sees every tool call and result",
              "transform_tool_result": "can change any tool's result", "pre_llm_call": "sees every prompt",
              "post_llm_call": "sees every answer", "transform_llm_output": "can change every answer",
              "pre_command": "sees every slash command", "pre_gateway_dispatch": "sees every platform message"}

_MAX_FILE = 2_000_000  # a source file read for `ctx.llm` use larger than this is skipped


class Asked(NamedTuple):
    """What a plugin will be able to do, one line each (its dry run, then the capabilities it asks
    for); `known` the capabilities hermes-core knows among them, `pending` those not granted yet,
    `consent` the stored one, `answered` whether it is of this very set (`known`)."""

    lines: list[str]
    known: list[str]
    pending: list[str]
    consent: dict[str, str] | None
    answered: bool


def dry_run(spec: Any, python: Path | None, home: Path | None = None) -> list[str]:
    """What the plugin `spec` registers, from its `register()` run in a process of its own (never
    in this one; no LLM keys in its environment), one line per kind; the failure when it fails."""
    from ._config.file import load_config
    from ._standins.isolated import ChildProcess

    home = home if home is not None else hermes_home()
    child = ChildProcess(spec, home=home, config=load_config(home).section(),
                         python=str(python) if python is not None else None)
    try:
        loaded = child.start()
    except HermesError as exc:
        return [f"its register() could not be run in a process of its own: {exc}"]
    finally:
        child.close()
    if loaded["status"] != "ok":
        return [f"its register() failed in a process of its own: {loaded['failure']}"]
    lines = []
    for kind, names in sorted(loaded["registered"].items()):
        shown = [f"{name} ({HOOK_REACH[name]})" if kind == "hooks" and name in HOOK_REACH else str(name)
                 for name in dict.fromkeys(names)]
        lines.append(f"{kind.replace('_', ' ')}: {', '.join(shown)}")
    return lines or ["registers nothing"]


def _asked_by(declared: dict[str, list[str]], module: str) -> list[str]:
    folder, top = module.replace(".", "/"), module.split(".")[0]
    asked_for = list(declared.get(folder, []))
    return asked_for + [LLM_USE] if LLM_USE in declared.get(top, []) and LLM_USE not in asked_for else asked_for


def asks_of(declared: dict[str, list[str]], spec: Any) -> list[str]:
    """What the plugin `spec` asks for: its package folder's plugin.yaml capabilities, and `ctx.llm`
    when its top-level package uses it (`declared`: by folder, as read from its distribution)."""
    return _asked_by(declared, (spec.entry_point or "").split(":")[0])


def declared_of(spec: Any) -> list[str]:
    """What the installed plugin `spec` asks for (as `asks_of`), read from its files on disk: its
    folder's, or its entry point's package's (in the environment of its own when it has one).
    Nothing is imported."""
    from ._trust.consent import capabilities_in, llm_users_in

    if spec.path is not None:  # a folder plugin: its folder is its package
        root, module = Path(spec.path), Path(spec.path).name
    else:
        from ._discovery.source_scan import module_origin

        module = (spec.entry_point or "").split(":")[0].strip()
        found = module_origin(module, _site_of(spec.python) if spec.python else None)
        if found is None:
            return []
        origin, package = found
        root = package if package is not None else origin
    files = list(_files(root))
    declared = capabilities_in(files)
    for package_name in llm_users_in(files):
        declared.setdefault(package_name, []).append(LLM_USE)
    return _asked_by(declared, module)


def _site_of(python: str) -> str | None:
    """The site-packages of the environment whose interpreter is `python`."""
    sites = sorted(Path(python).parent.parent.glob("lib/python*/site-packages"))
    return str(sites[0]) if sites else None


def _files(root: Path) -> Iterator[tuple[str, bytes]]:
    """(path from root's parent, bytes) of root's plugin.yaml and Python files (root: a folder or a file)."""
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in paths:
        if path.suffix != ".py" and path.name not in ("plugin.yaml", "plugin.yml"):
            continue
        try:
            data = path.read_bytes() if path.stat().st_size <= _MAX_FILE else b""
        except OSError:
            continue
        yield path.relative_to(root.parent).as_posix(), data


def known_of(declared: Iterable[str]) -> list[str]:
    """The capabilities among `declared` that hermes-core knows (the set a consent's hash is of)."""
    from ._ctx.grants import CAPABILITY_REGISTRY

    return [c for c in dict.fromkeys(declared) if c in CAPABILITY_REGISTRY]


def consent_hash(declared: Iterable[str]) -> str:
    """The hash a consent to `declared` is stored with: that of the capabilities hermes-core knows among them."""
    from ._trust.consent import capability_set_hash

    return capability_set_hash(known_of(declared))


def pending_of(config: Any, plugin_id: str, declared: Iterable[str]) -> list[str]:
    """The capabilities among `declared` that hermes-core knows and `plugin_id` is not granted yet."""
    from ._ctx.grants import granted

    return [c for c in known_of(declared) if not granted(config, plugin_id, c)]


def consent_of(config: Any, plugin_id: str) -> dict[str, str] | None:
    """The consent recorded for `plugin_id` ({hash, granted_at}); None when there is none or it is not
    one (a consent that cannot be read counts as never given)."""
    from .config_keys import PLUGIN_ENTRIES

    entry = config.read(PLUGIN_ENTRIES).get(plugin_id)
    consent = entry.get(CONSENT_KEY) if isinstance(entry, dict) else None
    if not isinstance(consent, dict) or not isinstance(consent.get("hash"), str):
        return None
    return {"hash": consent["hash"], "granted_at": str(consent.get("granted_at") or "an earlier install")}


def consented(config: Any, plugin_id: str, declared: Iterable[str]) -> bool:
    """Whether the user answered about this very set of capabilities (a consent with its hash is stored)."""
    consent = consent_of(config, plugin_id)
    return consent is not None and consent["hash"] == consent_hash(declared)


def asks_before_enabling(config: Any, spec: Any) -> list[str] | None:
    """None when enabling `spec` asks nothing: a built-in plugin, one config.yaml enables already, one
    whose capability set the user answered about (the consent's hash); else what it asks for (`declared_of`)."""
    from .config_keys import PLUGINS_DISABLED, PLUGINS_ENABLED

    if spec.source == "builtin" or (spec.id in config.read(PLUGINS_ENABLED)
                                    and spec.id not in config.read(PLUGINS_DISABLED)):
        return None
    declared = declared_of(spec)
    return None if consented(config, spec.id, declared) else declared


def asked(spec: Any, python: Path | None, declared: list[str], home: Path | None = None) -> Asked:
    """What `spec` will be able to do, as the CLI and the dashboard show it before enabling it."""
    from ._config.file import load_config
    from ._ctx.grants import CAPABILITY_REGISTRY

    lines = dry_run(spec, python, home)
    config = load_config(home)
    known, pending = known_of(declared), pending_of(config, spec.id, declared)
    consent = consent_of(config, spec.id)
    answered = consented(config, spec.id, declared)
    if consent is not None and not answered and known:
        lines.append(f"it asks for other capabilities than when you answered on {consent['granted_at']}: what is "
                     "not granted stays so until you answer")
    for capability in dict.fromkeys(declared):
        if capability == LLM_USE:
            lines.append(f"uses ctx.llm: it calls the model, which costs money (plugins.entries.{spec.id}.llm_budget "
                         "caps it)")
        elif capability not in CAPABILITY_REGISTRY:
            lines.append(f"asks for {capability}: not a capability hermes-core knows; not granted")
        elif capability in pending:
            said = (f"not granted; you answered about these same capabilities on {consent['granted_at']}, so it is "
                    "not asked again" if answered and consent else "not granted")
            lines.append(f"asks for {capability}: {CAPABILITY_REGISTRY[capability].description} ({said})")
    return Asked(lines, known, pending, consent, answered)


def record_consent(plugin_id: str, granted: Iterable[str], declared: Iterable[str], home: Path | None = None) -> None:
    """Add `granted` to plugins.entries.<id>.granted_capabilities and record the consent: the hash of
    the `declared` set the user answered about, and when (config.yaml, written atomically)."""
    from datetime import datetime, timezone

    from ._config.file import edit_config

    adding = list(dict.fromkeys(granted))
    stamp = {"hash": consent_hash(declared),  # the hash every check compares with (known capabilities)
             "granted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def mutate(doc: Any) -> bool:
        entry = doc.setdefault("plugins", {}).setdefault("entries", {}).setdefault(plugin_id, {})
        if adding:
            listed = entry.setdefault("granted_capabilities", [])
            listed.extend(c for c in adding if c not in listed)
        entry[CONSENT_KEY] = stamp
        return True

    edit_config(mutate, home)
