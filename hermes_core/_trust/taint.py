"""What the values of a scope hold, for the rules (`rules`): names assigned in a scope carry what
their value holds (fetched bytes, decoded bytes, a whole secret store, a secret's path) to where
they are used; a function whose return value holds one passes it to its callers in the module."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple

__all__ = ["Returns", "Scope", "Text", "dotted", "scope_nodes", "strings", "NET_ROOTS", "CREDENTIAL_FILE"]

DECODE = {"b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "decodebytes", "urlsafe_b64decode",
          "standard_b64decode", "decompress", "unhexlify", "a2b_base64", "a2b_hex", "fromhex"}
FETCH = {"urlopen", "urlretrieve", "get", "post", "request", "stream", "fetch"}
NET_ROOTS = {"requests", "httpx", "urllib", "urllib3", "aiohttp", "http", "session", "client", "pool", "s", "sess"}
SECRET_FILE = re.compile(r"(^|[/\\])\.env$|\.hermes[/\\]\.env|\.hermes[/\\]auth\.json")
CREDENTIAL_FILE = re.compile(r"id_(rsa|ed25519|ecdsa|dsa)\b|\.ssh[/\\]id_|\.aws[/\\]credentials|\.netrc\b|"
                             r"\.git-credentials|\.docker[/\\]config\.json|\.kube[/\\]config|Login Data|\.gnupg|"
                             r"keychain-db|wallet\.dat|\.config[/\\]gh[/\\]hosts\.yml|\.npmrc|\.pypirc")
BLOB = re.compile(r"^[A-Za-z0-9+/=_\-\s]{80,}$|^[0-9a-fA-F\s]{80,}$")


def dotted(node: ast.AST) -> list[str]:
    """`a.b.c(...)` → ['a', 'b', 'c']; the parts that are names, '?' for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call):
        return [*dotted(node.func), *reversed(parts)]
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return list(reversed(parts))


def scope_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of a scope, not descending into the functions defined in it (their own scopes)."""
    stack: list[ast.AST] = [n for n in reversed(body) if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.append(child)


class Text(NamedTuple):
    """A string constant of the code: its node, its text, its line."""

    node: ast.Constant
    value: str
    lineno: int


def strings(node: ast.AST) -> Iterator[Text]:
    """The string constants in `node` and below."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield Text(sub, sub.value, sub.lineno)


class Scope:
    """One scope of a module: its nodes and what each name assigned in it holds."""

    def __init__(self, nodes: list[ast.AST], where: str, import_time: bool,
                 returns: Returns | None = None, globals_: Mapping[str, set[str]] | None = None) -> None:
        self.where, self.import_time = where, import_time
        self.returns = returns
        self.globals = globals_ or {}
        self.nodes = nodes
        self.parents = {id(c): p for p in self.nodes for c in ast.iter_child_nodes(p)}
        self.holds: dict[str, set[str]] = {}
        self.hook = False
        self._memo: dict[int, set[str]] = {}
        assigned: list[tuple[list[ast.expr], ast.AST]] = []
        for node in self.nodes:
            if isinstance(node, ast.Assign):
                assigned.append((node.targets, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                assigned.append(([node.target], node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                assigned.append(([node.target], node.iter))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                assigned.extend(([i.optional_vars], i.context_expr) for i in node.items if i.optional_vars)
        for _ in range(4):  # names passed along names: a few rounds reach the fixed point in practice
            self._memo.clear()
            for targets, value in assigned:
                kinds = self.kinds(value)
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name) and kinds - self.holds.get(name.id, set()):
                            self.holds.setdefault(name.id, set()).update(kinds)
        self._memo.clear()

    def kinds(self, node: ast.AST) -> set[str]:
        """What `node`'s value holds: `fetched`, `decoded`, `secret` (a whole secret store), `path` (a
        secret store's path), `credential` (a key file's contents), `credpath` (its path)."""
        key = id(node)
        if key not in self._memo:
            self._memo[key] = set()  # a cycle through the same node reads as nothing
            self._memo[key] = self._kinds(node)
        return self._memo[key]

    def _kinds(self, node: ast.AST) -> set[str]:
        if isinstance(node, ast.Name):
            return set(self.holds.get(node.id, self.globals.get(node.id, ())))
        if isinstance(node, ast.Constant):
            text = node.value if isinstance(node.value, str) else ""
            if isinstance(node.value, bytes):
                text = node.value.decode("latin-1")
            return {kind for kind, pattern in (("path", SECRET_FILE), ("credpath", CREDENTIAL_FILE), ("blob", BLOB))
                    if pattern.search(text)}
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return set()  # one value taken by its name (`env["API_KEY"]`): not the store as a whole
        if isinstance(node, ast.Call):
            return self.call_kinds(node)
        if self.is_whole_environ(node):
            return {"secret"}
        return set().union(*(self.kinds(child) for child in ast.iter_child_nodes(node)))

    def call_kinds(self, call: ast.Call) -> set[str]:
        parts = dotted(call.func)
        last, root = parts[-1], parts[0]
        inner = set().union(*(self.kinds(a) for a in [*call.args, *(k.value for k in call.keywords)]),
                            self.kinds(call.func.value) if isinstance(call.func, ast.Attribute) else set())
        kinds = self.returns.get(last) if self.returns and root in (last, "self", "cls") else set()
        if last in ("urlopen", "urlretrieve") or (last in FETCH and root.lower() in NET_ROOTS):
            kinds.add("fetched")
        if last in DECODE or (last == "decode" and root == "codecs"):
            kinds.add("decoded")
            if "blob" in inner:
                kinds.add("payload")  # an encoded blob written into the code, decoded
        if last == "dotenv_values":
            kinds.add("secret")
        if last in ("open", "read_text", "read_bytes", "read", "readlines", "load"):
            if "path" in inner:
                kinds.add("secret")
            if "credpath" in inner:
                kinds.add("credential")
        if last in ("get", "getenv", "pop") and call.args and isinstance(call.args[0], ast.Constant):
            return kinds  # `env.get("API_KEY")`: one value, not the store
        return kinds | inner

    def is_whole_environ(self, node: ast.AST) -> bool:
        """`os.environ` (or `environ`) used as a whole: copied, iterated, dumped, sent."""
        if not (isinstance(node, ast.Attribute) and node.attr == "environ") and not (
                isinstance(node, ast.Name) and node.id == "environ"):
            return False
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute):
            return parent.attr in ("copy", "items", "values")
        if isinstance(parent, (ast.Subscript, ast.Compare)) or (isinstance(parent, ast.Assign) and node in
                                                                 parent.targets):
            return False
        return True

    def returned(self) -> set[str]:
        """What the scope's `return` values hold."""
        return set().union(*(self.kinds(n.value) for n in self.nodes if isinstance(n, ast.Return) and n.value))


class Returns:
    """What the module's functions return, worked out when a call to one is read (a helper such as
    `def _collect(): return dict(os.environ)` passes a secret store to its caller)."""

    def __init__(self, functions: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> None:
        self.by_name: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for function in functions:
            self.by_name.setdefault(function.name, []).append(function)
        self.done: dict[str, set[str]] = {}

    def get(self, name: str) -> set[str]:
        if name not in self.by_name:
            return set()
        if name not in self.done:
            self.done[name] = set()  # a recursive call reads as nothing
            self.done[name] = set().union(*(Scope(list(scope_nodes(f.body)), "", False, self).returned()
                                            for f in self.by_name[name]))
        return set(self.done[name])
