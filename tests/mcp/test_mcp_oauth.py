"""OAuth for `mcp_servers:` (`auth: oauth`), on the SDK's client: `hermes mcp login` through a loopback
redirect or a pasted answer, tokens kept in $HERMES_HOME (0600) and refreshed before they expire,
`hermes mcp logout`, and `hermes mcp list` saying which server needs a login. Against a local
authorization server and protected MCP server built from the SDK's own pieces (`oauth_server.py`)."""

from __future__ import annotations

import contextlib
import json
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from hermes_core import PluginManager
from hermes_core.testing import tool_call
from tests.helpers import HERMES, free_port, hermes, hermes_json, llm_config, write_config


def entry(name: str, url: str, extra: str = "") -> str:
    return f"  {name}:\n    url: {url}\n    auth: oauth\n" + "".join(f"    {line}\n" for line in extra.splitlines())


def token_file(home: Path, name: str = "srv") -> Path:
    return home / "mcp" / "oauth" / f"{name}.json"


def start_login(*flags: str, name: str = "srv") -> tuple[subprocess.Popen[str], str]:
    """`hermes mcp login` running, and the authorization URL it printed (after a line saying what it is)."""
    process = subprocess.Popen([str(HERMES), "mcp", "login", name, *flags], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    before = ""
    for line in process.stdout:
        if line.startswith("http"):
            assert before == f"Open this URL in a browser to log in to MCP server {name!r}:\n"
            return process, line.strip()
        before = line
    process.kill()
    raise AssertionError(f"no URL printed: {process.communicate(timeout=30)}")


def finish(process: subprocess.Popen[str], stdin: str | None = None) -> tuple[int, str, str]:
    out, err = process.communicate(stdin, timeout=120)
    return process.returncode, out, err


def login(*flags: str, name: str = "srv") -> str:
    """Log in as a person with a browser would: the URL is followed to the end (the AS approves at
    once and redirects to the CLI's listener on 127.0.0.1)."""
    process, url = start_login("--no-browser", *flags, name=name)
    with urllib.request.urlopen(url, timeout=60) as response:  # follows the 302 to the loopback listener
        assert response.status == 200 and b"Logged in" in response.read()
    code, out, err = finish(process)
    assert code == 0, (out, err)
    return out


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def redirect_of(url: str) -> str:
    """Where the authorization server sends the browser (its 302 Location), not followed."""
    try:
        urllib.request.build_opener(NoRedirect()).open(url, timeout=60)
    except urllib.error.HTTPError as exc:
        assert exc.code == 302
        return str(exc.headers["Location"])
    raise AssertionError("no redirect")


def states(home: Path) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in hermes_json("mcp", "list")}


def test_login_call_refresh_and_logout_through_the_cli(home: Path, oauth_server: Any, llm_server: Any) -> None:
    server = oauth_server(ttl=4)
    llm_config(home, llm_server.url, "mcp_servers:\n" + entry("srv", server.mcp))
    listed = hermes("mcp", "list")
    assert "needs login: run `hermes mcp login srv`" in listed.stdout
    assert states(home)["srv"]["state"] == "needs login"
    assert server.counts()["register"] == 0  # asking nobody: no registration, no flow

    # without a login the run still answers, without the server's tools, and says why once
    llm_server.reply("answered anyway")
    run = hermes("run", "who am I?")
    assert run.stdout.strip() == "answered anyway"
    assert run.stderr.count("MCP server 'srv' needs a login: run `hermes mcp login srv`") == 1, run.stderr
    offered = [t["function"]["name"] for t in llm_server.requests[0].body.get("tools", [])]
    assert not [name for name in offered if name.startswith("mcp__srv__")]

    out = login()
    assert out.splitlines()[-1] == "logged in to srv"
    path = token_file(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["url"] == server.mcp and saved["tokens"]["refresh_token"] and saved["client_info"]["client_id"]
    assert saved["client_info"]["redirect_uris"][0].startswith("http://127.0.0.1:")
    assert saved["oauth_metadata"]["issuer"].rstrip("/") == server.issuer
    assert states(home)["srv"]["state"] == "ready"
    assert server.counts() == {"register": 1, "authorize": 1, "code_exchange": 1,
                               "refresh_exchange": server.counts()["refresh_exchange"]}

    # the stored access token expires: the next process refreshes it, nobody is asked again
    while time.time() <= saved["expires_at"]:
        time.sleep(0.2)
    refreshes = server.counts()["refresh_exchange"]
    llm_server.reply(None, tool_calls=[tool_call("mcp__srv__whoami", {}, call_id="w1")])
    llm_server.reply("done")
    assert hermes("run", "who am I?").stdout.strip() == "done"
    assert llm_server.requests[-1].body["messages"][-1] == {
        "role": "tool", "tool_call_id": "w1", "content": "subject=test-user scopes=mcp:tools"}
    counts = server.counts()
    assert counts["refresh_exchange"] > refreshes and counts["authorize"] == 1 and counts["register"] == 1
    assert json.loads(path.read_text())["tokens"]["access_token"] != saved["tokens"]["access_token"]

    # a second login reuses the registered client (its redirect URI, hence its port, is kept)
    login()
    assert server.counts()["register"] == 1 and server.counts()["authorize"] == 2

    assert hermes("mcp", "logout", "srv").stdout.strip() == "logged out of srv"
    assert not path.exists()
    assert states(home)["srv"]["state"] == "needs login"
    assert hermes("mcp", "logout", "srv").stdout.strip() == "srv: there was no login to forget"


def test_a_login_opens_the_browser(home: Path, oauth_server: Any, monkeypatch: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    monkeypatch.setenv("BROWSER", f"{sys.executable} {Path(__file__).with_name('browser.py')} %s")
    result = hermes("mcp", "login", "srv")
    assert result.stdout.splitlines()[-1] == "logged in to srv" and server.counts()["authorize"] == 1
    assert hermes("tools", "call", "mcp__srv__whoami", "{}").stdout.strip() == "subject=test-user scopes=mcp:tools"


def test_a_headless_login_takes_the_pasted_redirect_url_or_code(home: Path, oauth_server: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    process, url = start_login("--paste")
    code, out, err = finish(process, redirect_of(url) + "\n")
    assert code == 0 and out.splitlines()[-1] == "logged in to srv", (out, err)
    assert hermes("tools", "call", "mcp__srv__whoami", "{}").stdout.strip() == "subject=test-user scopes=mcp:tools"

    process, url = start_login("--paste")  # the code alone, as a device-style login shows it
    pasted = parse_qs(urlsplit(redirect_of(url)).query)["code"][0]
    code, out, err = finish(process, f"\n{pasted}\n")
    assert code == 0 and out.splitlines()[-1] == "logged in to srv", (out, err)

    process, url = start_login("--paste")  # another login's answer: its state does not match
    other = redirect_of(url.replace("state=", "state=x"))
    code, out, err = finish(process, other + "\n")
    assert code == 1 and "State parameter mismatch" in err and err.count("\n") == 1, err
    assert hermes("tools", "call", "mcp__srv__whoami", "{}").returncode == 0  # the old login still works


def test_a_token_is_refreshed_a_minute_before_it_expires(home: Path, oauth_server: Any) -> None:
    server = oauth_server()  # tokens the server accepts for an hour
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    login()
    path = token_file(home)

    def call_with_expiry_in(seconds: float) -> dict[str, int]:
        saved = json.loads(path.read_text())
        saved["expires_at"] = time.time() + seconds
        path.write_text(json.dumps(saved))
        assert hermes("tools", "call", "mcp__srv__whoami", "{}").stdout.strip() == "subject=test-user scopes=mcp:tools"
        return server.counts()

    assert call_with_expiry_in(3000)["refresh_exchange"] == 0  # far from expiry: used as it is
    counts = call_with_expiry_in(30)  # valid for 30 s more, inside the margin: refreshed first
    assert counts["refresh_exchange"] == 1 and counts["authorize"] == 1
    assert json.loads(path.read_text())["expires_at"] > time.time() + 3000  # the new token's expiry is kept


def test_a_process_refreshes_with_the_refresh_token_another_process_left(home: Path, oauth_server: Any) -> None:
    server = oauth_server(ttl=4)  # refreshed 2 s after it is issued
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    login()
    host = PluginManager(home=home).load()  # a long-lived host (a gateway) holding the login's tokens
    try:
        assert host.dispatch_tool("mcp__srv__whoami", {}) == "subject=test-user scopes=mcp:tools"
        held = json.loads(token_file(home).read_text())
        while time.time() <= held["expires_at"]:
            time.sleep(0.2)
        # another process refreshes first: the refresh token the host holds is used up (rotated)
        assert hermes("tools", "call", "mcp__srv__whoami", "{}").stdout.strip() == "subject=test-user scopes=mcp:tools"
        assert json.loads(token_file(home).read_text())["tokens"]["refresh_token"] != held["tokens"]["refresh_token"]
        assert host.dispatch_tool("mcp__srv__whoami", {}) == "subject=test-user scopes=mcp:tools"
        assert server.counts()["authorize"] == 1
    finally:
        host.mcp.close()


def test_a_server_over_sse_logs_in_the_same_way(home: Path, oauth_server: Any) -> None:
    server = oauth_server(sse=True)
    write_config(home, "mcp_servers:\n" + entry("old", server.mcp, "transport: sse"))
    assert states(home)["old"]["state"] == "needs login"
    login(name="old")
    assert hermes("tools", "call", "mcp__old__whoami", "{}").stdout.strip() == "subject=test-user scopes=mcp:tools"


def test_a_taken_redirect_port_registers_again_and_a_configured_one_is_kept(home: Path, oauth_server: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    login()
    first = json.loads(token_file(home).read_text())["client_info"]["redirect_uris"][0]
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the last login's TIME_WAIT
        with contextlib.suppress(OSError):  # already taken by another test's process: taken all the same
            taken.bind(("127.0.0.1", urlsplit(first).port or 0))
            taken.listen(1)
        login()  # its port is taken: another one, and the client registered with it
        second = json.loads(token_file(home).read_text())["client_info"]["redirect_uris"][0]
        assert second != first and server.counts()["register"] == 2
        write_config(home, "mcp_servers:\n" + entry("srv", server.mcp, f"oauth: {{redirect_port: {urlsplit(first).port}}}"))
        refused = hermes("mcp", "login", "srv", "--no-browser", check=1)
        assert f"cannot listen on 127.0.0.1:{urlsplit(first).port} (mcp_servers.srv.oauth.redirect_port)" in refused.stderr
    port = free_port()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp, f"oauth: {{redirect_port: {port}}}"))
    login()
    saved = json.loads(token_file(home).read_text())["client_info"]["redirect_uris"][0]
    assert saved == f"http://127.0.0.1:{port}/callback" and server.counts()["register"] == 3


def test_a_login_nobody_finishes_ends_with_a_clear_message(home: Path, oauth_server: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    result = hermes("mcp", "login", "srv", "--no-browser", "--timeout", "1", check=1)
    assert "the browser did not come back within 1 s; run `hermes mcp login srv` again" in result.stderr
    assert not token_file(home).exists() or "tokens" not in json.loads(token_file(home).read_text())


def test_a_login_is_bound_to_the_url_and_a_broken_file_is_no_login(home: Path, oauth_server: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    login()
    moved = server.mcp.replace("/mcp", "/other")
    write_config(home, "mcp_servers:\n" + entry("srv", moved))
    assert states(home)["srv"]["state"] == "needs login"  # tokens for another url are not sent here
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    assert states(home)["srv"]["state"] == "ready"
    token_file(home).write_text("{not json")
    listed = hermes("mcp", "list")
    assert "needs login" in listed.stdout and "its login" in listed.stderr and "cannot be read" in listed.stderr
    token_file(home).write_text(json.dumps({"url": server.mcp}) + " " * 2**20)  # not read whole
    listed = hermes("mcp", "list")
    assert "needs login" in listed.stdout and f"{token_file(home)} is larger than 1 MB" in listed.stderr


def test_oauth_config_is_checked_and_login_names_the_servers(home: Path) -> None:
    write_config(home, "mcp_servers:\n"
                       "  local:\n    command: /bin/true\n    auth: oauth\n"
                       "  odd:\n    url: http://127.0.0.1:1/mcp\n    auth: basic\n"
                       "  plain:\n    url: http://127.0.0.1:1/mcp\n"
                       "  port:\n    url: http://127.0.0.1:1/mcp\n    auth: oauth\n    oauth: {redirect_port: 70000}\n")
    listed = hermes("mcp", "list")
    assert "mcp_servers.local has auth: oauth, which only a server reached by url (http or sse) can use" in listed.stderr
    assert "mcp_servers.odd.auth" in listed.stderr and "must be oauth, not 'basic'" in listed.stderr
    assert "mcp_servers.port.oauth.redirect_port is 70000" in listed.stderr
    missing = hermes("mcp", "login", "nope", check=1)
    assert "no MCP server 'nope'" in missing.stderr and "configured and enabled: plain" in missing.stderr
    assert "does not use OAuth" in hermes("mcp", "login", "plain", check=1).stderr
    assert "must be oauth, not 'basic'" in hermes("mcp", "logout", "odd", check=1).stderr


def test_the_sdk_names_the_oauth_provider_relies_on_are_there() -> None:
    """The provider that keeps expiry and metadata across processes overrides and sets these private
    names of the SDK (hermes_core/_mcp/oauth.py); a new SDK without them must fail here first."""
    import dataclasses

    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.oauth2 import OAuthContext

    for method in ("_initialize", "_refresh_token", "_handle_token_response", "_handle_refresh_response"):
        assert callable(getattr(OAuthClientProvider, method, None)), method
    fields = {field.name for field in dataclasses.fields(OAuthContext)}
    assert {"token_expiry_time", "oauth_metadata", "current_tokens", "storage"} <= fields


def test_a_client_registered_beforehand_logs_in_with_its_secret_and_registers_nothing(
        home: Path, oauth_server: Any, monkeypatch: Any) -> None:
    port = free_port()
    server = oauth_server(client=f"hermes-app:s3cret:http://127.0.0.1:{port}/callback")
    monkeypatch.setenv("APP_SECRET", "s3cret")
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp, f"oauth:\n  client_id: hermes-app\n"
                                                                   f"  client_secret: ${{APP_SECRET}}\n"
                                                                   f"  redirect_port: {port}"))
    login()
    assert server.counts()["register"] == 0 and server.counts()["code_exchange"] == 1
    assert "s3cret" not in token_file(home).read_text()  # the secret stays in the environment
    assert states(home)["srv"]["state"] == "ready"

    monkeypatch.setenv("APP_SECRET", "wrong")  # the authorization server refuses another secret
    process, url = start_login("--no-browser")
    with contextlib.suppress(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=60).read()
    code, _, err = finish(process)
    assert code == 1 and err.startswith("hermes: error: hermes mcp login srv:") and "401" in err, err
    assert states(home)["srv"]["state"] == "ready"  # the login that worked is kept


def test_junk_sent_to_the_login_listener_is_ignored_and_the_real_redirect_still_logs_in(
        home: Path, oauth_server: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    process, url = start_login("--no-browser")
    port = urlsplit(parse_qs(urlsplit(url).query)["redirect_uri"][0]).port
    for junk in (b"GET /" + b"x" * 200_000 + b" HTTP/1.1\r\n\r\n", b"\xff\xfe not http\r\n\r\n",
                 b"GET /elsewhere HTTP/1.1\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(junk)
            with contextlib.suppress(OSError):
                sock.recv(1024)
    with urllib.request.urlopen(url, timeout=60) as response:
        assert response.status == 200
    code, out, err = finish(process)
    assert code == 0 and out.splitlines()[-1] == "logged in to srv", (out, err)
    assert "Traceback" not in err and "Unhandled exception" not in err, err


@pytest.mark.parametrize("client_info", ["junk", ["a"], {"redirect_uris": "not a list"},
                                         {"client_id": "c", "redirect_uris": ["not a url"]}])
def test_a_login_file_with_a_client_of_the_wrong_shape_needs_a_login(home: Path, oauth_server: Any,
                                                                     client_info: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    login()
    stored = json.loads(token_file(home).read_text())
    token_file(home).write_text(json.dumps({**stored, "client_info": client_info}))
    listed = hermes_json("mcp", "list")
    assert listed[0]["state"] == "needs login", listed
    login()  # a new login replaces it
    assert states(home)["srv"]["state"] == "ready"


def test_a_connection_held_open_on_the_login_listener_is_dropped_quietly(home: Path, oauth_server: Any) -> None:
    server = oauth_server()
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    process, url = start_login("--no-browser")
    port = urlsplit(parse_qs(urlsplit(url).query)["redirect_uri"][0]).port
    with socket.create_connection(("127.0.0.1", port), timeout=30) as held:  # half a request line, then nothing
        held.sendall(b"GET /callback?code=")
        with urllib.request.urlopen(url, timeout=60) as response:
            assert response.status == 200
        code, out, err = finish(process)
    assert code == 0 and out.splitlines()[-1] == "logged in to srv", (out, err)
    assert err == "", err


def test_a_server_that_refuses_the_granted_scope_ends_the_login_saying_so(home: Path, oauth_server: Any) -> None:
    server = oauth_server(no_scope=True)
    write_config(home, "mcp_servers:\n" + entry("srv", server.mcp))
    process, url = start_login("--no-browser")
    with contextlib.suppress(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=60).read()
    code, out, err = finish(process)
    assert code == 1 and not [line for line in out.splitlines() if line.startswith("http")], out  # no second URL
    (line,) = err.strip().splitlines()
    assert line.startswith("hermes: error: hermes mcp login srv: the server refused the login it had just granted")
    assert "scope" in line and "State parameter mismatch" not in line
