"""Group commit on a SQLite store (``Database.write``): writes that queue while another is being
made are made together, in one transaction and one commit, each in a savepoint of its own, and
each caller hears of its own write only."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from io_tui.core.store import Store, StoreFull
from io_tui.core.store.db import Connection


async def opened(path: Path) -> Store:
    """The store, with a table of its own for these writes."""
    store = await Store.open(path)
    await store.db.write(lambda conn: conn.execute("CREATE TABLE written (key TEXT NOT NULL)"))
    return store


async def statements(store: Store) -> list[str]:
    """The statements the store's connection runs from now on, as SQLite traces them."""
    seen: list[str] = []

    def trace(conn: Connection) -> None:
        assert isinstance(conn, sqlite3.Connection)
        conn.set_trace_callback(seen.append)

    await store.db.call(trace)
    return seen


def insert(key: str, then: Callable[[Connection], object] | None = None):
    def write(conn: Connection) -> str:
        conn.execute("INSERT INTO written (key) VALUES (?)", (key,))
        if then is not None:
            then(conn)
        return key

    return write


def keys(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {key for (key,) in conn.execute("SELECT key FROM written")}


async def queued_behind_a_transaction(store: Store, writes: dict[str, Callable]) -> dict:
    """Each write started while a transaction holds the store's lock, so that all of them
    queue; the outcome of each (its result, or the error it raised) once the lock is free."""
    async with store.db.transaction():
        tasks = {name: asyncio.ensure_future(store.db.write(fn)) for name, fn in writes.items()}
        await asyncio.sleep(0)  # every write queued, none made
        assert not any(task.done() for task in tasks.values())
    await asyncio.wait(tasks.values())
    return {
        name: task.exception() if task.exception() is not None else task.result()
        for name, task in tasks.items()
    }


async def test_writes_queued_behind_one_are_made_in_one_commit(store_path: Path) -> None:
    async with await opened(store_path) as store:
        seen = await statements(store)
        outcomes = await queued_behind_a_transaction(
            store, {key: insert(key) for key in ("a", "b", "c", "d")}
        )
    assert outcomes == {"a": "a", "b": "b", "c": "c", "d": "d"}
    assert keys(store_path) == {"a", "b", "c", "d"}
    # the holding transaction, then one for the four writes
    assert [s for s in seen if s.startswith(("BEGIN", "COMMIT"))] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
    ] * 2
    assert seen.count("SAVEPOINT write") == 4


async def test_a_write_that_fails_in_a_group_is_undone_alone(store_path: Path) -> None:
    def refuse(conn: Connection) -> None:
        raise ValueError("this write is refused")

    async with await opened(store_path) as store:
        outcomes = await queued_behind_a_transaction(
            store, {"a": insert("a"), "b": insert("b", then=refuse), "c": insert("c")}
        )
    assert outcomes["a"] == "a" and outcomes["c"] == "c"
    assert isinstance(outcomes["b"], ValueError)
    assert keys(store_path) == {"a", "c"}  # b's own statement was undone with it


async def test_an_error_that_ends_the_transaction_fails_every_write_of_its_group(
    store_path: Path,
) -> None:
    """SQLite rolls a whole transaction back on a full disk or an I/O error: then no write of
    the group was made, and each caller hears the one error (as the store says it)."""

    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]

    def disk_full(conn: Connection) -> None:
        conn.execute("ROLLBACK")  # what SQLite does on SQLITE_FULL, before the error reaches us
        raise full

    async with await opened(store_path) as store:
        outcomes = await queued_behind_a_transaction(
            store, {"a": insert("a"), "b": insert("b", then=disk_full), "c": insert("c")}
        )
        assert all(isinstance(outcome, StoreFull) for outcome in outcomes.values()), outcomes
        assert await store.db.write(insert("after")) == "after"  # the store goes on
    assert keys(store_path) == {"after"}


async def test_a_writer_cancelled_while_queued_writes_nothing(store_path: Path) -> None:
    async with await opened(store_path) as store:
        async with store.db.transaction():
            kept = asyncio.ensure_future(store.db.write(insert("kept")))
            cancelled = asyncio.ensure_future(store.db.write(insert("cancelled")))
            await asyncio.sleep(0)
            cancelled.cancel()
        assert await kept == "kept"
        with pytest.raises(asyncio.CancelledError):
            await cancelled
    assert keys(store_path) == {"kept"}


async def test_a_lone_write_takes_no_savepoint(store_path: Path) -> None:
    async with await opened(store_path) as store:
        seen = await statements(store)
        assert await store.db.write(insert("a")) == "a"
    assert not any(s.startswith("SAVEPOINT") for s in seen)
