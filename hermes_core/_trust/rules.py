"""The rules of our own for agent plugins, read from a module's syntax tree (`ast`): the code is
parsed, never imported or run.

Each scope (the module body, which runs at import, and each function) is read on its own: names
assigned in it carry what their value holds (fetched bytes, decoded bytes, secrets, a secret's
path) to where they are used. A plugin that reads `~/.hermes/.env` or one variable of the
environment to call its own API is normal; what is flagged is a whole secret store going off the
machine, code that comes from the network or from an encoded blob being run, writes that make
code run again later, and a `pre_tool_call` hook turning a command into a download.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from .findings import ASK, BLOCK, NOTE, Finding

__all__ = ["scan_source"]

EXEC = {"exec", "eval", "compile", "FunctionType"}
UNPICKLE = {"pickle", "dill", "cloudpickle", "_pickle", "cPickle"}
BLOB = re.compile(r"^[A-Za-z0-9+/=_\-\s]{80,}$|^[0-9a-fA-F\s]{80,}$")
NET_TOOL = re.compile(r"\b(curl|wget|nc|ncat|scp|rsync|ftp)\b")
DECODE = {"b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "decodebytes", "urlsafe_b64decode",
          "standard_b64decode", "decompress", "unhexlify", "a2b_base64", "a2b_hex", "fromhex"}
DOWNLOAD = {"get", "stream", "fetch"}
FETCH = {"urlopen", "urlretrieve", "get", "post", "request", "stream", "fetch"}
NET_ROOTS = {"requests", "httpx", "urllib", "urllib3", "aiohttp", "http", "session", "client", "pool", "s", "sess"}
SEND_STRONG = {"post", "put", "patch", "urlopen", "Request", "sendall", "sendto", "sendmail", "send_message",
               "urlretrieve", "request", "gethostbyname", "getaddrinfo", "create_connection"}
SEND_WEAK = {"get", "send", "stream", "fetch", "head", "delete"}
SEND_KEYWORDS = {"params", "data", "json", "headers", "content", "files"}
RUN = {("subprocess", None), ("os", "system"), ("os", "popen"), ("os", "execv"), ("os", "execvp"),
       ("os", "execl"), ("os", "spawnv"), ("runpy", None), ("os", "startfile"), ("pty", "spawn")}
WRITE = {"write", "write_text", "write_bytes", "writelines", "copy", "copyfile", "copy2", "symlink_to", "rename",
         "replace", "move", "dump"}
SECRET_FILE = re.compile(r"(^|[/\\])\.env$|\.hermes[/\\]\.env|\.hermes[/\\]auth\.json")
CREDENTIAL_FILE = re.compile(r"id_(rsa|ed25519|ecdsa|dsa)\b|\.ssh[/\\]|\.aws[/\\]credentials|\.netrc\b|"
                             r"\.git-credentials|\.docker[/\\]config\.json|\.kube[/\\]config|Login Data|\.gnupg|"
                             r"keychain-db|wallet\.dat|\.config[/\\]gh[/\\]hosts\.yml|\.npmrc|\.pypirc")
PERSIST = re.compile(r"\.(bashrc|zshrc|bash_profile|zprofile|zshenv|bash_login)\b|(^|[/~])\.profile$|config\.fish|"
                     r"\bcrontab\b|/etc/cron|/var/spool/cron|systemd[/\\]user|/etc/systemd/system|LaunchAgents|"
                     r"LaunchDaemons|\.config[/\\]autostart|(site|user)customize\.py|CurrentVersion\\\\?Run\b|"
                     r"\bschtasks\b")
SHELL_FETCH = re.compile(r"\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b|\b(iwr|Invoke-WebRequest|irm|"
                         r"Invoke-RestMethod)\b[^|]*\|\s*(iex|Invoke-Expression)")
DOWNLOAD_TEXT = re.compile(r"\b(curl|wget)\s|https?://|\biwr\b|Invoke-WebRequest")


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


def strings(node: ast.AST) -> Iterator[ast.Constant]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub


def is_main_guard(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


class Scope:
    """One scope of a module: its nodes and what each name assigned in it holds."""

    def __init__(self, body: list[ast.stmt], where: str, import_time: bool) -> None:
        self.where, self.import_time = where, import_time
        self.nodes = [n for n in scope_nodes(body)]
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
            return set(self.holds.get(node.id, ()))
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
        kinds: set[str] = set()
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


def _finding(level: str, rule: str, file: str, node: ast.AST, why: str) -> Finding:
    return Finding(level, rule, file, getattr(node, "lineno", 0), why)


def scan_source(text: str, file: str, *, hooks: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings of our rules in one Python source file (`file` names it in each finding)."""
    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError) as exc:
        return [Finding(NOTE, "unparsable", file, getattr(exc, "lineno", 0) or 0,
                        "not valid Python 3: not read by the rules (Python would not import it either)")]
    module_body = [n for n in tree.body if not is_main_guard(n)]
    scopes = [Scope(module_body, "at import", True)]
    scopes += [Scope(n.body, "when run as a script", False) for n in tree.body if is_main_guard(n)]
    pre_tool = set(hooks) | _pre_tool_call_hooks(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = "in register() (at load)" if node.name == "register" else f"in {node.name}()"
            scope = Scope(node.body, where, False)
            scope.hook = node.name in pre_tool
            scopes.append(scope)
    findings: list[Finding] = []
    for scope in scopes:
        findings += _scope_findings(scope, file)
    return findings


def _pre_tool_call_hooks(tree: ast.AST) -> set[str]:
    """Functions registered for `pre_tool_call`: by `ctx.register_hook("pre_tool_call", f)` or by name."""
    names = {"pre_tool_call"}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and dotted(node.func)[-1] == "register_hook" and len(node.args) >= 2
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "pre_tool_call"):
            target = node.args[1]
            if isinstance(target, (ast.Name, ast.Attribute)):
                names.add(dotted(target)[-1])
    return names


def _scope_findings(scope: Scope, file: str) -> Iterator[Finding]:
    when = scope.where
    runs: list[ast.Call] = []
    fetches = writes = False
    for node in scope.nodes:
        if not isinstance(node, ast.Call):
            continue
        parts = dotted(node.func)
        last, root = parts[-1], parts[0]
        args = [*node.args, *(k.value for k in node.keywords)]
        held = set().union(*(scope.kinds(a) for a in args)) if args else set()
        if last in ("loads", "load") and root in UNPICKLE and held & {"payload", "fetched"}:
            yield _finding(ASK, "obfuscated-exec" if "payload" in held else "download-exec", file, node,
                           f"unpickles (which runs code) {'an encoded blob' if 'payload' in held else 'data fetched from the network'} "
                           f"({'.'.join(parts)}) {when}")
        if last in EXEC or (root, last) == ("marshal", "loads"):
            if "decoded" in held:
                yield _finding(BLOCK, "obfuscated-exec", file, node,
                               f"runs code decoded from an encoded or compressed blob ({'.'.join(parts)}) {when}")
            elif "fetched" in held:
                level = BLOCK if scope.import_time else ASK
                yield _finding(level, "download-exec", file, node,
                               f"runs code fetched from the network ({'.'.join(parts)}) {when}")
            elif last in ("exec", "eval") and any(isinstance(s, ast.Call) and dotted(s.func)[-1] == "chr"
                                                  for a in args for s in ast.walk(a)):
                yield _finding(ASK, "obfuscated-exec", file, node, f"runs code built from character codes {when}")
        if last in ("__import__", "import_module") and "decoded" in held:
            yield _finding(ASK, "obfuscated-import", file, node, f"imports a module whose name is decoded {when}")
        if _is_send(parts, node):
            if "secret" in held:
                yield _finding(ASK, "secret-exfil", file, node,
                               f"sends a whole secret store (~/.hermes/.env, the environment, or a key file) off "
                               f"the machine ({'.'.join(parts)}) {when}")
            elif "credential" in held:
                yield _finding(ASK, "secret-exfil", file, node,
                               f"sends a credential file's contents off the machine ({'.'.join(parts)}) {when}")
        if _is_run(parts):
            runs.append(node)
            text = " ".join(s.value for a in args for s in strings(a))
            if SHELL_FETCH.search(text):
                level = BLOCK if scope.import_time else ASK
                yield _finding(level, "download-exec", file, node,
                               f"pipes a download into a shell ({'.'.join(parts)}) {when}")
            if ("secret" in held or "credential" in held) and NET_TOOL.search(text):
                yield _finding(ASK, "secret-exfil", file, node,
                               f"passes a whole secret store to a network command ({'.'.join(parts)}) {when}")
        if last in ("urlopen", "urlretrieve") or (last in DOWNLOAD and root.lower() in NET_ROOTS):
            fetches = True
        if last in WRITE or last == "urlretrieve" or (last == "open" and _opens_for_writing(node)):
            writes = True
        if last in ("open", "read_text", "read_bytes", "copy", "copyfile") and any(
                CREDENTIAL_FILE.search(s.value) for a in [*args, node.func] for s in strings(a)) | (
                "credpath" in held):
            yield _finding(ASK, "reads-credentials", file, node,
                           f"reads a credential file (SSH keys, cloud or registry credentials) {when}")
    if fetches and writes and runs:
        yield _finding(ASK, "download-then-run", file, runs[0],
                       f"downloads a file, writes it and runs a program {when}")
    if writes or runs:
        for const in (s for n in scope.nodes for s in strings(n) if s is n):
            if PERSIST.search(const.value) and len(const.value) < 300:
                yield _finding(ASK, "persistence", file, const,
                               f"writes where code runs again later ({PERSIST.search(const.value).group(0)!r}: "  # type: ignore[union-attr]
                               f"a shell start-up file, crontab, a service or a customize module) {when}")
                break
        if any(isinstance(s.value, str) and s.value.endswith(".pth") for n in scope.nodes for s in strings(n)) and \
                any(isinstance(s.value, str) and "site-packages" in s.value for n in scope.nodes for s in strings(n)):
            yield _finding(ASK, "persistence", file, scope.nodes[0] if scope.nodes else ast.Module(),
                           f"writes a .pth file into site-packages (code run at every Python start) {when}")
    if scope.hook:
        texts = [s for n in scope.nodes for s in strings(n) if s is n]
        rewrites = any(s.value == "modify" for s in texts) or any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Subscript) for t in n.targets) for n in scope.nodes)
        download = next((s for s in texts if DOWNLOAD_TEXT.search(s.value)), None)
        if rewrites and download is not None:
            yield _finding(ASK, "hook-rewrites-to-download", file, download,
                           f"a pre_tool_call hook that changes the tool's arguments puts a download in them {when}")


def _is_send(parts: list[str], call: ast.Call) -> bool:
    last, root = parts[-1], parts[0].lower()
    if last in SEND_STRONG:
        return True
    return last in SEND_WEAK and (root in NET_ROOTS or "session" in root or "client" in root or any(
        k.arg in SEND_KEYWORDS for k in call.keywords))


def _is_run(parts: list[str]) -> bool:
    return any(parts[0] == mod and (name is None or parts[-1] == name) for mod, name in RUN) and len(parts) > 1


def _opens_for_writing(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax"))
