"""Refuse a plugin name whose slug is not a valid plugin id and distribution name."""

import re
import sys

name = {{ cookiecutter.plugin_name | tojson }}
slug = {{ cookiecutter.__slug | tojson }}
kind = {{ cookiecutter.kind | tojson }}
if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", slug):
    sys.exit(
        f"error: the plugin name {name!r} gives the slug {slug!r}, which is not a valid plugin id: use "
        "letters, digits, spaces or dashes, starting with a letter (e.g. 'Word Tools')"
    )
if kind not in ("tool", "context_engine", "memory_provider"):
    sys.exit(f"error: kind {kind!r} is not one of: tool, context_engine, memory_provider")
