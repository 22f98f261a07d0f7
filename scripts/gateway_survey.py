#!/usr/bin/env python3
"""Can hermes-core's messaging gateway run the published Hermes platform-adapter plugins?

The gateway counterpart of `hermes_survey.py`, whose venv, cache, download, install and clean-up
functions it reuses (imported as a module from this folder): one venv with hermes-core from
CHECKOUT (default: the current directory), never `hermes-agent`. For each pinned adapter below
(PyPI packages that subclass `gateway.platforms.base.BasePlatformAdapter` and add their platform
with `ctx.register_platform`): install it and its dependencies (except `hermes-agent`, which would
bring the real Hermes modules along and hide what hermes-core lacks), run its own installer where it
ships one (a folder plugin copied into $HERMES_HOME), enable every plugin id it added under a fresh
HERMES_HOME, and record

1. `hermes plugins doctor --json`: loaded, or the one-line error (and the Hermes names it imported);
2. the platform(s) it registered (doctor's `platforms` list);
3. with `platforms.<name>.enabled: true` for each, `hermes gateway status --json`: ready, or the
   detail saying what it lacks;
4. for a ready platform, `hermes gateway run` for RUN_SECONDS (default 8; `gateway.connect_timeout`
   is set below it), then SIGTERM: the stderr line saying it connected or why connecting failed (no
   real credentials exist here and only loopback is reachable: a failure line is the expected
   result). `model:` points at a loopback model (hermes_survey's `LoopbackModel`).

What stands in the way is kept in the JSON beside each step: a failed plugin's traceback (the
doctor prints one line), the exceptions a plugin caught and logged (`hermes --debug plugins doctor`),
what a platform's check_fn / validate_config return with the Hermes imports that failed inside
them, and a `needs` list: the Hermes names and members each failure names.

A platform that is not ready is tried once more with placeholder values in the environment
variables it names (the status detail's `missing ...`, its `required_env`), then also in those its
checks read that look like a credential or an address (URL-like names get http://127.0.0.1:9,
others a dummy string; set PLACEHOLDERS=0 to skip): that shows whether the adapter's constructor and connect() run on hermes-core's base class.
Its line and the JSON say "with placeholder credentials".

Several adapters require Python >= 3.12 or 3.13 (`any_python` below): on an older Python they are
installed with --ignore-requires-python and may fail for that alone; survey them again with a newer
Python (and its own PYPI_CACHE) to see past it.

Downloads share hermes_survey's cache ($PYPI_CACHE, default $TMPDIR/hermes-survey/pypi-cache): a
rerun installs from there with --no-index. The cache's deps/ holds wheels for the Python that filled
it: use another PYPI_CACHE for another Python.

Output: one line per package, then
    adapters: loaded L/N, platform registered P/N, ready-or-says-what-it-lacks S/N, connected-or-tried C/N
Details go to $WORK/gateway_results.json ({checkout: the commit and a digest of the uncommitted
changes measured, python, packages: [...]}; WORK default $TMPDIR/hermes-survey/gateway).
Arguments: package names to survey only those.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("WORK", str(Path(tempfile.gettempdir()) / "hermes-survey/gateway"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import hermes_survey as base  # noqa: E402 - after WORK's default, which it reads on import

RUN_SECONDS = float(os.environ.get("RUN_SECONDS", "8"))
PLACEHOLDERS = os.environ.get("PLACEHOLDERS", "1") != "0"

# name, version; pre: a pre-release pin; any_python: its Requires-Python excludes 3.11 (installed with
# --ignore-requires-python); extras: installed with it (what its register() or connect() needs);
# setup: its own installer, run after install ({home} = HERMES_HOME, {site} = site-packages; HOME is
# HERMES_HOME's parent, so an installer that writes into ~ stays in the survey's folder).
# Not surveyed: hermes-napcat 0.2.10 (no entry point or plugin folder; its installer edits Hermes'
# source files: gateway/config.py, gateway/run.py, toolsets.py) and s2x5-agentim 1.0.0 (never calls
# ctx.register_platform; its register() monkey-patches Hermes' gateway, cron and CLI at run time):
# neither adds a platform through the plugin API that is being measured.
PACKAGES: list[dict] = [
    dict(name="agentvault-hermes", version="0.9.15", extras=["mls"]),
    dict(name="aicq-hermes", version="1.4.2"),
    dict(name="atalk-hermes", version="0.1.0a11", pre=True),
    dict(name="borgee-hermes-plugin", version="0.3.5"),
    dict(name="canon-hermes-plugin", version="0.17.15", any_python=True),  # >=3.13 (3.11 would get 0.14.1)
    dict(name="chatlytics-hermes", version="3.0.1"),
    dict(name="clawhive-hermes-plugin", version="0.1.6", extras=["realtime"]),
    dict(name="grix-hermes", version="1.0.7"),
    dict(name="helloagent-hermes-plugin", version="0.1.2"),
    dict(name="hermes-a365", version="0.9.4", extras=["bridge"]),  # its check_fn: pip install hermes-a365[bridge]
    dict(name="hermes-baiduapp", version="0.1.3"),
    dict(name="hermes-band", version="0.1.0"),
    dict(name="hermes-channel-agentclub", version="0.1.7"),
    dict(name="hermes-email-pp", version="0.5.2", any_python=True),  # >=3.13 (3.11 would get 0.5.1)
    dict(name="hermes-gerrit", version="0.0.1.dev26", pre=True, any_python=True),  # >=3.12, no 3.11 release
    dict(name="hermes-hookdeck", version="1.0.1"),
    dict(name="hermes-imessage", version="0.1.2"),
    dict(name="hermes-infoflow", version="2026.6.11"),
    dict(name="hermes-kinthai", version="1.0.1"),
    dict(name="hermes-lansenger-adapter", version="2.9.17"),
    dict(name="hermes-mesh", version="0.1.24"),
    dict(name="hermes-onebot-adapter", version="1.9.0", note="folder plugin copied by its installer",
         setup=[["hermes-onebot-adapter", "install", "--hermes-dir", "{home}"]]),
    dict(name="hermes-pingram-gateway", version="1.0.0"),
    dict(name="hermes-platform-stagewhisper", version="0.43.0", note="folder plugin copied by its installer",
         setup=[["stagewhisper-hermes-install", "--plugins-dir", "{home}/plugins"]]),
    dict(name="hermes-plivo-phone-gateway", version="0.2.1"),
    dict(name="hermes-plivo-sms-gateway", version="0.1.0"),
    dict(name="hermes-rine", version="0.8.1"),
    dict(name="hermes-ringcentral", version="2026.6.7"),
    dict(name="hermes-vk-community", version="1.1.4"),
    dict(name="hermes-voip", version="0.3.1", any_python=True),  # >=3.13, no 3.11 release
    dict(name="hermes-wpsxiezuo", version="0.9.0", note="folder plugin copied by its installer into plugins/platforms/",
         setup=[["hermes-wpsxiezuo", "install", "--copy"]]),
    dict(name="lightclawbot", version="0.0.21"),
    dict(name="r2-relay-adapter", version="0.1.2", any_python=True),  # >=3.12, no 3.11 release
    dict(name="relay-hermes", version="1.0.0rc9", pre=True),
    dict(name="shadownet-hermes-plugin", version="0.6.0", any_python=True),  # >=3.12
    dict(name="usepaxterapp", version="0.1.11"),
    dict(name="watchline-hermes-plugin", version="0.1.4"),
    dict(name="wishee-hermes-connector", version="0.16.2"),
    dict(name="yoooclaw-hermes-plugin", version="0.11.0"),
]

# config.yaml for `gateway run`: one connect attempt inside RUN_SECONDS, a quick stop
GATEWAY_SETTINGS = {"connect_timeout": max(1.0, RUN_SECONDS - 3), "shutdown_grace": 2}

MERGE_CONFIG = """import json, sys, yaml
from pathlib import Path
path, add = Path(sys.argv[1]), json.loads(sys.argv[2])
data = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
def merge(into, more):
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
merge(data, add)
path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
"""


def fetch(pkg: dict) -> Path | None:
    """The pinned wheel, from the cache or PyPI (with --pre / --ignore-requires-python when pinned so)."""
    flags = (["--pre"] if pkg.get("pre") else []) + (["--ignore-requires-python"] if pkg.get("any_python") else [])
    if not flags:
        return base.fetch_plugin(pkg["name"], pkg["version"])
    found = base.wheel_for(pkg["name"], pkg["version"])
    if found:
        return found
    base.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *flags, "-d", str(base.CACHE),
              f"{pkg['name']}=={pkg['version']}"])
    return base.wheel_for(pkg["name"], pkg["version"])


def extra_requires(dist: Path, extras: list[str]) -> list[str]:
    """The Requires-Dist lines of `extras` (their markers dropped)."""
    if not extras:
        return []
    out = []
    for r in base.requirement_lines(dist):
        m = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", r)
        if m and m.group(1) in extras:
            out.append(r.split(";")[0].strip())
    return out


def merge_config(home: Path, add: dict) -> None:
    """Deep-merge `add` into $HERMES_HOME/config.yaml (with the venv's PyYAML, hermes-core's dependency)."""
    rc, out, err = base.run([str(base.PY), "-c", MERGE_CONFIG, str(home / "config.yaml"), json.dumps(add)])
    if rc:
        raise RuntimeError(f"cannot edit {home / 'config.yaml'}: {base.last_line(err)}")


def hermes_lines(err: str) -> list[str]:
    return [l.rstrip() for l in (err or "").splitlines() if l.strip()]


# What a failure says it needed: (pattern, label). The first match wins.
NEEDS = [
    (r"needs the Hermes Agent host \(imports ([\w.]+)\)", lambda m: f"{m[1]} (not served)"),
    (r"([\w.]+) is not served by hermes-core", lambda m: f"{m[1]} (not served)"),
    (r"needs ([\w.\-]+) \(imports ([\w.]+)\), which Hermes Agent installs", lambda m: f"package {m[1]}"),
    (r"cannot import name '(\w+)' from '([\w.]+)'", lambda m: f"{m[2]}.{m[1]}"),
    (r"No module named '([\w.]+)'", lambda m: f"module {m[1]}"),
    (r"ctx\.(\w+) of plugin .*? needs a host", lambda m: f"ctx.{m[1]} (host capability)"),
    (r"'PluginContext' object has no attribute '(\w+)'", lambda m: f"ctx.{m[1]}"),
    (r"type object '(\w+)' has no attribute '(\w+)'", lambda m: f"{m[1]}.{m[2]}"),
    (r"module '([\w.]+)' has no attribute '(\w+)'", lambda m: f"{m[1]}.{m[2]}"),
    (r"'(\w+)' object has no attribute '(\w+)'", lambda m: f"{m[1]}.{m[2]}"),
    (r"([\w.]+)\(\) got an unexpected keyword argument '(\w+)'", lambda m: f"{m[1]}({m[2]}=)"),
    (r"([\w.]+)\(\) missing \d+ required (?:positional|keyword-only) arguments?: (.+?)(?:\)|$)",
     lambda m: f"{m[1]}: callers omit {m[2]}"),
    (r"unknown arguments? ([\w, ]+) \(PlatformEntry", lambda m: f"PlatformEntry fields {m[1]}"),
    (r"is missing ([\w., ]+?), which this plugin needs", lambda m: f"{m[1]} (the plugin's own check)"),
    (r"registered no platform provider", lambda m: "a `kind: platform` plugin that calls ctx.register_platform "
                                                   "(taken for a provider slot)"),
    (r"loaded but registered nothing", lambda m: "register() not found (loaded but registered nothing)"),
    (r"object NoneType can't be used in 'await' expression",
     lambda m: "an awaited BasePlatformAdapter method that is not async here (Hermes': async)"),
]


def needed(text: str) -> str | None:
    for pattern, label in NEEDS:
        m = re.search(pattern, text or "")
        if m:
            return label(m)
    return None


def logged_exceptions(env: dict) -> list[dict]:
    """The tracebacks `hermes --debug plugins doctor` prints for exceptions the plugin logged: the
    log line before each, its last frames and the exception."""
    rc, _, err = base.run([str(base.HERMES), "--debug", "plugins", "doctor", "--json"], env=env, timeout=180)
    lines = [l for l in (err or "").splitlines() if l.strip()]
    found = []
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            j = i + 1
            while j < len(lines) and (lines[j].startswith(" ") or lines[j].startswith("\t")):
                j += 1
            if j < len(lines):
                said = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].startswith("hermes: ")), "")
                frames = [l.strip() for l in lines[i + 1:j] if l.strip().startswith("File ")]
                found.append({"logged": said[:300], "where": frames[-3:], "exception": lines[j][:400]})
    return found[:10]


TRACEBACKS = """import json
from hermes_core import PluginManager
manager = PluginManager().load()
print(json.dumps({r.id: r.failure.traceback for r in manager.records if r.failure and r.failure.traceback}))
"""


def tracebacks(env: dict) -> dict[str, list[str]]:
    """The last frames of each failed plugin's traceback (the doctor prints one line; where in the
    plugin it stopped is in the traceback hermes-core keeps)."""
    rc, out, err = base.run([str(base.PY), "-c", TRACEBACKS], env=env, timeout=180)
    try:
        found = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"?": [f"could not read the tracebacks: {base.last_line(err)}"]}
    return {pid: [l for l in text.splitlines() if l.strip()][-16:] for pid, text in found.items()}


PROBE = """import builtins, importlib, importlib.util, json, re, sys
from hermes_core import PluginManager
from hermes_core._hermes.host import HERMES_TOP_LEVEL
from hermes_core.gateway.config import platform_config
from hermes_core.gateway.readiness import platform_block
manager = PluginManager().load()
missing = []
real_import, real_module, real_spec = builtins.__import__, importlib.import_module, importlib.util.find_spec
def traced_import(name, globals=None, locals=None, fromlist=(), level=0):
    try:
        return real_import(name, globals, locals, fromlist, level)
    except ImportError as exc:
        where = re.search(r"from '([\\w.]+)'", str(exc))
        if (where.group(1) if where else name).split(".")[0] in HERMES_TOP_LEVEL:  # not optional-import noise
            missing.append(f"import {name}" + (f" ({', '.join(fromlist)})" if fromlist else "") + f": {exc}")
        raise
def traced_module(name, package=None):
    try:
        return real_module(name, package)
    except ImportError as exc:
        if name.split(".")[0] in HERMES_TOP_LEVEL:
            missing.append(f"import_module {name}: {exc}")
        raise
def traced_spec(name, package=None):
    spec = real_spec(name, package)
    if spec is None and name.split(".")[0] in HERMES_TOP_LEVEL:
        missing.append(f"find_spec {name}: None")
    return spec
builtins.__import__, importlib.import_module, importlib.util.find_spec = traced_import, traced_module, traced_spec
def call(fn, *args):
    missing.clear()
    try:
        value = repr(fn(*args))
    except Exception as exc:
        value = f"raised {type(exc).__name__}: {exc}"
    return {"returned": value[:300], "failed_imports": list(dict.fromkeys(missing))[:8]}
ENV = re.compile(r"[\\"']([A-Z][A-Z0-9]*_[A-Z0-9_]+)[\\"']")
def env_names(fn, depth=2, seen=None):
    # the environment variables a check names: string literals in its source, in the module
    # constants it reads, and in the functions of its module it calls (two levels down)
    import inspect
    seen = set() if seen is None else seen
    fn = getattr(fn, "__func__", fn)
    if not inspect.isfunction(fn) or fn in seen:
        return set()
    seen.add(fn)
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return set()
    names = set(ENV.findall(source))
    for word in set(re.findall(r"\\b[A-Za-z_]\\w*\\b", source)):
        value = fn.__globals__.get(word)
        if isinstance(value, str):
            value = [value]
        if isinstance(value, (list, tuple, set, frozenset)):
            names |= {v for v in value if isinstance(v, str) and re.fullmatch(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+", v)}
        elif depth and inspect.isfunction(value):
            names |= env_names(value, depth - 1, seen)
    return names
out = {}
for name in sys.argv[1:]:
    entry = manager.platforms.get(name)
    if entry is None:
        continue
    out[name] = {"required_env": list(entry.required_env),
                 "env_read": sorted(env_names(entry.check_fn) | env_names(entry.validate_config)
                                    | env_names(entry.is_connected))}
    out[name]["check_fn"] = call(entry.check_fn)
    check = entry.validate_config or entry.is_connected
    if check is not None:
        settings = platform_config(platform_block(manager.config, name))
        out[name]["validate_config" if entry.validate_config else "is_connected"] = call(check, settings)
builtins.__import__, importlib.import_module, importlib.util.find_spec = real_import, real_module, real_spec
print(json.dumps(out))
"""


def probe(env: dict, names: list[str]) -> dict:
    """What a platform's check_fn and validate_config return here, with the imports that failed while
    they ran (the status detail only says "its requirements are not met")."""
    rc, out, err = base.run([str(base.PY), "-c", PROBE, *names], env=env, timeout=120)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"?": f"probe failed: {base.last_line(err)}"}


# not given a placeholder: switches that would turn a check off or change how the plugin runs
SKIP_VARS = re.compile(r"DISABLE|SKIP|DEBUG|LOG|TEST|DRY|HERMES_HOME|^HOME$|PROXY|ALLOW_ALL|INSECURE|_PATH$|_DIR$|_FILE$")


CREDENTIAL = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|_ID|URL|ENDPOINT|HOST|ADDRESS|NUMBER|BUCKET|REGION|USER|"
                        r"USERNAME|ACCOUNT|EMAIL|PHONE|UIN)$")


def placeholder(var: str) -> str:
    up = var.upper()
    if re.search(r"(URL|ENDPOINT|SERVER|BASE)$", up) or "_URL" in up:
        return "http://127.0.0.1:9"
    if up.endswith("_HOST") or up.endswith("HOST"):
        return "127.0.0.1"
    if up.endswith("PORT"):
        return "9"
    if up.endswith("REGION"):
        return "us"
    if re.search(r"(_ID|NUMBER|UIN)$", up):
        return "10001"
    return "survey-placeholder"


def missing_vars(detail: str) -> list[str]:
    m = re.search(r"missing ([A-Z0-9_, ]+)", detail or "")
    return [v.strip() for v in m.group(1).split(",") if v.strip()] if m else []


def status_rows(env: dict, names: list[str]) -> tuple[list[dict], str]:
    rc, status, err = base.hermes_json(["gateway", "status", "--json"], env)
    if status is None:
        return [], f"gateway status gave no JSON: {base.last_line(err)}"
    return [r for r in status.get("platforms", []) if r["platform"] in names], ""


OUTCOME = re.compile(r": (connected|connecting failed|connecting timed out|failed and will not be retried|"
                     r"connection lost|its adapter_factory returned None)|; connecting again in")


def gateway_run(env: dict, home: Path, names: list[str]) -> dict:
    """`hermes gateway run` for RUN_SECONDS, then SIGTERM; its stderr and each platform's outcome line."""
    p = subprocess.Popen([str(base.HERMES), "gateway", "run"], env=env, cwd=str(home), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    ended = "exited by itself"
    try:
        out, err = p.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        ended = "SIGTERM"
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=25)
        except subprocess.TimeoutExpired:
            ended = "SIGTERM, then SIGKILL (did not stop in 25 s)"
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
    try:  # whatever an adapter started in the gateway's process group
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    lines = hermes_lines(err)
    outcome = {}
    for name in names:
        mine = [i for i, l in enumerate(lines) if l.startswith(f"hermes: gateway: {name}: ")]
        hit = next((i for i in mine if OUTCOME.search(lines[i])), None)
        hit = hit if hit is not None else next(iter(mine), None)
        if hit is None:
            outcome[name] = None
            continue
        line = lines[hit].removeprefix("hermes: gateway: ")
        # "connect() returned False" says nothing more: the adapter's own last complaint before it does
        said = [l for l in lines[:hit] if not l.startswith("hermes: gateway: ")
                and re.search(r"error|fail|refused|cannot|could not|unable|invalid|denied|timed? ?out", l, re.I)]
        if said and "returned False" in line:
            line += f" [adapter: {said[-1].removeprefix('hermes: ')[:240]}]"
        outcome[name] = line
    general = [l.removeprefix("hermes: gateway: ") for l in lines if l.startswith("hermes: gateway: no messaging")]
    other = [l for l in lines if not l.startswith("hermes: gateway: ")]
    return {"rc": p.returncode, "ended": ended, "outcome": outcome, "general": general,
            "stderr": lines[:80], "other_stderr": other[:40], "stdout": (out or "")[-2000:]}


def tried(line: str | None) -> bool:
    """An outcome line: the platform's connect() ran (connected, failed, timed out)."""
    return bool(line and OUTCOME.search(line))


def test_package(pkg: dict, baseline_ids: set[str], model_url: str) -> dict:
    res = dict(name=pkg["name"], version=pkg["version"], notes=[], discovered=False, loaded=False,
               platforms=[], ready={}, connect={}, needs=[])
    if pkg.get("note"):
        res["notes"].append(pkg["note"])
    dist = fetch(pkg)
    if dist is None:
        res["failure"] = "could not download"
        return res
    before = base.freeze()
    reqs = [r for r in base.requires(dist) if base.req_name(r) not in base.NEVER_INSTALL]
    extras = [r for r in extra_requires(dist, pkg.get("extras", [])) if base.req_name(r) not in base.NEVER_INSTALL]
    dropped = [r for r in base.requires(dist) if base.req_name(r) in base.NEVER_INSTALL]
    if dropped:
        res["notes"].append(f"not installed: {', '.join(dropped)} (the real host)")
    if pkg.get("any_python"):
        res["notes"].append("installed with --ignore-requires-python")
    rc, _, err = base.pip_local("--no-deps", *(["--ignore-requires-python"] if pkg.get("any_python") else []),
                                str(dist))
    if rc != 0:
        res["failure"] = f"install failed: {base.last_line(err)}"
        return res
    root = Path(tempfile.mkdtemp(prefix=f"gw-{base.norm(pkg['name'])}-", dir=str(base.WORK)))
    try:
        for tag, wanted, what in (("", reqs, "dependencies"), ("-extras", extras, f"extras {pkg.get('extras')}")):
            if not wanted:
                continue
            ok, why = base.fetch_deps(f"{base.norm(pkg['name'])}-{pkg['version']}{tag}", wanted)
            rc, _, err = base.pip_local(*wanted) if ok else (1, "", why)
            if rc != 0:
                res["notes"].append(f"{what} not installed ({base.last_line(err)})")
            elif tag:
                res["notes"].append(f"with {what}")
        _survey(pkg, res, root, baseline_ids, model_url)
    finally:
        after = base.freeze()
        new = [n for n in after if n not in before]
        if new:
            base.run([str(base.PY), "-m", "pip", "uninstall", "-y", "-q", *new])
        changed = [f"{n}=={v}" for n, v in before.items() if n in after and after[n] != v]
        if changed:
            base.pip_local("--no-deps", *changed)
            res["notes"].append(f"restored: {', '.join(changed)}")
        shutil.rmtree(root, ignore_errors=True)
    return res


def _survey(pkg: dict, res: dict, root: Path, baseline_ids: set[str], model_url: str) -> None:
    home = root / ".hermes"
    (home / "plugins").mkdir(parents=True)
    env = dict(os.environ, HOME=str(root), HERMES_HOME=str(home), PATH=f"{base.VENV / 'bin'}:{os.environ['PATH']}",
               OPENAI_API_KEY="sk-local")
    env.pop("HERMES_ENABLE_PROJECT_PLUGINS", None)
    site = base.site_packages()
    for cmd in pkg.get("setup", []):
        cmd = [c.format(home=home, site=site) for c in cmd]
        rc, out, err = base.run(cmd, env=env, timeout=120, cwd=str(root))
        res["notes"].append(f"setup `{' '.join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd))}`"
                            f" -> rc {rc}" + (f": {base.last_line(err or out)}" if rc else ""))
    rc, listing, err = base.hermes_json(["plugins", "list", "--json"], env)
    mine = [p for p in (listing or []) if p["id"] not in baseline_ids]
    res["list"] = mine
    res["discovered"] = bool(mine)
    if not mine:
        res["failure"] = "no plugin discovered (no entry point in a group hermes-core reads, no plugin folder it scans)"
        return
    ids = {p["id"] for p in mine}
    for pid in sorted(ids):
        base.run([str(base.HERMES), "plugins", "enable", pid], env=env)
    # (1) doctor: loaded, or the one-line error; (2) the platforms it registered
    rc, doctor, err = base.hermes_json(["plugins", "doctor", "--json"], env)
    res["doctor_stderr"] = hermes_lines(err)[-30:]
    if doctor is None:
        res["failure"] = f"doctor gave no JSON: {base.last_line(err)}"
        return
    rows = [d for d in doctor.get("plugins", []) if d["id"] in ids]
    res["doctor"] = rows
    res["problems"] = [p for p in doctor.get("problems", []) if any(i in str(p) for i in ids)]
    res["warnings"] = [w for w in doctor.get("warnings", []) if any(i in str(w) for i in ids)]
    res["hermes_names"] = sorted({n for d in rows for n in d.get("hermes_names") or []})
    res["loaded"] = bool(rows) and all(d["status"] == "ok" for d in rows)
    errors = [f"{d['id']}: {d['error']}" for d in rows if d.get("error")]
    errors += [f"{p['id']}: {p['error']}" for p in mine if p.get("error") and p["id"] not in {d["id"] for d in rows}]
    res["failure"] = "; ".join(errors)
    if errors:
        res["tracebacks"] = tracebacks(env)
    res["needs"] = [n for n in (needed(e) for e in errors + res["warnings"]) if n]
    if res["loaded"]:
        # a plugin that catches a failure logs it (the traceback only with --debug): what did it catch?
        res["logged_exceptions"] = logged_exceptions(env)
        res["needs"] += [f"{n} (caught and logged by the plugin)" for n in
                         (needed(x["exception"]) for x in res["logged_exceptions"]) if n]
    registered = [p for p in doctor.get("platforms", []) if p.get("plugin") in ids]
    res["platforms"] = [p["name"] for p in registered]
    if not registered:
        # a guarded register() says why in a log line
        said = [l for l in res["doctor_stderr"] if re.search(r"register_platform|platform|gateway", l, re.I)]
        res["no_platform_why"] = res["failure"] or (said[-1] if said else "registered no platform")
        return
    # (3) each platform enabled: ready, or what it lacks
    names = res["platforms"]
    merge_config(home, {"platforms": {n: {"enabled": True} for n in names}})
    rows, why = status_rows(env, names)
    res["status"] = rows or why
    res["ready"] = {r["platform"]: ("ready" if r["ready"] else r["detail"] or r["state"]) for r in rows}
    for n in names:
        res["ready"].setdefault(n, why or "not in gateway status")
        res["needs"] += [x for x in [needed(res["ready"][n])] if x and "raised" in res["ready"][n]]
    vague = [n for n in names if res["ready"][n] != "ready"]
    if vague:
        res["probe"] = probe(env, vague)
        for n, calls in res["probe"].items():
            for what, got in (calls.items() if isinstance(calls, dict) else ()):
                if not isinstance(got, dict):
                    continue
                for text in got.get("failed_imports", []) + [got.get("returned", "")]:
                    x = needed(text)
                    if x:
                        res["needs"].append(f"{x} (in {what})")
    # (4) gateway run for the ready ones
    merge_config(home, {"model": {"provider": "custom", "model": "local-model", "base_url": model_url},
                        "gateway": GATEWAY_SETTINGS})
    ready = [n for n in names if res["ready"][n] == "ready"]
    if ready:
        run = gateway_run(env, home, names)
        res["run"] = run
        res["connect"] = {n: run["outcome"].get(n) or (run["general"] or ["no line"])[0] for n in ready}
    # not ready only for want of environment variables: once more with placeholders
    # first the variables it names as required, then also those its checks read
    usable = lambda vs: [v for v in dict.fromkeys(vs) if v.isidentifier() and not os.environ.get(v)
                         and not SKIP_VARS.search(v)]
    fake: dict[str, str] = {}
    for step in ("required", "read"):
        lacking = {}
        for n in names:
            if n in ready or (res.get("placeholder_ready") or {}).get(n) == "ready":
                continue
            seen = (res.get("probe") or {}).get(n) or {}
            named = missing_vars(res["ready"][n]) + list(seen.get("required_env") or [])
            if step == "read":  # only names that look like a credential or an address, not a mode or switch
                named += [v for v in seen.get("env_read") or [] if CREDENTIAL.search(v)]
            named = [v for v in usable(named) if v not in fake]
            if named:
                lacking[n] = named
        if not PLACEHOLDERS or not lacking:
            continue
        fake.update({v: placeholder(v) for vs in lacking.values() for v in vs})
        rows, why = status_rows(dict(env, **fake), list(lacking))
        res["placeholder_env"] = dict(fake)
        res.setdefault("placeholder_ready", {}).update(
            {r["platform"]: ("ready" if r["ready"] else r["detail"] or r["state"]) for r in rows})
    pready = [n for n, s in (res.get("placeholder_ready") or {}).items() if s == "ready"]
    if pready:
        run = gateway_run(dict(env, **fake), home, pready)
        res["placeholder_run"] = run
        res["placeholder_connect"] = {n: run["outcome"].get(n) or (run["general"] or ["no line"])[0] for n in pready}
    for run in (res.get("run"), res.get("placeholder_run")):
        for line in (run or {}).get("outcome", {}).values():
            n = needed(line or "")
            if n:
                res["needs"].append(n)
        # what the adapter caught and logged while it ran (a lock helper, a Hermes module)
        for line in (run or {}).get("other_stderr", []):
            n = needed(line)
            if n:
                res["needs"].append(f"{n} (logged by the adapter while it ran)")
    res["needs"] = list(dict.fromkeys(res["needs"]))


def says_what(detail: str | None) -> bool:
    """Ready, or a detail that names what is lacking: missing variables, an install hint, the plugin's
    own words; not a bare "its requirements are not met" / "its configuration is incomplete", nor an
    exception from its check."""
    if not detail or " raised " in detail:
        return False
    if detail == "ready" or "missing " in detail:
        return True
    return detail not in ("its requirements are not met", "its configuration is incomplete") and \
        not detail.startswith(("not enabled", "disabled"))


def says_what_it_lacks(r: dict) -> bool:
    """Every registered platform is ready, or its detail says what it lacks."""
    return bool(r["platforms"]) and all(says_what(s) for s in r["ready"].values())


def connected_or_tried(r: dict) -> bool:
    lines = list(r["connect"].values()) + list((r.get("placeholder_connect") or {}).values())
    return any(tried(l) for l in lines)


def probed(r: dict, name: str) -> str:
    """What the probe saw behind a bare "not met" / "incomplete": a failed Hermes import, or a raise."""
    calls = (r.get("probe") or {}).get(name)
    if not isinstance(calls, dict):
        return ""
    for what, got in calls.items():
        if not isinstance(got, dict):
            continue
        if got.get("failed_imports"):
            return f" ({what}: {got['failed_imports'][0][:200]})"
        if got.get("returned", "").startswith("raised"):
            return f" ({what} {got['returned'][:200]})"
    return ""


def summary_line(r: dict) -> str:
    if r["loaded"]:
        load = "loaded"
    else:
        load = "failed: " + (r.get("failure") or "?").replace("\n", " ")[:240]
    plats = ", ".join(r["platforms"]) or f"none ({(r.get('no_platform_why') or '-')[:160]})"
    ready = "; ".join(f"{n}: {s}" + probed(r, n) for n, s in r["ready"].items()) or "-"
    conn = "; ".join(f"{l}" for l in r["connect"].values() if l)
    if r.get("placeholder_connect"):
        conn += ("; " if conn else "") + "with placeholder credentials: " + "; ".join(
            f"{l}" for l in r["placeholder_connect"].values() if l)
    elif r.get("placeholder_ready"):
        conn += ("; " if conn else "") + "with placeholder credentials still not ready: " + "; ".join(
            f"{n}: {s}" for n, s in r["placeholder_ready"].items())
    return (f"{r['name']}=={r['version']} | {load} | platforms: {plats} | ready: {ready}"
            f" | connect: {conn or '-'}")


def checkout_state() -> dict:
    """What was measured: CHECKOUT's commit and its uncommitted changes (a digest, and the files)."""
    git = lambda *args: base.run(["git", "-C", str(base.CHECKOUT), *args])[1]
    diff = git("diff", "HEAD", "--", "hermes_core", "hermes_plugins_builtin", "pyproject.toml")
    untracked = git("ls-files", "--others", "--exclude-standard", "hermes_core", "hermes_plugins_builtin").split()
    digest = hashlib.sha256(diff.encode())
    for name in sorted(untracked):
        digest.update((base.CHECKOUT / name).read_bytes())
    return {"path": str(base.CHECKOUT), "head": git("rev-parse", "HEAD").strip(),
            "changed": git("status", "--porcelain", "--", "hermes_core", "hermes_plugins_builtin",
                           "pyproject.toml").splitlines(),
            "changes_sha256": digest.hexdigest()[:16]}


def main() -> int:
    base.CACHE.mkdir(parents=True, exist_ok=True)
    only = set(sys.argv[1:])
    state = checkout_state()
    base.build_venv()
    print(f"hermes-core {state['head'][:10]} + {len(state['changed'])} uncommitted file(s) "
          f"(sha256 {state['changes_sha256']}), {sys.version.split()[0]}", flush=True)
    env = dict(os.environ, HERMES_HOME=tempfile.mkdtemp(prefix="hermes-home-base-", dir=str(base.WORK)))
    rc, listing, err = base.hermes_json(["plugins", "list", "--json"], env)
    baseline = {p["id"] for p in (listing or [])}
    model = base.LoopbackModel()
    results = []
    try:
        for pkg in PACKAGES:
            if only and pkg["name"] not in only:
                continue
            t = time.monotonic()
            try:
                r = test_package(pkg, baseline, model.url)
            except Exception as exc:  # noqa: BLE001 - one package's surprise is its line, not the survey's end
                r = dict(name=pkg["name"], version=pkg["version"], discovered=False, loaded=False, platforms=[],
                         ready={}, connect={}, needs=[], notes=[], failure=f"survey error: {type(exc).__name__}: {exc}")
            r["seconds"] = round(time.monotonic() - t, 1)
            results.append(r)
            print(summary_line(r), flush=True)
            (base.WORK / "gateway_results.json").write_text(json.dumps(
                {"checkout": state, "python": sys.version.split()[0], "packages": results}, indent=1, default=str))
    finally:
        model.close()
    n = len(results)
    loaded = sum(r["loaded"] for r in results)
    registered = sum(bool(r["platforms"]) for r in results)
    lacks = sum(says_what_it_lacks(r) for r in results)
    conn = sum(connected_or_tried(r) for r in results)
    with_fake = sum(connected_or_tried(r) and not any(tried(l) for l in r["connect"].values()) for r in results)
    print(f"adapters: loaded {loaded}/{n}, platform registered {registered}/{n}, ready-or-says-what-it-lacks "
          f"{lacks}/{n}, connected-or-tried {conn}/{n}" + (f" ({with_fake} only with placeholder credentials)"
                                                           if with_fake else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
