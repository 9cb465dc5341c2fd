"""Sub-agents through the CLI, on a real store file: a child whose ask is deferred pauses its
parent; a child killed mid-call (``kill -9`` of its process) leaves both runs interrupted;
``decide`` and ``resume`` (of the parent or of the child) continue both, the child first,
under the same run ids, and a killed ``decide`` leaves both resumable."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import cli_process
import pytest
from cli_process import user_env as env
from waits import until

from io_tui.core import Store, Workspace, in_flight_calls

ALLOW = '[defaults]\nwrite = "allow"\nexec = "allow"\n'


def io_tui(*args: str, store: Path, input: str = "") -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", str(store), input=input)


def started(*args: str, store: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "io_tui", *args, "--store", str(store)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())


def trace(run: int, store: Path) -> dict[str, Any]:
    return json.loads(io_tui("trace", str(run), "--json", store=store).stdout)


def statuses(store: Path, runs: int) -> list[str]:
    return [trace(i, store)["run"]["status"] for i in range(1, runs + 1)]


def spawn(call_id: str, goal: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "spawn_agent", "arguments": {"goal": goal}}]}


@pytest.fixture
def hang(workspace):
    """A command that says it started (``marker``) and waits until the test releases it; the
    orphan a kill leaves behind is released at teardown. Both files live in the workspace: a
    sandboxed command has a /tmp of its own."""
    marker, release = workspace / "started", workspace / "release"
    code = f"touch {marker}; while [ ! -e {release} ]; do sleep 0.05; done; echo ran >> effect.txt"
    call = {"id": "x1", "name": "run_command", "arguments": {"argv": ["sh", "-c", code]}}
    yield {"tool_calls": [call]}, marker
    release.touch()


async def in_flight(store_path: Path, run: int, workspace: Path) -> list[Any]:
    async with await Store.open(store_path) as store:
        return await in_flight_calls(store, run, Workspace(workspace))


def killed(proc: subprocess.Popen[bytes], marker: Path) -> None:
    asyncio.run(until(marker.exists, "the command to start", 60))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_deferred_ask_pauses_the_parent_and_decide_finishes_both(
    workspace, write_script, store_path
):
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}
    script = write_script(
        [spawn("s1", "write a.txt"), {"tool_calls": [write]}, {"text": "child: wrote a.txt"},
         {"text": "parent: done"}]
    )  # fmt: skip
    run = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                 "--approve", "defer", store=store_path)  # fmt: skip
    assert run.returncode == 3, run.stdout + run.stderr
    assert "run 1: paused (awaiting_sub_agent)" in run.stdout
    assert "waiting on its sub-agent run 2" in run.stdout
    readable = io_tui("trace", "1", store=store_path).stdout
    assert "paused: waits on its sub-agent run 2" in readable
    assert "(handed to sub-agent run 2; no answer yet" in readable
    parent = trace(1, store_path)
    assert (parent["run"]["outcome"], parent["run"]["waiting_on"]) == ("awaiting_sub_agent", 2)
    assert [s["observations"] for s in parent["steps"]] == [[]]  # no failed result, no step more
    (ask,) = json.loads(io_tui("approvals", "--json", store=store_path).stdout)["approvals"]
    assert ask["run_id"] == 2

    decided = io_tui("decide", str(ask["id"]), "approve", store=store_path)
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert "run 1: finished after" in decided.stdout
    assert decided.stderr.index("run 2 resumed") < decided.stderr.index("run 1 finished")
    assert statuses(store_path, 2) == ["finished", "finished"]
    (obs,) = trace(1, store_path)["steps"][0]["observations"]
    assert not obs["is_error"] and "child: wrote a.txt" in obs["text"]
    assert (workspace / "a.txt").read_text() == "one\n"


@pytest.mark.parametrize("resumed", ["1", "2"])
def test_a_child_killed_mid_call_resumes_with_its_parent(
    resumed, hang, workspace, write_script, store_path, tmp_path
):
    turn, marker = hang
    script = write_script([spawn("s1", "run it"), turn, {"text": "child: ran"},
                           {"text": "parent: done"}])  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW)
    proc = started("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                   "--policy", str(policy), "--approve", "all", store=store_path)  # fmt: skip
    killed(proc, marker)
    assert statuses(store_path, 2) == ["interrupted", "interrupted"]
    parent = trace(1, store_path)
    assert parent["run"]["waiting_on"] == 2
    assert "its sub-agent run 2 first" in io_tui("trace", "1", store=store_path).stdout
    assert trace(2, store_path)["steps"][0]["unfinished_calls"] == {"x1": "started"}
    # what the TUI's reconcile modal shows for either run: the child's command, not the spawn
    calls = asyncio.run(in_flight(store_path, int(resumed), workspace))
    assert [(c.run_id, c.intent.tool) for c in calls] == [(2, "run_command")]

    # no answer for the child's command: both stay interrupted, never a dead end
    asked = io_tui("resume", resumed, store=store_path, input="")
    assert asked.returncode == 3 and "no answer" in asked.stdout + asked.stderr
    assert statuses(store_path, 2) == ["interrupted", "interrupted"]

    done = io_tui("resume", resumed, "--reconcile", "skip", store=store_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run 1: finished after" in done.stdout
    if resumed == "2":
        assert "run 2 is a sub-agent of run 1: both resumed, it first" in done.stdout
    assert statuses(store_path, 2) == ["finished", "finished"]
    assert io_tui("trace", "3", store=store_path).returncode == 1  # no second child
    child = trace(2, store_path)
    assert "chose not to re-run it" in child["steps"][0]["observations"][0]["text"]
    (obs,) = trace(1, store_path)["steps"][0]["observations"]
    assert "child: ran" in obs["text"]
    assert not (workspace / "effect.txt").exists()  # skipped: not run again


def test_a_killed_decide_leaves_parent_and_child_resumable(
    hang, workspace, write_script, store_path
):
    turn, marker = hang
    script = write_script([spawn("s1", "run it"), turn, {"text": "child: ran"},
                           {"text": "parent: done"}])  # fmt: skip
    run = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                 "--approve", "defer", store=store_path)  # fmt: skip
    assert run.returncode == 3 and "awaiting_sub_agent" in run.stdout
    (ask,) = json.loads(io_tui("approvals", "--json", store=store_path).stdout)["approvals"]
    killed(started("decide", str(ask["id"]), "approve", store=store_path), marker)
    assert statuses(store_path, 2) == ["interrupted", "interrupted"]
    again = io_tui("decide", str(ask["id"]), "approve", store=store_path)
    assert again.returncode == 1 and "io-tui resume 2" in again.stderr
    done = io_tui("resume", "1", "--reconcile", "done", store=store_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert statuses(store_path, 2) == ["finished", "finished"]
    child = trace(2, store_path)
    assert "confirmed it took effect" in child["steps"][0]["observations"][0]["text"]
    assert [i["status"] for i in child["intents"]] == ["marked_done"]


def test_a_grandchild_killed_mid_call_resumes_its_whole_chain(
    hang, workspace, write_script, store_path, tmp_path
):
    turn, marker = hang
    script = write_script(
        [spawn("s1", "delegate"), spawn("s2", "run it"), turn, {"text": "grandchild: ran"},
         {"text": "child: it ran"}, {"text": "root: done"}]
    )  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW)
    proc = started("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                   "--policy", str(policy), "--approve", "all", store=store_path)  # fmt: skip
    killed(proc, marker)
    assert statuses(store_path, 3) == ["interrupted"] * 3
    assert [trace(i, store_path)["run"]["waiting_on"] for i in (1, 2, 3)] == [2, 3, None]
    done = io_tui("resume", "3", "--reconcile", "skip", store=store_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run 1: finished after" in done.stdout
    assert statuses(store_path, 3) == ["finished"] * 3
    root = trace(1, store_path)
    assert "child: it ran" in root["steps"][0]["observations"][0]["text"]
    assert root["steps"][-1]["text"] == "root: done"
