"""`hermes_core.hosting`, what every host shares, as a host author uses it: real files, real
processes holding locks and receiving signals, a real ASGI app served on loopback by uvicorn."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_core import AlreadyRunningError, ServingError, ToolInfo
from hermes_core.hosting import (
    Backoff, ToolSelection, bearer_token, is_loopback, only_one, secret_matches, serve_asgi, write_json,
)


def python(code: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)  # type: ignore[call-overload]


# -- files ---------------------------------------------------------------------------------------------


def test_write_json_replaces_a_file_whole_with_its_mode_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "status.json"
    write_json(path, {"b": 1, "a": [1, 2]}, mode=0o600)
    assert json.loads(path.read_text()) == {"a": [1, 2], "b": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    write_json(path, {"state": "stopped"}, durable=False)
    assert json.loads(path.read_text()) == {"state": "stopped"} and stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(TypeError):
        write_json(path, {"not json": object()})
    assert json.loads(path.read_text()) == {"state": "stopped"}  # a failed write kept the file as it was
    assert sorted(p.name for p in path.parent.iterdir()) == ["status.json"]


HOLDER = """
    import sys, time
    from pathlib import Path
    from hermes_core.hosting import only_one
    held = only_one(Path(sys.argv[1]))
    print("held", flush=True)
    time.sleep(60)
"""


def test_only_one_process_holds_a_job_and_a_killed_holder_lets_go(tmp_path: Path) -> None:
    lock = tmp_path / "gateway.lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLDER), str(lock)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(AlreadyRunningError) as refused:
            only_one(lock)
        assert refused.value.pid == holder.pid and str(holder.pid) in str(refused.value)
        lock.write_bytes(b"\xff\xfe not a pid")  # whatever the file holds, the holder is still refused
        with pytest.raises(AlreadyRunningError, match="held by another process") as unknown:
            only_one(lock)
        assert unknown.value.pid is None
    finally:
        holder.kill()
        holder.communicate()
    with only_one(lock) as held:  # the OS dropped the killed process's lock
        assert lock.read_text() == str(os.getpid()) and held.path == lock
    with only_one(lock):  # released at the end of the block: held again at once
        pass


# -- retry and tool selection ----------------------------------------------------------------------------


def test_backoff_doubles_up_to_its_cap_and_starts_over_after_reset() -> None:
    backoff = Backoff(0.5, 3)
    assert [backoff.next() for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    backoff.reset()
    assert backoff.next() == 0.5
    with pytest.raises(ValueError, match="seconds"):
        Backoff(-1)


def info(name: str, toolset: str, plugin: str | None) -> ToolInfo:
    return ToolInfo(name=name, toolset=toolset, plugin=plugin, available=True)


TOOLS = [info("web_search", "web", "browser"), info("web_fetch", "web", "browser"), info("note_add", "notes", "notes"),
         info("current_time", "clock", "clock"), info("mcp__git__log", "mcp-git", "mcp:git")]


def test_a_selection_offers_tools_by_name_toolset_or_plugin_and_names_what_matches_nothing() -> None:
    assert ToolSelection().names(TOOLS) is None and ToolSelection().everything
    chosen = ToolSelection(tools=("web_*",), toolsets=("clock",), plugins=("mcp:*",))
    assert chosen.names(TOOLS) == {"web_search", "web_fetch", "current_time", "mcp__git__log"}
    assert ToolSelection(plugins="notes").names(TOOLS) == {"note_add"}  # one name is one pattern, not letters
    assert ToolSelection(tools=("web_search", "nope"), toolsets=("gone",), plugins=("x*",)).unmatched(TOOLS) == [
        "tool 'nope'", "toolset 'gone'", "plugin 'x*'"]


# -- serving -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("LOCALHOST", True), ("0.0.0.0", False), ("::", False), ("192.168.1.2", False), ("example.com", False),
    ("", False), ("[", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@given(st.text(min_size=1), st.text())
def test_a_secret_matches_itself_only_and_an_empty_secret_matches_nothing(secret: str, other: str) -> None:
    assert secret_matches(secret, secret) and secret_matches(secret.encode("utf-8", "surrogatepass"),
                                                             secret.encode("utf-8", "surrogatepass"))
    assert secret_matches(other, secret) is (other == secret)
    assert not secret_matches(other, "") and not secret_matches(None, secret)


def test_a_secret_with_a_lone_surrogate_is_compared_not_raised() -> None:
    assert secret_matches("s\ud800", "s\ud800") and not secret_matches("s\ud800", "s3cret")


@given(st.text(alphabet=st.characters(blacklist_categories=("Zs", "Cc", "Zl", "Zp")), min_size=1))
def test_a_bearer_token_is_read_from_its_header_whatever_the_schemes_case(token: str) -> None:
    assert bearer_token(f"Bearer {token}") == token == bearer_token(f"bearer  {token} ")
    assert bearer_token(f"Basic {token}") == "" and bearer_token(None) == "" and bearer_token(token) == ""


SERVER = """
    import asyncio, sys
    from hermes_core.hosting import serve_asgi

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        message = await receive()
        while message.get("more_body"):  # the whole body
            message = await receive()
        if scope["path"] in ("/slow", "/forever"):
            print("slow request started", file=sys.stderr, flush=True)
            await asyncio.sleep(1.5 if scope["path"] == "/slow" else 3600)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"done " + scope["path"].encode()})

    def ready(url):
        print(url, file=sys.stderr, flush=True)

    asyncio.run(serve_asgi(app, "127.0.0.1", 0, token=sys.argv[1] or None, ready=ready, what="demo", max_body=1000,
                           read_timeout=1.0))
    print("exited cleanly", file=sys.stderr, flush=True)
"""


def serve(token: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SERVER), token], stderr=subprocess.PIPE,
                               text=True)
    assert process.stderr is not None
    url = process.stderr.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    return process, url


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_served_app_needs_its_bearer_token(tmp_path: Path) -> None:
    process, url = serve("s3cret")
    try:
        assert get(f"{url}/x") == (401, '{"error": "a bearer token is required"}')
        assert get(f"{url}/x", "wrong")[0] == 401
        assert get(f"{url}/x", "s3cret") == (200, "done /x")
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    assert process.returncode == 0


def test_a_body_too_large_or_too_slow_is_refused_and_pins_nothing() -> None:
    import socket

    process, url = serve("")
    port = int(url.rsplit(":", 1)[1])
    try:
        for head, body, status in ((b"Content-Length: 5000", b"", b"413"), (b"Content-Length: 100", b"0123456789", b"408")):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n%b\r\n\r\n%b"
                             % (port, head, body))
                answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 " + status), answer
        assert get(f"{url}/x") == (200, "done /x")
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    assert process.returncode == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_lets_the_running_request_finish_and_the_server_exit_0(sig: int) -> None:
    import threading

    process, url = serve("")
    answers: list[tuple[int, str]] = []
    asking = threading.Thread(target=lambda: answers.append(get(f"{url}/slow")))
    asking.start()
    assert process.stderr is not None and process.stderr.readline().strip() == "slow request started"
    process.send_signal(sig)
    asking.join(30)
    assert answers == [(200, "done /slow")]
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "exited cleanly" in err


def test_a_second_signal_stops_at_once() -> None:
    """A request that would run for an hour does not hold the server once a second signal came."""
    import threading

    process, url = serve("")
    answers: list[object] = []

    def ask() -> None:
        try:
            answers.append(get(f"{url}/forever"))
        except OSError as exc:  # the connection closed without an answer
            answers.append(type(exc).__name__)

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    assert process.stderr is not None and process.stderr.readline().strip() == "slow request started"
    process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    asking.join(30)
    assert process.returncode == 0 and answers and answers[0] != (200, "done /forever")


def test_serving_off_loopback_needs_a_token_and_a_taken_port_is_one_line() -> None:
    import asyncio
    import socket

    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("never served")

    with pytest.raises(ServingError, match="demo: 0.0.0.0 is not a loopback address; serving it needs a bearer token"):
        asyncio.run(serve_asgi(app, "0.0.0.0", 0, what="demo"))
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        with pytest.raises(ServingError, match=f"demo: cannot listen on 127.0.0.1:{port}: "):
            asyncio.run(serve_asgi(app, "127.0.0.1", port, what="demo"))
    finally:
        taken.close()


# -- signals -----------------------------------------------------------------------------------------------


STOPPING = """
    import asyncio, signal, time
    from hermes_core.hosting import until_signal

    heard = []

    def report(what):
        heard.append(what)
        print(what, flush=True)

    def sync_part():
        with until_signal(lambda: report("stop"), lambda: report("now")):
            report("ready")
            while len(heard) < 3:
                time.sleep(0.01)
        report("restored" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "not restored")

    async def async_part():
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        with until_signal(lambda: report("on the loop" if asyncio.get_running_loop() is loop else "off the loop")
                          or stopped.set()):
            report("ready")
            await stopped.wait()
        report("done")

    sync_part()
    asyncio.run(async_part())
"""


def test_until_signal_calls_stop_then_again_and_in_a_coroutine_on_its_loop() -> None:
    process = python(STOPPING)
    assert process.stdout is not None

    def line() -> str:
        return process.stdout.readline().strip()  # type: ignore[union-attr]

    assert line() == "ready"
    process.send_signal(signal.SIGTERM)
    assert line() == "stop"
    process.send_signal(signal.SIGINT)
    assert line() == "now"
    assert line() == "restored"
    assert line() == "ready"
    process.send_signal(signal.SIGINT)
    assert (line(), line()) == ("on the loop", "done")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


def test_a_served_connection_sends_small_writes_at_once() -> None:
    """Accepted connections have TCP_NODELAY: a response's headers and body (two writes) are not
    held by Nagle's algorithm for the client's delayed ACK (about 40 ms a request on every kept-alive
    connection, the openai SDK's, before). asyncio sets it on an accepted socket only when the
    listening socket says it is TCP, so this is checked through asyncio's own transport."""
    import asyncio
    import socket

    from hermes_core.hosting import listening_socket

    async def main() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listening_socket("127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(seen, 10)
        finally:
            writer.close()
            server.close()

    assert asyncio.run(main()) != 0
