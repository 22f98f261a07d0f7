"""The author docs keep up with the code: every hook is documented with its arguments and an
example, and the pages link to each other."""

from __future__ import annotations

import inspect
import re

import pytest

from hermes_core import hookspecs
from tests.helpers import ROOT

DOCS = ROOT / "docs"
SPECS = [name for name, value in vars(hookspecs).items()
         if inspect.isfunction(value) and hasattr(value, hookspecs.PROJECT_NAME + "_spec")]


def sections(page: str) -> dict[str, str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    parts = re.split(r"^## +(\S+)\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_hook_specs_are_found() -> None:
    assert {"register", "pre_tool_call", "transform_llm_output"} <= set(SPECS) and len(SPECS) >= 15


@pytest.mark.parametrize("hook", SPECS)
def test_every_hook_has_a_section_with_its_arguments_and_an_example(hook: str) -> None:
    documented = sections("hooks.md")
    assert hook in documented, f"docs/hooks.md has no '## {hook}' section"
    body = documented[hook]
    for argument in inspect.signature(getattr(hookspecs, hook)).parameters:
        assert f"`{argument}`" in body, f"docs/hooks.md does not name the argument `{argument}` of {hook}"
    example = re.search(r"```python\n(.*?)```", body, re.S)
    assert example and f"def {hook}(" in example.group(1), f"docs/hooks.md has no example implementing {hook}"
    compile(example.group(1), f"docs/hooks.md:{hook}", "exec")


def test_no_section_documents_a_hook_that_does_not_exist() -> None:
    assert set(sections("hooks.md")) <= set(SPECS)


def test_the_pages_the_index_links_to_exist() -> None:
    links = re.findall(r"\]\(([\w-]+\.md)\)", (DOCS / "index.md").read_text(encoding="utf-8"))
    assert {"writing-plugins.md", "ctx.md", "hooks.md", "llm.md", "engines.md", "testing.md"} <= set(links)
    assert all((DOCS / link).is_file() for link in links)


def test_every_ctx_method_is_documented() -> None:
    from hermes_core import PluginContext

    public = {name for name, _ in inspect.getmembers(PluginContext) if not name.startswith("_")}
    text = (DOCS / "ctx.md").read_text(encoding="utf-8")
    missing = [name for name in public if f"ctx.{name}" not in text]
    assert not missing, f"docs/ctx.md does not document ctx.{', ctx.'.join(missing)}"
