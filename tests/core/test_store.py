"""The store file itself: migrations, WAL, atomic step commits, and honest errors."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from io_tui.core.events import EventKind, RunEvent
from io_tui.core.ledger import Observation, ObsKind
from io_tui.core.providers.base import ToolCall
from io_tui.core.store import StepCommit, Store, StoreError
from io_tui.core.store.schema import SCHEMA_VERSION


async def new_run(store: Store) -> int:
    return await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})


def obs(step: int, call_id: str) -> Observation:
    return Observation(step, call_id, "read_file", ObsKind.READ, "a.py", "text", full_chars=4)


async def test_a_new_file_is_migrated_to_the_current_version_in_wal_mode(store_path):
    store = await Store.open(store_path)
    [row] = await store.db.fetchall("PRAGMA synchronous")
    assert row[0] == 1  # NORMAL, WAL's recommended level (per connection, so checked on ours)
    await store.close()
    with sqlite3.connect(store_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_reopening_keeps_data_and_does_not_migrate_twice(store_path):
    store = await Store.open(store_path)
    run_id = await new_run(store)
    await store.close()
    store = await Store.open(store_path)
    assert (await store.runs.get(run_id)) is not None
    await store.close()


async def test_a_newer_schema_is_refused_with_a_clear_message(store_path):
    await (await Store.open(store_path)).close()
    with sqlite3.connect(store_path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with pytest.raises(StoreError, match="newer than this io-tui"):
        await Store.open(store_path)


async def test_a_file_that_is_not_a_database_is_reported(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("hello" * 1000)
    with pytest.raises(StoreError, match="not an io-tui store"):
        await Store.open(bad)


async def test_calls_made_while_the_store_opens_wait_for_it(store_path):
    """``open_soon`` (the app's start): transactions issued while a new file is migrated wait
    for the migrations instead of starting inside them."""
    store = Store(store_path)
    opening = store.db.open_soon()
    calls = []
    while not opening.done():  # a call at every turn of the loop while it opens
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
