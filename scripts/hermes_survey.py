#!/usr/bin/env python3
"""Can hermes-core run real, published Hermes Agent plugins? (the survey set; results in docs/hermes.md)

Builds one venv with hermes-core (from CHECKOUT, default: the current directory), then for
each pinned package below: installs it (its dependencies too, except `hermes-agent` itself,
which would bring the real Hermes modules along and hide what hermes-core lacks), runs the
package's own installer where it ships one (some plugins are copied into $HERMES_HOME by a
console script instead of being found through an entry point), enables every plugin id it
added, selects its memory provider / context engine when it registered one, and records
`hermes plugins list --json`, `hermes plugins doctor --json` and `hermes tools list --json`
under a fresh HERMES_HOME. The package and the dependencies it brought are uninstalled before
the next one.

Downloads are cached under $TMPDIR/hermes-survey/pypi-cache (wheels of the plugins in the cache
root, their dependencies in deps/): a rerun installs from there with --no-index.

Output: one line per package, then
    pypi hermes plugins: discovered D/N, loaded L/N, registered-something R/N, works-in-a-session W/N
(works: three turns of `hermes chat` against a loopback model, the plugin enabled and its memory
provider / context engine selected — a model provider's own route carrying the requests when its
profile has a base-URL variable: exit 0, three replies, no traceback, no error naming it — and the
plugin registered something this host uses: a plugin that registered nothing, or only hooks this
host never fires, does not work, and its line says so)
Details (every command's output) go to $WORK/results.json (WORK default
$TMPDIR/hermes-survey/pypi-compat).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

CHECKOUT = Path(os.environ.get("CHECKOUT") or os.getcwd()).resolve()
CACHE = Path(os.environ.get("PYPI_CACHE", str(Path(tempfile.gettempdir()) / "hermes-survey/pypi-cache")))
DEPS = CACHE / "deps"
WORK = Path(os.environ.get("WORK", str(Path(tempfile.gettempdir()) / "hermes-survey/pypi-compat")))
VENV = WORK / "venv"
PY = VENV / "bin" / "python"
HERMES = VENV / "bin" / "hermes"
DEP_TIMEOUT = int(os.environ.get("DEP_TIMEOUT", "300"))
NEVER_INSTALL = {"hermes-agent"}  # the real host: would shadow what is being measured

# name, version, kind, setup: commands run after install ({home} = HERMES_HOME, {site} = site-packages)
PACKAGES: list[dict] = [
    dict(name="blackwall-hermes-plugin", version="0.1.0", kind="hook guard"),
    dict(name="rtk-hermes", version="1.2.3", kind="hook (rewrite)"),
    dict(name="acp-hermes", version="0.3.2", kind="hook guard"),
    dict(name="noisegate-hermes", version="0.3.3", kind="hook (transform)"),
    dict(name="hermes-plugin-guard", version="0.2.1", kind="tool+hooks+cli"),
    dict(name="hermes-loop-plugin", version="1.0.2", kind="tools+hooks"),
    dict(name="hermes-plugin-telegram-reactions", version="1.0.0", kind="tool"),
    dict(name="hermes-evolve", version="1.3.0", kind="slash command"),
    dict(name="hermes-delegate-routing", version="0.1.3", kind="monkey-patch"),
    dict(name="hermes-local-memory", version="0.3.1", kind="memory provider",
         setup=[["hermes-local-memory", "install-shim", "--hermes-home", "{home}"]]),
    dict(name="hermes-brain-memory", version="0.1.0", kind="memory provider",
         setup=[["hermes-brain-memory", "--hermes-home", "{home}", "install"]]),
    dict(name="hermes-llmwiki", version="0.1.1", kind="memory provider"),
    dict(name="tabularius", version="1.0.0", kind="memory provider",
         setup=[["cp", "-r", "{site}/tabularius", "{home}/plugins/tabularius"]]),
    dict(name="hermes-memoryrouter", version="0.1.1", kind="memory provider"),
    dict(name="sonzai-hermes", version="1.0.0", kind="memory provider + context engine",
         setup=[["sonzai-hermes", "install", "--memory-only"],
                ["cp", "-r", "{site}/plugins/context_engine/sonzai", "{home}/plugins/context_engine/sonzai"]]),
    dict(name="lossless-hermes-py", version="0.1.6", kind="context engine"),
    dict(name="hermes-jev-compact", version="0.2.1", kind="context engine"),
    dict(name="hermes-yandex-search-api", version="0.1.6", kind="web-search provider + tool"),
    dict(name="hermes-vk-community", version="1.1.4", kind="platform adapter"),
    dict(name="tokenlab-hermes-provider", version="0.1.0", kind="model provider"),
]


def run(cmd, env=None, timeout=300, cwd=None):
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", (e.stderr or "") + f"\n[timed out after {timeout}s]"


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_for(name: str, version: str) -> Path | None:
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for f in sorted(CACHE.glob("*")):
        low = f.name.lower()
        if f.is_file() and (low.startswith(f"{stem}-{version}-") or low.startswith(f"{stem}-{version}.")
                            or low.startswith(f"{norm(name)}-{version}.")):
            return f
    return None


def fetch_plugin(name: str, version: str) -> Path | None:
    w = wheel_for(name, version)
    if w:
        return w
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(CACHE), f"{name}=={version}"])
    return wheel_for(name, version)


def requirement_lines(dist: Path) -> list[str]:
    """Every Requires-Dist line of a wheel's METADATA (none for an sdist)."""
    if dist.suffix != ".whl":
        return []
    with zipfile.ZipFile(dist) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = Parser().parsestr(z.read(meta).decode())
    return list(msg.get_all("Requires-Dist") or [])


def requires(dist: Path) -> list[str]:
    """Requires-Dist lines without extras, from a wheel's METADATA."""
    out = []
    for r in requirement_lines(dist):
        if "extra ==" in r or "extra==" in r:
            continue
        out.append(r.split(";")[0].strip() if "python_version" not in r else r.strip())
    return out


def req_name(req: str) -> str:
    return norm(re.split(r"[<>=!~\[ ;(]", req, maxsplit=1)[0])


def fetch_deps(tag: str, reqs: list[str]) -> tuple[bool, str]:
    """Download reqs (and theirs) into DEPS once; a stamp file marks it done."""
    stamp = DEPS / f".done-{tag}"
    if stamp.exists() or not reqs:
        return True, ""
    DEPS.mkdir(parents=True, exist_ok=True)
    rc, out, err = run([str(PY), "-m", "pip", "download", "-q", "-d", str(DEPS), *reqs], timeout=DEP_TIMEOUT)
    if rc == 0:
        stamp.write_text("\n".join(reqs))
        return True, ""
    return False, (err.strip().splitlines() or ["?"])[-1]


def pip_local(*args, timeout=DEP_TIMEOUT):
    return run([str(PY), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(CACHE),
                "--find-links", str(DEPS), *args], timeout=timeout)


def freeze() -> dict[str, str]:
    rc, out, _ = run([str(PY), "-m", "pip", "list", "--format=json"])
    return {norm(d["name"]): d["version"] for d in json.loads(out)} if rc == 0 else {}


def build_venv() -> None:
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())
    reqs = list(pyproject.get("project", {}).get("dependencies", []))
    build_reqs = list(pyproject.get("build-system", {}).get("requires", ["setuptools", "wheel"]))
    if VENV.exists():
        shutil.rmtree(VENV)
    WORK.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "venv", str(VENV)])
    ok, why = fetch_deps("hermes-core-" + hashlib.sha256("\n".join(reqs + build_reqs).encode()).hexdigest()[:12],
                         reqs + build_reqs)
    if not ok:
        sys.exit(f"cannot download hermes-core's dependencies: {why}")
    rc, out, err = pip_local(*build_reqs)
    rc, out, err = pip_local(*reqs)
    rc, out, err = pip_local("--no-build-isolation", str(CHECKOUT), timeout=600)
    if rc != 0 or not HERMES.exists():
        sys.exit(f"cannot install hermes-core from {CHECKOUT}: {err.strip()[-500:]}")


def site_packages() -> str:
    return run([str(PY), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])[1].strip()


def hermes_json(args, env):
    rc, out, err = run([str(HERMES), *args], env=env, timeout=180)
    try:
        return rc, json.loads(out), err
    except json.JSONDecodeError:
        return rc, None, (out + err)


def last_line(text: str) -> str:
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def test_package(pkg: dict, baseline_ids: set[str]) -> dict:
    res = dict(name=pkg["name"], version=pkg["version"], kind=pkg["kind"], notes=[])
    dist = fetch_plugin(pkg["name"], pkg["version"])
    if dist is None:
        res.update(discovered=False, loaded=False, registered=False, failure="could not download")
        return res
    before = freeze()
    reqs = [r for r in requires(dist) if req_name(r) not in NEVER_INSTALL]
    dropped = [r for r in requires(dist) if req_name(r) in NEVER_INSTALL]
    if dropped:
        res["notes"].append(f"not installed: {', '.join(dropped)} (the real host)")
    rc, _, err = pip_local("--no-deps", str(dist))
    if rc != 0:
        res.update(discovered=False, loaded=False, registered=False, failure=f"install failed: {last_line(err)}")
        return res
    if reqs:
        ok, why = fetch_deps(f"{norm(pkg['name'])}-{pkg['version']}", reqs)
        rc, _, err = pip_local(*reqs) if ok else (1, "", why)
        if rc != 0:
            res["notes"].append(f"dependencies not installed ({last_line(err)}); installed --no-deps")
    home = Path(tempfile.mkdtemp(prefix="hermes-home-", dir=str(WORK)))
    (home / "plugins" / "context_engine").mkdir(parents=True)
    env = dict(os.environ, HERMES_HOME=str(home), PATH=f"{VENV / 'bin'}:{os.environ['PATH']}")
    env.pop("HERMES_ENABLE_PROJECT_PLUGINS", None)
    site = site_packages()
    for cmd in pkg.get("setup", []):
        cmd = [c.format(home=home, site=site) for c in cmd]
        rc, out, err = run(cmd, env=env, timeout=120, cwd=str(home))
        res["notes"].append(f"setup `{' '.join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd))}`"
                            f" -> rc {rc}" + (f": {last_line(err or out)}" if rc else ""))
    rc, listing, err = hermes_json(["plugins", "list", "--json"], env)
    listing = listing or []
    mine = [p for p in listing if p["id"] not in baseline_ids]
    res["list"] = mine
    res["discovered"] = bool(mine)
    for p in mine:
        run([str(HERMES), "plugins", "enable", p["id"]], env=env)
    rc, doctor, err = hermes_json(["plugins", "doctor", "--json"], env)
    doctor = doctor or {"plugins": [], "problems": [f"doctor gave no JSON: {last_line(err)}"]}
    ids = {p["id"] for p in mine}
    rows = [d for d in doctor.get("plugins", []) if d["id"] in ids]
    # activate what it offers in a single-select slot, then ask the doctor again
    chosen = {}
    for d in rows:
        for prov in (d.get("registered") or {}).get("providers", []):
            slot, _, name = prov.partition(":")
            if slot in ("memory", "context_engine") and slot not in chosen:
                chosen[slot] = name
    if chosen:
        cfg = home / "config.yaml"
        text = cfg.read_text() if cfg.exists() else ""
        if "memory" in chosen:
            text += f"\nmemory:\n  provider: {chosen['memory']}\n"
        if "context_engine" in chosen:
            text += f"\ncontext:\n  engine: {chosen['context_engine']}\n"
        cfg.write_text(text)
        rc, doctor2, err = hermes_json(["plugins", "doctor", "--json"], env)
        if doctor2:
            doctor = doctor2
            rows = [d for d in doctor.get("plugins", []) if d["id"] in ids]
            res["slots"] = {k: doctor.get("slots", {}).get(k) for k in chosen}
    res["doctor"] = rows
    res["problems"] = [p for p in doctor.get("problems", []) if any(i in str(p) for i in ids) or chosen]
    rc, tools, err = hermes_json(["tools", "list", "--json"], env)
    res["tools"] = [t for t in (tools or []) if t.get("plugin") in ids]
    res["loaded"] = bool(rows) and all(d["status"] == "ok" for d in rows)
    registered = {}
    for d in rows:
        for k, v in (d.get("registered") or {}).items():
            registered.setdefault(k, []).extend(v)
    res["registered_what"] = registered
    res["registered"] = any(registered.values())
    # what this host uses: anything but hooks, and the hooks it fires (doctor's unfired_hooks)
    unfired = {h for d in rows for h in (d.get("unfired_hooks") or [])}
    used = {k: v for k, v in registered.items() if v and k != "hooks"}
    if any(h not in unfired for h in registered.get("hooks", [])):
        used["hooks"] = [h for h in registered["hooks"] if h not in unfired]
    res["registered_used"] = used
    if res["loaded"]:
        provider = model_provider(env, registered.get("model_providers") or [])
        res["works"], res["session"] = drive(home, env, ids, provider)
        if res["works"] and not used:
            res["works"] = False
            res["session"] += (", registered nothing this host uses" if not res["registered"] else
                               f", registered only hooks this host never fires ({', '.join(sorted(unfired))})")
    else:
        res["works"], res["session"] = False, "not loaded"
    errors = [f"{d['id']}: {d['error']}" for d in rows if d.get("error")]
    errors += [f"{p['id']}: {p['error']}" for p in mine if p.get("error")]
    if not mine:
        errors.append("no plugin discovered (no entry point in a group hermes-core reads, no plugin folder)")
    res["failure"] = "; ".join(errors) + ("; " if errors and res["problems"] else "") + "; ".join(map(str, res["problems"]))
    # uninstall what this package brought, put back what it changed
    after = freeze()
    new = [n for n in after if n not in before]
    if new:
        run([str(PY), "-m", "pip", "uninstall", "-y", "-q", *new])
    changed = [f"{n}=={v}" for n, v in before.items() if n in after and after[n] != v]
    if changed:
        pip_local("--no-deps", *changed)
        res["notes"].append(f"restored: {', '.join(changed)}")
    shutil.rmtree(home, ignore_errors=True)
    return res


class LoopbackModel:
    """A minimal OpenAI-compatible chat-completions server on 127.0.0.1 that answers every
    request with "default reply" (as JSON, or as server-sent chunks when asked to stream)."""

    def __init__(self):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, ctype="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "local-model", "object": "model"}]}).encode())

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                base = {"id": "chatcmpl-local", "created": int(time.time()), "model": req.get("model", "local-model")}
                usage = {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
                if not req.get("stream"):
                    self._send(200, json.dumps(dict(base, object="chat.completion", usage=usage, choices=[
                        {"index": 0, "message": {"role": "assistant", "content": "default reply"},
                         "finish_reason": "stop"}])).encode())
                    return
                chunk = dict(base, object="chat.completion.chunk")
                events = [dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": "default "}, "finish_reason": None}]),
                          dict(chunk, choices=[{"index": 0, "delta": {"content": "reply"}, "finish_reason": None}]),
                          dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])]
                if (req.get("stream_options") or {}).get("include_usage"):
                    events.append(dict(chunk, choices=[], usage=usage))
                body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
                self._send(200, body, "text/event-stream")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def model_provider(env: dict, names: list[str]) -> tuple[str, list[str]] | None:
    """The first model provider a plugin registered, with its profile's environment variables
    (read by loading the plugins in the survey's venv), or None."""
    if not names:
        return None
    code = ("import json, sys\nfrom hermes_core import PluginManager\nmanager = PluginManager().load()\n"
            "import providers\nprofile = providers.get_provider_profile(sys.argv[1])\n"
            "print(json.dumps(list(profile.env_vars) if profile else []))\n")
    p = subprocess.run([str(PY), "-c", code, names[0]], env=env, capture_output=True, text=True, timeout=120)
    try:
        return names[0], json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def drive(home: Path, env: dict, ids: set[str], provider: tuple[str, list[str]] | None = None) -> tuple[bool, str]:
    """Three turns of `hermes chat` against a loopback model, the plugin enabled and its memory
    provider / context engine selected. Works = exit 0, three replies, no traceback, and no
    error line naming the plugin (a plugin that reports it needs its own credentials or
    service counts as not working here: say so in the notes). A model-provider plugin whose
    profile has a `*_BASE_URL` variable is the session's provider, that variable pointing at
    the loopback model (its key variable set to a local key): the requests take its route."""
    model = LoopbackModel()
    try:
        cfg = home / "config.yaml"
        text = cfg.read_text() if cfg.exists() else ""
        e = dict(env, OPENAI_API_KEY="sk-local")
        url_vars = [v for v in (provider[1] if provider else []) if v.upper().endswith("_BASE_URL")]
        if provider and url_vars:
            e[url_vars[0]] = model.url
            e.update({v: "sk-local" for v in provider[1] if v not in url_vars})
            cfg.write_text(text + f"\nmodel:\n  provider: {provider[0]}\n  model: local-model\n")
        else:
            cfg.write_text(text + f"\nmodel:\n  provider: custom\n  model: local-model\n  base_url: {model.url}\n")
        try:
            p = subprocess.run([str(HERMES), "chat"], env=e, cwd=str(home), capture_output=True, text=True, timeout=240,
                               input="remember that my cat is called Io\nwhat is my cat called?\nthanks\n/exit\n")
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as ex:
            rc, out, err = 124, ex.stdout or "", (ex.stderr or "") + "\n[timed out]"
        replies = out.count("default reply")
        bad = [l for l in err.splitlines() if "Traceback" in l or (
               not re.match(r"\S*: warning:", l) and any(i in l for i in ids)
               and re.search(r"error:|failed|\w(Error|Exception)\b", l))]
        ok = rc == 0 and replies >= 3 and not bad
        # an engine or memory provider that says it cannot run here (its own service or key missing)
        # works as the host promises, but the session ran without it: say so
        absent = [l.split(": warning: ", 1)[-1] for l in err.splitlines() if "is not available here" in l]
        routed = f", through provider {provider[0]}" if provider and url_vars else ""
        return ok, f"rc {rc}, {replies} replies{routed}" + (f", {bad[0][:200]}" if bad else "") + \
            ("" if rc == 0 else f", {last_line(err)[:200]}") + (f", {absent[0][:300]}" if absent else "")
    finally:
        model.close()


def summary_line(r: dict) -> str:
    mark = lambda b: "yes" if b else "no"
    reg = ", ".join(f"{k}: {', '.join(v)}" for k, v in r.get("registered_what", {}).items() if v) or "-"
    fail = (r.get("failure") or "").replace("\n", " ")
    return (f"{r['name']}=={r['version']} [{r['kind']}] discovered={mark(r['discovered'])} "
            f"loaded={mark(r['loaded'])} registered={reg} works={mark(r.get('works'))}"
            + (f" ({r.get('session')})" if r.get("loaded") and (not r.get("works") or "not available here"
                                                                  in str(r.get("session"))) else "")
            + (f" | {fail[:300]}" if fail else ""))


def main() -> int:
    CACHE.mkdir(parents=True, exist_ok=True)
    only = set(sys.argv[1:])
    build_venv()
    env = dict(os.environ, HERMES_HOME=tempfile.mkdtemp(prefix="hermes-home-base-", dir=str(WORK)))
    rc, listing, err = hermes_json(["plugins", "list", "--json"], env)
    baseline = {p["id"] for p in (listing or [])}
    results = []
    for pkg in PACKAGES:
        if only and pkg["name"] not in only:
            continue
        t = time.monotonic()
        r = test_package(pkg, baseline)
        r["seconds"] = round(time.monotonic() - t, 1)
        results.append(r)
        print(summary_line(r), flush=True)
        (WORK / "results.json").write_text(json.dumps(results, indent=1, default=str))
    n = len(results)
    d = sum(r["discovered"] for r in results)
    l = sum(r["loaded"] for r in results)
    g = sum(r["registered"] for r in results)
    w = sum(bool(r.get("works")) for r in results)
    print(f"pypi hermes plugins: discovered {d}/{n}, loaded {l}/{n}, registered-something {g}/{n}, "
          f"works-in-a-session {w}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
