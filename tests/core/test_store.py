"""The store itself: migrations, WAL, atomic step commits, and honest errors, on a SQLite file
and on a PostgreSQL database (``store_path`` is each in turn; ``sqlite_path`` and ``pg_url``
are one backend's own cases)."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from damaged_store import MALFORMED, damage_table, sha256

from io_tui.core.events import EventKind, RunEvent
from io_tui.core.ledger import Observation, ObsKind
from io_tui.core.providers.messages import ToolCall
from io_tui.core.store import Store, StoreDamaged, StoreError, store_location
from io_tui.core.store.pg import PASSWORD_VARIABLE, VERSION_TABLE, PgDatabase, _password
from io_tui.core.store.runs import StepCommit
from io_tui.core.store.schema import SCHEMA_VERSION


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


async def new_run(store: Store) -> int:
    return await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})


def obs(step: int, call_id: str) -> Observation:
    return Observation(step, call_id, "read_file", ObsKind.READ, "a.py", "text", full_chars=4)


async def test_a_new_file_is_migrated_to_the_current_version_in_wal_mode(sqlite_path):
    store = await Store.open(sqlite_path)
    [row] = await store.db.fetchall("PRAGMA synchronous")
    assert row[0] == 1  # NORMAL, WAL's recommended level (per connection, so checked on ours)
    await store.close()
    with sqlite3.connect(sqlite_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_reopening_keeps_data_and_does_not_migrate_twice(store_path):
    store = await Store.open(store_path)
    run_id = await new_run(store)
    await store.close()
    store = await Store.open(store_path)
    assert (await store.runs.get(run_id)) is not None
    await store.close()


async def test_a_newer_schema_is_refused_with_a_clear_message(sqlite_path):
    await (await Store.open(sqlite_path)).close()
    with sqlite3.connect(sqlite_path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with pytest.raises(StoreError, match="newer than this io-tui"):
        await Store.open(sqlite_path)


async def test_a_file_that_is_not_a_database_is_reported(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("hello" * 1000)
    with pytest.raises(StoreError, match="not an io-tui store"):
        await Store.open(bad)


async def _damaged_events(path: Path) -> str:
    """A store with a run, a note and an event, its events' root page damaged; its sha256."""
    async with await Store.open(path) as store:
        run_id = await new_run(store)
        await store.runs.add_events([RunEvent(run_id, 0, EventKind.RUN_STARTED, {})])
        await store.notes.set("k", "v", "global", None)
    return damage_table(path, "events")


async def test_damage_met_by_a_query_is_one_line_and_nothing_is_written_after(sqlite_path):
    """The open's checks pass; the query that reads the damaged page raises ``StoreDamaged``
    (a ``StoreError``: one line wherever it lands), and from then on every call does, writes
    to healthy tables included, so the file keeps its bytes."""
    before = await _damaged_events(sqlite_path)
    store = await Store.open(sqlite_path)
    try:
        with pytest.raises(StoreDamaged) as found:
            await store.db.fetchall("SELECT * FROM events")
        message = str(found.value)
        assert message.startswith(f"store {sqlite_path} is damaged ({MALFORMED}); ")
        assert f"sqlite3 {sqlite_path} .recover" in message and "\n" not in message
        assert isinstance(found.value, StoreError) and found.value.__cause__ is None
        with pytest.raises(StoreDamaged, match="is damaged"):
            await store.notes.set("k2", "v2", "global", None)  # the memory table is healthy
        with pytest.raises(StoreDamaged, match="is damaged"):
            async with store.db.transaction() as conn:
                await conn.execute("DELETE FROM memory")
    finally:
        await store.close()
    assert sha256(sqlite_path) == before


async def test_a_statement_inside_a_transaction_that_meets_damage_rolls_it_back(sqlite_path):
    before = await _damaged_events(sqlite_path)
    store = await Store.open(sqlite_path)
    try:
        with pytest.raises(StoreDamaged, match="is damaged"):
            async with store.db.transaction() as conn:
                await conn.execute("DELETE FROM memory")
                await conn.execute("DELETE FROM events")
    finally:
        await store.close()
    assert sha256(sqlite_path) == before
    with closing(sqlite3.connect(sqlite_path)) as conn:
        assert conn.execute("SELECT key FROM memory").fetchall() == [("k",)]


async def test_an_open_that_checks_refuses_a_damaged_store_untouched(sqlite_path):
    before = await _damaged_events(sqlite_path)
    with pytest.raises(StoreDamaged, match=f"is damaged \\({MALFORMED}\\)"):
        await Store.open(sqlite_path, check=True)
    assert sha256(sqlite_path) == before
    assert [p.name for p in sqlite_path.parent.iterdir()] == ["store.db"]  # no -wal, no -shm
    await (await Store.open(sqlite_path)).close()  # without the check it opens


async def test_calls_made_while_the_store_opens_wait_for_it(store_path):
    """``open_soon`` (the app's start): transactions issued while a new file is migrated wait
    for the migrations instead of starting inside them."""
    store = Store(store_path)
    opening = store.db.open_soon()
    calls = []
    while not opening.done() and len(calls) < 50:  # a call at every turn while it opens
        calls.append(asyncio.ensure_future(new_run(store)))
        await asyncio.sleep(0)
    ids = await asyncio.gather(*calls)
    assert len(calls) > 3 and sorted(ids) == list(range(1, len(calls) + 1))
    await store.close()


async def test_a_store_that_fails_to_open_fails_every_waiting_call(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("hello" * 1000)
    store = Store(bad)
    store.db.open_soon()
    with pytest.raises(StoreError, match="not an io-tui store"):
        await store.runs.all()
    await store.close()
    assert bad.read_text() == "hello" * 1000


async def test_a_step_commits_whole_or_not_at_all(store):
    run_id = await new_run(store)
    event = RunEvent(run_id, 1, EventKind.STEP_COMMITTED)
    call = ToolCall("c1", "read_file", {"path": "a.py"})
    good = StepCommit(1, "t", (call,), {}, [(obs(1, "c1"), "text")], [], [event], 10)
    await store.runs.commit_step(run_id, good)
    # the same call id again violates a constraint half-way through the transaction
    bad = StepCommit(
        2, "t", (call,), {}, [(obs(2, "c2"), "x"), (obs(2, "c1"), "y")], [], [event], 5
    )
    with pytest.raises(sqlite3.IntegrityError):
        await store.runs.commit_step(run_id, bad)
    assert [s.step for s in await store.trace.steps(run_id)] == [1]
    assert len(await store.trace.observations(run_id)) == 1
    assert len(await store.trace.events(run_id)) == 1
    run = await store.runs.get(run_id)
    assert run is not None and (run.steps, run.tokens) == (1, 10)


async def test_operator_messages_are_delivered_once(store):
    run_id = await new_run(store)
    await store.runs.add_operator_message(run_id, "use the staging config")
    assert await store.runs.take_operator_messages(run_id, 3) == ["use the staging config"]
    assert await store.runs.take_operator_messages(run_id, 4) == []


async def test_two_processes_share_one_file(store_path):
    first = await Store.open(store_path)
    second = await Store.open(store_path)
    run_id = await new_run(first)
    assert (await second.runs.get(run_id)) is not None
    await first.close()
    await second.close()


async def test_many_processes_opening_one_new_store_at_once_migrate_it_once(store_path):
    """Each store has its own connection, as a process has: the first migrates under the lock,
    the others re-read the version inside it and find the work done."""
    stores = await asyncio.gather(*(Store.open(store_path) for _ in range(6)))
    ids = await asyncio.gather(*(new_run(s) for s in stores))
    assert sorted(ids) == list(range(1, 7))
    await asyncio.gather(*(s.close() for s in stores))


def test_a_store_migrated_by_another_process_while_it_is_identified_is_not_foreign(sqlite_path):
    """The id, the version and the tables are one snapshot: here another process migrates the
    new store right after the version is read (the window a loaded machine once hit: the id
    and version of the empty file, then the migrated store's tables, looked foreign)."""
    from io_tui.core.store import db

    sqlite3.connect(sqlite_path).execute("PRAGMA journal_mode = WAL").close()
    other = sqlite3.connect(sqlite_path, isolation_level=None)
    conn = sqlite3.connect(sqlite_path, isolation_level=None)

    class MigratedMeanwhile:
        in_transaction = property(lambda self: conn.in_transaction)

        def execute(self, sql: str) -> sqlite3.Cursor:
            cursor = conn.execute(sql)
            if sql == "PRAGMA user_version":
                db._migrate(sqlite_path, other)
            return cursor

    assert db._identify(sqlite_path, MigratedMeanwhile()) == (0, 0)  # type: ignore[arg-type]
    assert db._identify(sqlite_path, conn) == (SCHEMA_VERSION, db.APPLICATION_ID)
    conn.close()
    other.close()


async def test_without_create_a_missing_store_is_an_error_not_a_new_one(store_path):
    with pytest.raises(StoreError, match="no store at"):
        await Store.open(store_path, create=False)
    await (await Store.open(store_path)).close()
    await (await Store.open(store_path, create=False)).close()


# -- PostgreSQL's own ------------------------------------------------------------------------


def pg(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


async def test_a_new_database_gets_the_schema_with_faithful_types_and_its_version(pg_url):
    await (await Store.open(pg_url)).close()
    assert pg(pg_url, f"SELECT version FROM {VERSION_TABLE}") == [(SCHEMA_VERSION,)]
    types = dict(
        pg(
            pg_url,
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_name = 'runs'",
        )
    )
    assert types["created_at"] == "double precision"  # REAL timestamps
    assert types["id"] == types["steps"] == "bigint"  # SQLite's integers are 64 bits
    assert types["contract"] == "text"  # JSON stays the text written
    [(identity,)] = pg(
        pg_url,
        "SELECT is_identity FROM information_schema.columns"
        " WHERE table_name = 'runs' AND column_name = 'id'",
    )
    assert identity == "YES"


async def test_a_newer_schema_in_postgresql_is_refused(pg_url):
    await (await Store.open(pg_url)).close()
    pg(pg_url, f"UPDATE {VERSION_TABLE} SET version = {SCHEMA_VERSION + 5}")
    with pytest.raises(StoreError, match="newer than this io-tui"):
        await Store.open(pg_url)


async def test_a_database_of_something_else_is_refused_untouched(pg_url):
    pg(pg_url, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total NUMERIC)")
    with pytest.raises(StoreError, match="not an io-tui store"):
        await Store.open(pg_url)
    tables = pg(pg_url, "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public'")  # fmt: skip
    assert tables == [("invoices",)]


async def test_a_server_that_is_down_is_one_line_without_the_password(tmp_path, monkeypatch):
    monkeypatch.delenv(PASSWORD_VARIABLE, raising=False)
    url = f"postgresql://io:s3cret-pw@/store?host={tmp_path}"  # no server listens there
    with pytest.raises(StoreError) as caught:
        await Store.open(url)
    message = str(caught.value)
    assert message.startswith("cannot open store postgresql://io@/store?host=")
    assert "s3cret" not in message and "\n" not in message


def test_a_url_never_shows_its_password_which_children_get_from_the_environment(monkeypatch):
    monkeypatch.delenv(PASSWORD_VARIABLE, raising=False)
    url = store_location("postgresql://io:p%40ss@db.example:5433/runs?sslmode=verify-full")
    assert url == "postgresql://io@db.example:5433/runs?sslmode=verify-full"
    assert url.password == "p@ss" and _password(url) == "p@ss"
    import os

    assert os.environ[PASSWORD_VARIABLE] == "p@ss"


def test_the_password_may_come_from_the_credentials_file(tmp_path, monkeypatch):
    monkeypatch.delenv(PASSWORD_VARIABLE, raising=False)
    credentials = tmp_path / "credentials.toml"
    credentials.write_text('PGPASSWORD = "from-the-file"\n')
    credentials.chmod(0o600)
    monkeypatch.setenv("IO_TUI_CREDENTIALS", str(credentials))
    assert _password(store_location("postgresql://io@db.example/runs")) == "from-the-file"
    monkeypatch.setenv(PASSWORD_VARIABLE, "env-wins")  # libpq reads it itself
    assert _password(store_location("postgresql://io@db.example/runs")) is None


async def test_postgresql_only_statements_run_through_the_backend(pg_url):
    """What a module built on PostgreSQL does (the run queue): a claim with ``SKIP LOCKED``
    outside the store-wide write lock, and ``LISTEN``/``pg_notify`` on a connection of its own."""
    holder, claimer = await Store.open(pg_url), await Store.open(pg_url)
    assert isinstance(claimer.db, PgDatabase) and claimer.db.dialect == "postgresql"
    first, second = await new_run(holder), await new_run(holder)

    def claim(conn):
        return conn.execute(
            "SELECT id FROM runs WHERE status = ? ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
            ("running",),
        ).fetchone()["id"]

    async with holder.db.transaction() as conn:  # holds the write lock and run 1's row
        await conn.execute("SELECT id FROM runs WHERE id = ? FOR UPDATE", (first,))
        assert await claimer.db.write(claim, exclusive=False) == second
    assert await claimer.db.write(claim, exclusive=False) == first

    listener = await claimer.db.connect()
    try:
        await listener.execute("LISTEN io_tui_events")
        await holder.db.call(
            lambda conn: conn.execute("SELECT pg_notify(?, ?)", ("io_tui_events", f"{first}:7"))
        )
        payloads = [n.payload async for n in listener.notifies(timeout=10, stop_after=1)]
        assert payloads == [f"{first}:7"]
    finally:
        await listener.close()
    await holder.close()
    await claimer.close()


async def test_a_dropped_connection_is_ridden_through_and_a_server_gone_for_long_is_one_line(
    pg_url,
):
    """A terminated backend (a restart, a failover) costs the next call a new connection, not
    an error; a server out of reach for longer than the store waits is ``StoreUnreachable``,
    one line naming the store and how long it waited."""
    from io_tui.core.store import StoreUnreachable
    from io_tui.core.store.pg import StoreUrl

    store = await Store.open(pg_url)
    run_id = await new_run(store)
    pg(pg_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
               " WHERE application_name = 'io-tui'")  # fmt: skip
    assert (await store.runs.get(run_id)) is not None
    await store.runs.set_status(run_id, "finished", "success")
    pg(pg_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
               " WHERE application_name = 'io-tui'")  # fmt: skip
    store.db.retry_s = 0.5
    store.db.path = StoreUrl(pg_url.replace("/t", "/gone_"))  # a database that is not there
    with pytest.raises(StoreUnreachable, match=r"^the database at postgresql://.* was unreachable"):
        await store.runs.get(run_id)
    await store.close()


def test_an_open_that_sqlite_calls_busy_at_once_is_tried_again_within_the_busy_timeout(
    monkeypatch,
):
    """SQLite answers "database is locked" without waiting where waiting could deadlock (a
    journal-mode change, WAL recovery): the open tries again until the busy timeout, then
    gives the lock error as before."""
    from io_tui.core.store import db

    answers = [sqlite3.OperationalError("database is locked")] * 2 + ["open"]

    def flaky() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert db._patiently(flaky) == "open" and not answers
    monkeypatch.setenv("IO_TUI_BUSY_TIMEOUT_MS", "200")
    tries = []

    def locked() -> None:
        tries.append(1)
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        db._patiently(locked)
    assert len(tries) > 1

    def broken() -> None:
        raise sqlite3.OperationalError("no such table: runs")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        db._patiently(broken)  # only a lock is tried again
