"""hermes-core's MCP, both ways, measured by the official MCP conformance suite.

    .venv/bin/python benchmarks/mcp_conformance.py server [--suite all] [--scenario NAME]
    .venv/bin/python benchmarks/mcp_conformance.py client-auth [--scenario NAME]
        (either with --conformance "npx -y @modelcontextprotocol/conformance@0.1.16", the default)

The suite needs Node 22 or newer on PATH (its `conformance` command uses `fs.globSync`).

- `server`: a fresh HERMES_HOME holds the fixture plugin `mcp_conformance/conformance`, which
  answers each scenario a plugin can express with the plugin API alone (tools with text, image,
  audio and resource results, progress, logging, errors; prompts); `hermes mcp serve --http
  127.0.0.1:0 --prompts --resources` serves it, and the suite runs against its URL.
- `client-auth`: for each of the suite's `auth/*` scenarios, hermes-core is the client: a fresh
  HERMES_HOME with `mcp_servers: {conformance: {url: <the scenario's server>, auth: oauth}}` (and
  the client the scenario registered beforehand, when it gives one), `hermes mcp login
  conformance` with a stand-in browser that follows the authorization server's redirect, then
  `hermes mcp list` (connect with the stored login and list the tools).

Scenarios for what hermes-core does not claim fail with the spec's error codes; docs/mcp.md has
the tables. This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
HERMES = Path(sys.executable).with_name("hermes")
SUITE = "npx -y @modelcontextprotocol/conformance@0.1.16"


def serve_and_run(conformance: list[str], suite: str, scenario: str | None) -> int:
    with tempfile.TemporaryDirectory(prefix="hermes-conformance-") as home:
        shutil.copytree(HERE / "mcp_conformance" / "conformance", Path(home) / "plugins" / "conformance")
        (Path(home) / "config.yaml").write_text("plugins:\n  enabled: [conformance]\n", encoding="utf-8")
        server = subprocess.Popen([str(HERMES), "mcp", "serve", "--http", "127.0.0.1:0", "--prompts", "--resources"],
                                  env={**os.environ, "HERMES_HOME": home}, stderr=subprocess.PIPE, text=True)
        try:
            assert server.stderr is not None
            url = server.stderr.readline().strip()  # the first line is the URL alone
            if not url.startswith("http://"):
                print(f"hermes mcp serve did not start: {url}", file=sys.stderr)
                return 1
            chosen = ["--scenario", scenario] if scenario else ["--suite", suite]
            return subprocess.call([*conformance, "server", "--url", url, *chosen])
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


def client_auth(conformance: list[str], scenario: str | None) -> int:
    if scenario:
        names = [scenario]
    else:
        listing = subprocess.run([*conformance, "list"], capture_output=True, text=True, check=True).stdout
        names = re.findall(r"^\s+- (auth/\S+)", listing, re.MULTILINE)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__)))} as-client"
    failed = 0
    for name in names:
        run = subprocess.run([*conformance, "client", "--command", command, "--scenario", name, "--timeout", "40000"],
                             capture_output=True, text=True)
        found = re.findall(r"Passed: .*", run.stdout + run.stderr)
        print(f"{name}: {found[-1] if found else 'no result'}" + ("" if run.returncode == 0 else "  (failed)"))
        failed += run.returncode != 0
    return 1 if failed else 0


def as_client(url: str) -> int:
    """What the suite runs as the client under test: log in, then connect and list the tools."""
    with tempfile.TemporaryDirectory(prefix="hermes-conformance-client-") as home:
        config = f"mcp_servers:\n  conformance:\n    url: {json.dumps(url)}\n    auth: oauth\n    connect_timeout: 10\n"
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        if "client_id" in context:  # a client the scenario registered beforehand
            config += (f"    oauth:\n      client_id: {json.dumps(context['client_id'])}\n"
                       f"      client_secret: {json.dumps(context.get('client_secret', ''))}\n")
        (Path(home) / "config.yaml").write_text(config, encoding="utf-8")
        browser = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__)))} browse %s"
        env = {**os.environ, "HERMES_HOME": home, "BROWSER": browser}
        logged_in = subprocess.call([str(HERMES), "mcp", "login", "conformance", "--timeout", "30"], env=env,
                                    stdout=sys.stderr)
        listed = subprocess.call([str(HERMES), "mcp", "list", "--json"], env=env)
        return logged_in or listed


def browse(url: str) -> int:
    """A stand-in browser: open the URL and follow the authorization server's redirect home."""
    with urllib.request.urlopen(url, timeout=60) as response:
        return 0 if response.status == 200 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conformance", default=SUITE, help="the suite's command line (default: %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True)
    server = commands.add_parser("server", help="hermes mcp serve against the server scenarios")
    server.add_argument("--suite", default="all", help="active, all or pending (default: %(default)s)")
    server.add_argument("--scenario", help="one scenario only")
    client = commands.add_parser("client-auth", help="hermes-core's OAuth client against the auth scenarios")
    client.add_argument("--scenario", help="one scenario only")
    commands.add_parser("as-client").add_argument("url")
    commands.add_parser("browse").add_argument("url")
    options = parser.parse_args()
    conformance = shlex.split(options.conformance)
    if options.command == "server":
        return serve_and_run(conformance, options.suite, options.scenario)
    if options.command == "client-auth":
        return client_auth(conformance, options.scenario)
    return as_client(options.url) if options.command == "as-client" else browse(options.url)


if __name__ == "__main__":
    sys.exit(main())
