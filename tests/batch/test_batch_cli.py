"""`hermes batch run` as a user meets it: a subprocess against the scripted model, which answers
each conversation from what it holds (a tool call first for prompts that ask for one, then the
answer), so items run at once in any order."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Reply
from tests.helpers import CTRL_C, HERMES, Screen, hermes
from tests.helpers.batch import answer, dataset, rows, setup_home


@pytest.fixture
def batch_home(home: Path, llm_server: Any) -> Path:
    return setup_home(home, llm_server)


def test_each_item_is_a_trajectory_in_both_forms_with_its_tool_statistics(batch_home: Path, tmp_path: Path) -> None:
    data = dataset(tmp_path / "data.jsonl", [
        {"id": "a", "prompt": "look up apple"},
        {"prompt": "say hi", "system": "You are terse."},
        {"id": "m", "prompt": "look up missing", "max_turns": 3},
    ])
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out), "--concurrency", "2")
    assert "3 finished (3 completed, 0 partial), 0 failed" in result.stdout
    by_id = {row["id"]: row for row in rows(out)}
    assert len(by_id) == 3 and by_id.keys() >= {"a", "m"}
    apple = by_id["a"]
    assert (apple["completed"], apple["partial"], apple["error"], apple["api_calls"]) == (True, False, None, 2)
    assert apple["messages"][0]["role"] == "system" and apple["messages"][1] == {"role": "user",
                                                                                  "content": "look up apple"}
    assert apple["messages"][-1]["content"] == 'The answer is {"value": "APPLE"}'
    froms = [entry["from"] for entry in apple["conversations"]]
    assert froms == ["system", "human", "gpt", "tool", "gpt"]
    system, _, call, response, final = (entry["value"] for entry in apple["conversations"])
    tools = json.loads(system.split("<tools>\n")[1].split("\n</tools>")[0])
    assert {"name": "lookup", "description": "Look a key up.", "parameters": {
        "type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}} in tools
    assert call.startswith("<think>\n</think>\nLet me look.\n<tool_call>\n")
    assert json.loads(call.split("<tool_call>\n")[1].split("\n</tool_call>")[0]) == {
        "name": "lookup", "arguments": {"key": "apple"}}
    assert json.loads(response.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>")) == {
        "tool_call_id": "c-apple", "name": "lookup", "content": {"value": "APPLE"}}
    assert final == '<think>\n</think>\nThe answer is {"value": "APPLE"}'
    assert apple["tool_stats"]["lookup"] == {"count": 1, "success": 1, "failure": 0}
    assert apple["tool_stats"]["other"] == {"count": 0, "success": 0, "failure": 0}
    assert apple["toolsets_used"] == ["facts"] and apple["model"] == "scripted-model"
    assert apple["usage"] == {"input_tokens": 200, "output_tokens": 20} and apple["cost_usd"] > 0
    missing = by_id["m"]  # the tool raised: a failure in the statistics, the item itself completed
    assert missing["tool_stats"]["lookup"] == {"count": 1, "success": 0, "failure": 1}
    assert missing["tool_error_counts"]["lookup"] == 1 and missing["completed"]
    (hi,) = [row for row in by_id.values() if row["prompt"] == "say hi"]
    assert hi["id"].startswith("sha256:") and hi["messages"][0]["content"].startswith("You are terse.")
    stats = json.loads((out / "statistics.json").read_text())
    assert (stats["items"], stats["completed"], stats["failed"], stats["model_calls"]) == (3, 3, 0, 5)
    assert stats["tool_stats"]["lookup"] == {"count": 2, "success": 1, "failure": 1, "success_rate": 50.0}
    assert stats["input_tokens"] == 500 and stats["items_per_second"] > 0 and stats["stopped"] is None


def test_bad_lines_are_named_and_skipped_and_tools_can_be_chosen(batch_home: Path, tmp_path: Path) -> None:
    data = dataset(tmp_path / "data.jsonl", ['{"id": "x", "prompt": "say one"}', '{"id": "y"}', "not json",
                                              '{"id": "x", "prompt": "again"}', '{"prompt": "say two", "max_turns": 0}',
                                              '{"prompt": "say three"}'])
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out), "--toolsets", "misc")
    for number, why in ((2, "no prompt"), (3, "not JSON"), (4, "id 'x' is line 1's too"), (5, "max_turns")):
        assert f"data.jsonl line {number}: {why}" in result.stderr
    assert sorted(row["prompt"] for row in rows(out)) == ["say one", "say three"]
    assert all(set(row["tool_stats"]) == {"other"} for row in rows(out))  # only the toolset asked for
    refused = hermes("batch", "run", str(data), "--out", str(tmp_path / "o2"), "--tools", "nope", check=2)
    assert "no enabled plugin offers tool 'nope'" in refused.stderr


def test_a_failed_item_is_recorded_and_run_again_by_the_next_run(batch_home: Path, tmp_path: Path,
                                                                 llm_server: Any) -> None:
    data = dataset(tmp_path / "data.jsonl", [{"id": "ok", "prompt": "say fine"}, {"id": "bad", "prompt": "explode"}])
    out = tmp_path / "out"
    first = hermes("batch", "run", str(data), "--out", str(out), check=1)
    assert "1 item(s) failed" in first.stderr
    (failure,) = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert failure["id"] == "bad" and "this prompt is refused" in failure["error"]
    assert [row["id"] for row in rows(out)] == ["ok"]
    llm_server.answer(lambda body: Reply("Fine now."))
    hermes("batch", "run", str(data), "--out", str(out), "--resume")
    assert sorted(row["id"] for row in rows(out)) == ["bad", "ok"]
    assert json.loads((out / "statistics.json").read_text())["finished_before"] == 1


def test_the_cost_cap_stops_new_items_and_says_so(batch_home: Path, tmp_path: Path) -> None:
    data = dataset(tmp_path / "data.jsonl", [{"id": str(i), "prompt": f"say {i}"} for i in range(12)])
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out), "--concurrency", "1", "--max-cost", "0.003")
    assert "--max-cost" in result.stderr and "the same command goes on" in result.stderr
    done = rows(out)
    spent_before_last = sum(row["cost_usd"] for row in done[:-1])
    assert 0 < len(done) < 12 and spent_before_last < 0.003 <= sum(row["cost_usd"] for row in done)
    assert json.loads((out / "statistics.json").read_text())["stopped"] == "max_cost"
    hermes("batch", "run", str(data), "--out", str(out))
    assert sorted(int(row["id"]) for row in rows(out)) == list(range(12))


def start(data: Path, out: Path, *more: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(HERMES), "batch", "run", str(data), "--out", str(out), *more],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_kill_9_at_random_moments_loses_and_duplicates_nothing(batch_home: Path, tmp_path: Path,
                                                               llm_server: Any) -> None:
    llm_server.answer(lambda body: answer(body, delay=0.05))
    items = [{"id": f"i{i}", "prompt": f"look up k{i}" if i % 2 else f"say {i}"} for i in range(80)]
    data = dataset(tmp_path / "data.jsonl", items)
    out = tmp_path / "out"
    chance = random.Random(7)
    counts = []
    for _ in range(4):
        proc = start(data, out, "--concurrency", "4")
        assert proc.stderr is not None and proc.stderr.readline().startswith("batch: 80 items")  # it holds the folder
        time.sleep(chance.uniform(0.2, 1.2))
        proc.kill()
        proc.communicate()
        ids = [row["id"] for row in rows(out)] if (out / "trajectories.jsonl").exists() else []
        assert len(ids) == len(set(ids))
        counts.append(len(ids))
    assert counts[-1] < len(items) and counts == sorted(counts), counts  # killed mid-run, progress kept
    with (out / "trajectories.jsonl").open("a") as torn:  # as a kill in the middle of a write leaves it
        torn.write('{"id": "i0", "prompt": "say 0", "complet')
    final = hermes("batch", "run", str(data), "--out", str(out), "--concurrency", "4")
    assert "was cut off" in final.stderr
    ids = [row["id"] for row in rows(out)]
    assert sorted(ids) == sorted(item["id"] for item in items)
    assert all(row["completed"] for row in rows(out))


def test_a_trajectories_file_with_a_bom_or_lines_that_cannot_be_read_is_resumed_with_each_named(
        batch_home: Path, tmp_path: Path) -> None:
    data = dataset(tmp_path / "data.jsonl", [{"id": "a", "prompt": "say a"}, {"id": "b", "prompt": "say b"}])
    out = tmp_path / "out"
    hermes("batch", "run", str(data), "--out", str(out))
    good = (out / "trajectories.jsonl").read_bytes().splitlines(keepends=True)
    assert len(good) == 2
    (out / "trajectories.jsonl").write_bytes(b"\xef\xbb\xbf" + good[0] + b'{"id": "\xff"}\n'
                                               + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    result = hermes("batch", "run", str(data), "--out", str(out))
    assert "trajectories.jsonl line 2 is not UTF-8 (byte 9); left as it is" in result.stderr
    assert "trajectories.jsonl line 3 is nested too deeply; left as it is" in result.stderr
    assert "2 items, 1 already finished, 1 to run" in result.stderr and "Traceback" not in result.stderr
    assert (out / "trajectories.jsonl").read_bytes().count(b"\n") == 4  # nothing was lost: the bad lines stay


def test_a_dataset_with_a_bom_crlf_invalid_utf8_or_deep_nesting_runs_its_good_lines_naming_the_others(
        batch_home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_bytes(b'\xef\xbb\xbf{"id": "a", "prompt": "say a"}\r\n' + b'{"id": "b", "prompt": "caf\xe9"}\r\n'
                     + b"[" * 100_000 + b"]" * 100_000 + b"\r\n" + b'{"id": "c", "prompt": "say c"}\r\n')
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out))
    assert "data.jsonl line 2: not UTF-8 (byte 27); skipped" in result.stderr
    assert "data.jsonl line 3: nested too deeply; skipped" in result.stderr
    assert sorted(row["id"] for row in rows(out)) == ["a", "c"] and "internal error" not in result.stderr


def test_a_second_run_on_the_same_folder_is_refused(batch_home: Path, tmp_path: Path, llm_server: Any) -> None:
    llm_server.answer(lambda body: answer(body, delay=0.5))
    data = dataset(tmp_path / "data.jsonl", [{"id": str(i), "prompt": f"say {i}"} for i in range(8)])
    out = tmp_path / "out"
    first = start(data, out, "--concurrency", "1")
    deadline = time.monotonic() + 30
    while not (out / ".batch.lock").exists() or not (out / ".batch.lock").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = hermes("batch", "run", str(data), "--out", str(out), check=1)
    assert second.stderr.strip() == (f"hermes: error: another batch run (pid {first.pid}) is writing {out}; "
                                     "wait for it to end, or give another --out")
    while not (out / "trajectories.jsonl").exists() or not (out / "trajectories.jsonl").read_text() \
            or len(llm_server.requests) < 2:  # the first item written and the second one's request sent
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first.send_signal(signal.SIGINT)  # Ctrl-C: no new item, the running one finishes, then statistics
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130 and "stopping" in err
    assert json.loads((out / "statistics.json").read_text())["stopped"] == "interrupted"
    assert 2 <= len(rows(out)) < 8  # the one running at Ctrl-C finished too
    hermes("batch", "run", str(data), "--out", str(out), "--concurrency", "4")
    assert len(rows(out)) == 8


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere_and_two_ctrl_c_stop_at_once(
        batch_home: Path, tmp_path: Path, llm_server: Any) -> None:
    data = dataset(tmp_path / "data.jsonl", [{"id": str(i), "prompt": f"say {i}"} for i in range(10)])
    piped = hermes("batch", "run", str(data), "--out", str(tmp_path / "piped"), "--concurrency", "1")
    assert "batch: 10 items, 0 already finished, 10 to run, 1 at once" in piped.stderr
    assert "batch: 1/10 done, 0 failed," in piped.stderr and "batch: 10/10 done" in piped.stderr
    llm_server.answer(lambda body: answer(body, delay=1.5))
    out = tmp_path / "out"
    screen = Screen("batch", "run", str(data), "--out", str(out), "--concurrency", "2")
    try:
        screen.expect("batch  [")  # click's bar
        screen.expect("/10 done, 0 failed")  # and the counts beside it once items finish
        screen.type(CTRL_C)
        screen.expect("stopping: no new items")
        screen.type(CTRL_C)  # the second: the running items are not waited for
        shown = screen.finish(timeout=30)
    finally:
        screen.close()
    assert "stopped; the same command goes on" in shown
    assert json.loads((out / "statistics.json").read_text())["stopped"] == "aborted"


def test_an_items_model_and_turns_and_the_memory_flag_take_effect(batch_home: Path, tmp_path: Path,
                                                                    llm_server: Any) -> None:
    data = dataset(tmp_path / "data.jsonl", [{"id": "other", "prompt": "say hi", "model": "other-model"},
                                             {"id": "cut", "prompt": "look up pear", "max_turns": 1}])
    out = tmp_path / "out"
    result = hermes("batch", "run", str(data), "--out", str(out))
    assert "2 finished (1 completed, 1 partial), 0 failed" in result.stdout
    by_id = {row["id"]: row for row in rows(out)}
    assert by_id["other"]["model"] == "other-model"
    assert {request.body["model"] for request in llm_server.requests} == {"other-model", "scripted-model"}
    cut = by_id["cut"]  # one round of tool calls allowed, then no answer: partial
    assert (cut["completed"], cut["partial"], cut["api_calls"]) == (False, True, 1)
    assert not any(name.startswith("memory") for name in by_id["other"]["tool_stats"])  # memory off by default
    hermes("batch", "run", str(data), "--out", str(tmp_path / "remembering"), "--memory")
    assert any(name.startswith("memory") for row in rows(tmp_path / "remembering") for name in row["tool_stats"])
