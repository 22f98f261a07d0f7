"""`hermes mcp serve` measured by the official MCP conformance suite's server scenarios.

    .venv/bin/python benchmarks/mcp_conformance.py [--suite all] [--scenario NAME]
        [--conformance "npx -y @modelcontextprotocol/conformance@0.1.16"]

The suite needs Node 22 or newer on PATH (its `conformance` command uses `fs.globSync`). A fresh
HERMES_HOME holds the fixture plugin `mcp_conformance/conformance`, which answers each scenario a
plugin can express with the plugin API alone (tools with text, image, audio and resource results,
progress, logging, errors; prompts); `hermes mcp serve --http 127.0.0.1:0 --prompts --resources`
serves it, and the suite runs against its URL. Scenarios that need what hermes-core does not
claim for `mcp serve` (a tool's own sampling or elicitation requests to the client, plugin-defined
resources, subscriptions, prompts with images) fail with the spec's error codes; docs/mcp.md has
the table. This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HERMES = Path(sys.executable).with_name("hermes")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conformance", default="npx -y @modelcontextprotocol/conformance@0.1.16",
                        help="the suite's command line (default: %(default)s)")
    parser.add_argument("--suite", default="all", help="active, all or pending (default: %(default)s)")
    parser.add_argument("--scenario", help="one scenario only")
    options = parser.parse_args()
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
            chosen = ["--scenario", options.scenario] if options.scenario else ["--suite", options.suite]
            return subprocess.call([*shlex.split(options.conformance), "server", "--url", url, *chosen])
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
