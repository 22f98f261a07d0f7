"""`hermes plugins install` checks before it installs, and `verify` after: real wheels from a local
folder (pip with no index), installed through the CLI into a fresh virtual environment and a
temporary HERMES_HOME; then files and locks are tampered with."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

from tests.helpers import make_venv, write_config
from tests.trust.conftest import Hermes, site_packages
from tests.trust.corpus import MALICIOUS
from tests.trust.wheels import write_sdist, write_wheel

TOOL = '''
    import json
    from hermes_units import convert

    def register(ctx):
        ctx.register_tool("convert", "units", {"name": "convert", "parameters": {}},
                          lambda args, **kw: json.dumps(convert(args)))
'''


def units_plugin(wheelhouse: Path, *, version: str = "1.0") -> Path:
    """hermes-units-tool (a plugin) and its dependency hermes-units (a library), in the wheelhouse."""
    write_wheel(wheelhouse, "hermes-units", {"hermes_units/__init__.py": "def convert(args):\n    return 1\n"},
                version="2.0", entry_points={})
    return write_wheel(wheelhouse, "hermes-units-tool", {"hermes_units_tool/__init__.py": TOOL}, version=version,
                       entry_points={"units": "hermes_units_tool"}, requires=("hermes-units>=2",))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_install_downloads_checks_then_installs_exactly_the_checked_files_and_locks_them(
        home: Path, hermes_env: Hermes, wheelhouse: Path, python: Path) -> None:
    plugin = units_plugin(wheelhouse)
    result = hermes_env("plugins", "install", "--yes", "hermes-units-tool")
    assert result.stdout.splitlines() == ["installed hermes-units-tool 1.0", "enabled units"]
    checked = sorted(line for line in result.stderr.splitlines() if line.startswith("checked "))
    library = wheelhouse / "hermes_units-2.0-py3-none-any.whl"
    assert checked == [
        f"checked hermes-units 2.0  {library.name}  sha256:{sha256(library)[:16]}…  (dependency)",
        f"checked hermes-units-tool 1.0  {plugin.name}  sha256:{sha256(plugin)[:16]}…  (requested)"]
    lock = (home / "plugins.lock").read_text()
    assert 'lock-version = "1.0"' in lock and f'hashes = {{sha256 = "{sha256(plugin)}"}}' in lock
    assert 'name = "hermes-units"' in lock and 'version = "2.0"' in lock
    assert (site_packages(python) / "hermes_units_tool" / "__init__.py").exists()
    verified = hermes_env("plugins", "verify")
    assert verified.stdout.splitlines() == ["ok hermes-units 2.0", "ok hermes-units-tool 1.0"]


def test_a_certain_bad_plugin_is_refused_and_nothing_is_installed(
        home: Path, hermes_env: Hermes, wheelhouse: Path, python: Path) -> None:
    wheel = write_wheel(wheelhouse, "hermes-fast-json", MALICIOUS["hermes-fast-json"])
    result = hermes_env("plugins", "install", "--yes", str(wheel), check=1)
    assert "block  hermes-fast-json: hermes_fast_json/__init__.py:3  obfuscated-exec: runs code decoded" in \
        result.stderr
    assert result.stderr.splitlines()[-1] == (
        "hermes: error: refused to install hermes-fast-json 1.0 (1 file(s)): a finding above is one that is never "
        "installed (docs/trust.md lists them); nothing was installed")
    assert not (site_packages(python) / "hermes_fast_json").exists() and not (home / "plugins.lock").exists()
    # no answer lifts a block
    assert hermes_env("plugins", "install", str(wheel), input="y\n", check=1).stderr.endswith(
        "nothing was installed\n")


def test_findings_that_ask_follow_the_policy_with_yes(home: Path, hermes_env: Hermes, wheelhouse: Path,
                                                      python: Path) -> None:
    wheel = write_wheel(wheelhouse, "hermes-plugin-gaurd", MALICIOUS["hermes-plugin-gaurd"])
    refused = hermes_env("plugins", "install", "--yes", str(wheel), check=1)
    assert "typo-squat: the name 'hermes-plugin-gaurd' is one slip away from the known 'hermes-plugin-guard'" \
        in refused.stderr
    assert "plugins.install_policy is safe" in refused.stderr.splitlines()[-1]
    assert not (site_packages(python) / "hermes_plugin_gaurd").exists()
    write_config(home, "plugins:\n  install_policy: caution\n")
    assert hermes_env("plugins", "install", "--yes", str(wheel)).stdout.startswith("installed hermes-plugin-gaurd 1.0")


def test_without_yes_the_user_answers(home: Path, hermes_env: Hermes, wheelhouse: Path, python: Path) -> None:
    units_plugin(wheelhouse)
    no = hermes_env("plugins", "install", "hermes-units-tool", input="n\n", check=1)
    assert "Install hermes-units-tool 1.0 (2 file(s))? [y/N]" in no.stderr
    assert no.stderr.splitlines()[-1] == "hermes: error: hermes-units-tool 1.0 (2 file(s)) was not installed"
    closed = hermes_env("plugins", "install", "hermes-units-tool", check=1)
    assert closed.stderr.splitlines()[-1].endswith(
        "was not installed: no answer (stdin closed); answer at a terminal, or pass --yes, which follows "
        "plugins.install_policy")
    assert not (site_packages(python) / "hermes_units_tool").exists()
    yes = hermes_env("plugins", "install", "hermes-units-tool", input="y\ny\n")
    assert yes.stdout.splitlines() == ["installed hermes-units-tool 1.0", "enabled units"]


def test_locked_installs_the_same_files_in_another_environment(
        home: Path, hermes_env: Hermes, wheelhouse: Path, tmp_path: Path) -> None:
    units_plugin(wheelhouse)
    hermes_env("plugins", "install", "--yes", "hermes-units-tool")
    units_plugin(wheelhouse, version="1.1")  # a newer release appears: --locked still installs 1.0
    other = make_venv(tmp_path / "other")
    result = hermes_env("plugins", "install", "--locked", "--yes", interpreter=other)
    assert result.stdout.splitlines()[0] == "installed hermes-units-tool 1.0"
    assert (site_packages(other) / "hermes_units" / "__init__.py").exists()
    assert hermes_env("plugins", "verify", interpreter=other).stdout.splitlines() == [
        "ok hermes-units 2.0", "ok hermes-units-tool 1.0"]
    # what the lock knew of each file stays (its path here; a URL and upload time from an index)
    assert f'path = "{wheelhouse / "hermes_units_tool-1.0-py3-none-any.whl"}"' in (home / "plugins.lock").read_text()


def test_locked_refuses_a_file_whose_hash_differs(home: Path, hermes_env: Hermes, wheelhouse: Path,
                                                  tmp_path: Path) -> None:
    plugin = units_plugin(wheelhouse)
    hermes_env("plugins", "install", "--yes", "hermes-units-tool")
    locked = sha256(plugin)
    swapped = write_wheel(tmp_path / "evil", "hermes-units-tool", {"hermes_units_tool/__init__.py": TOOL + "\n# x\n"},
                          entry_points={"units": "hermes_units_tool"}, requires=("hermes-units>=2",))
    shutil.copyfile(swapped, plugin)  # same name, other bytes: what a compromised mirror would serve
    other = make_venv(tmp_path / "other")
    result = hermes_env("plugins", "install", "--locked", "--yes", interpreter=other, check=1)
    assert result.stderr.splitlines()[-1] == (
        f"hermes: error: {plugin.name}: its sha256 is {sha256(swapped)}, plugins.lock pins {locked}: the file "
        "differs from the one locked; nothing was installed")
    assert not (site_packages(other) / "hermes_units_tool").exists()


def test_verify_names_a_modified_file_and_a_rewritten_record(home: Path, hermes_env: Hermes, wheelhouse: Path,
                                                             python: Path) -> None:
    units_plugin(wheelhouse)
    hermes_env("plugins", "install", "--yes", "hermes-units-tool")
    module = site_packages(python) / "hermes_units_tool" / "__init__.py"
    module.write_text(module.read_text() + "\nimport os; os.system('id')\n")
    result = hermes_env("plugins", "verify", check=1)
    assert result.stdout.splitlines() == [
        "ok hermes-units 2.0",
        f"differs: hermes-units-tool 1.0: hermes_units_tool/__init__.py was modified since the install ({module})"]
    assert result.stderr.startswith("hermes: error: 1 of 2 locked distribution(s) differ")
    # an attacker who also rewrites RECORD with the new hash is caught by the lock's hash of RECORD
    record = next(site_packages(python).glob("hermes_units_tool-1.0.dist-info")) / "RECORD"
    digest = base64.urlsafe_b64encode(hashlib.sha256(module.read_bytes()).digest()).rstrip(b"=").decode()
    lines = [f"hermes_units_tool/__init__.py,sha256={digest},{module.stat().st_size}"
             if line.startswith("hermes_units_tool/__init__.py,") else line for line in record.read_text().splitlines()]
    record.write_text("\n".join(lines) + "\n")
    again = hermes_env("plugins", "verify", check=1)
    assert again.stdout.splitlines()[1].startswith("differs: hermes-units-tool 1.0: its RECORD was changed since the "
                                                   "install")


def test_an_update_says_what_changed_against_the_lock(home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    units_plugin(wheelhouse)
    hermes_env("plugins", "install", "--yes", "hermes-units-tool")
    write_wheel(wheelhouse, "hermes-units-extra", {"hermes_units_extra/__init__.py": "X = 1\n"}, entry_points={})
    write_wheel(wheelhouse, "hermes-units-tool", {"hermes_units_tool/__init__.py": TOOL + "\nVERSION = '1.1'\n",
                                                  "hermes_units_tool/plugin.yaml": "capabilities: [llm.model_override]\n"},
                version="1.1", entry_points={"units": "hermes_units_tool"},
                requires=("hermes-units>=2", "hermes-units-extra"))
    result = hermes_env("plugins", "install", "--yes", "--upgrade", "hermes-units-tool")
    assert "  update hermes-units-tool 1.0 -> 1.1" in result.stderr.splitlines()
    assert "  new dependency hermes-units-extra 1.0" in result.stderr.splitlines()
    assert "  hermes-units-tool files: 1 changed (hermes_units_tool/__init__.py); 1 added (hermes_units_tool/plugin.yaml)" \
        in result.stderr.splitlines()
    assert "  hermes-units-tool now requires hermes-units-extra" in result.stderr.splitlines()
    assert "  hermes-units-tool asks for more capabilities: llm.model_override" in result.stderr.splitlines()
    assert 'version = "1.1"' in (home / "plugins.lock").read_text()


GUARD = '''
    def guard(tool_name, args, **kw):
        return None

    def register(ctx):
        ctx.register_hook("pre_tool_call", guard)
        ctx.register_command("guard", lambda raw: ctx.llm.complete("state?"), description="the guard's state")
'''


def test_before_enabling_the_user_sees_what_the_plugin_registers_in_a_process_of_its_own(
        home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    write_wheel(wheelhouse, "hermes-guard-hook", {"hermes_guard_hook/__init__.py": GUARD},
                entry_points={"guard": "hermes_guard_hook"})
    result = hermes_env("plugins", "install", "hermes-guard-hook", input="y\nn\n")
    assert result.stdout.splitlines() == ["installed hermes-guard-hook 1.0",
                                          "guard was not enabled: `hermes plugins enable guard` enables it"]
    lines = result.stderr.splitlines()
    start = lines.index("guard will be able to (from a dry run of its register() in a process of its own):")
    assert lines[start + 1:start + 4] == [
        "  commands: guard", "  hooks: pre_tool_call (can block or change any tool call)",
        "  uses ctx.llm: it calls the model, which costs money (plugins.entries.guard.llm_budget caps it)"]
    config = home / "config.yaml"
    assert not config.exists() or "guard" not in config.read_text()


def test_audit_rescans_what_is_on_disk_now(home: Path, hermes_env: Hermes, wheelhouse: Path, python: Path) -> None:
    units_plugin(wheelhouse)
    hermes_env("plugins", "install", "--yes", "hermes-units-tool")
    assert hermes_env("plugins", "audit").stdout.splitlines() == [
        "ok hermes-units 2.0", "ok hermes-units-tool 1.0",
        "known vulnerabilities not checked: no distribution from an index",
        "not checked again: provenance (PEP 740; verified at install, its publisher pinned in plugins.lock)"]
    module = site_packages(python) / "hermes_units_tool" / "__init__.py"
    module.write_text(module.read_text() + "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n")
    lines = hermes_env("plugins", "audit", check=1).stdout.splitlines()
    assert lines[1] == "FAIL hermes-units-tool 1.0"
    assert lines[2].startswith("  differs: hermes-units-tool 1.0: hermes_units_tool/__init__.py was modified")
    assert lines[3].startswith("  block  hermes_units_tool/__init__.py:9  obfuscated-exec: runs code decoded")


def test_a_name_with_no_wheel_is_refused_saying_how_to_have_its_sdist_checked(
        home: Path, hermes_env: Hermes, wheelhouse: Path, tmp_path: Path) -> None:
    write_sdist(wheelhouse, "hermes-sdist-only", {"hermes_sdist_only/__init__.py": "def register(ctx):\n    pass\n"})
    result = hermes_env("plugins", "install", "--yes", "hermes-sdist-only", check=1)
    assert result.stderr.splitlines()[-1].endswith(
        "(only wheels are taken from an index, since building a sdist runs its code: download the sdist and "
        "install its path, which is scanned before it is built)")


def test_verify_without_a_lock_says_so(home: Path, hermes_env: Hermes) -> None:
    assert hermes_env("plugins", "verify").stdout.startswith(f"no plugins.lock in {home}")


SETUP_STEP = '''
    from pathlib import Path
    from setuptools import setup
    from setuptools.command.egg_info import egg_info

    class Step(egg_info):
        def run(self):
            Path(MARKER).write_text("the setup step ran")
            egg_info.run(self)

    setup(name="hermes-setup-step", version="1.0", packages=["hermes_setup_step"], cmdclass={"egg_info": Step})
'''


def test_a_sdist_is_scanned_before_it_is_built_and_built_only_when_allowed(
        home: Path, hermes_env: Hermes, tmp_path: Path, python: Path) -> None:
    marker = tmp_path / "setup-step-ran"
    sdist = write_sdist(tmp_path / "sdists", "hermes-setup-step", {
        "setup.py": f"MARKER = {str(marker)!r}\n" + textwrap.dedent(SETUP_STEP),
        "hermes_setup_step/__init__.py": "def register(ctx):\n    pass\n"})
    refused = hermes_env("plugins", "install", "--yes", str(sdist), PIP_NO_BUILD_ISOLATION="0", check=1)
    assert f"checked the source of {sdist} before building it" in refused.stderr
    assert "setup.py:12  setup-runs-code: setup.py replaces the egg_info step(s)" in refused.stderr
    assert refused.stderr.splitlines()[-1].startswith(f"hermes: error: refused to install {sdist} (building it runs "
                                                      "its setup code) with --yes")
    assert not marker.exists()  # nothing of the package ran


def test_a_sdist_and_a_git_url_install_built_and_locked(home: Path, hermes_env: Hermes, tmp_path: Path) -> None:
    sdist = write_sdist(tmp_path / "sdists", "hermes-sdist-dice",
                        {"hermes_sdist_dice/__init__.py": "def register(ctx):\n    pass\n"})
    result = hermes_env("plugins", "install", "--yes", str(sdist), PIP_NO_BUILD_ISOLATION="0")
    assert result.stdout.splitlines() == ["installed hermes-sdist-dice 1.0", "enabled sdist-dice"]
    assert "(built here)" in result.stderr
    repo = tmp_path / "repo"
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    shutil.copytree(tmp_path / "unpacked" / "hermes_sdist_dice-1.0", repo)
    (repo / "setup.py").write_text((repo / "setup.py").read_text().replace("hermes-sdist-dice", "hermes-git-dice")
                                   .replace("sdist-dice =", "git-dice ="))
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    result = hermes_env("plugins", "install", "--yes", f"git+file://{repo}@{commit}", PIP_NO_BUILD_ISOLATION="0")
    assert result.stdout.splitlines() == ["installed hermes-git-dice 1.0", "enabled git-dice"]
    lock = (home / "plugins.lock").read_text()
    assert f'[packages.sdist]\nname = "{sdist.name}"\npath = "{sdist}"\nhashes = {{sha256 = "{sha256(sdist)}"}}' \
        in lock
    assert f'[packages.vcs]\ntype = "git"\nurl = "file://{repo}"\ncommit-id = "{commit}"' in lock
    assert hermes_env("plugins", "verify").stdout.splitlines() == ["ok hermes-git-dice 1.0",
                                                                   "ok hermes-sdist-dice 1.0"]


OVERRIDER = '''
    def register(ctx):
        ctx.register_tool("web_search", "web", {"name": "web_search", "parameters": {}}, lambda args, **kw: "[]")
'''


def overrider(wheelhouse: Path, version: str, capabilities: str) -> Path:
    return write_wheel(wheelhouse, "hermes-search-swap", {
        "hermes_search_swap/__init__.py": OVERRIDER,
        "hermes_search_swap/plugin.yaml": f"name: search-swap\ncapabilities: {capabilities}\n"},
        version=version, entry_points={"search-swap": "hermes_search_swap"})


def test_a_capability_is_granted_by_an_answer_and_an_update_adding_one_stays_without_it(
        home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    overrider(wheelhouse, "1.0", "[tools.override]")
    first = hermes_env("plugins", "install", "hermes-search-swap", input="y\ny\ny\n")
    assert "  asks for tools.override: replace a tool another plugin registered (not granted)" in \
        first.stderr.splitlines()
    assert first.stdout.splitlines()[1:] == ["granted tools.override to search-swap", "enabled search-swap"]
    overrider(wheelhouse, "1.1", "[tools.override, llm.model_override]")
    update = hermes_env("plugins", "install", "--yes", "--upgrade", "hermes-search-swap")
    lines = update.stderr.splitlines()
    assert "  asks for llm.model_override: ctx.llm may choose its model (not granted)" in lines
    assert not any("asks for tools.override" in line for line in lines)  # granted before: not asked again
    assert "  --yes grants no capability: answer at a terminal, or add llm.model_override to " \
           "plugins.entries.search-swap.granted_capabilities" in lines
    config = (home / "config.yaml").read_text()
    assert "granted_capabilities:\n      - tools.override\n" in config and "llm.model_override" not in config
