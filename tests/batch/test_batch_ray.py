"""`hermes batch run --ray ADDRESS` against a local Ray cluster the test starts (2 CPUs): the same
output as on one machine, written by the driver alone; a worker killed mid-item has its item run
again; the config reaches the workers without credentials."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.batch.cluster import without_credentials
from tests.helpers import hermes, make_folder_plugin
from tests.helpers.batch import dataset, rows, setup_home

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")

# Kills its own worker process the first time each key is looked up (a marker file per key).
KILLER = '''
import json, os, signal
from pathlib import Path

def lookup(args, **kwargs):
    mark = Path(os.environ["BATCH_MARKS"]) / args["key"]
    if not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return json.dumps({"value": args["key"].upper(), "pid": os.getpid()})

def register(ctx):
    ctx.register_tool("lookup", "facts", {"name": "lookup", "parameters": {"type": "object",
                      "properties": {"key": {"type": "string"}}}}, lookup)
'''


@pytest.fixture
def cluster(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local Ray with 2 CPUs, started after HERMES_HOME is set (its workers see the test's home)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("BATCH_MARKS", str(marks))
    context = ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()


def test_items_run_on_ray_with_the_same_output_and_resume(cluster: str, home: Path, tmp_path: Path,
                                                          llm_server: Any) -> None:
    setup_home(home, llm_server)
    items = [{"id": f"i{i}", "prompt": f"look up k{i}" if i % 2 else f"say {i}"} for i in range(10)]
    data = dataset(tmp_path / "data.jsonl", items)
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out), "--concurrency", "4", "--ray", cluster)
    assert "10 finished (10 completed, 0 partial), 0 failed" in result.stdout
    by_id = {row["id"]: row for row in rows(out)}
    assert sorted(by_id) == sorted(item["id"] for item in items)
    looked = by_id["i1"]
    assert [entry["from"] for entry in looked["conversations"]] == ["system", "human", "gpt", "tool", "gpt"]
    assert looked["tool_stats"]["lookup"] == {"count": 1, "success": 1, "failure": 0} and looked["api_calls"] == 2
    assert json.loads((out / "statistics.json").read_text())["completed"] == 10
    again = hermes("batch", "run", str(data), "--out", str(out), "--ray", cluster)
    assert "0 finished" in again.stdout and len(rows(out)) == 10


def test_a_worker_killed_mid_item_has_its_item_run_again(cluster: str, home: Path, tmp_path: Path,
                                                         llm_server: Any) -> None:
    setup_home(home, llm_server)
    make_folder_plugin(home / "plugins", "facts", KILLER, "name: facts\n")
    data = dataset(tmp_path / "data.jsonl", [{"id": f"k{i}", "prompt": f"look up key{i}"} for i in range(3)]
                   + [{"id": "plain", "prompt": "say hi"}])
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out), "--concurrency", "2", "--ray", cluster)
    assert "4 finished (4 completed, 0 partial), 0 failed" in result.stdout, result.stderr
    by_id = {row["id"]: row for row in rows(out)}
    assert sorted(by_id) == ["k0", "k1", "k2", "plain"]  # each once: killed, run again, finished
    for key in ("k0", "k1", "k2"):
        assert by_id[key]["tool_stats"]["lookup"] == {"count": 1, "success": 1, "failure": 0}
    assert sorted(mark.name for mark in (tmp_path / "marks").iterdir()) == ["key0", "key1", "key2"]  # each killed once


def test_the_config_shipped_to_workers_has_no_credentials() -> None:
    config = {"model": {"provider": "openrouter", "model": "m", "api_key": "sk-1", "base_url": "u"},
              "auxiliary": {"vision": {"api-key": "sk-2", "model": "v"}},
              "plugins": {"entries": {"p": {"settings": {"github_token": "t", "repo": "r", "Password": "x"}}}},
              "mcp_servers": {"s": {"headers": {"Authorization": "Bearer b"}, "url": "http://x"}}}
    assert without_credentials(config) == {
        "model": {"provider": "openrouter", "model": "m", "base_url": "u"}, "auxiliary": {"vision": {"model": "v"}},
        "plugins": {"entries": {"p": {"settings": {"repo": "r"}}}}, "mcp_servers": {"s": {"headers": {}, "url": "http://x"}}}


def test_items_on_ray_workers_are_traces_of_their_own_linked_to_the_batchs(cluster: str, home: Path, tmp_path: Path,
                                                                          llm_server: Any) -> None:
    """The workers export their items' traces themselves (the config's endpoint reaches them), each
    linked to the driver's `batch run` span, and flush them before they are killed at the end."""
    pytest.importorskip("opentelemetry.proto")
    from tests.telemetry.receiver import Receiver, until

    receiver = Receiver().start()
    try:
        setup_home(home, llm_server)
        with (home / "config.yaml").open("a") as config:
            config.write(f"observability:\n  otlp_endpoint: {receiver.url}\n")
        data = dataset(tmp_path / "data.jsonl", [{"id": "a", "prompt": "look up apple"}, {"id": "b", "prompt": "say hi"}])
        result = hermes("batch", "run", str(data), "--out", str(tmp_path / "out"), "--concurrency", "2", "--ray", cluster)
        assert "2 finished (2 completed, 0 partial), 0 failed" in result.stdout, result.stderr
        until(lambda: len(receiver.named("batch item")) == 2 and receiver.named("batch run"))
    finally:
        receiver.close()
    (batch,) = receiver.named("batch run")
    items = {span.attributes["hermes.batch.item"]: span for span in receiver.named("batch item")}
    assert set(items) == {"a", "b"} and all(span.parent_id == "" for span in items.values())
    assert all(span.links == [(batch.trace_id, batch.span_id)] for span in items.values())
    assert len({items["a"].trace_id, items["b"].trace_id, batch.trace_id}) == 3
    turns = {span.parent_id: span for span in receiver.named("invoke_agent")}
    assert set(turns) == {items["a"].span_id, items["b"].span_id}
    (tool,) = receiver.named("execute_tool")
    assert tool.trace_id == items["a"].trace_id and tool.attributes["gen_ai.tool.name"] == "lookup"
