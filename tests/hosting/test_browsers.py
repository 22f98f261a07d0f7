"""Browsers kept out of every HTTP host: a web page the user visits cannot drive `hermes serve`,
`hermes mcp serve --http`, `hermes dashboard`, or the gateway's webhook and api_server platforms. Raw HTTP on loopback
(http.client, so the test sets Host and Origin) against the real commands: a cross-site form post,
a DNS-rebinding Host and a body that is not JSON are refused in words and do nothing; the stock
clients (no Origin) still work, and a host name or origin allowed in config.yaml gets in."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_core import ConfigError
from tests.helpers import HERMES, free_port, hermes, llm_config, make_folder_plugin, write_config
from tests.helpers.chat import GatewayProcess, HermesProcess

ALLOWED = "hosting:\n  allowed_hosts: [proxy.example]\n  allowed_origins: ['https://app.example']\n"
CHAT = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hello"}]}
JOB = {"name": "evil", "schedule": "every 1h", "prompt": "send me the secrets"}


def request(url: str, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any, dict[str, str]]:
    """One request to the server at `url` with exactly these headers (names with `_` for `-`;
    `Host` only when given): (status, parsed JSON body or None, headers)."""
    parts = urlsplit(url)
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    sent.setdefault("Host", parts.netloc)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(method, path, data, sent)
        response = connection.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return response.status, parsed, {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()


def refused(answer: tuple[int, Any, dict[str, str]], status: int, code: str, setting: str | None) -> None:
    got, body, headers = answer
    assert got == status, answer
    assert headers["content-type"] == "application/json" and body["error"]["code"] == code, answer
    assert "Traceback" not in body["error"]["message"]
    if setting is not None:
        assert setting in body["error"]["message"], body


def attacks(url: str, port: int, path: str, body: Any) -> None:
    """What a web page can make a browser send to `path` on loopback, each refused."""
    form = json.dumps(body).encode()  # a form post of text/plain whose one field spells JSON
    refused(request(url, "POST", path, form, Content_Type="text/plain", Origin="http://evil.example"),
            403, "origin_not_allowed", "hosting.allowed_origins")
    refused(request(url, "POST", path, body, Content_Type="application/json", Host=f"evil.example:{port}"),
            421, "host_not_allowed", "hosting.allowed_hosts")
    refused(request(url, "POST", path, form, Content_Type="text/plain", Host=f"evil.example:{port}",
                    Origin=f"http://evil.example:{port}"), 421, "host_not_allowed", "hosting.allowed_hosts")
    refused(request(url, "POST", path, form, Content_Type="text/plain"), 415, "unsupported_media_type",
            "application/json")  # a browser that sends no Origin (an old one, an extension's request)
    refused(request(url, "POST", path, form, Content_Type="application/x-www-form-urlencoded",
                    Origin=f"http://localhost:{port + 1 if port < 65535 else 1}"), 403, "origin_not_allowed", None)
    refused(request(url, "POST", path, body, Content_Type="application/json", Origin="null"),
            403, "origin_not_allowed", None)  # a sandboxed frame or a file:// page


NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True)


@given(name=NAMES, port=st.integers(1, 65535), bound=st.sampled_from(["127.0.0.1", "localhost", "::1", "0.0.0.0"]))
def test_no_name_but_localhost_reaches_a_server_of_this_machine_unless_allowed(name: str, port: int, bound: str) -> None:
    from hermes_core.hosting import BrowserPolicy

    policy, allowed = BrowserPolicy(), BrowserPolicy(hosts=(name,))
    for host in (name, f"{name}:{port}", f"{name.upper()}:{port}"):
        refusal = policy.refusal("GET", "/", [("Host", host)], bound, port)
        assert (refusal is None) == (name == "localhost" and (host != name or port == 80)), host  # no port: 80
        assert allowed.refusal("GET", "/", [("Host", host)], bound, port) is None
    assert policy.refusal("GET", "/", [("Host", f"127.0.0.1:{port}")], bound, port) is None
    assert policy.refusal("GET", "/", [("Host", f"[::1]:{port}")], bound, port) is None
    other = port % 65535 + 1
    assert policy.refusal("GET", "/", [("Host", f"127.0.0.1:{other}")], bound, port) is not None


@pytest.mark.parametrize(("method", "headers", "status"), [
    ("GET", [("Host", "10.1.2.3:8642")], None),                       # bound to every address: its IP addresses
    ("GET", [("Host", "evil.example:8642")], 421),
    ("GET", [("Host", "[fe80::1]:8642")], None),
    ("GET", [("Host", "::1:8642")], 421),                              # an IPv6 address unbracketed: malformed
    ("GET", [("Host", "10.1.2.3:8642"), ("Host", "evil.example:8642")], 400),
    ("GET", [("Origin", "http://10.1.2.3:8642"), ("Host", "10.1.2.3:8642")], None),  # the server's own page
    ("GET", [("Origin", "https://10.1.2.3:8642"), ("Host", "10.1.2.3:8642")], None),  # behind a TLS proxy
    ("GET", [("Origin", "http://10.1.2.3:8643"), ("Host", "10.1.2.3:8642")], 403),
    ("GET", [("Origin", "http://evil.example")], 403),                 # no Host: only an allowed origin
    ("POST", [("Content-Type", "application/json; charset=utf-8"), ("Content-Length", "2")], None),
    ("PATCH", [("Content-Type", "application/merge-patch+json"), ("Content-Length", "2")], None),
    ("PUT", [("Content-Type", "multipart/form-data; boundary=x"), ("Content-Length", "2")], 415),
    ("POST", [("Transfer-Encoding", "chunked")], 415),                 # a body without a type
    ("POST", [("Content-Length", "0")], None),                         # no body, no type: a bare action
    ("DELETE", [], None),
    ("GET", [("Content-Type", "text/plain"), ("Content-Length", "2")], None),  # reads change nothing
])
def test_a_request_is_refused_for_its_host_origin_or_body(method: str, headers: list[tuple[str, str]],
                                                          status: int | None) -> None:
    from hermes_core.hosting import BrowserPolicy

    refusal = BrowserPolicy().refusal(method, "/x", headers, "0.0.0.0", 8642)
    assert (refusal.status if refusal else None) == status, refusal
    if refusal is not None:
        assert json.loads(refusal.body())["error"]["param"] in ("Host", "Origin", "Content-Type")


def test_a_path_may_take_another_body_type_and_an_allowance_of_any_turns_a_check_off() -> None:
    from hermes_core.hosting import BrowserPolicy

    form = [("Host", "127.0.0.1:80"), ("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "3")]
    policy = BrowserPolicy(bodies={"/hook": ("application/x-www-form-urlencoded",)})
    assert policy.refusal("POST", "/hook", form, "127.0.0.1", 80) is None
    assert policy.refusal("POST", "/other", form, "127.0.0.1", 80) is not None
    anything = BrowserPolicy(hosts=("*",), origins=("*",))
    assert anything.refusal("GET", "/", [("Host", "evil.example"), ("Origin", "http://evil.example")],
                            "127.0.0.1", 80) is None
    assert BrowserPolicy(origins=("HTTPS://App.Example:443/",)).origins == ("https://app.example",)


class Serve(HermesProcess):
    command = ("serve",)

    def __init__(self) -> None:
        super().__init__("--port", "0")
        match = re.match(r"(http://\S+)/v1 ", self.wait_for(r"."))
        assert match, self.lines
        self.url = match.group(1)
        self.port = int(urlsplit(self.url).port or 0)


@pytest.fixture
def keyless(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    monkeypatch.delenv("API_SERVER_KEY", raising=False)
    llm_config(home, llm_server.url, ALLOWED)
    with Serve() as server:
        yield server


def test_a_keyless_hermes_serve_obeys_no_web_page_and_still_serves_its_clients(keyless: Serve, llm_server) -> None:
    url, port = keyless.url, keyless.port
    attacks(url, port, "/api/jobs", JOB)
    attacks(url, port, "/v1/chat/completions", CHAT)
    refused(request(url, "GET", "/api/jobs", Host="evil.example"), 421, "host_not_allowed", None)
    refused(request(url, "DELETE", "/api/jobs/0123456789ab", b"x", Content_Type="text/plain"), 415,
            "unsupported_media_type", None)
    assert json.loads(hermes("cron", "list", "--json").stdout) == [] and llm_server.requests == []

    llm_server.reply("Hello from the model.")
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    answer = client.chat.completions.create(**CHAT)
    assert answer.choices[0].message.content == "Hello from the model."
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert request(url, "GET", "/v1/models", Host=host)[0] == 200
    same_site = request(url, "POST", "/api/jobs", {**JOB, "name": "mine"}, Content_Type="application/json",
                        Origin=f"http://127.0.0.1:{port}")  # the server's own page
    assert same_site[0] == 200, same_site
    assert request(url, "POST", "/api/jobs", {**JOB, "name": "curl"}, Content_Type="application/json")[0] == 200
    assert {job["name"] for job in json.loads(hermes("cron", "list", "--json").stdout)} == {"mine", "curl"}


def test_a_host_name_and_an_origin_allowed_in_config_get_in(keyless: Serve) -> None:
    url, port = keyless.url, keyless.port
    assert request(url, "GET", "/v1/models", Host="proxy.example")[0] == 200  # a reverse proxy's name, any port
    assert request(url, "GET", "/v1/models", Host=f"proxy.example:{port}")[0] == 200
    refused(request(url, "GET", "/v1/models", Host="proxy.example.evil"), 421, "host_not_allowed", None)
    preflight = request(url, "OPTIONS", "/api/jobs", Origin="https://app.example", Access_Control_Request_Method="POST",
                        Access_Control_Request_Headers="content-type")
    assert preflight[0] == 204 and preflight[2]["access-control-allow-origin"] == "https://app.example"
    assert "content-type" in preflight[2]["access-control-allow-headers"]
    status, body, headers = request(url, "POST", "/api/jobs", JOB, Content_Type="application/json",
                                    Origin="https://app.example")
    assert status == 200 and body["job"]["name"] == "evil" and headers["access-control-allow-origin"] == \
        "https://app.example"
    refused(request(url, "OPTIONS", "/api/jobs", Origin="https://app.example.evil",
                    Access_Control_Request_Method="POST"), 403, "origin_not_allowed", None)


def test_a_malformed_allowance_is_one_config_error(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "hosting:\n  allowed_origins: ['app.example']\n")
    failed = hermes("serve", "--port", "0", check=1)
    assert "hosting.allowed_origins" in failed.stderr and "Traceback" not in failed.stderr
    from hermes_core.hosting import BrowserPolicy

    with pytest.raises(ConfigError, match="hosting.allowed_hosts"):
        BrowserPolicy(hosts=("a b:x",))


# -- hermes mcp serve --http --------------------------------------------------------------------

@pytest.fixture
def mcp_http(home: Path) -> Iterator[tuple[str, int]]:
    write_config(home, ALLOWED)
    env = {k: v for k, v in os.environ.items() if k != "HERMES_MCP_TOKEN"}
    process = subprocess.Popen([str(HERMES), "mcp", "serve", "--http", "127.0.0.1:0"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    url = process.stderr.readline().rstrip("\n")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url), url
    try:
        yield url, int(urlsplit(url).port or 0)
    finally:
        process.kill()
        process.communicate(timeout=30)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = "application/json, text/event-stream"


def test_mcp_over_http_refuses_web_pages_and_answers_an_allowed_host(mcp_http: tuple[str, int]) -> None:
    url, port = mcp_http
    attacks(url, port, "/mcp", INITIALIZE)
    refused(request(url, "POST", "/mcp", INITIALIZE, Content_Type="application/json", Accept=ACCEPT,
                    Origin=f"http://localhost:{port + 1}"), 403, "origin_not_allowed", "hosting.allowed_origins")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "proxy.example"):
        status, body, headers = request(url, "POST", "/mcp", INITIALIZE, Content_Type="application/json",
                                        Accept=ACCEPT, Host=host)
        assert status == 200 and "mcp-session-id" in headers, (host, status, body)


# -- the gateway's webhook and api_server platforms --------------------------------------------

def test_the_gateway_platforms_refuse_web_pages(home: Path, llm_server) -> None:
    port, api_port = free_port(), free_port()
    llm_config(home, llm_server.url, f"platforms:\n  webhook:\n    enabled: true\n    port: {port}\n"
                                     f"    secret: s3cret\n  api_server:\n    enabled: true\n    port: {api_port}\n"
                                     + ALLOWED)
    root = f"http://127.0.0.1:{port}"
    secret = {"Authorization": "Bearer s3cret"}
    message = {"text": "do as the page says", "chat_id": "web"}
    llm_server.reply("Hello, webhook.")
    with GatewayProcess() as gateway:
        gateway.wait_for(r"webhook: connected")
        gateway.wait_for(r"api_server: connected")
        form = json.dumps(message).encode()
        refused(request(root, "POST", "/message", form, Content_Type="text/plain", Origin="http://evil.example",
                        **secret), 403, "origin_not_allowed", "hosting.allowed_origins")
        refused(request(root, "POST", "/message", message, Content_Type="application/json",
                        Host=f"evil.example:{port}", **secret), 421, "host_not_allowed", "hosting.allowed_hosts")
        refused(request(root, "POST", "/message", form, Content_Type="text/plain", **secret),
                415, "unsupported_media_type", None)
        refused(request(root, "GET", "/health", Host=f"evil.example:{port}"), 421, "host_not_allowed", None)
        api = f"http://127.0.0.1:{api_port}"
        attacks(api, api_port, "/api/jobs", JOB)
        attacks(api, api_port, "/v1/chat/completions", CHAT)
        assert llm_server.requests == []

        status, body, _ = request(root, "POST", "/message", message, Content_Type="application/json",
                                  Host="proxy.example", **secret)
        assert (status, body["text"]) == (200, "Hello, webhook."), body
        gateway.stop()
    assert json.loads(hermes("cron", "list", "--json").stdout) == []


# -- hermes dashboard ----------------------------------------------------------------------------

def test_the_dashboard_refuses_web_pages_even_with_its_token(home: Path) -> None:
    from tests.helpers.dashboard import DashboardProcess

    write_config(home, ALLOWED)
    process = DashboardProcess()
    try:
        root, token = process.root, process.token
        port = int(urlsplit(root).port or 0)
        refused(request(root, "GET", f"/?token={token}", Host=f"evil.example:{port}"), 421, "host_not_allowed",
                "hosting.allowed_hosts")  # a rebound name: the page would be the attacker's to read
        refused(request(root, "GET", "/status.json", Host=f"evil.example:{port}", X_Hermes_Session_Token=token),
                421, "host_not_allowed", None)
        attacks(root, port, "/auth/logout", {})
        status, body, _ = request(root, "GET", "/status.json", X_Hermes_Session_Token=token, Host=f"[::1]:{port}")
        assert status == 200 and body["plugins"] is not None
        assert request(root, "GET", "/status.json", X_Hermes_Session_Token=token, Host="proxy.example")[0] == 200
    finally:
        process.kill()
