"""The queue through the CLI with real processes on one store, a SQLite file and a PostgreSQL
database: `io-tui run --queue` (labels, MCP servers), several `io-tui worker` processes, a worker
killed with SIGKILL mid-command (its run taken over and held for the operator, never re-run
silently), SIGTERM draining and a second SIGTERM handing back, `io-tui workers`."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_process
import pytest
from cli_process import user_env as env
from mcp_support import server_script_args

POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n'


def io_tui(*args: str, store: Path | str) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", str(store))


def worker(store: Path | str, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "io_tui", "worker", "--store", str(store), *args]
    return subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env()
    )


def until(condition, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def enqueue(store: Path | str, workspace: Path, script: Path, *extra: str) -> int:
    done = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                  "--queue", "--json", *extra, store=store)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["run_id"])


def enqueue_many(
    store: Path | str, workspace: Path, script: Path, policy: Path, count: int
) -> list[int]:
    """``count`` runs on the queue: the first through the CLI, the rest through the core's
    ``enqueue_run`` (one process per run would cost seconds each on a loaded machine)."""
    from io_tui.core import Policy, ScriptedProvider, Store, TaskContract, enqueue_run

    first = enqueue(store, workspace, script, "--policy", str(policy))

    async def rest() -> list[int]:
        opened = await Store.open(store)
        try:
            contract = TaskContract(goal="t", workspace=workspace)
            return [
                await enqueue_run(
                    opened, contract, ScriptedProvider.from_file(script), Policy.load(policy)
                )
                for _ in range(count - 1)
            ]
        finally:
            await opened.close()

    return [first, *asyncio.run(rest())]


def command_script(write_script, code: str) -> Path:
    return write_script(
        [
            {"tool_calls": [{"id": "x1", "name": "run_command",
                             "arguments": {"argv": ["sh", "-c", code]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file, then on a PostgreSQL database."""
    return store_on_both


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return path


def test_two_worker_processes_drain_the_queue_and_run_each_run_once(
    workspace, write_script, store_path, policy
):
    log = workspace / "effects.log"
    script = command_script(write_script, f"echo $$ >> {log}")
    ids = enqueue_many(store_path, workspace, script, policy, 6)
    workers = [worker(store_path, "--until-empty", "-j", "2") for _ in range(2)]
    for proc in workers:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert len(log.read_text().splitlines()) == 6  # six commands, none twice
    for run_id in ids:
        trace = io_tui("trace", str(run_id), "--json", store=store_path)
        assert json.loads(trace.stdout)["run"]["status"] == "finished"
    listed = json.loads(io_tui("workers", "--all", "--json", store=store_path).stdout)
    assert [w["state"] for w in listed] == ["stopped", "stopped"]


def test_a_worker_killed_mid_command_is_taken_over_and_held_then_the_operator_decides(
    workspace, write_script, store_path, policy
):
    marker, log = workspace / "started", workspace / "effects.log"
    script = command_script(write_script, f"touch {marker}; echo ran >> {log}; sleep 600")
    run_id = enqueue(store_path, workspace, script, "--policy", str(policy))
    first = worker(store_path)
    try:
        until(marker.exists, "the command to start")
        listed = json.loads(io_tui("workers", "--json", store=store_path).stdout)
        assert [(w["pid"], w["state"], w["runs"]) for w in listed] == [(first.pid, "up", [run_id])]
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    second = worker(store_path, "--until-empty")
    assert second.wait(timeout=120) == 0
    trace = io_tui("trace", str(run_id), store=store_path)
    assert "interrupted" in trace.stdout
    assert log.read_text() == "ran\n"  # not re-run by the worker that took it over
    listed = json.loads(io_tui("workers", "--all", "--json", store=store_path).stdout)
    assert {w["pid"]: w["state"] for w in listed} == {first.pid: "gone", second.pid: "stopped"}
    handed = io_tui("resume", str(run_id), "--queue", "--reconcile", "skip", store=store_path)
    assert handed.returncode == 0 and "back on the queue" in handed.stdout
    assert "run_command" in handed.stdout  # why it was held
    third = worker(store_path, "--until-empty")
    assert third.wait(timeout=120) == 0
    trace = io_tui("trace", str(run_id), "--json", store=store_path)
    assert json.loads(trace.stdout)["run"]["status"] == "finished"
    assert log.read_text() == "ran\n"  # the operator skipped it


def test_sigterm_drains_a_worker_its_ask_waits_and_another_worker_finishes(
    tmp_path, workspace, write_script, store_path
):
    script = write_script(
        [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "a.txt", "content": "one\n"}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    run_id = enqueue(store_path, workspace, script)  # default policy: writes ask
    proc = worker(store_path)
    until(lambda: "[pending]" in io_tui("approvals", store=store_path).stdout, "the ask")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert proc.stderr is not None and "draining" in proc.stderr.read()
    decided = io_tui("decide", "1", "approve", store=store_path)
    assert decided.returncode == 0 and "recorded approve" in decided.stdout
    assert not (workspace / "a.txt").exists()  # deciding did not drive it here
    again = worker(store_path, "--until-empty")
    assert again.wait(timeout=60) == 0
    assert (workspace / "a.txt").read_text() == "one\n"
    trace = io_tui("trace", str(run_id), "--json", store=store_path)
    assert json.loads(trace.stdout)["run"]["status"] == "finished"


def test_io_tui_worker_drain_asks_a_running_worker_to_stop(store_path):
    proc = worker(store_path)
    try:
        until(lambda: io_tui("workers", store=store_path).stdout.count("up") == 1, "the worker")
        (row,) = json.loads(io_tui("workers", "--json", store=store_path).stdout)
        asked = io_tui("worker", "--drain", row["id"], store=store_path)
        assert asked.returncode == 0 and "draining" in asked.stdout
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    missing = io_tui("worker", "--drain", row["id"], store=store_path)
    assert missing.returncode == 1 and "no running worker" in missing.stdout


def test_a_second_sigterm_hands_the_run_back_and_it_is_held_not_re_run(
    workspace, write_script, store_path, policy
):
    """The first signal drains (the run in progress goes on), the second hands it back now:
    ``interrupted``, and with its command in flight the next worker holds it for the operator."""
    store = store_path
    marker, log = workspace / "started", workspace / "effects.log"
    script = command_script(write_script, f"touch {marker}; echo ran >> {log}; sleep 600")
    run_id = enqueue(store, workspace, script, "--policy", str(policy))
    proc = worker(store)
    try:
        until(marker.exists, "the command to start")
        proc.send_signal(signal.SIGTERM)
        until(lambda: io_tui("workers", store=store).stdout.count("draining") == 1, "draining")
        assert proc.poll() is None  # its run goes on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None and "handing the runs in progress back" in proc.stderr.read()
    trace = json.loads(io_tui("trace", str(run_id), "--json", store=store).stdout)
    assert trace["run"]["status"] == "interrupted"
    assert worker(store, "--until-empty").wait(timeout=120) == 0
    listed = json.loads(io_tui("workers", "--all", "--json", store=store).stdout)
    assert all(w["state"] == "stopped" and not w["runs"] for w in listed)
    assert log.read_text() == "ran\n"  # handed back, held: not re-run
    trace = json.loads(io_tui("trace", str(run_id), "--json", store=store).stdout)
    assert trace["run"]["status"] == "interrupted"


def test_a_queued_run_keeps_its_labels_and_mcp_servers_for_the_worker_serving_them(
    tmp_path, workspace, write_script, store_path
):
    """``--queue --label gpu --mcp-config FILE``: a worker without the label leaves it; one
    serving it starts the run's MCP server, its secret (recorded as a variable name only) from
    the worker's own environment."""
    store = store_path
    config = tmp_path / "servers.json"
    server = {"command": sys.executable, "args": server_script_args(),
              "env": {"IO_TUI_TEST_VAR": "the-queuers-literal"}}  # fmt: skip
    config.write_text(json.dumps({"mcpServers": {"t": server}}))
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults]\nexec = "allow"\nnet = "allow"\n')
    script = write_script(
        [
            {"tool_calls": [{"id": "m1", "name": "mcp__t__info", "arguments": {}}]},
            {"text": "done"},
        ]
    )
    run_id = enqueue(store, workspace, script, "--policy", str(policy), "--label", "gpu",
                     "--mcp-config", str(config))  # fmt: skip
    assert worker(store, "--until-empty").wait(timeout=60) == 0  # serves no label: not its run
    trace = json.loads(io_tui("trace", str(run_id), "--json", store=store).stdout)
    assert trace["run"]["status"] == "queued"
    assert "the-queuers-literal" not in json.dumps(trace)
    done = subprocess.run(
        [sys.executable, "-m", "io_tui", "worker", "--store", str(store), "--until-empty",
         "--label", "gpu", "--label", "big"],
        capture_output=True, text=True, timeout=120,
        env={**env(), "IO_TUI_TEST_VAR": "the-workers-own"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = json.loads(io_tui("trace", str(run_id), "--json", store=store).stdout)
    assert trace["run"]["status"] == "finished"
    (seen,) = trace["steps"][0]["observations"]
    assert "IO_TUI_TEST_VAR=the-workers-own" in seen["text"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "t", "--label", "gpu"), "--label only apply with --queue"),
        (("run", "t", "--queue", "--ref", "main"), "--ref and --push-branch apply with --git"),
        (("run", "t", "--queue", "--approve", "all"), "asks go to the inbox"),
        (("resume", "1", "--queue"), "give the choice"),
        (("worker", "--concurrency", "0"), "at least 1"),
    ],
)
def test_queue_usage_errors_are_one_line(store_path, args, message):
    done = io_tui(*args, store=store_path)
    assert done.returncode == 2
    assert done.stderr.startswith("io-tui: ") and message in done.stderr
    assert "Traceback" not in done.stderr


def test_resume_queue_of_a_run_not_on_the_queue_says_so(store_path, workspace, write_script):
    script = write_script([{"text": "done"}])
    done = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                  store=store_path)  # fmt: skip
    assert done.returncode == 0
    handed = io_tui("resume", "1", "--queue", "--reconcile", "skip", store=store_path)
    assert handed.returncode == 1 and "not on the queue" in handed.stdout
