"""One table says which kinds of registration lazy activation and process isolation can stand in
for (`hermes_core/_standins/kinds.py`): every kind a plugin's record notes has its line there, so
a new kind added to the registrar is decided for both before it lands. Read from the source
(AST), as the layering test reads it: nothing here imports a private module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_core"
TABLE = PACKAGE / "_standins" / "kinds.py"


def table() -> dict[str, tuple[bool, bool]]:
    """The kinds of the table, each with its (lazy, isolated)."""
    for node in ast.walk(ast.parse(TABLE.read_text(encoding="utf-8"))):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "KINDS":
            assert isinstance(node.value, ast.Call) and isinstance(node.value.args[0], ast.Dict)
            rows = node.value.args[0]
            return {ast.literal_eval(key): tuple(ast.literal_eval(k.value) for k in value.keywords)  # type: ignore[arg-type,misc]
                    for key, value in zip(rows.keys, rows.values)}
    raise AssertionError("no KINDS table in _standins/kinds.py")


def noted_kinds() -> dict[str, list[str]]:
    """Every registration kind loading and the stand-ins note on a plugin's record (they alone hold
    records), with where: `record.note(KIND, ...)`, `registered[KIND] = ...`, `registered.setdefault(KIND, ...)`."""
    found: dict[str, list[str]] = {}
    for path in sorted([*(PACKAGE / "_loading").rglob("*.py"), *(PACKAGE / "_standins").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            kind = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                first = node.args[0]
                if node.func.attr == "note" or (node.func.attr == "setdefault" and isinstance(node.func.value, ast.Attribute)
                                                and node.func.value.attr == "registered"):
                    kind = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
                    if kind is None and node.func.attr == "note":
                        raise AssertionError(f"{path}:{node.lineno}: a kind noted by a name, not a literal: "
                                             "the table cannot be checked against it")
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "registered":
                kind = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if kind is not None:
                found.setdefault(kind, []).append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_the_scan_sees_the_registrars_kinds() -> None:
    """The registrar's own kinds are found (a scan that missed them would prove nothing)."""
    assert {"tools", "commands", "hooks", "providers", "platforms", "model_providers"} <= set(noted_kinds())


def test_every_kind_the_registrar_notes_has_its_line_in_the_table() -> None:
    kinds, noted = table(), noted_kinds()
    missing = {kind: where for kind, where in noted.items() if kind not in kinds}
    assert missing == {}, "a new registration kind needs its line in hermes_core/_standins/kinds.py (lazy? isolated?)"
    assert set(kinds) - set(noted) == set(), "the table has kinds nothing registers any more"


def test_lazy_activation_and_isolation_read_the_table_not_lists_of_their_own() -> None:
    """The stand-ins decide by the table: neither module spells out a set of kinds of its own."""
    kinds = set(table())
    for name in ("lazy.py", "remembered.py", "isolated.py"):
        tree = ast.parse((PACKAGE / "_standins" / name).read_text(encoding="utf-8"))
        literals = [node for node in ast.walk(tree) if isinstance(node, (ast.Set, ast.List, ast.Tuple))
                    and len(node.elts) > 1 and all(isinstance(e, ast.Constant) and e.value in kinds for e in node.elts)]
        assert literals == [], f"_standins/{name}:{literals[0].lineno} lists kinds itself; read kinds.LAZY / ISOLATED"
    assert table()["tools"] == (True, True) and table()["hooks"] == (False, True)
