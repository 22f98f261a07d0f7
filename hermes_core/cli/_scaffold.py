"""`hermes plugins new`: render the plugin template (`cookiecutter-plugin/`) without prompts."""

from __future__ import annotations

import re
from pathlib import Path

from .._errors import ScaffoldError

__all__ = ["KINDS", "NEEDS_COOKIECUTTER", "render_plugin", "slug_of"]

NEEDS_COOKIECUTTER = (
    "`hermes plugins new` renders its template with cookiecutter, which is not installed: "
    "pip install 'hermes-core[new]'"
)
KINDS = ("tool", "context_engine", "memory_provider")
_SLUG = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def slug_of(name: str) -> str:
    """The plugin id and distribution name of a human plugin name: `"Word Tools"` → `word-tools`."""
    return name.strip().lower().replace(" ", "-").replace("_", "-")


def render_plugin(
    name: str, kind: str, output_dir: Path, *, description: str = "A plugin for hermes-core.", author: str = ""
) -> Path:
    """Render a new plugin project of `kind` into `output_dir`; returns its folder."""
    slug = slug_of(name)
    if not _SLUG.fullmatch(slug):
        raise ScaffoldError(
            f"the plugin name {name!r} gives the id {slug!r}, which is not valid: use letters, digits, spaces or "
            "dashes, starting with a letter (e.g. 'Word Tools' gives word-tools)"
        )
    if kind not in KINDS:
        raise ScaffoldError(f"kind {kind!r} is not one of: {', '.join(KINDS)}; pass --kind with one of them")
    target = output_dir / slug
    if target.exists():
        raise ScaffoldError(f"{target} already exists; pick another name or --output-dir")
    from importlib.resources import as_file, files

    try:
        from cookiecutter.exceptions import CookiecutterException
        from cookiecutter.main import cookiecutter
    except ImportError:
        raise ScaffoldError(NEEDS_COOKIECUTTER) from None

    with as_file(files("hermes_core_template")) as template:
        try:
            made = cookiecutter(
                str(template), no_input=True, output_dir=str(output_dir),
                extra_context={"plugin_name": name.strip(), "kind": kind, "description": description,
                               "author": author or "hermes-core plugin author"},
            )
        except CookiecutterException as exc:
            raise ScaffoldError(f"the plugin template failed: {exc}") from None
    return Path(made)
