"""Transient PostgreSQL faults pause a run, they do not fail it, and nothing is done twice.

A run that runs one command (it appends a line to a log outside the workspace) is driven on the
real PostgreSQL of the test bootstrap while its connection is cut:

- at every statement it sends, in turn: ``pg_terminate_backend`` on its backend (from another
  connection, waiting for the backend to be gone) just before the statement goes out;
- at every COMMIT it sends, in turn, after the server committed: a proxy between it and the
  server drops the COMMIT's answer and both sides of the connection (the one case a blind
  retry would write twice).

Each run ends finished, its command ran once, and what it wrote is there once (one step row
per step, one event of each kind that happens once). Past its retries (the server gone for
longer than ``IO_TUI_STORE_RETRY_S``) a run stops resumable with one line saying the database
was unreachable, never ``failed``. A process stopped inside a write holds the store's write lock
for seconds, not forever: the next writer ends its session (``pg.STOPPED_WRITER_S``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.run.outcome import RunResult
from io_tui.core.store import Store, StoreUnreachable, pg
from io_tui.core.store.db import Connection
from io_tui.core.store.pg import PgConnection

ONCE = ("run_started", "tool_called", "observation", "run_finished")


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Faults by the hundred: each waited through in a millisecond, not the product's 50."""
    monkeypatch.setattr(pg, "BACKOFF_S", (0.001, 0.01))


def script_for(write_script, log: Path) -> Path:
    return write_script(
        [
            {"tool_calls": [{"id": "c1", "name": "run_command",
                             "arguments": {"argv": ["sh", "-c", f"echo ran >> {log}"]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip


async def drive(store: Store, script: Path, workspace: Path) -> RunResult:
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=ApproveAll(),
        policy=Policy.from_json({"defaults": {"exec": "allow"}}),
    )
    return await start_run(harness, TaskContract("t", workspace))


async def written_once(store: Store, run_id: int) -> None:
    """Each thing the run wrote is there once."""
    steps = await store.trace.steps_after(run_id, 0, limit=100)
    assert [s.step for s in steps] == [1, 2]
    events = [e.kind for e in await store.trace.events(run_id)]
    assert [events.count(kind) for kind in ONCE] == [1] * len(ONCE), events
    assert len(await store.intents.for_run(run_id)) == 1


class Counting:
    """Counts the statements the store's connection sends; ``at`` the one to act before."""

    def __init__(self, act: Callable[[PgConnection], None] | None = None, at: int = 0) -> None:
        self.sent = 0
        self.act = act
        self.at = at

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        execute, executemany = PgConnection.execute, PgConnection.executemany

        def counted(method: Any) -> Any:
            def statement(conn: PgConnection, sql: str, parameters: Any = (), /) -> Any:
                self.sent += 1
                if self.act is not None and self.sent == self.at:
                    self.act(conn)
                return method(conn, sql, parameters)

            return statement

        monkeypatch.setattr(PgConnection, "execute", counted(execute))
        monkeypatch.setattr(PgConnection, "executemany", counted(executemany))


async def test_a_backend_terminated_at_every_statement_of_a_run_leaves_it_finished(
    pg_url, workspace, write_script, tmp_path, monkeypatch
):
    store = await Store.open(pg_url)
    log = workspace / "effects.log"  # in the workspace: a sandboxed command has its own /tmp
    script = script_for(write_script, log)
    dry = Counting()
    with monkeypatch.context() as patched:
        dry.install(patched)
        result = await drive(store, script, workspace)
    assert result.status == "finished" and dry.sent > 20
    side = psycopg.connect(pg_url, autocommit=True)

    def terminate(conn: PgConnection) -> None:
        pid = conn.raw.info.backend_pid
        side.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))

    try:
        for at in range(1, dry.sent + 1):
            log.unlink()
            fault = Counting(terminate, at)
            with monkeypatch.context() as patched:
                fault.install(patched)
                result = await drive(store, script, workspace)
            assert result.status == "finished", (at, result)
            assert log.read_text() == "ran\n", at  # the command ran once
            await written_once(store, result.run_id)
    finally:
        side.close()
        await store.close()


class CommitEater:
    """A TCP proxy to the server's socket that, at the ``eat``-th COMMIT, drops the server's
    answer ("CommandComplete COMMIT": the transaction is committed) and cuts both sides."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.commits = 0
        self.eat = 0
        self.eaten = 0
        self.clients: set[asyncio.Task[None]] = set()

    async def serve(self) -> AsyncIterator[int]:
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        async with server:
            try:
                yield server.sockets[0].getsockname()[1]
            finally:
                for task in self.clients:
                    task.cancel()
                await asyncio.gather(*self.clients, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.clients.add(task)
        with contextlib.suppress(asyncio.CancelledError):
            await self._forward(reader, writer)
        self.clients.discard(task)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.socket_path)
        upward = asyncio.ensure_future(self._pipe(reader, up_writer))
        try:
            while True:
                head = await up_reader.readexactly(5)
                body = await up_reader.readexactly(int.from_bytes(head[1:], "big") - 4)
                if head[:1] == b"C" and body == b"COMMIT\0":
                    self.commits += 1
                    if self.commits == self.eat:
                        self.eaten += 1
                        return  # committed, and the client never hears it
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            upward.cancel()
            for w in (writer, up_writer):
                w.close()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()


async def test_a_commit_whose_answer_is_lost_is_not_written_twice(
    pg_url, pg_cluster, workspace, write_script, tmp_path
):
    """The case a blind retry gets wrong: the server committed, the client heard nothing. The
    store asks the server whether that transaction committed (by its id) before doing it
    again, so every COMMIT of the run may lose its answer and each write is still made once."""
    eater = CommitEater(str(pg_cluster.socket_dir / ".s.PGSQL.5432"))
    database = urlsplit(pg_url).path.lstrip("/")
    log = workspace / "effects.log"  # in the workspace: a sandboxed command has its own /tmp
    script = script_for(write_script, log)
    serving = eater.serve()
    port = await anext(serving)
    url = f"postgresql://postgres@127.0.0.1:{port}/{database}?sslmode=disable&gssencmode=disable"
    try:
        store = await Store.open(url)
        commits = eater.commits
        result = await drive(store, script, workspace)
        commits = eater.commits - commits  # one run's
        assert result.status == "finished" and commits > 5
        for eat in range(1, commits + 1):
            log.unlink()
            eater.eat, eater.commits = eat, 0
            result = await drive(store, script, workspace)
            assert eater.eaten == eat, "the proxy dropped no answer"
            assert result.status == "finished", (eat, result)
            assert log.read_text() == "ran\n", eat
            await written_once(store, result.run_id)
        await store.close()
    finally:
        await serving.aclose()


async def test_a_server_gone_past_the_retries_leaves_the_run_resumable_saying_so(
    pg_url, pg_cluster, workspace, write_script, tmp_path, monkeypatch
):
    monkeypatch.setenv("IO_TUI_STORE_RETRY_S", "1")
    store = await Store.open(pg_url)
    log = workspace / "effects.log"  # in the workspace: a sandboxed command has its own /tmp
    side = psycopg.connect(pg_cluster.url(), autocommit=True)
    database = urlsplit(pg_url).path.lstrip("/")

    def server_gone(conn: PgConnection) -> None:  # no new connection to this database, and
        side.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")  # this one cut
        side.execute("SELECT pg_terminate_backend(%s, 10000)", (conn.raw.info.backend_pid,))

    fault = Counting(server_gone, at=12)
    fault.install(monkeypatch)
    try:
        with pytest.raises(StoreUnreachable) as stopped:
            await drive(store, script_for(write_script, log), workspace)
        said = str(stopped.value)
        assert re.fullmatch(
            r"run 1: the database at postgresql://\S+ was unreachable for \d+ s \(.+\); it"
            r" stopped at its last commit and is interrupted once its lease runs out:"
            r" `io-tui resume 1` when the database is back",
            said,
        ), said
        side.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        row = await store.runs.get(1)
        assert row is not None and row.status == "running"  # until its lease is reaped
    finally:
        side.close()
        await store.close()


# A process that writes one row of `tool_sets` through the store and, the first time, stops
# inside the write (the row sent, the transaction open, the store's write lock held) until
# the file `argv[2]` exists.
STOPS_INSIDE_A_WRITE = """
import asyncio, sys, time
from pathlib import Path
from io_tui.core.store import Store

async def main(url, go):
    store = await Store.open(url)
    tries = []

    def write(conn):
        conn.execute("INSERT INTO tool_sets VALUES ('stopped', '[]', 0)")
        tries.append(1)
        if len(tries) == 1:
            print("inside", flush=True)
            while not go.exists():
                time.sleep(0.05)

    await store.db.write(write)
    print(f"written after {len(tries)} tries", flush=True)
    await store.close()

asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
"""


async def test_a_process_stopped_inside_a_write_holds_the_store_for_seconds_not_forever(
    pg_url, tmp_path
):
    """A process stopped (SIGSTOP: a frozen VM, a laptop lid) in the middle of a write holds
    the store's write lock, which every writer of the store waits for. The next writer, its
    lock wait given up after ``STOPPED_WRITER_S``, finds the holder silent inside its
    transaction and ends its session: the lock is released, the writer goes on, and what the
    stopped one had sent is rolled back. When it wakes, the lost session is a transient fault
    to it: its write is made again, once."""
    store = await Store.open(pg_url)
    go = tmp_path / "go"
    stopped = await asyncio.create_subprocess_exec(
        sys.executable, "-c", STOPS_INSIDE_A_WRITE, pg_url, str(go),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert stopped.stdout is not None
        assert await asyncio.wait_for(stopped.stdout.readline(), 60) == b"inside\n"
        stopped.send_signal(signal.SIGSTOP)

        def other(conn: Connection) -> None:
            conn.execute("INSERT INTO tool_sets VALUES ('other', '[]', 0)")

        def digests(conn: Connection) -> list[str]:
            return [row[0] for row in conn.execute("SELECT digest FROM tool_sets ORDER BY 1")]

        await asyncio.wait_for(store.db.write(other), 60)  # forever without the lock's timeout
        assert await store.db.call(digests) == ["other"]  # the stopped one's row rolled back
        go.touch()
        stopped.send_signal(signal.SIGCONT)
        out, err = await asyncio.wait_for(stopped.communicate(), 60)
        assert (stopped.returncode, out, err) == (0, b"written after 2 tries\n", b"")
        assert await store.db.call(digests) == ["other", "stopped"]
    finally:
        if stopped.returncode is None:
            stopped.kill()
            await stopped.wait()
        await store.close()
