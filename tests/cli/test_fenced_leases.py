"""Fenced leases on the store's clock, with real `io-tui worker` processes and real signals, on a
SQLite file and on PostgreSQL (the lease shortened to 3 s with ``IO_TUI_LEASE_TTL_S``):

- a worker SIGSTOPped past its lease, its run taken over and finished by another, is continued
  (SIGCONT) and performs nothing more: its next renewal or write finds the lease gone, it says
  so in its log, and the run stays finished. On PostgreSQL it is stopped inside a write,
  holding the store's write lock, which the next writer takes from it by ending its session
  (``pg.STOPPED_WRITER_S``); a SQLite file has no server to do that (every other writer would
  wait for the stopped process), so there it is stopped outside a write;
- a worker whose wall clock is ten minutes behind keeps its live run; one whose clock is ten
  minutes ahead and that dies on another machine loses its run once its lease is 3 s old on the
  store's clock, not ten minutes later (an injected clock: ``tests/support/skewed_io_tui.py``).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import cli_process
import psycopg
import pytest
from cli_process import user_env

TTL = {"IO_TUI_LEASE_TTL_S": "3"}
SKEWED = Path(__file__).resolve().parents[1] / "support" / "skewed_io_tui.py"
# The commands write `$PPID`, the worker that ran them, which a sandboxed command cannot see
# (its pid namespace is its own): these runs are about leases, so they run without it.
UNSANDBOXED = "[sandbox]\nenabled = false\n"
# commands of the program `sh` may be run again after a crash: the operator is not asked
IDEMPOTENT = (
    """[defaults]
exec = "allow"
[[layers]]
name = "project"
rules = [{act = "exec", effect = "allow", pattern = "sh", idempotent = true}]
"""
    + UNSANDBOXED
)
PLAIN = '[defaults]\nexec = "allow"\n' + UNSANDBOXED


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    return store_on_both


def io_tui(*args: str, store: Path | str) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", str(store), env=user_env(TTL))


def worker(
    store: Path | str, log: Path, *args: str, offset_s: float = 0, host: str = "-"
) -> subprocess.Popen[str]:
    """`io-tui worker` with its log in ``log``; its wall clock ``offset_s`` off, under ``host``."""
    if offset_s or host != "-":
        argv = [sys.executable, str(SKEWED), str(offset_s), host]
    else:
        argv = [*cli_process.IO_TUI]
    with log.open("w") as out:
        return subprocess.Popen(
            [*argv, "worker", "--store", str(store), *args],
            stdout=subprocess.DEVNULL, stderr=out, text=True, env=user_env(TTL),
        )  # fmt: skip


def until(condition, what: str, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def enqueue(store: Path | str, workspace: Path, script: Path, policy: Path) -> int:
    done = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                  "--policy", str(policy), "--queue", "--json", store=store)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["run_id"])


def commands(*codes: str) -> list[dict[str, object]]:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"id": f"c{i}", "name": "run_command",
                         "arguments": {"argv": ["sh", "-c", code]}}]}
        for i, code in enumerate(codes, 1)
    ]  # fmt: skip
    return [*turns, {"text": "done"}]


def run_row(store: Path | str, run_id: int) -> dict[str, object]:
    trace = io_tui("trace", str(run_id), "--json", store=store)
    assert trace.returncode == 0, trace.stderr
    return json.loads(trace.stdout)["run"]


def freeze(proc: subprocess.Popen[str], store: Path | str) -> None:
    """SIGSTOP ``proc`` (stopped and continued again until it is so) inside a write on
    PostgreSQL, outside one on a SQLite file."""
    inside = not isinstance(store, Path)
    deadline = time.monotonic() + 90
    proc.send_signal(signal.SIGSTOP)
    while writing(store) != inside:
        if time.monotonic() > deadline:
            raise AssertionError(f"never stopped {'inside' if inside else 'outside'} a write")
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
        proc.send_signal(signal.SIGSTOP)


def writing(store: Path | str) -> bool:
    """Whether some process holds the store's write lock (the only writer here: the worker)."""
    if not isinstance(store, Path):
        with psycopg.connect(store, autocommit=True) as probe:
            held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            return bool(probe.execute(held).fetchone()[0])  # type: ignore[index]
    probe = sqlite3.connect(store, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:  # database is locked
        return True
    finally:
        probe.close()


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
    proc.wait()


def test_a_worker_stopped_past_its_lease_performs_nothing_and_the_new_owner_finishes(
    tmp_path, workspace, write_script, store_path
):
    effects, started, go = tmp_path / "effects.log", tmp_path / "started", tmp_path / "go"
    wait_for_go = f"while [ ! -e {go} ]; do sleep 0.05; done"
    script = write_script(commands(
        f'echo "one $PPID" >> {effects}; touch {started}; {wait_for_go}',
        f'echo "two $PPID" >> {effects}',
        f'echo "three $PPID" >> {effects}',
    ))  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(IDEMPOTENT)
    run_id = enqueue(store_path, workspace, script, policy)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = worker(store_path, first_log)
    second = None
    try:
        until(started.exists, "the first worker's command")
        freeze(first, store_path)  # a VM freeze, a laptop lid: past its 3 s lease
        second = worker(store_path, second_log, "--until-empty")
        # the new owner re-runs the call in flight (the policy marks `sh` idempotent)
        until(lambda: effects.read_text().count("one ") == 2, "the new owner's re-run")
        go.touch()
        assert second.wait(timeout=120) == 0, second_log.read_text()
        assert run_row(store_path, run_id)["status"] == "finished"
        first.send_signal(signal.SIGCONT)
        until(lambda: "no longer holds its lease" in first_log.read_text(), "the old owner to see")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 0, first_log.read_text()
    finally:
        stop(first)
        if second is not None:
            stop(second)
    lines = effects.read_text().splitlines()
    assert lines == [f"one {first.pid}", f"one {second.pid}", f"two {second.pid}",
                     f"three {second.pid}"]  # fmt: skip
    row = run_row(store_path, run_id)
    assert (row["status"], row["error"]) == ("finished", None)
    said = first_log.read_text()
    assert f"run {run_id}: this process no longer holds its lease" in said
    assert "Traceback" not in said and "failed" not in said


def test_a_worker_whose_clock_is_ten_minutes_behind_keeps_its_live_run(
    tmp_path, workspace, write_script, store_path
):
    effects, started, go = tmp_path / "effects.log", tmp_path / "started", tmp_path / "go"
    script = write_script(commands(
        f'echo "one $PPID" >> {effects}; touch {started};'
        f" while [ ! -e {go} ]; do sleep 0.05; done",
    ))  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(PLAIN)
    run_id = enqueue(store_path, workspace, script, policy)
    behind = worker(store_path, tmp_path / "behind.log", offset_s=-600)
    other = None
    try:
        until(started.exists, "the run to start on the worker behind")
        other = worker(store_path, tmp_path / "other.log", "--until-empty")
        time.sleep(9)  # three lease lives: the other worker looks at the queue all along
        assert "claimed" not in (tmp_path / "other.log").read_text()
        assert run_row(store_path, run_id)["status"] == "running"
        go.touch()
        assert other.wait(timeout=120) == 0
    finally:
        stop(behind)
        if other is not None:
            stop(other)
    assert run_row(store_path, run_id)["status"] == "finished"
    assert effects.read_text() == f"one {behind.pid}\n"


def test_a_dead_worker_whose_clock_ran_ten_minutes_ahead_loses_its_run_with_its_lease(
    tmp_path, workspace, write_script, store_path
):
    """On another machine (another host name: its pid cannot be checked), killed: its run is
    taken over once its lease is 3 s old on the store's clock, and held for the operator (its
    command was in flight), well before its own clock's ten minutes."""
    started = tmp_path / "started"
    script = write_script(commands(f"touch {started}; sleep 600"))
    policy = tmp_path / "policy.toml"
    policy.write_text(PLAIN)
    run_id = enqueue(store_path, workspace, script, policy)
    ahead = worker(store_path, tmp_path / "ahead.log", offset_s=600, host="gone-machine")
    try:
        until(started.exists, "the run to start on the worker ahead")
        ahead.kill()
        ahead.wait()
        other = worker(store_path, tmp_path / "other.log", "--until-empty")
        assert other.wait(timeout=120) == 0  # ten minutes on the dead worker's clock
    finally:
        stop(ahead)
    said = (tmp_path / "other.log").read_text()
    assert f"run {run_id}: claimed (interrupted)" in said
    assert "held for the operator" in said
    assert run_row(store_path, run_id)["status"] == "interrupted"
