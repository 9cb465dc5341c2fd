"""Requests stored as deltas against the previous request of their run read back whole."""

from __future__ import annotations

import sqlite3
import weakref
from pathlib import Path

import pytest

from io_tui.core.context.manifest import EntryState, ManifestEntry
from io_tui.core.ledger import Observation, ObsKind
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.store import Store
from io_tui.core.store.encoded import ListEncoder, ManifestText, manifest_text
from io_tui.core.store.requests import RequestRecord
from io_tui.core.store.runs import StepCommit


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


class Encoders:
    """What a run does: one encoder for messages, one for manifest entries."""

    def __init__(self) -> None:
        self.messages = ListEncoder(Message.to_json)
        self.entries = ListEncoder(ManifestEntry.to_json)

    def request(self, step: int, messages: list[Message], entries: list[ManifestEntry]):
        head = {"ceiling_tokens": 4000, "est_tokens": step, "sections": [{"name": "s"}]}
        record = RequestRecord(
            step, 1, "work", 4000, step, 10, None, None,
            self.messages.encode(messages), manifest_text(head, self.entries.encode(entries)),
            [], "scripted", "m",
        )  # fmt: skip
        expected = (
            [m.to_json() for m in messages],
            {**head, "entries": [e.to_json() for e in entries]},
        )
        return record, expected


def entry(step: int) -> ManifestEntry:
    return ManifestEntry(step, f"c{step}", "list", ".", EntryState.FULL, "whole", None, 5, 2)


def turn(step: int) -> list[Message]:
    call = ToolCall(f"c{step}", "list_dir", {"path": "ü"})
    return [
        Message("assistant", f"step {step}", (call,)),
        Message("tool", "a", tool_call_id=call.id),
    ]


async def new_run(store: Store) -> int:
    return await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})


def commit(step: int, record: RequestRecord, call_ids: tuple[str, ...] = ()) -> StepCommit:
    observations = [
        (Observation(step, c, "read_file", ObsKind.READ, "a.py", "t"), "t") for c in call_ids
    ]
    return StepCommit(step, "", (), {}, observations, [record], [], 1)


async def raw(store: Store) -> list[tuple]:
    rows = await store.db.fetchall(
        "SELECT base_id, messages_keep, entries_keep, length(messages) FROM requests ORDER BY id"
    )
    return [tuple(row) for row in rows]


async def test_each_request_reads_back_whole_though_most_are_stored_as_deltas(store, store_path):
    run_id = await new_run(store)
    enc = Encoders()
    frame = [Message("system", "sys"), Message("user", "goal")]
    messages, entries, expected = list(frame), [], []
    for step in range(1, 13):
        if step == 7:  # the window moves: the older half is dropped, a collapse line comes in
            messages = [*frame, Message("user", "[collapsed]"), *messages[8:]]
            entries = [entry(0), *entries[3:]]
        record, whole = enc.request(step, [*messages, Message("user", "asking")], entries)
        await store.runs.commit_step(run_id, commit(step, record))
        expected.append(whole)
        messages += turn(step)
        entries.append(entry(step))
    rows = await store.trace.requests(run_id)
    assert [(r.messages, r.manifest) for r in rows] == expected
    stored = await raw(store)
    assert stored[0][0] is None and all(base is not None for base, *_ in stored[1:])
    assert stored[6][1:3] == (2, 0)  # where the window moved: only the frame is kept
    # another process (another store on the file) reads them whole too
    async with await Store.open(store_path) as other:
        assert [(r.messages, r.manifest) for r in await other.trace.requests(run_id)] == (expected)


async def test_one_request_reads_back_whole_from_the_requests_it_extends(store) -> None:
    """A request read alone (``requests_by_id``, the inspector's) is what reading the whole
    run rebuilds; another run's requests, stored between, are neither read nor in the way."""
    run_id, other = await new_run(store), await new_run(store)
    enc, elsewhere = Encoders(), Encoders()
    messages: list[Message] = [Message("system", "sys")]
    entries: list[ManifestEntry] = []
    for step in range(1, 9):
        record, _ = enc.request(step, [*messages, Message("user", "asking")], entries)
        await store.runs.commit_step(run_id, commit(step, record))
        unrelated, _ = elsewhere.request(step, messages, [])
        await store.runs.commit_step(other, commit(step, unrelated))
        messages += turn(step)
        entries.append(entry(step))
    keys = await store.trace.request_keys(run_id)
    assert [(k.step, k.attempt, k.purpose) for k in keys] == [(s, 1, "work") for s in range(1, 9)]
    every = {row.id: row for row in await store.trace.requests(run_id)}
    wanted = [keys[5].id, keys[2].id]
    assert await store.trace.requests_by_id(wanted) == {i: every[i] for i in wanted}
    assert await store.trace.requests_by_id([]) == {}


async def test_a_request_whose_base_was_rolled_back_is_stored_whole(store, store_path):
    run_id = await new_run(store)
    enc = Encoders()
    first, first_whole = enc.request(1, [Message("system", "s")], [entry(1)])
    await store.runs.commit_step(run_id, commit(1, first, ("c1",)))
    failed, _ = enc.request(2, [Message("system", "s"), *turn(1)], [entry(1), entry(2)])
    with pytest.raises(sqlite3.IntegrityError):  # the same call id twice: rolled back
        await store.runs.commit_step(run_id, commit(2, failed, ("c1",)))
    third, third_whole = enc.request(2, [Message("system", "s"), *turn(1), *turn(2)], [entry(1)])
    await store.runs.commit_step(run_id, commit(2, third))
    assert [base for base, *_ in await raw(store)] == [None, None]
    rows = await store.trace.requests(run_id)
    assert [(r.messages, r.manifest) for r in rows] == [first_whole, third_whole]


async def test_requests_without_encoders_are_stored_and_read_as_before(store):
    run_id = await new_run(store)
    plain = RequestRecord(
        1, 0, "summary", 0, 5, 0, None, None, [{"role": "user"}], {}, [], "p", "m"
    )
    await store.runs.add_request(run_id, plain)
    (row,) = await store.trace.requests(run_id)
    assert (row.messages, row.manifest) == ([{"role": "user"}], {})


async def test_a_request_text_does_not_keep_the_ones_it_extends_alive(store, store_path):
    """Each text names the one it extends (``base``) only weakly: a strong reference would chain
    every request text of the run together, memory growing with steps × request size."""
    run_id = await new_run(store)
    enc = Encoders()
    messages: list[Message] = [Message("system", "sys")]
    entries: list[ManifestEntry] = []
    texts: list[weakref.ref[str]] = []
    for step in range(1, 31):
        record, _ = enc.request(step, messages, entries)
        assert isinstance(record.manifest, ManifestText)
        texts += [weakref.ref(record.messages), weakref.ref(record.manifest.entries)]
        await store.runs.commit_step(run_id, commit(step, record))
        del record
        # alive: what the encoders last encoded and what the store last wrote (the same texts)
        assert sum(t() is not None for t in texts) <= 4
        messages += turn(step)
        entries.append(entry(step))
    assert all(base is not None for base, *_ in (await raw(store))[1:])  # still stored as deltas
