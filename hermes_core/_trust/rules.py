"""The rules of our own for agent plugins, read from a module's syntax tree (`ast`): the code is
parsed, never imported or run.

Each scope (the module body, which runs at import, and each function) is read on its own, with
what its names hold (`taint`). A plugin that reads `~/.hermes/.env` or one variable of the
environment to call its own API is normal; what is flagged is a whole secret store going off the
machine, code that comes from the network or from an encoded blob being run, writes that make
code run again later, and a `pre_tool_call` hook turning a command into a download.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from .findings import ASK, BLOCK, NOTE, Finding
from .taint import CREDENTIAL_FILE, NET_ROOTS, SECRET_FILE, Returns, Scope, Text, dotted, scope_nodes, strings

__all__ = ["scan_source"]

EXEC = {"exec", "eval", "compile", "FunctionType"}
UNPICKLE = {"pickle", "dill", "cloudpickle", "_pickle", "cPickle"}
DOWNLOAD = {"get", "stream", "fetch"}
SEND_STRONG = {"post", "put", "patch", "urlopen", "Request", "sendall", "sendto", "sendmail", "send_message",
               "urlretrieve", "request", "gethostbyname", "getaddrinfo", "create_connection"}
SEND_WEAK = {"get", "send", "stream", "fetch", "head", "delete"}
SEND_KEYWORDS = {"params", "data", "json", "headers", "content", "files"}
RUN = {("subprocess", None), ("os", "system"), ("os", "popen"), ("os", "execv"), ("os", "execvp"),
       ("os", "execl"), ("os", "spawnv"), ("runpy", None), ("os", "startfile"), ("pty", "spawn")}
INTERPRETERS = {"sh", "bash", "zsh", "python", "python3", "powershell", "pwsh", "cmd", "executable", "node"}
WRITE = {"write", "write_text", "write_bytes", "writelines", "copy", "copyfile", "copy2", "symlink_to", "rename",
         "replace", "move", "dump"}
NET_TOOL = re.compile(r"\b(curl|wget|nc|ncat|scp|rsync|ftp)\b")
PERSIST = re.compile(r"\.(bashrc|zshrc|bash_profile|zprofile|zshenv|bash_login)\b|(^|[/~])\.profile$|config\.fish|"
                     r"\bcrontab\b|/etc/cron|/var/spool/cron|systemd[/\\]user|/etc/systemd/system|LaunchAgents|"
                     r"LaunchDaemons|\.config[/\\]autostart|(site|user)customize\.py|CurrentVersion\\\\?Run\b|"
                     r"\bschtasks\b|\.ssh[/\\]authorized_keys")
SHELL_FETCH = re.compile(r"\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b|\b(iwr|Invoke-WebRequest|irm|"
                         r"Invoke-RestMethod)\b[^|]*\|\s*(iex|Invoke-Expression)")
DOWNLOAD_TEXT = re.compile(r"\b(curl|wget)\s|https?://|\biwr\b|Invoke-WebRequest")


def is_main_guard(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def scan_source(text: str, file: str) -> list[Finding]:
    """The findings of our rules in one Python source file (`file` names it in each finding)."""
    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError) as exc:
        return [Finding(NOTE, "unparsable", file, getattr(exc, "lineno", 0) or 0,
                        "not valid Python 3: not read by the rules (Python would not import it either)")]
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    returns = Returns(functions)
    secrets = any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and (SECRET_FILE.search(n.value) or CREDENTIAL_FILE.search(n.value)) for n in ast.walk(tree))
    module = Scope(list(scope_nodes([n for n in tree.body if not is_main_guard(n)])), "at import", True, returns)
    scopes = [module]
    pre_tool = _pre_tool_call_hooks(tree)
    bodies: list[tuple[list[ast.stmt], str, bool]] = [
        (n.body, "when run as a script", False) for n in tree.body if isinstance(n, ast.If) and is_main_guard(n)]
    bodies += [(n.body, "in register() (at load)" if n.name == "register" else f"in {n.name}()", n.name in pre_tool)
               for n in functions]
    for body, where, hook in bodies:
        nodes = list(scope_nodes(body))
        if hook or _worth_reading(nodes, secrets):  # most functions hold nothing any rule looks for
            scope = Scope(nodes, where, False, returns, module.holds)
            scope.hook = hook
            scopes.append(scope)
    found = [finding for scope in scopes for finding in _scope_findings(scope, file)]
    return list({(f.rule, f.line, f.why): f for f in found}.values())  # `exec(compile(...))` is one finding


def _is_exec(parts: list[str]) -> bool:
    """`exec(...)`, `eval(...)`, `compile(...)`, `builtins.exec(...)`, `types.FunctionType(...)` (not
    `re.compile`; `marshal.loads` only makes a code object: what runs it is the sink)."""
    last, root = parts[-1], parts[0]
    return last in EXEC and (len(parts) == 1 or root in ("builtins", "__builtins__", "types"))


def _worth_reading(nodes: list[ast.AST], secrets: bool) -> bool:
    """Whether a scope holds anything a rule can fire on: a call that runs code or a program, sends,
    unpickles, imports by name, reads a file (in a module naming a secret's path), or a persistence path."""
    for node in nodes:
        if isinstance(node, ast.Call):
            parts = dotted(node.func)
            if (_is_exec(parts) or _is_run(parts) or _is_send(parts, node) or parts[0] in UNPICKLE
                    or parts[-1] in ("__import__", "import_module", "urlretrieve", "chmod")
                    or (secrets and parts[-1] in ("open", "read_text", "read_bytes", "copy", "copyfile"))):
                return True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PERSIST.search(node.value):
            return True
    return False


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


def _finding(level: str, rule: str, file: str, node: ast.AST, why: str) -> Finding:
    return Finding(level, rule, file, getattr(node, "lineno", 0), why)


def _scope_findings(scope: Scope, file: str) -> Iterator[Finding]:
    when = scope.where
    fetched_files: set[str] = set()  # names of files written with what was downloaded
    runs: list[tuple[ast.Call, list[ast.expr]]] = []
    writes = chmod = False
    for node in scope.nodes:
        if not isinstance(node, ast.Call):
            continue
        parts = dotted(node.func)
        last, root, name = parts[-1], parts[0], ".".join(parts)
        args = [*node.args, *(k.value for k in node.keywords)]
        held = set().union(*(scope.kinds(a) for a in args)) if args else set()
        if last in ("loads", "load") and root in UNPICKLE and held & {"payload", "fetched"}:
            what = "an encoded blob written into the code" if "payload" in held else "data from the network"
            yield _finding(ASK, "obfuscated-exec" if "payload" in held else "download-exec", file, node,
                           f"unpickles {what}, which runs code ({name}) {when}")
        if _is_exec(parts):
            if "decoded" in held:
                yield _finding(BLOCK, "obfuscated-exec", file, node,
                               f"runs code decoded from an encoded or compressed blob ({name}) {when}")
            elif "fetched" in held:
                yield _finding(BLOCK if scope.import_time else ASK, "download-exec", file, node,
                               f"runs code fetched from the network ({name}) {when}")
            elif last in ("exec", "eval") and any(isinstance(s, ast.Call) and dotted(s.func)[-1] == "chr"
                                                  for a in args for s in ast.walk(a)):
                yield _finding(ASK, "obfuscated-exec", file, node, f"runs code built from character codes {when}")
        if last in ("__import__", "import_module") and "decoded" in held:
            yield _finding(ASK, "obfuscated-import", file, node, f"imports a module whose name is decoded {when}")
        if _is_send(parts, node) and held & {"secret", "credential"}:
            yield _finding(ASK, "secret-exfil", file, node,
                           f"sends {_what(held)} off the machine ({name}) {when}")
        if _is_run(parts):
            text = " ".join(s.value for a in args for s in strings(a))
            runs.append((node, args))
            if SHELL_FETCH.search(text):
                yield _finding(BLOCK if scope.import_time else ASK, "download-exec", file, node,
                               f"pipes a download into a shell ({name}) {when}")
            if NET_TOOL.search(text) and held & {"secret", "credential", "path", "credpath"}:
                yield _finding(ASK, "secret-exfil", file, node,
                               f"hands {_what(held)} to a network command ({name}) {when}")
        if last == "urlretrieve" and len(node.args) > 1:
            fetched_files |= _names(node.args[1])
        if last in ("write", "write_bytes") and "fetched" in held and isinstance(node.func, ast.Attribute):
            fetched_files |= _names(node.func.value)
        if last in WRITE or last == "urlretrieve" or (last == "open" and _opens_for_writing(node)):
            writes = True
        if last == "chmod":
            chmod = True
        if last in ("open", "read_text", "read_bytes", "copy", "copyfile") and (any(
                CREDENTIAL_FILE.search(s.value) for a in [*args, node.func] for s in strings(a)) or "credpath" in held):
            yield _finding(ASK, "reads-credentials", file, node,
                           f"reads a credential file (SSH keys, cloud or registry credentials) {when}")
    for node in scope.nodes:  # `with open(path, "wb") as f: f.write(fetched)`: `path` holds a download
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if (isinstance(call, ast.Call) and dotted(call.func)[-1] == "open" and call.args
                        and isinstance(item.optional_vars, ast.Name) and item.optional_vars.id in fetched_files):
                    fetched_files |= _names(call.args[0])
    for run, args in runs:
        if fetched_files and (_program_names(args) & fetched_files or chmod):
            yield _finding(ASK, "download-then-run", file, run,
                           f"downloads a file and runs it as a program ({'.'.join(dotted(run.func))}) {when}")
            break
    if writes or runs:
        for const in _texts(scope):
            match = PERSIST.search(const.value)
            if match and len(const.value) < 300:
                yield _finding(ASK, "persistence", file, const.node,
                               f"writes where code runs again later ({match.group(0)!r}: a shell start-up file, "
                               f"crontab, a service or a customize module) {when}")
                break
        texts = [t.value for t in _texts(scope)]
        if any(t.endswith(".pth") for t in texts) and any("site-packages" in t or "purelib" in t for t in texts):
            yield _finding(ASK, "persistence", file, scope.nodes[0],
                           f"writes a .pth file into site-packages (code run at every Python start) {when}")
    if scope.hook:
        consts = _texts(scope)
        rewrites = any(s.value == "modify" for s in consts) or any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Subscript) for t in n.targets) for n in scope.nodes)
        download = next((s for s in consts if DOWNLOAD_TEXT.search(s.value)), None)
        if rewrites and download is not None:
            yield _finding(ASK, "hook-rewrites-to-download", file, download.node,
                           f"a pre_tool_call hook that changes the tool's arguments puts a download in them {when}")


def _texts(scope: Scope) -> list[Text]:
    return [Text(n, n.value, n.lineno) for n in scope.nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _what(held: set[str]) -> str:
    if "secret" in held:
        return "a whole secret store (~/.hermes/.env or the whole environment)"
    if "credential" in held or "credpath" in held:
        return "a credential file's contents"
    return "~/.hermes/.env"


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _program_names(args: list[ast.expr]) -> set[str]:
    """The names in the program a run call starts: its first argument (or list item), or the script an
    interpreter (`sh`, `python`, `sys.executable`) is given."""
    if not args:
        return set()
    first = args[0]
    items = list(first.elts) if isinstance(first, (ast.List, ast.Tuple)) else [first]
    names = _names(items[0]) if items else set()
    head = items[0] if items else None
    if len(items) > 1 and head is not None and (
            (isinstance(head, ast.Constant) and str(head.value).rsplit("/", 1)[-1] in INTERPRETERS)
            or dotted(head)[-1] in INTERPRETERS):
        names |= _names(items[1])
    return names - {"sys", "os"}


def _is_send(parts: list[str], call: ast.Call) -> bool:
    last, root = parts[-1], parts[0].lower()
    if last in SEND_STRONG:
        return True
    return last in SEND_WEAK and (root in NET_ROOTS or "session" in root or "client" in root or any(
        k.arg in SEND_KEYWORDS for k in call.keywords))


def _is_run(parts: list[str]) -> bool:
    return len(parts) > 1 and any(parts[0] == mod and (name is None or parts[-1] == name) for mod, name in RUN)


def _opens_for_writing(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax"))
