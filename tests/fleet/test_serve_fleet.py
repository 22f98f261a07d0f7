"""`hermes serve` as one service on many machines: three hosts, each with a home of its own (as on
three machines) and the same HERMES_STATE_URL, behind a real nginx. A response made through one
is read through another; a run started on one streams its events from another; an
Idempotency-Key holds across hosts; a run is stopped through another host; a host killed mid-run has its run ended failed, with the
reason, by another; and the database restarted under load answers 503 with Retry-After (never a
hang), /health says degraded while it is down, and every host serves again without a restart."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hermes_core.api_server.store import ApiStore
from hermes_core.testing import Reply
from tests.helpers.api_server import KEY, Serve, call, sse_events
from tests.helpers import llm_config

LEASE = 1  # seconds: a killed host is taken for gone after two


@pytest.fixture
def hosts(tmp_path: Path, pg_url: str, llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Serve]]:
    """Three `hermes serve` processes, each with its own HERMES_HOME, on one shared database."""
    monkeypatch.setenv("HERMES_STATE_URL", pg_url)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.delenv("HERMES_ENABLE_PROJECT_PLUGINS", raising=False)
    started: list[Serve] = []
    try:
        for n in range(3):
            home = tmp_path / f"machine{n}"
            home.mkdir()
            # nginx passes on the Host its clients used (127.0.0.1:its port): the name the balancer is
            # reached by is allowed, as an operator allows their load balancer's name
            llm_config(home, llm_server.url, f"state:\n  lease_seconds: {LEASE}\n"
                                             "hosting:\n  allowed_hosts: ['127.0.0.1']\n")
            monkeypatch.setenv("HERMES_HOME", str(home))
            started.append(Serve())
        yield started
    finally:
        for host in started:
            host.kill()


def client(base: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0, **options)


def _until(condition: Callable[[], Any], timeout: float = 60, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(every)


def test_a_response_made_through_one_host_is_read_through_the_others(hosts: list[Serve], llm_server: Any,
                                                                    nginx: Any) -> None:
    balancer = nginx([int(host.root.rsplit(":", 1)[1]) for host in hosts])
    llm_server.reply("Noted: blue.")
    with client(balancer) as sdk:
        made = sdk.responses.with_raw_response.create(model="hermes-agent", input="my colour is blue")
        first, via = made.parse(), made.headers["x-upstream"]
        seen = {via}
        for _ in range(6):  # nginx takes turns: the others answer the next requests
            read = sdk.responses.with_raw_response.retrieve(first.id)
            assert read.parse().output_text == "Noted: blue."
            seen.add(read.headers["x-upstream"])
    assert len(seen) == 3
    for host in hosts:
        with host.client() as sdk:
            assert sdk.responses.retrieve(first.id).output_text == "Noted: blue."


def test_a_response_is_continued_through_a_third_host_with_its_history(hosts: list[Serve], llm_server: Any) -> None:
    llm_server.reply("Noted: blue.").reply("You said blue.")
    with hosts[0].client() as one, hosts[1].client() as two, hosts[2].client() as three:
        first = one.responses.create(model="hermes-agent", input="my colour is blue")
        assert two.responses.retrieve(first.id).output_text == "Noted: blue."
        second = three.responses.create(model="hermes-agent", input="what colour?", previous_response_id=first.id)
    assert second.output_text == "You said blue." and second.previous_response_id == first.id
    sent = [(m["role"], m.get("content")) for m in llm_server.requests[-1].messages[1:]]
    assert sent == [("user", "my colour is blue"), ("assistant", "Noted: blue."), ("user", "what colour?")]


def _follow(url: str, into: list[dict[str, Any]], done: threading.Event) -> None:
    """Read a run's server-sent events as they come (not at the end)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {KEY}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    into.append(json.loads(line[6:]))
    finally:
        done.set()


def test_a_run_started_on_one_host_streams_live_from_another(hosts: list[Serve], llm_server: Any) -> None:
    held = threading.Event()
    llm_server.push(Reply("one two three four", hold=held, hold_after=2))
    status, started, _ = call(f"{hosts[0].url}/runs", {"input": "count"})
    assert status == 202
    run_id = started["run_id"]
    followed: list[dict[str, Any]] = []
    ended = threading.Event()
    threading.Thread(target=_follow, args=(f"{hosts[1].url}/runs/{run_id}/events", followed, ended),
                     daemon=True).start()
    try:
        # the first words arrive through the other host while the run still runs
        _until(lambda: [e for e in followed if e["event"] == "message.delta"])
        assert not ended.is_set() and call(f"{hosts[2].url}/runs/{run_id}")[1]["status"] == "running"
    finally:
        held.set()
    assert ended.wait(60)
    names = [event["event"] for event in followed]
    assert names[-1] == "run.completed" and followed[-1]["output"] == "one two three four"
    assert "".join(e["delta"] for e in followed if e["event"] == "message.delta") == "one two three four"
    assert [d["event"] for _, d in sse_events(f"{hosts[0].url}/runs/{run_id}/events")] == names
    assert call(f"{hosts[1].url}/runs/{run_id}")[1]["status"] == "completed"


def test_a_run_is_stopped_through_another_host(hosts: list[Serve], llm_server: Any) -> None:
    held = threading.Event()
    llm_server.push(Reply("one two three four", hold=held, hold_after=1))
    try:
        run_id = call(f"{hosts[0].url}/runs", {"input": "long job"})[1]["run_id"]
        _until(lambda: _stored_events(run_id))
        assert call(f"{hosts[1].url}/runs/{run_id}/stop", {})[1] == {"run_id": run_id, "status": "stopping"}
        _until(lambda: call(f"{hosts[2].url}/runs/{run_id}")[1]["status"] == "cancelled")
    finally:
        held.set()
    assert [d["event"] for _, d in sse_events(f"{hosts[1].url}/runs/{run_id}/events")][-1] == "run.cancelled"
    assert call(f"{hosts[1].url}/runs/{run_id}/stop", {})[1]["status"] == "cancelled"


def test_an_idempotency_key_holds_across_hosts(hosts: list[Serve], llm_server: Any) -> None:
    llm_server.always("Done once.")
    body = {"input": "charge the card"}
    answers: list[tuple[int, Any, dict[str, str]]] = []
    barrier = threading.Barrier(len(hosts))

    def create(host: Serve) -> None:
        barrier.wait()
        answers.append(call(f"{host.url}/runs", body, headers={"Idempotency-Key": "order-42"}))

    threads = [threading.Thread(target=create, args=(host,)) for host in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _, _ in answers] == [202, 202, 202]
    assert len({body["run_id"] for _, body, _ in answers}) == 1
    assert sorted(body["replayed"] for _, body, _ in answers) == [False, True, True]
    run_id = answers[0][1]["run_id"]
    _until(lambda: call(f"{hosts[0].url}/runs/{run_id}")[1]["status"] == "completed")
    again = call(f"{hosts[2].url}/runs", body, headers={"Idempotency-Key": "order-42"})
    assert again[1] == {"run_id": run_id, "status": "completed", "replayed": True}
    other = call(f"{hosts[1].url}/runs", {"input": "another"}, headers={"Idempotency-Key": "order-42"})
    assert other[0] == 409 and other[1]["error"]["code"] == "idempotency_key_conflict"
    assert len(llm_server.requests) == 1  # the run ran once


def test_a_host_killed_mid_run_has_its_run_failed_by_another_and_nothing_lost(hosts: list[Serve],
                                                                            llm_server: Any) -> None:
    llm_server.reply("Kept before the kill.")
    with hosts[0].client() as sdk:
        kept = sdk.responses.create(model="hermes-agent", input="remember this")
    held = threading.Event()
    llm_server.push(Reply("slow words that never end", hold=held, hold_after=2))
    run_id = call(f"{hosts[0].url}/runs", {"input": "a long job"})[1]["run_id"]
    try:
        _until(lambda: [e["event"] for e in _stored_events(run_id)] == ["message.delta"] * 2)
        pid = hosts[0].process.pid
        hosts[0].process.kill()  # kill -9, mid-run
        hosts[0].process.wait()
        failed = _until(lambda: (s := call(f"{hosts[1].url}/runs/{run_id}")[1])["status"] != "running" and s)
    finally:
        held.set()
    assert failed["status"] == "failed" and failed["last_event"] == "run.failed"
    reason = failed["error"]["message"]
    assert "stopped answering" in reason and f":{pid}:" in reason
    events = [d for _, d in sse_events(f"{hosts[2].url}/runs/{run_id}/events")]
    assert [e["event"] for e in events][:2] == ["message.delta", "message.delta"]
    assert events[-1]["event"] == "run.failed" and events[-1]["error"] == reason
    with hosts[2].client() as sdk:
        assert sdk.responses.retrieve(kept.id).output_text == "Kept before the kill."


def _stored_events(run_id: str) -> list[dict[str, Any]]:
    """A run's events stored so far, read from the shared database."""
    store = ApiStore(Path("/nonexistent"), url=os.environ["HERMES_STATE_URL"])
    try:
        return [event for _, _, event in store.events(run_id)]
    finally:
        store.close()


def test_the_database_restarted_under_load_is_503_then_served_again_without_a_restart(
        hosts: list[Serve], llm_server: Any, pg_cluster: Any, pg_url: str, nginx: Any) -> None:
    llm_server.always("fine")
    balancer = nginx([int(host.root.rsplit(":", 1)[1]) for host in hosts])
    outcomes: list[str] = []
    stop = threading.Event()

    def load(stream: bool) -> None:
        with client(balancer, timeout=120) as sdk:
            while not stop.is_set():
                try:
                    if not stream:
                        sdk.responses.create(model="hermes-agent", input="hello")
                        outcomes.append("ok")
                        continue
                    last = [event for event in sdk.responses.create(model="hermes-agent", input="hi", stream=True)][-1]
                    if last.type == "response.completed":
                        outcomes.append("ok")
                    else:  # answered, but the database could not store it: said in the stream's last event
                        outcomes.append(f"{last.type} code={last.response.error.code}")  # type: ignore[union-attr]
                except openai.APIStatusError as exc:
                    retry = exc.response.headers.get("retry-after")
                    error = exc.body.get("code") if isinstance(exc.body, dict) else None
                    outcomes.append(f"{exc.status_code} retry-after={retry} code={error}")
                    time.sleep(0.2)

    workers = [threading.Thread(target=load, args=(n == 0,), daemon=True) for n in range(4)]
    for worker in workers:
        worker.start()
    try:
        _until(lambda: outcomes.count("ok") >= 6)
        pg_cluster.stop()
        try:
            for host in hosts:
                status, health, headers = call(f"{host.root}/health")
                assert (status, health["status"]) == (503, "degraded") and headers["retry-after"]
                assert "cannot be reached" in health["reason"] and password(pg_url) not in health["reason"]
            _until(lambda: any(o.startswith("503") for o in outcomes))
        finally:
            pg_cluster.start()
        for host in hosts:  # each host serves again by itself
            _until(lambda: call(f"{host.root}/health")[1]["status"] == "ok", every=0.5)
            _until(lambda: _answers(host), every=0.5)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=180)
    assert not any(worker.is_alive() for worker in workers)  # no request hung
    assert set(outcomes) <= {"ok", "503 retry-after=2 code=state_unavailable",
                             "response.failed code=state_unavailable"}, set(outcomes)
    assert outcomes[-1] == "ok"
    assert not [line for host in hosts for line in host.lines if "Traceback" in line]  # every failure in words


def _answers(host: Serve) -> bool:
    with host.client() as sdk:
        try:
            return sdk.responses.create(model="hermes-agent", input="back?").output_text == "fine"
        except openai.APIStatusError:
            return False


def password(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).password or "not-there"


def test_with_no_shared_database_a_server_stopped_mid_run_leaves_it_interrupted(
        home: Path, llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_STATE_URL", raising=False)
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    llm_config(home, llm_server.url, f"state:\n  lease_seconds: {LEASE}\n")
    held = threading.Event()
    llm_server.push(Reply("one two three", hold=held, hold_after=1))
    try:
        with Serve() as served:
            run_id = call(f"{served.url}/runs", {"input": "long job"})[1]["run_id"]
            _until(lambda: call(f"{served.url}/runs/{run_id}")[1].get("last_event") == "message.delta")
            assert served.stop() == 0
    finally:
        held.set()
    with Serve() as again:
        status = call(f"{again.url}/runs/{run_id}")[1]
        assert (status["status"], status["error"]["message"]) == ("interrupted", "its server stopped before it ended")
        assert [d["event"] for _, d in sse_events(f"{again.url}/runs/{run_id}/events")] == \
            ["message.delta", "run.interrupted"]
