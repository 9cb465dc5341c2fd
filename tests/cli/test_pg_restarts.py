"""PostgreSQL restarts under real io-tui processes (a server of the test's own, restarted with
``pg_ctl``: every connection cut, the server down a moment, then back):

- ``io-tui run`` rides through a 0.2 s restart: the run finishes, exit 0, each command once;
- a drain of queued runs by two ``io-tui worker`` processes through a restart every 0.7 s (and
  the 0.2 s it is down) ends with every run finished, none interrupted, no operator asked,
  each command once. (The issue's drain,
  10 runs of 30 steps through restarts every 5–20 s, is ``benchmarks/pg_restarts.py``.)
- a worker whose server stays down past its retries gives its run back ``interrupted``, saying
  the database was unreachable, once the server is back, and drives it on to the end.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import cli_process
import psycopg
from cli_process import user_env

POLICY = '[defaults]\nexec = "allow"\n'
# commands of the program `sh` may be run again after a stop: the operator is not asked
IDEMPOTENT = POLICY + (
    '[[layers]]\nname = "project"\n'
    'rules = [{act = "exec", effect = "allow", pattern = "sh", idempotent = true}]\n'
)


def io_tui(*args: str, store: str) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", store)


def command_steps(log: Path, run: str, steps: int, pause_s: float) -> list[dict[str, object]]:
    code = f'echo "{run} $0" >> {log}; sleep {pause_s}'
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"id": f"c{i}", "name": "run_command",
                         "arguments": {"argv": ["sh", "-c", code, f"step{i}"]}}]}
        for i in range(1, steps + 1)
    ]  # fmt: skip
    return [*turns, {"text": "done"}]


def until(condition, what: str, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_io_tui_run_rides_through_a_restart_of_its_server(
    own_pg_cluster, workspace, write_script, tmp_path
):
    url = own_pg_cluster.new_database()
    log = workspace / "effects.log"  # a sandboxed command writes only there
    script = write_script(command_steps(log, "r", steps=6, pause_s=0.2))
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    argv = [*cli_process.IO_TUI, "run", "t", "-w", str(workspace), "--provider",
            f"scripted:{script}", "--policy", str(policy), "--store", url]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=user_env())  # fmt: skip
    try:
        until(lambda: log.exists() and "step2" in log.read_text(), "the run's second step")
        own_pg_cluster.restart(down_s=0.2)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "run 1: finished" in out and "Traceback" not in err
    lines = log.read_text().splitlines()
    assert lines == [f"r step{i}" for i in range(1, 7)]  # each command once, in order
    trace = io_tui("trace", "1", "--json", store=url)
    assert json.loads(trace.stdout)["run"]["status"] == "finished"


def test_a_drain_through_restarts_finishes_every_run_with_no_operator(
    own_pg_cluster, workspace, write_script, tmp_path
):
    url = own_pg_cluster.new_database()
    log = workspace / "effects.log"  # a sandboxed command writes only there
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    runs, steps = 4, 8
    for run in range(1, runs + 1):
        script = write_script(command_steps(log, f"r{run}", steps, pause_s=0.05))
        queued = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                        "--policy", str(policy), "--queue", store=url)  # fmt: skip
        assert queued.returncode == 0, queued.stderr
    argv = [*cli_process.IO_TUI, "worker", "--store", url, "--until-empty"]
    workers = [
        subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=user_env()
        )
        for _ in range(2)
    ]
    until(lambda: io_tui("workers", store=url).stdout.count(" up ") == 2, "the workers")
    restarts = 0
    done = threading.Event()

    def restarting() -> None:
        nonlocal restarts
        while not done.wait(0.7):
            own_pg_cluster.restart(down_s=0.2)
            restarts += 1

    restarter = threading.Thread(target=restarting)
    restarter.start()
    try:
        for proc in workers:
            proc.wait(timeout=300)
    finally:
        done.set()
        restarter.join()
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
    errors = [proc.stderr.read() if proc.stderr else "" for proc in workers]
    assert [proc.returncode for proc in workers] == [0, 0], errors
    assert restarts >= 2
    said = "".join(errors)
    assert "held for the operator" not in said and "interrupted" not in said, said
    assert "Traceback" not in said and "error ignored" not in said, said
    counted = Counter(log.read_text().splitlines())
    expected = {f"r{run} step{i}" for run in range(1, runs + 1) for i in range(1, steps + 1)}
    assert set(counted) == expected and set(counted.values()) == {1}  # each command once
    for run in range(1, runs + 1):
        trace = io_tui("trace", str(run), "--json", store=url)
        assert json.loads(trace.stdout)["run"]["status"] == "finished", errors


def test_a_worker_cut_off_past_its_retries_gives_its_run_back_and_finishes_it(
    own_pg_cluster, workspace, write_script, tmp_path
):
    """The server goes down while the run's command runs and stays down longer than the
    worker waits (``IO_TUI_STORE_RETRY_S`` 1 s): the step's commit cannot be made, so the
    worker stops driving the run, gives it back ``interrupted`` with the reason once the
    server answers again, claims it again and finishes it (its command, marked idempotent,
    re-run by itself)."""
    url = own_pg_cluster.new_database()
    # in the workspace: a sandboxed command has a /tmp of its own and writes nowhere else
    effects, started, go = workspace / "effects.log", workspace / "started", workspace / "go"
    code = f"echo ran >> {effects}; touch {started}; while [ ! -e {go} ]; do sleep 0.05; done"
    script = write_script(
        [
            {"tool_calls": [{"id": "c1", "name": "run_command",
                             "arguments": {"argv": ["sh", "-c", code]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(IDEMPOTENT)
    queued = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                    "--policy", str(policy), "--queue", store=url)  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [*cli_process.IO_TUI, "worker", "--store", url, "--until-empty"],
            stdout=subprocess.DEVNULL, stderr=out, text=True,
            env=user_env({"IO_TUI_STORE_RETRY_S": "1"}),
        )  # fmt: skip
    restart = threading.Thread(target=own_pg_cluster.restart, kwargs={"down_s": 4})
    try:
        until(started.exists, "the run's command")
        restart.start()
        until(lambda: not reachable(url), "the server to go down")
        go.touch()  # the command ends while the server is down: its commit cannot be made
        restart.join()
        assert worker.wait(timeout=120) == 0, log.read_text()
    finally:
        restart.join()
        if worker.poll() is None:
            worker.kill()
    said = log.read_text()
    assert "run 1: the database at postgresql://" in said and "was unreachable for" in said, said
    assert "run 1: given back (interrupted)" in said, said
    assert "held for the operator" not in said and "Traceback" not in said, said
    assert effects.read_text() == "ran\nran\n"  # the re-run the policy allows, and no more
    row = json.loads(io_tui("trace", "1", "--json", store=url).stdout)["run"]
    assert (row["status"], row["error"]) == ("finished", None)


def reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False
