"""Many processes opening and writing one store at once: 0 failures, and what is refused stays so.

    .venv/bin/python benchmarks/store_concurrency.py [--processes 8] [--rounds 20]

Each round starts PROCESSES fresh processes that import io-tui, wait for one instant, then open
the same store and write to it: a run with three committed steps (observation and event each),
a note, the run's end. Cases:

- ``new store``: the file does not exist yet; every process may be the one that creates it.
  A round passes when every process exits 0 and the store then holds every run, step and note,
  carries io-tui's ``application_id`` and the current ``user_version``, and ``quick_check``s ok.
- ``old runner``: the same, with the migration runner io-tui shipped before (``user_version``
  read outside the migration's transaction), as the baseline the figure is measured against.
- ``foreign file``: a SQLite file of another application with its own ``runs`` table; every
  process must be refused ("not an io-tui store") and the file's bytes stay the same.
- ``locked store``: an io-tui store another process holds a write transaction on; every process
  must give up after the busy timeout (``IO_TUI_BUSY_TIMEOUT_MS``, 500 ms here) with "locked",
  and the file's bytes stay the same.

- ``new database (pg)``, ``foreign database (pg)``: the first two on a PostgreSQL server (a
  throwaway one from ``tests/support/pg_cluster.py``): a new, empty database every process may
  be the one to migrate (it must end at the current version in ``io_tui_schema`` with every
  run, step and note), and a database with another application's ``runs`` table, which every
  process must refuse with its rows and tables as they were. Skipped without the server binaries.

Prints a table: rounds, processes, processes that did what they should, failures. No
assertions here; ``tests/cli/test_store_cli.py`` runs a small version.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
LOCK_WAIT_MS = 500
PG_CASES = ("new database (pg)", "foreign database (pg)")
CASES = ("new store", "old runner", "foreign file", "locked store", *PG_CASES)


# -- one process --


async def _write(path: str, index: int) -> None:
    from io_tui.core.events import EventKind, RunEvent
    from io_tui.core.ledger import Observation, ObsKind
    from io_tui.core.providers.messages import ToolCall
    from io_tui.core.store import Store
    from io_tui.core.store.runs import StepCommit

    async with await Store.open(path) as store:
        run_id = await store.runs.create(
            goal=f"writer {index}", workspace="/w", contract={}, provider={}, policy={}
        )
        for step in range(1, STEPS + 1):
            call = ToolCall(f"c{step}", "read_file", {"path": "a.py"})
            obs = Observation(step, call.id, "read_file", ObsKind.READ, "a.py", "t", full_chars=1)
            event = RunEvent(run_id, step, EventKind.STEP_COMMITTED)
            commit = StepCommit(step, "t", (call,), {}, [(obs, "t")], [], [event], 1)
            await store.runs.commit_step(run_id, commit)
        await store.notes.set(f"note-{index}", f"from writer {index}", "global", None)
        await store.runs.set_status(run_id, "finished", "finished")


def _old_runner(path: Path) -> None:
    """The runner io-tui shipped before: the version read before, not inside, the transaction."""
    from io_tui.core.store.schema import MIGRATIONS

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number in range(version, len(MIGRATIONS)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in (s.strip() for s in MIGRATIONS[number].split(";")):
                if statement:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    conn.close()


def worker(path: str, go_at: float, index: int, old: bool) -> int:
    from io_tui.core.store import StoreError

    time.sleep(max(0.0, go_at - time.time()))
    try:
        if old:
            _old_runner(Path(path))
        asyncio.run(_write(path, index))
    except StoreError as exc:
        print(f"refused: {exc}")
        return 2
    except Exception as exc:
        print(f"failed: {type(exc).__name__}: {exc}")
        return 1
    print("ok")
    return 0


# -- one round --


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _spawn(
    path: Path | str, processes: int, old: bool, env: dict[str, str]
) -> list[tuple[int, str]]:
    go_at = time.time() + 1.0 + 0.15 * processes  # after every process has imported io-tui
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", str(path), repr(go_at), str(i), str(int(old))],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for i in range(processes)
    ]
    return [(p.wait(timeout=120), (p.stdout.read() if p.stdout else "").strip()) for p in procs]


def _check_store(path: Path, processes: int) -> list[str]:
    from io_tui.core.store.db import APPLICATION_ID
    from io_tui.core.store.schema import SCHEMA_VERSION

    with sqlite3.connect(path) as conn:
        got = {
            "application_id": conn.execute("PRAGMA application_id").fetchone()[0],
            "user_version": conn.execute("PRAGMA user_version").fetchone()[0],
            "quick_check": conn.execute("PRAGMA quick_check").fetchone()[0],
            "finished runs": conn.execute(
                "SELECT count(*) FROM runs WHERE status = 'finished' AND steps = ?", (STEPS,)
            ).fetchone()[0],
            "steps": conn.execute("SELECT count(*) FROM steps").fetchone()[0],
            "notes": conn.execute("SELECT count(*) FROM memory").fetchone()[0],
        }
    want = {
        "application_id": APPLICATION_ID,
        "user_version": SCHEMA_VERSION,
        "quick_check": "ok",
        "finished runs": processes,
        "steps": processes * STEPS,
        "notes": processes,
    }
    return [f"{k}: {got[k]} (want {v})" for k, v in want.items() if got[k] != v]


def _foreign(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO runs (name) VALUES ('theirs')")


def _pg(url: str, sql: str) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


def _check_database(url: str, processes: int) -> list[str]:
    from io_tui.core.store.db import APPLICATION_ID
    from io_tui.core.store.schema import SCHEMA_VERSION

    [schema] = _pg(url, "SELECT application_id, version FROM io_tui_schema")
    got = {
        "schema": schema,
        "finished runs": _pg(
            url, f"SELECT count(*) FROM runs WHERE status = 'finished' AND steps = {STEPS}"
        )[0][0],
        "steps": _pg(url, "SELECT count(*) FROM steps")[0][0],
        "notes": _pg(url, "SELECT count(*) FROM memory")[0][0],
    }
    want = {
        "schema": (APPLICATION_ID, SCHEMA_VERSION),
        "finished runs": processes,
        "steps": processes * STEPS,
        "notes": processes,
    }
    return [f"{k}: {got[k]} (want {v})" for k, v in want.items() if got[k] != v]


def pg_round_of(
    case: str, processes: int, env: dict[str, str], cluster: Any
) -> tuple[int, list[str]]:
    url = cluster.new_database()
    problems: list[str] = []
    if case == "new database (pg)":
        results = _spawn(url, processes, False, env)
        good = sum(rc == 0 for rc, _ in results)
        problems += [out for rc, out in results if rc != 0]
        return good, problems + _check_database(url, good)
    _pg(url, "CREATE TABLE runs (id SERIAL PRIMARY KEY, name TEXT)")
    _pg(url, "INSERT INTO runs (name) VALUES ('theirs')")
    results = _spawn(url, processes, False, env)
    good = sum(rc == 2 and "not an io-tui store" in out for rc, out in results)
    problems += [out for rc, out in results if not (rc == 2 and "not an io-tui store" in out)]
    tables = _pg(url, "SELECT table_name FROM information_schema.tables"
                      " WHERE table_schema = 'public'")  # fmt: skip
    if tables != [("runs",)] or _pg(url, "SELECT * FROM runs") != [(1, "theirs")]:
        problems.append("the database changed")
    return good, problems


def round_of(case: str, processes: int, env: dict[str, str]) -> tuple[int, list[str]]:
    """(processes that did what they should, what went wrong) for one round of ``case``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        holder: sqlite3.Connection | None = None
        if case == "foreign file":
            _foreign(path)
        if case == "locked store":
            subprocess.run(
                [sys.executable, __file__, "--worker", str(path), "0", "0", "0"],
                check=True,
                capture_output=True,
                env=env,
            )
            holder = sqlite3.connect(path, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            holder.execute(
                "INSERT INTO memory_recalls (run_id, step, scope, key, at)"
                " VALUES (0, 0, 'global', 'held', 0)"
            )
            env = {**env, "IO_TUI_BUSY_TIMEOUT_MS": str(LOCK_WAIT_MS)}
        before = _sha(path) if path.exists() else ""
        results = _spawn(path, processes, case == "old runner", env)
        if holder is not None:
            holder.execute("ROLLBACK")
            holder.close()
        problems: list[str] = []
        if case in ("new store", "old runner"):
            good = sum(rc == 0 for rc, _ in results)
            problems += [out for rc, out in results if rc != 0]
            problems += _check_store(path, good)
        else:
            expect = "not an io-tui store" if case == "foreign file" else "locked"
            good = sum(rc == 2 and expect in out for rc, out in results)
            problems += [out for rc, out in results if not (rc == 2 and expect in out)]
            if _sha(path) != before:
                problems.append("the file changed")
        return good, problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--case", choices=CASES, action="append", help="default: all")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"{args.processes} processes at once, {args.rounds} rounds per case")
    print(
        f"{'case':<14} {'rounds':>6} {'processes':>9} {'did right':>9} {'failed':>7} "
        f"{'s/round':>8}  first problem"
    )
    failed_total = 0
    cases = args.case or CASES
    cluster = _pg_cluster() if any(case in PG_CASES for case in cases) else None
    try:
        for case in cases:
            if case in PG_CASES and cluster is None:
                print(f"{case:<14} skipped: no PostgreSQL server binaries")
                continue
            failed_total += _case(case, args.processes, args.rounds, env, cluster)
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"failures outside the baseline: {failed_total}")


def _pg_cluster() -> Any:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from pg_cluster import PG_BIN, Cluster

    if not (PG_BIN / "initdb").exists():
        return None
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="iotu-pg-", dir="/tmp")))
    cluster.start()
    return cluster


def _case(case: str, processes: int, rounds: int, env: dict[str, str], cluster: Any) -> int:
    """One row of the table; the failures it counts against io-tui."""
    failed_total = 0
    good = failures = 0
    first = ""
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        if case in PG_CASES:
            ok, problems = pg_round_of(case, processes, env, cluster)
        else:
            ok, problems = round_of(case, processes, env)
        seconds.append(time.perf_counter() - start)
        good += ok
        failures += processes - ok
        first = first or (problems[0].splitlines()[-1][:60] if problems else "")
        if case != "old runner":
            failed_total += len(problems)
    print(
        f"{case:<14} {rounds:>6} {rounds * processes:>9} {good:>9} "
        f"{failures:>7} {statistics.median(seconds):>8.2f}  {first}"
    )
    return failed_total


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"))
    main()
