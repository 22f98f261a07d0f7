"""Portable Agent Plugins v1 packages (`plugin.json`, `skills/`) in `$HERMES_HOME/plugins/`, as a user
meets them through `hermes` (a subprocess): discovered from `plugin.json` alone, opt-in like any
plugin, their valid skills reachable as `agent-plugin-<slug>-<hash>:<skill>`, a bad skill one
warning, a manifest that breaks the format refusing the package with its reason, and everything
read only from inside the package."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.helpers import hermes, hermes_json, write_config
from tests.helpers.skills import make_skill

SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
NAMESPACE = f"agent-plugin-acme-tools-{hashlib.sha256(b'acme.tools').hexdigest()[:8]}"


def package(root: Path, manifest: object = None, **fields: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    data = manifest if manifest is not None else {"$schema": SCHEMA, "name": "acme.tools", **fields}
    (root / "plugin.json").write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return root


def call(tool: str, **args: object) -> dict:
    return json.loads(hermes("tools", "call", tool, json.dumps(args)).stdout)


def test_a_package_is_listed_from_its_manifest_and_its_skills_load_when_enabled(home: Path, tmp_path: Path) -> None:
    root = package(home / "plugins" / "acme", version="1.0.0", description="Acme's skills",
                   author={"name": "Acme"}, color="blue")
    make_skill(root / "skills", "deploy", description="Deploy the app", body="Run deploy.",
               files={"references/a.md": "ref"})
    make_skill(root / "skills", "Bad_Name", name="Bad_Name")
    make_skill(root / "skills", "nested-meta", head="---\nname: nested-meta\ndescription: x\nmetadata:\n"
                                                    "  hermes: {tags: [a]}\n---\n")
    (tmp_path / "outside.md").write_text("---\nname: linked\ndescription: out\n---\n")
    (root / "skills" / "linked").mkdir()
    os.symlink(tmp_path / "outside.md", root / "skills" / "linked" / "SKILL.md")
    (listed,) = [row for row in hermes_json("plugins", "list") if row["id"] == "acme.tools"]
    assert (listed["version"], listed["source"], listed["kind"], listed["enabled"], listed["description"]) == \
        ("1.0.0", "user", "portable", False, "Acme's skills")
    assert call("skills_list")["skills"] == []  # opt-in, like any plugin
    write_config(home, "plugins:\n  enabled: [acme.tools]\n")
    result = hermes("skills", "list", "--json")
    assert [row["name"] for row in json.loads(result.stdout)] == [f"{NAMESPACE}:deploy"]
    assert result.stderr.count("\n") == 4 and all(line.startswith("hermes: warning: ")
                                                  for line in result.stderr.splitlines())
    for line in ("[manifest] ignored unknown top-level field: color",
                 "[skill:Bad_Name] name must match the directory and satisfy Agent Skills constraints",
                 "[skill:linked] SKILL.md must be a regular in-root file",
                 "[skill:nested-meta] metadata must map string keys to string values"):
        assert line in result.stderr
    shown = call("skill_view", name=f"{NAMESPACE}:deploy")
    assert shown["success"] is True and "Run deploy." in shown["content"]
    assert call("skill_view", name=f"{NAMESPACE}:deploy", file_path="references/a.md")["content"] == "ref"
    assert call("skill_view", name=f"{NAMESPACE}:deploy", file_path="../Bad_Name/SKILL.md")["success"] is False


@pytest.mark.parametrize("manifest, error", [
    ("not json", "plugin.json is not valid readable JSON"),
    ("[" * 100_000, "nested too deeply"),
    (json.dumps({"$schema": SCHEMA, "name": "acme"}) + " " * 2**20, "plugin.json is larger than 1 MB, the most"),
    ([1, 2], "plugin.json must contain a JSON object"),
    ({"name": "acme"}, "plugin.json declares an unsupported or missing Agent Plugins schema"),
    ({"$schema": SCHEMA, "name": "Acme--Tools"}, "plugin.json name does not satisfy v1 constraints"),
    ({"$schema": SCHEMA, "name": "acme", "version": 1}, "plugin.json version must be a string"),
    ({"$schema": SCHEMA, "name": "acme", "author": {"name": "A", "phone": "1"}},
     "plugin.json author may contain only string name, email, and url fields"),
    ({"$schema": SCHEMA, "name": "acme", "extensions": {"com.example": 3}},
     "plugin.json extension namespace values must be objects"),
])
def test_a_manifest_that_breaks_the_format_refuses_the_package_saying_why(home: Path, manifest: object,
                                                                           error: str) -> None:
    package(home / "plugins" / "broken", manifest)
    write_config(home, "plugins:\n  enabled: [broken]\n")
    report = json.loads(hermes("plugins", "doctor", "--json", check=None).stdout)
    (row,) = [p for p in report["plugins"] if p["id"] == "broken"]
    assert row["status"] == "failed" and error in row["error"]


def test_a_manifest_or_skills_folder_linked_from_outside_the_package_is_refused(home: Path, tmp_path: Path) -> None:
    elsewhere = package(tmp_path / "elsewhere")
    root = home / "plugins" / "linked"
    root.mkdir(parents=True)
    os.symlink(elsewhere / "plugin.json", root / "plugin.json")
    inside = package(home / "plugins" / "acme")
    make_skill(tmp_path / "shared-skills", "deploy", description="Deploy")
    os.symlink(tmp_path / "shared-skills", inside / "skills")
    write_config(home, "plugins:\n  enabled: [linked, acme.tools]\n")
    report = json.loads(hermes("plugins", "doctor", "--json", check=None).stdout)
    (row,) = [p for p in report["plugins"] if p["id"] == "linked"]
    assert "plugin.json must be a regular file within the plugin root" in row["error"]
    result = hermes("skills", "list", "--json")
    assert json.loads(result.stdout) == [] and "[skills] skills must be an in-root directory" in result.stderr


def test_a_plugin_yaml_wins_over_a_plugin_json(home: Path) -> None:
    root = package(home / "plugins" / "both")
    (root / "plugin.yaml").write_text("name: both\n")
    (root / "__init__.py").write_text("def register(ctx):\n    pass\n")
    ids = [row["id"] for row in hermes_json("plugins", "list")]
    assert "both" in ids and "acme.tools" not in ids


MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
SERVER = Path(__file__).parents[1] / "mcp" / "mcp_server.py"


def test_a_packages_mcp_servers_join_the_host_with_plugin_root_and_data_and_the_rules_refuse_the_rest(
        home: Path) -> None:
    import shutil
    import stat
    import sys

    root = package(home / "plugins" / "acme")
    make_skill(root / "skills", "deploy", description="Deploy the app")
    shutil.copy(SERVER, root / "server.py")
    run = root / "run.sh"
    run.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    run.chmod(run.stat().st_mode | stat.S_IXUSR)
    servers = {
        "Tools": {"type": "stdio", "command": "./run.sh", "args": ["${PLUGIN_ROOT}/server.py"],
                  "cwd": "${PLUGIN_DATA}/work", "env": {"GREETING": "from ${PLUGIN_ROOT}"}},
        "taken": {"type": "stdio", "command": "./run.sh", "args": ["${PLUGIN_ROOT}/server.py"]},
        "plain-http": {"type": "streamable-http", "url": "http://example.org/mcp"},
        "old-sse": {"type": "sse", "url": "https://example.org/sse"},
        "pathy": {"type": "stdio", "command": "/usr/bin/python3"},
        "escape": {"type": "stdio", "command": "./run.sh", "cwd": "./../../elsewhere"},
        "reserved": {"type": "stdio", "command": "./run.sh", "env": {"PLUGIN_ROOT": "/tmp"}},
        "with-user": {"type": "streamable-http", "url": "https://me:pw@example.org/mcp"},
    }
    (root / "mcp.json").write_text(json.dumps({"$schema": MCP_SCHEMA, "mcpServers": servers}))
    write_config(home, f"plugins:\n  enabled: [acme.tools]\nmcp_servers:\n  taken:\n    command: {sys.executable}\n"
                       f"    args: [{json.dumps(str(SERVER))}]\n    tools:\n      include: [echo]\n")
    listed = hermes("mcp", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {"tools", "taken"} and rows["tools"]["state"] == "ready"
    assert rows["taken"]["tools"] == ["mcp__taken__echo"]  # config.yaml's server keeps its name
    for line in ("[mcp:plain-http] non-loopback url must use https",
                 "[mcp:old-sse] portable sse transport is not supported",
                 "[mcp:pathy] command must be a bare executable or begin with ./",
                 "[mcp:escape] path escapes its resolved root",
                 "[mcp:reserved] PLUGIN_ROOT and PLUGIN_DATA are reserved",
                 "[mcp:with-user] url must not contain user information",
                 "MCP server 'taken' skipped: it conflicts with mcp_servers in config.yaml"):
        assert line in listed.stderr, line
    data = home / "plugin-data" / NAMESPACE

    from hermes_core import PluginManager

    manager = PluginManager(home=home).load()  # in one process: each `hermes` starts the server again
    try:
        seen = [manager.dispatch_tool("mcp__tools__env", {"name": name})
                for name in ("PLUGIN_ROOT", "PLUGIN_DATA", "GREETING")]
    finally:
        manager.mcp.close()
    assert seen == [str(root.resolve()), str(data), f"from {root.resolve()}"]
    assert (data / "work").is_dir()  # made before the server started, its working folder
    assert [row["name"] for row in json.loads(hermes("skills", "list", "--json").stdout)] == [f"{NAMESPACE}:deploy"]


def test_header_values_and_urls_http_cannot_send_are_refused_when_mcp_json_is_read(home: Path) -> None:
    remote = {"type": "streamable-http", "url": "https://example.org/mcp"}
    servers = {
        **{f"header-{name}": {**remote, "headers": {"X-Key": f"a{char}b"}}
           for name, char in (("nul", "\0"), ("vt", "\v"), ("del", "\x7f"), ("lf", "\n"))},
        "url-crlf": {**remote, "url": "https://example.org/mcp\r\nX-Injected: 1"},
        "url-tab": {**remote, "url": "https://exam\tple.org/mcp"},
        "spaced": {**remote, "headers": {"Authorization": "Bearer\tabc def"}},  # tabs and spaces are fine
        "local": {"type": "streamable-http", "url": "http://[::1]:9/mcp"},  # plain http on loopback
    }
    root = package(home / "plugins" / "acme")
    (root / "mcp.json").write_text(json.dumps({"$schema": MCP_SCHEMA, "mcpServers": servers}))
    write_config(home, "plugins:\n  enabled: [acme.tools]\n")
    listed = hermes("mcp", "list", "--json")
    assert {row["name"] for row in json.loads(listed.stdout)} == {"spaced", "local"}
    for name in ("nul", "vt", "del", "lf"):
        assert f"[mcp:header-{name}] header X-Key must be printable ASCII" in listed.stderr, name
    for name in ("crlf", "tab"):
        assert f"[mcp:url-{name}] url must be printable ASCII without spaces" in listed.stderr, name


def test_a_broken_mcp_json_leaves_the_package_without_servers_and_its_skills_stand(home: Path) -> None:
    root = package(home / "plugins" / "acme")
    make_skill(root / "skills", "deploy", description="Deploy the app")
    (root / "mcp.json").write_text(json.dumps({"$schema": "https://example.org/other.json", "mcpServers": {}}))
    write_config(home, "plugins:\n  enabled: [acme.tools]\n")
    listed = hermes("mcp", "list", "--json")
    assert json.loads(listed.stdout) == [] and "[mcp] mcp.json declares an unsupported schema" in listed.stderr
    (root / "mcp.json").write_bytes(b"[" * 100_000)  # nested past the parser
    listed = hermes("mcp", "list", "--json")
    assert json.loads(listed.stdout) == [] and "[mcp] mcp.json is not valid readable JSON" in listed.stderr
    (root / "mcp.json").write_text(json.dumps({"$schema": MCP_SCHEMA, "mcpServers": {}}) + " " * 2**20)
    listed = hermes("mcp", "list", "--json")  # valid, but larger than such a file may be: not read whole
    assert json.loads(listed.stdout) == [] and f"{root / 'mcp.json'} is larger than 1 MB" in listed.stderr
    assert [row["name"] for row in json.loads(hermes("skills", "list", "--json").stdout)] == [f"{NAMESPACE}:deploy"]
