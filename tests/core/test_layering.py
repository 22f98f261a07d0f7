"""The package's layering, as a test: which stage (a folder of `hermes_core`) may import which,
and no import circle between modules, whether the import runs at start, inside a function or
only for the type checker. Read from the source (AST); nothing here imports a private module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_core"

# The modules at the root that every stage may use: they import nothing of hermes-core but each other.
LEAVES = {"_errors", "_files", "_messages", "_multimodal", "_net", "_paths", "_quote", "_redact", "_sqlite", "_undo",
          "_version"}
PUBLIC_MODULES = {"config_keys", "hookspecs", "providers"}

# Each stage and the stages it may import (besides itself and the leaves), from the bottom up.
BELOW_LOADING = {"config_keys", "_runtime", "_config", "providers", "_hermes", "_hooks", "hookspecs", "_commands",
                 "_tools", "_slots", "_llm", "_ctx", "_discovery", "_session", "_skills", "_store", "_profiles",
                 "_telemetry"}
MAY_IMPORT: dict[str, set[str]] = {
    "leaf": set(),
    "config_keys": set(),
    "_runtime": set(),
    "_config": {"config_keys"},
    "providers": set(),
    "_hermes": {"config_keys", "_config", "providers"},
    "_telemetry": {"config_keys", "_config"},  # traces and metrics: the seams every stage calls
    "_hooks": {"config_keys", "_runtime", "hookspecs", "_telemetry"},
    "hookspecs": {"_ctx"},  # _ctx: the type of the registration hooks' `ctx`, for the type checker
    "_commands": {"config_keys", "_runtime", "_hooks"},
    "_tools": {"config_keys", "_runtime", "_config", "_hooks", "_hermes", "_telemetry"},
    "_slots": {"config_keys", "_runtime", "_config", "_hermes", "providers"},
    "_store": {"config_keys", "_config"},  # the floor under every stage that keeps state
    "_llm": {"config_keys", "_runtime", "_config", "_hooks", "_hermes", "_store", "_telemetry"},
    "_skills": {"config_keys", "_config"},
    "_profiles": {"_config"},  # issue 58: which home a command runs in, and the profiles of a root
    "_ctx": {"config_keys", "_runtime", "_config", "_commands", "_tools", "_llm", "_skills", "_store", "_profiles",
             "_telemetry"},
    "_discovery": {"config_keys", "_config", "_hermes", "_slots", "_skills"},
    "_session": {"config_keys", "_runtime", "_config", "_hooks", "_llm", "_slots", "_tools",
                 "_profiles"},  # _profiles: the profile a session runs as (Hermes' agent_identity)
    "_loading": BELOW_LOADING,
    "_standins": BELOW_LOADING | {"_loading"},  # lazy activation, isolation (its child loads with a Loader)
    "_mcp": {"config_keys", "_runtime", "_config", "_commands", "_tools", "_standins",
             "_llm", "_skills", "_telemetry"},  # _llm, _skills: a server's sampling, the portable packages' mcp.json (`host`)
    "_trust": set(),  # trust at install: the leaves alone (pip and git run as programs)
    "_consent": BELOW_LOADING | {"_trust", "_standins", "_loading"},  # consent before enabling (CLI and dashboard)
    "_manager": BELOW_LOADING | {"_loading", "_standins", "_mcp"},
    "testing": BELOW_LOADING | {"_loading", "_manager"},
    "hosting": {"hermes_core", "config_keys", "_runtime", "_store", "_telemetry"},  # public names, the leaves, _runtime, _store (held below)
    # the operator's pages: public names, the hosts' stores it reads (sessions, cron), the LLM ledger
    "dashboard": {"hermes_core", "config_keys", "hosting", "agent", "cron", "_llm", "_hooks",  # _hooks: the kept hook calls
                  "_consent",  # consent before enabling, as the CLI asks it
                  "_config",  # _config.plugin_lists: enabling under the managed scope, as the CLI edits it
                  "_redact"},  # redact_tree: what the CLI's listings mask, its pages too
    "cli": BELOW_LOADING | {"_trust", "_consent", "_standins", "_loading", "_manager", "_mcp", "hosting", "agent", "gateway", "batch",
                   "mcp_server", "api_server", "cron", "acp_server", "dashboard"},
}


def module_name(path: Path) -> str:
    parts = ("hermes_core", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage(module: str) -> str:
    """The stage a module belongs to: its folder, a public module, `leaf`, or `hermes_core`."""
    parts = module.split(".")
    if len(parts) == 1:
        return "hermes_core"
    return "leaf" if parts[1] in LEAVES else parts[1]


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every hermes_core module `path` imports (line, module), wherever the import statement is.
    `from pkg import name` names the module `pkg.name` when that is a module, else `pkg`."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "hermes_core")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "hermes_core":
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                is_module = (PACKAGE.parent / candidate.replace(".", "/")).with_suffix(".py").exists() or \
                    (PACKAGE.parent / candidate.replace(".", "/") / "__init__.py").exists()
                yield node.lineno, candidate if is_module else target


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
# The public hosts built on the library's public names, and which of them each may use besides.
PUBLIC_HOSTS = {"agent": {"agent", "hosting"}, "gateway": {"agent", "gateway", "hosting"},
                "batch": {"agent", "batch", "hosting"}, "mcp_server": {"mcp_server", "hosting"},
                "api_server": {"agent", "gateway", "api_server", "cron", "hosting"},
                "cron": {"agent", "gateway", "cron", "hosting"},
                "acp_server": {"agent", "gateway", "acp_server", "hosting"}}


def test_every_stage_of_the_package_has_a_rule() -> None:
    stages = {stage(module) for module in MODULES} - {"hermes_core", *PUBLIC_HOSTS}
    assert stages == set(MAY_IMPORT), "a new folder needs its line in MAY_IMPORT (and README's layout)"


@pytest.mark.parametrize("name", sorted(MAY_IMPORT))
def test_a_stage_imports_only_the_stages_below_it(name: str) -> None:
    allowed = MAY_IMPORT[name] | {name, "leaf"}
    wrong = [f"{module}:{line}: {target}" for module, path in MODULES.items() if stage(module) == name
             for line, target in imports(path) if stage(target) not in allowed]
    assert wrong == [], f"{name} may import only {sorted(allowed)}"


def test_the_library_never_imports_the_cli() -> None:
    wrong = [f"{module}:{line}" for module, path in MODULES.items() if stage(module) != "cli"
             for line, target in imports(path) if stage(target) == "cli"]
    assert wrong == []


def depth(module: str, path: Path) -> int:
    """How many levels a relative import in `module` may climb and stay in its host's folder."""
    return len(module.split(".")) - 2 + (path.name == "__init__.py")


@pytest.mark.parametrize("host", sorted(PUBLIC_HOSTS))
def test_the_reference_hosts_import_only_public_names(host: str) -> None:
    """The agent, the gateway, batch and the MCP server are what host authors copy: they use what any
    host can import, by its public name, and `hosting` (the gateway and batch may use the agent,
    nothing uses a host but the CLI)."""
    modules = {module: path for module, path in MODULES.items() if stage(module) == host}
    assert len(modules) >= 4
    allowed = PUBLIC_MODULES | PUBLIC_HOSTS[host]
    wrong = [f"{module}:{line}: {target}" for module, path in modules.items() for line, target in imports(path)
             if target != "hermes_core" and target.split(".")[1] not in allowed]
    wrong += [f"{module}:{node.lineno}: a relative import leaving {host}/" for module, path in modules.items()
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.ImportFrom) and node.level > depth(module, path)]
    assert wrong == []


def test_the_host_layer_is_public_names_the_leaves_and_runtime() -> None:
    """`hosting` is what every host shares: built on what a host may import, plus the leaves,
    `_runtime` (a private building block it makes public, as `Backoff`) and the state floor
    `_store` (made public as `Store`) and `_telemetry` (made public as `turn_span`, `served_span`), never a
    library stage."""
    modules = {module: path for module, path in MODULES.items() if stage(module) == "hosting"}
    assert len(modules) >= 4
    wrong = [f"{module}:{line}: {target}" for module, path in modules.items() for line, target in imports(path)
             if target != "hermes_core" and stage(target) not in {"hosting", "leaf", "_runtime", "_store", "_telemetry",
                                                                  *PUBLIC_MODULES}]
    assert wrong == []


def test_no_module_is_part_of_an_import_circle() -> None:
    """Tarjan's strongly connected components over every import, at start, in functions and for types."""
    graph = {module: {target for _, target in imports(path) if target in MODULES and target != module}
             for module, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert circles == []


def test_the_rules_are_read_from_real_imports() -> None:
    """The checks above see imports of every kind: a module-level one, one inside a function and a
    type-only one (a walk that missed them would find nothing wrong, proving nothing)."""
    manager = dict(imports(PACKAGE / "_manager.py"))
    assert "hermes_core._loading.loader" in manager.values()  # at start
    assert "hermes_core._session.session" in manager.values()  # inside a method
    tools_call = {target for _, target in imports(PACKAGE / "_tools" / "call.py")}
    assert "hermes_core._hooks.calls" in tools_call  # for the type checker only


def test_a_module_holds_one_thing() -> None:
    """No module over 450 lines but the hook-spec catalogue; the facade over 300. A module that
    grows past that holds two things: give the second its own module in the stage's folder."""
    sizes = {module: len(path.read_text(encoding="utf-8").splitlines()) for module, path in MODULES.items()}
    assert sizes["hermes_core._manager"] < 300
    assert {module: lines for module, lines in sizes.items() if lines > 450} == {
        "hermes_core.hookspecs": sizes["hermes_core.hookspecs"]}
