"""Plugin pages, Hermes' way: a loaded plugin's `dashboard/manifest.json` adds a tab (its
`label`, a page loading its `entry` script and `css`), its files are served at
`/dashboard-plugins/<id>/...`, and the `router` of its `dashboard/plugin_api.py` (a Starlette
`Router`, FastAPI's `APIRouter`, a list of routes, or any ASGI app) is mounted at
`/api/plugins/<id>/`, behind the login like every other path. A broken manifest or router is
a warning: that plugin gets no page, the dashboard starts.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
from pathlib import Path
from typing import Any

import attrs

from hermes_core import PluginManager, discover

__all__ = ["PluginPage", "plugin_pages"]

log = logging.getLogger("hermes.dashboard")


@attrs.frozen
class PluginPage:
    """A plugin's dashboard folder, its manifest's label, entry script and CSS, and its backend router."""

    plugin_id: str
    label: str
    folder: Path
    entry: str | None
    css: str | None
    router: Any


def _folder(spec: Any) -> Path | None:
    if spec.path is not None:
        base = Path(spec.path)
        return base if base.is_dir() else base.parent
    module = (spec.entry_point or "").partition(":")[0]
    try:
        found = importlib.util.find_spec(module) if module else None
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin:
        return None
    return Path(found.origin).parent if found.submodule_search_locations else None


def _relative(value: Any, folder: Path) -> str | None:
    if not isinstance(value, str) or not value or value.startswith("/") or ".." in Path(value).parts:
        return None
    return value if (folder / value).is_file() else None


def _router(plugin_id: str, file: Path) -> Any:
    name = "hermes_dashboard_plugin_" + re.sub(r"\W", "_", plugin_id)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    router = getattr(module, "router", None)
    if router is None:
        raise ImportError(f"{file} has no `router`")
    if isinstance(router, (list, tuple)):
        from starlette.routing import Router

        router = Router(routes=list(router))
    return router


def plugin_pages(manager: PluginManager) -> tuple[list[PluginPage], list[str]]:
    """The pages of the plugins `manager` loaded, and a warning per plugin whose page is left out."""
    loaded = {record.id for record in manager.records if record.status == "ok"}
    pages, warnings = [], []
    for spec in discover(home=manager.home).plugins:
        if spec.id not in loaded:
            continue
        base = _folder(spec)
        folder = base / "dashboard" if base is not None else None
        if folder is None or not (folder / "manifest.json").is_file():
            continue
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("it is not a JSON object")
            api = manifest.get("api") or "plugin_api.py"
            api_file = folder / api if isinstance(api, str) and ".." not in Path(api).parts else None
            router = _router(spec.id, api_file) if api_file is not None and api_file.is_file() else None
            tab = manifest.get("tab")
            tab = tab if isinstance(tab, dict) else {}
            label = str(manifest.get("label") or manifest.get("name") or spec.id)
            pages.append(PluginPage(spec.id, "" if tab.get("hidden") else label, folder,
                                    _relative(manifest.get("entry"), folder), _relative(manifest.get("css"), folder),
                                    router))
        except Exception as exc:  # noqa: BLE001 - a plugin's page never keeps the dashboard from starting
            warnings.append(f"plugin {spec.id!r}: its dashboard page is left out: {type(exc).__name__}: {exc}")
    return pages, warnings
