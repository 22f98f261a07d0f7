"""The other hosts' traces over OTLP/HTTP: a cron run and each batch item start a trace of their own,
with the turn's `invoke_agent` under it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, llm_config
from tests.helpers.batch import dataset, setup_home
from tests.helpers.cron import T0, cron

from .receiver import Receiver

pytest.importorskip("opentelemetry.proto")


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    running = Receiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
    yield running
    running.close()


def test_a_cron_run_is_a_trace_of_its_own_over_its_turn(home: Path, llm_server: ScriptedServer, receiver: Receiver,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    llm_config(home, llm_server.url, "timezone: UTC\n")
    monkeypatch.setenv("HERMES_TIMEZONE", "UTC")
    llm_server.always("All green.")
    cron("add", "every 1h", "check the build", "--name", "build")
    assert cron("tick", when=T0 + dt.timedelta(hours=1, minutes=1)).stderr.splitlines()[-1] == "ran 1 job"
    (run,) = receiver.named("cron run")
    (turn,) = receiver.named("invoke_agent")
    assert run.name == "cron run build" and run.parent_id == "" and run.attributes["hermes.cron.job"]
    assert turn.parent_id == run.span_id and turn.attributes["hermes.platform"] == "cron"


def test_each_batch_item_is_a_trace_of_its_own(home: Path, tmp_path: Path, llm_server: ScriptedServer,
                                               receiver: Receiver) -> None:
    setup_home(home, llm_server)
    data = dataset(tmp_path / "data.jsonl", [{"id": "a", "prompt": "look up apple"}, {"id": "b", "prompt": "say hi"}])
    hermes("batch", "run", str(data), "--out", str(tmp_path / "out"), "--concurrency", "2")
    items = {span.attributes["hermes.batch.item"]: span for span in receiver.named("batch item")}
    assert set(items) == {"a", "b"} and all(span.parent_id == "" for span in items.values())
    assert items["a"].trace_id != items["b"].trace_id
    turns = {span.parent_id: span for span in receiver.named("invoke_agent")}
    assert set(turns) == {items["a"].span_id, items["b"].span_id}
    (tool,) = receiver.named("execute_tool")
    assert tool.trace_id == items["a"].trace_id and tool.attributes["gen_ai.tool.name"] == "lookup"
