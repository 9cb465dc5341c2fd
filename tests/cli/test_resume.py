"""Crashes and resume through the CLI: real processes killed with SIGKILL, a real store file.

A call in flight at the kill is in the trace as "started, outcome unknown"; the run turns
``interrupted`` on the next open; ``io-tui resume`` reconciles the call and finishes the run
under the same id; a second driver of a live run is refused with its owner named; seeded kill
trials of `run`, `decide` and the TUI's worker process (benchmarks/kill_trials.py) resume to the
uninterrupted run's workspace and trace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_process
import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n'


def io_tui(*args: str, store: Path, input: str = "") -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", str(store), input=input)


def wait_for(path: Path, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def hanging_run(tmp_path, workspace, write_script, store_path):
    """`io-tui run` inside a command that waits for a file that never comes (until the test
    writes it): the marker file says the command has started. Both files live in the
    workspace: a sandboxed command has a /tmp of its own."""
    marker, release = workspace / "started", workspace / "release"
    code = f"touch {marker}; while [ ! -e {release} ]; do sleep 0.05; done; echo ran >> effect.txt"
    script = write_script(
        [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "a.txt", "content": "one\n"}}]},
            {"tool_calls": [{"id": "x1", "name": "run_command",
                             "arguments": {"argv": ["sh", "-c", code]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    argv = [sys.executable, "-m", "io_tui", "run", "t", "-w", str(workspace), "--provider",
            f"scripted:{script}", "--policy", str(policy), "--approve", "all",
            "--store", str(store_path)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wait_for(marker, "the command to start")
    yield proc, release
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    release.touch()  # the orphaned command ends


def test_a_call_in_flight_at_a_kill_is_started_outcome_unknown_then_skipped(
    hanging_run, store_path, workspace
):
    proc, _ = hanging_run
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    trace = io_tui("trace", "1", store=store_path)
    assert "run 1 · interrupted · 2 steps" in trace.stdout  # said once
    assert "(started, outcome unknown" in trace.stdout
    data = json.loads(io_tui("trace", "1", "--json", store=store_path).stdout)
    assert data["run"]["status"] == "interrupted"
    assert data["steps"][1]["unfinished_calls"] == {"x1": "started"}
    (intent,) = [i for i in data["intents"] if i["call_id"] == "x1"]
    assert intent["arguments"]["argv"][0] == "sh" and intent["act"] == "exec"
    # a headless resume with no answer leaves the run interrupted, never a dead end
    asked = io_tui("resume", "1", store=store_path, input="")
    assert asked.returncode == 3 and "no answer" in asked.stdout + asked.stderr
    assert "run_command" in asked.stderr  # what is known was shown
    skipped = io_tui("resume", "1", "--reconcile", "skip", store=store_path)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    data = json.loads(io_tui("trace", "1", "--json", store=store_path).stdout)
    assert data["run"]["status"] == "finished" and data["run"]["steps"] == 3
    (obs,) = data["steps"][1]["observations"]
    assert obs["is_error"] and "chose not to re-run it" in obs["text"]
    assert not (workspace / "effect.txt").exists()  # skipped: not run again
    assert [i["status"] for i in data["intents"]] == ["done", "skipped"]
    again = io_tui("resume", "1", store=store_path)
    assert again.returncode == 1 and "run 1 is finished" in again.stderr


def test_a_command_a_rule_marks_idempotent_re_runs_on_resume_without_the_operator(
    tmp_path, workspace, write_script, store_path
):
    """In flight at the kill: resumed with no one to answer, it runs again because the policy
    says it is safe to repeat, and the trace says why; the run finishes."""
    # in the workspace: a sandboxed command has a /tmp of its own and writes nowhere else
    marker, release = workspace / "started", workspace / "release"
    code = (
        f"echo ran >> {workspace / 'effects.log'}; touch {marker};"
        f" while [ ! -e {release} ]; do sleep 0.05; done"
    )
    script = write_script(
        [
            {"tool_calls": [{"id": "x1", "name": "run_command",
                             "arguments": {"argv": ["sh", "-c", code]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[defaults]\nexec = "allow"\n[[layers]]\nname = "checks"\n[[layers.rules]]\n'
        'act = "exec"\neffect = "allow"\npattern = "sh"\nidempotent = true\n'
    )
    argv = [*cli_process.IO_TUI, "run", "t", "-w", str(workspace), "--provider",
            f"scripted:{script}", "--policy", str(policy), "--store", str(store_path)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=cli_process.user_env())  # fmt: skip
    try:
        wait_for(marker, "the command to start")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    release.touch()  # the killed attempt's command ends; the re-run's goes straight through
    resumed = io_tui("resume", "1", store=store_path, input="")  # nobody to ask
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (workspace / "effects.log").read_text() == "ran\nran\n"
    data = json.loads(io_tui("trace", "1", "--json", store=store_path).stdout)
    assert data["run"]["status"] == "finished"
    (reconciled,) = [e for e in data["events"] if e["kind"] == "reconciled"]
    assert reconciled["detail"]["choice"] == "rerun"
    assert reconciled["detail"]["by"] == (
        "policy: rule 'allow exec sh (idempotent)' in layer 'checks' marks it idempotent"
    )


def test_a_second_driver_is_refused_with_the_owner_named(hanging_run, store_path):
    proc, release = hanging_run
    second = io_tui("resume", "1", "--reconcile", "rerun", store=store_path)
    assert second.returncode == 1
    assert f"driven by pid {proc.pid}" in second.stderr
    release.touch()
    assert proc.wait(timeout=60) == 0
    assert "finished" in io_tui("trace", "1", store=store_path).stdout.splitlines()[0]


def test_kill_trials_of_run_decide_and_the_tuis_worker_resume_to_the_uninterrupted_result():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import kill_trials
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = kill_trials.trials(count=3, seed=7, steps=6)  # one of each kind
    assert [r["kill"] for r in rows] == ["run", "decide", "worker"]
    assert all(r["killed"] for r in rows), rows
    assert all(r["resumable"] and r["equal"] and r["effects_ok"] for r in rows), [
        {k: v for k, v in r.items() if k != "snapshot"} for r in rows
    ]
