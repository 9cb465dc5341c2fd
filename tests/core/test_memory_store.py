"""NoteRepo over a real SQLite file and a real PostgreSQL database: caps, eviction, pinning, scopes, recall and the audit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.contract import MemoryLimits
from io_tui.core.memory.notes import render_notes
from io_tui.core.store import Store
from io_tui.core.store.notes import NoteRepo, Provenance, WriteResult

WS = "/work/project-a"
OTHER_WS = "/work/project-b"
LIMITS = MemoryLimits()


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


@pytest.fixture
async def store(store_path: Path | str) -> AsyncIterator[Store]:
    async with await Store.open(store_path) as opened:
        yield opened


async def _fill(repo: NoteRepo, n: int, *, size: int = 5, run_id: int = 1) -> None:
    for i in range(n):
        result = await repo.write(
            key=f"k{i}",
            value=f"{i:0{size}d}",
            scope="workspace",
            workspace=WS,
            run_id=run_id,
            step=i + 1,
            limits=LIMITS,
        )
        assert result.written


async def _remember(repo: NoteRepo, key: str, value: str, **kw: Any) -> WriteResult:
    """An agent write (run 7 step 1 unless given) into WS's workspace scope unless given."""
    args: dict[str, Any] = {
        "scope": "workspace",
        "workspace": WS,
        "run_id": 7,
        "step": 1,
        "limits": LIMITS,
    }
    args.update(kw)
    return await repo.write(key=key, value=value, **args)


async def test_count_cap_evicts_exactly_the_oldest(store: Store) -> None:
    await _fill(store.notes, 64 + 3)
    keys = [n.key for n in await store.notes.list("workspace", WS)]
    assert len(keys) == 64
    assert keys[0] == "k3" and keys[-1] == "k66"
    assert not {"k0", "k1", "k2"} & set(keys)


async def test_char_cap_eight_full_values_fit_and_the_ninth_evicts_the_oldest(
    store: Store,
) -> None:
    for i in range(8):
        assert (await _remember(store.notes, f"big{i}", str(i) * 2_000)).evicted == ()
    assert await store.notes.usage("workspace", WS) == (8, 16_000)
    result = await _remember(store.notes, "big8", "8" * 2_000)
    assert [n.key for n in result.evicted] == ["big0"]
    assert await store.notes.usage("workspace", WS) == (8, 16_000)


@pytest.mark.parametrize("char", ["x", "é", "漢", "🦀"])
async def test_long_values_are_stored_at_exactly_the_cap_with_a_marker(
    store: Store, char: str
) -> None:
    result = await _remember(store.notes, "long", char * 3_000)
    assert result.truncated and result.original_chars == 3_000
    note = await store.notes.get("long", "workspace", WS)
    assert note is not None and len(note.value) == 2_000
    assert "note cut to 2,000 of 3,000 chars" in note.value
    row = await store.db.fetchone("SELECT LENGTH(value) FROM memory WHERE key = 'long'")
    assert row is not None and row[0] == 2_000


async def test_configurable_caps(store: Store) -> None:
    limits = MemoryLimits(max_entries=4, max_chars=100, max_entry_chars=30)
    for i in range(4):
        await _remember(store.notes, f"k{i}", "y" * 40, limits=limits)
    notes = await store.notes.list("workspace", WS)
    assert all(len(n.value) == 30 for n in notes)
    assert [n.key for n in notes] == ["k1", "k2", "k3"]  # 4 x 30 > 100


async def test_the_note_just_written_is_never_evicted(store: Store) -> None:
    limits = MemoryLimits(max_entries=64, max_chars=2_000, max_entry_chars=2_000)
    await _fill(store.notes, 10)
    result = await _remember(store.notes, "huge", "z" * 5_000, limits=limits)
    assert result.written
    assert [n.key for n in await store.notes.list("workspace", WS)] == ["huge"]


async def test_pinned_notes_survive_eviction_and_refuse_the_agent(store: Store) -> None:
    repo = store.notes
    await _fill(repo, 64)
    assert await repo.pin("k0", "workspace", WS)
    result = await _remember(repo, "new", "value")
    assert [n.key for n in result.evicted] == ["k1"]
    keys = {n.key for n in await repo.list("workspace", WS)}
    assert "k0" in keys and "k1" not in keys

    refused = await _remember(repo, "k0", "overwritten by the agent")
    assert refused.status == "pinned"
    forget = await repo.forget(key="k0", scope="workspace", workspace=WS, operator=False)
    assert forget.status == "pinned"
    kept = await repo.get("k0", "workspace", WS)
    assert kept is not None and kept.value == "00000" and kept.pinned

    # The operator may still edit and delete a pinned note; it stays pinned when edited.
    assert (await repo.set("k0", "operator text", "workspace", WS)).written
    edited = await repo.get("k0", "workspace", WS)
    assert edited is not None and edited.pinned and edited.run_id is None
    assert await repo.delete("k0", "workspace", WS)


async def test_a_scope_full_of_pinned_notes_refuses_without_evicting(store: Store) -> None:
    limits = MemoryLimits(max_entries=2)
    for key in ("a", "b"):
        await _remember(store.notes, key, key, limits=limits)
        await store.notes.pin(key, "workspace", WS)
    result = await _remember(store.notes, "c", "c", limits=limits)
    assert result.status == "full"
    assert [n.key for n in await store.notes.list("workspace", WS)] == ["a", "b"]


async def test_rewriting_a_key_replaces_and_reattributes_it(store: Store) -> None:
    await _remember(store.notes, "cmd", "make test", run_id=1, step=4)
    await _remember(store.notes, "other", "x", run_id=1, step=5)
    result = await _remember(store.notes, "cmd", "pytest -q", run_id=2, step=3)
    assert result.replaced is not None and result.replaced.origin == "run 1 step 4"
    notes = await store.notes.list("workspace", WS)
    assert [(n.key, n.value, n.run_id, n.step) for n in notes] == [
        ("other", "x", 1, 5),
        ("cmd", "pytest -q", 2, 3),  # now the newest: last to be evicted
    ]


async def test_workspaces_are_isolated(store: Store) -> None:
    await _remember(store.notes, "secret", "only in A")
    await _remember(store.notes, "other", "only in B", workspace=OTHER_WS)
    assert [n.key for n in await store.notes.notes_for(WS)] == ["secret"]
    assert [n.key for n in await store.notes.notes_for(OTHER_WS)] == ["other"]
    await _fill(store.notes, 70)  # evictions in A never touch B
    assert [n.key for n in await store.notes.list("workspace", OTHER_WS)] == ["other"]


async def test_workspace_notes_shadow_global_notes_of_the_same_key(store: Store) -> None:
    await _remember(store.notes, "style", "global style", scope="global", workspace=None)
    await _remember(store.notes, "tz", "UTC everywhere", scope="global", workspace=None)
    await _remember(store.notes, "style", "this repo uses tabs")
    notes = await store.notes.notes_for(WS)
    assert [(n.key, n.scope, n.value) for n in notes] == [
        ("style", "workspace", "this repo uses tabs"),
        ("tz", "global", "UTC everywhere"),
    ]
    other = await store.notes.notes_for(OTHER_WS)
    assert [(n.key, n.scope) for n in other] == [("style", "global"), ("tz", "global")]


async def test_restating_another_note_is_reported(store: Store) -> None:
    await _remember(store.notes, "tests", "run the tests with pytest -q from the repo root")
    result = await _remember(store.notes, "test-cmd", "Run tests with pytest -q from repo root")
    assert [n.key for n, _ in result.restates] == ["tests"]
    plain = await _remember(store.notes, "db", "the database is postgres 16")
    assert plain.restates == ()


async def test_two_runs_over_one_workspace_recall_each_others_notes(store: Store) -> None:
    repo = store.notes
    # run 1 learns something at step 3 ...
    await _remember(repo, "test-cmd", "pytest -q tests/", run_id=1, step=3)
    # ... run 2 starts later in the same workspace and is shown it, attributed.
    notes = await repo.notes_for(WS)
    block = render_notes(notes, 6_000)
    assert "- test-cmd [model inference; run 1 step 3]: pytest -q tests/" in block.text
    recorded = await store.recalls.record(2, 1, None, block.keys, WS)
    assert recorded == [("workspace", "test-cmd")]
    note = await repo.get("test-cmd", "workspace", WS)
    assert note is not None and note.recalls == 1 and note.last_recalled is not None
    rows = await store.recalls.of_run(2)
    assert [(r.run_id, r.step, r.key, r.scope) for r in rows] == [(2, 1, "test-cmd", "workspace")]
    # run 2 corrects it; a third run sees the correction attributed to run 2.
    await _remember(repo, "test-cmd", "make test", run_id=2, step=4)
    (latest,) = await repo.notes_for(WS)
    assert (latest.value, latest.origin, latest.recalls) == ("make test", "run 2 step 4", 0)


async def test_recall_resolves_shadowed_keys_to_the_workspace_note(store: Store) -> None:
    await _remember(store.notes, "k", "global", scope="global", workspace=None)
    await _remember(store.notes, "k", "local")
    await _remember(store.notes, "g", "only global", scope="global", workspace=None)
    recorded = await store.recalls.record(5, 2, 11, ["k", "g", "gone"], WS)
    assert recorded == [("workspace", "k"), ("global", "g")]
    global_k = await store.notes.get("k", "global", None)
    assert global_k is not None and global_k.recalls == 0


async def test_operator_changes_are_audited_as_run_zero_events(store: Store) -> None:
    repo = store.notes
    await repo.set("a", "first", "workspace", WS)
    await repo.pin("a", "workspace", WS)
    await repo.unpin("a", "workspace", WS)
    await repo.set("b", "second", "global", None)
    assert await repo.delete("b", "global", None)
    assert not await repo.delete("missing", "global", None)
    await repo.set("c", "third", "workspace", WS)
    assert await repo.clear("workspace", WS) == 2
    events = await store.trace.events(0)
    details = [e.detail for e in events]
    assert {e.kind for e in events} == {"memory"}
    assert [(d["op"], d.get("key")) for d in details] == [
        ("set", "a"),
        ("pin", "a"),
        ("unpin", "a"),
        ("set", "b"),
        ("delete", "b"),
        ("set", "c"),
        ("clear", None),
    ]
    assert all(d["actor"] == "operator" for d in details)
    assert details[4]["value"] == "second"  # a deleted note can be recovered from the audit
    assert details[-1]["keys"] == ["a", "c"]


async def test_clear_keeps_pinned_notes_unless_asked(store: Store) -> None:
    repo = store.notes
    for key in ("a", "b", "c"):
        await repo.set(key, key, "workspace", WS)
    await repo.pin("b", "workspace", WS)
    assert await repo.clear("workspace", WS) == 2
    assert [n.key for n in await repo.list("workspace", WS)] == ["b"]
    assert await repo.clear("workspace", WS, include_pinned=True) == 1
    assert await repo.list("workspace", WS) == []


async def test_notes_survive_reopening_the_store(store_path: Path | str) -> None:
    path = store_path
    async with await Store.open(path) as first:
        await first.notes.set("k", "v", "workspace", WS)
    async with await Store.open(path) as second:
        note = await second.notes.get("k", "workspace", WS)
        assert note is not None and note.value == "v"


async def test_the_requests_that_carried_a_note(store: Store) -> None:
    await store.notes.write(
        key="k",
        value="v",
        scope="workspace",
        workspace="/ws/a",
        run_id=1,
        step=1,
        limits=MemoryLimits(),
    )
    await store.recalls.record(3, 2, 17, ["k"], "/ws/a")
    found = await store.recalls.of_note("k", "workspace", "/ws/a")
    assert [(r.request_id, r.run_id, r.step) for r in found] == [(17, 3, 2)]


# -- provenance and the daily log (schema 7) ---------------------------------------------------


async def test_expired_and_superseded_notes_are_kept_but_never_recalled(store: Store) -> None:
    repo = store.notes
    await _remember(repo, "old-cmd", "make check")
    await _remember(repo, "test-cmd", "pytest -q")
    await _remember(repo, "tmp", "the CI is down today")
    await repo.set("style", "tabs", "workspace", WS)
    assert await repo.supersede("old-cmd", "test-cmd", "workspace", WS) is not None
    assert await repo.expire("tmp", "workspace", WS, 1.0) is not None  # long past
    recalled = [n.key for n in await repo.notes_for(WS)]
    assert recalled == ["test-cmd", "style"]
    block = render_notes(await repo.notes_for(WS), 10_000).text
    assert "old-cmd" not in block and "CI is down" not in block
    listed = {n.key: n for n in await repo.list("workspace", WS)}
    assert listed["old-cmd"].superseded_by == "test-cmd"
    assert listed["old-cmd"].state(2.0) == "superseded" and listed["tmp"].state(2.0) == "expired"
    # an expiry in the future keeps it recalled; never (None) undoes it
    await repo.expire("tmp", "workspace", WS, 4_000_000_000.0)
    assert "tmp" in [n.key for n in await repo.notes_for(WS)]
    # undoing the supersession brings the note back
    await repo.supersede("old-cmd", None, "workspace", WS)
    assert "old-cmd" in [n.key for n in await repo.notes_for(WS)]


async def test_supersede_refuses_itself_a_missing_note_and_a_chain(store: Store) -> None:
    repo = store.notes
    for key in ("a", "b", "c"):
        await _remember(repo, key, f"note {key}")
    with pytest.raises(ValueError, match="itself"):
        await repo.supersede("a", "a", "workspace", WS)
    with pytest.raises(ValueError, match="no note 'zz'"):
        await repo.supersede("a", "zz", "workspace", WS)
    await repo.supersede("b", "c", "workspace", WS)
    with pytest.raises(ValueError, match="'b' is itself superseded by 'c'"):
        await repo.supersede("a", "b", "workspace", WS)
    assert await repo.supersede("nope", "c", "workspace", WS) is None


async def test_agent_notes_are_unverified_the_operators_verified_and_both_audited(
    store: Store,
) -> None:
    repo = store.notes
    await _remember(repo, "pref", "short answers", provenance=Provenance(kind="preference"))
    agent = await repo.get("pref", "workspace", WS)
    assert agent is not None and agent.label == "unconfirmed preference"
    # an agent cannot mark its own note verified
    claimed = Provenance(kind="fact", status="verified")
    await _remember(repo, "claim", "it works", provenance=claimed)
    claim = await repo.get("claim", "workspace", WS)
    assert claim is not None and claim.status == "unverified"
    verified = await repo.verify("pref", "workspace", WS)
    assert verified is not None and verified.label == "confirmed preference"
    operator = await repo.set("owner", "alice", "workspace", WS)
    assert operator.note.label == "verified fact"
    with pytest.raises(ValueError, match="a note's type must be one of"):
        await repo.set("x", "y", "workspace", WS, provenance=Provenance(kind="rumour"))  # type: ignore[arg-type]
    ops = [e.detail["op"] for e in await store.trace.events(0)]
    assert ops == ["verify", "set"]


async def test_merge_folds_one_note_into_another_and_supersedes_it(store: Store) -> None:
    repo = store.notes
    await _remember(repo, "tests-a", "run pytest -q", run_id=1, step=1)
    await _remember(repo, "tests-b", "from the repo root", run_id=2, step=1)
    result = await repo.merge(
        "tests-a", "tests-b", "run pytest -q from the repo root", "workspace", WS
    )
    assert result.written
    merged = await repo.get("tests-b", "workspace", WS)
    gone = await repo.get("tests-a", "workspace", WS)
    assert merged is not None and gone is not None
    assert (merged.value, merged.status, merged.origin) == (
        "run pytest -q from the repo root",
        "verified",
        "operator",
    )
    assert "merged tests-a" in merged.source
    assert gone.superseded_by == "tests-b"
    assert [n.key for n in await repo.notes_for(WS)] == ["tests-b"]
    with pytest.raises(ValueError, match="no note 'zz'"):
        await repo.merge("zz", "tests-b", "v", "workspace", WS)


async def test_superseded_notes_are_evicted_before_older_active_ones(store: Store) -> None:
    repo = store.notes
    small = MemoryLimits(max_entries=3, max_chars=16_000, max_entry_chars=2_000)
    for key in ("oldest", "middle", "newer"):
        await _remember(repo, key, key, limits=small)
    await repo.supersede("middle", "newer", "workspace", WS)
    result = await _remember(repo, "fourth", "fourth", limits=small)
    assert [n.key for n in result.evicted] == ["middle"]


async def test_the_daily_log_appends_lists_by_day_and_promotes_a_line(store: Store) -> None:
    log = store.daily_log
    day1 = 1_760_000_000.0  # 2025-10-09 UTC
    day2 = day1 + 86_400
    await log.append(WS, [("goal", "fix the parser"), ("outcome", "finished")], run_id=4, at=day1)
    added = await log.append(WS, [("tests", "`pytest -q` → exit code 0")], run_id=5, at=day2)
    await log.append(OTHER_WS, [("goal", "elsewhere")], run_id=6, at=day2)
    assert [line.text for line in await log.lines(WS)] == [
        "fix the parser",
        "finished",
        "`pytest -q` → exit code 0",
    ]
    assert [(line.day, line.run_id) for line in await log.lines(WS, "2025-10-10")] == [
        ("2025-10-10", 5)
    ]
    with pytest.raises(ValueError, match="a log field must be one of"):
        await log.append(WS, [("gossip", "x")], run_id=1)
    result = await log.promote(added[0].id, "test-cmd", "workspace", WS)
    assert result.written
    note = result.note
    assert (note.value, note.label, note.source) == (
        "`pytest -q` → exit code 0",
        "verified fact",
        "log 2025-10-10 run 5",
    )
    line = await log.line(added[0].id)
    assert line is not None and line.promoted == "test-cmd"
    with pytest.raises(ValueError, match="no log line 999"):
        await log.promote(999, "k", "workspace", WS)


async def test_a_write_that_may_not_replace_leaves_the_note_a_key_holds(store: Store) -> None:
    """The editor's add and promote replace a note only once the operator confirmed it: a write
    with ``replace_existing=False`` onto a key that holds one (written meanwhile, say) is refused
    as ``exists`` and changes nothing; a promotion replaces only when told."""
    repo = store.notes
    await _remember(repo, "test-cmd", "pytest -q")
    refused = await repo.set("test-cmd", "make test", "workspace", WS, replace_existing=False)
    assert (refused.status, refused.written, refused.note.value) == ("exists", False, "pytest -q")
    (line,) = await store.daily_log.append(WS, [("tests", "`tox` → exit code 0")], run_id=5)
    assert (await store.daily_log.promote(line.id, "test-cmd", "workspace", WS)).status == "exists"
    held = await repo.get("test-cmd", "workspace", WS)
    assert held is not None and held.value == "pytest -q"
    unpromoted = await store.daily_log.line(line.id)
    assert unpromoted is not None and unpromoted.promoted is None
    done = await store.daily_log.promote(
        line.id, "test-cmd", "workspace", WS, replace_existing=True
    )
    assert done.written and done.replaced is not None and done.note.value == "`tox` → exit code 0"
    new = await repo.set("fresh", "a new note", "workspace", WS, replace_existing=False)
    assert new.written


async def test_a_note_superseded_by_one_that_goes_is_current_again(store: Store) -> None:
    """A supersession names a note that exists: a delete, an agent's forget, an eviction or a
    clear of the note that superseded others makes them current (recalled) again, audited as the
    supersession undone for the operator's changes, and never points at nothing."""
    repo = store.notes
    for key in ("old", "older", "new", "other"):
        await repo.set(key, f"{key} value", "workspace", WS)
    await repo.supersede("old", "new", "workspace", WS)
    await repo.supersede("older", "new", "workspace", WS)
    deleted = await repo.forget(key="new", scope="workspace", workspace=WS, operator=True)
    assert [(n.key, n.superseded_by) for n in deleted.revived] == [("old", None), ("older", None)]
    assert [n.key for n in await repo.notes_for(WS)] == ["old", "older", "other"]
    audit = [e.detail for e in await store.trace.events(0)][-3:]
    assert [(d["op"], d["key"]) for d in audit] == [
        ("delete", "new"),
        ("supersede", "old"),
        ("supersede", "older"),
    ]
    assert audit[1]["superseded_by"] is None
    assert (audit[1]["was_superseded_by"], audit[1]["because"]) == ("new", "delete")
    # an agent's forget of the note that absorbed another in a merge
    await repo.merge("old", "other", "other and old", "workspace", WS)
    merged = await repo.get("old", "workspace", WS)
    assert merged is not None and merged.superseded_by == "other"
    forgot = await repo.forget(key="other", scope="workspace", workspace=WS, operator=False)
    assert [n.key for n in forgot.revived] == ["old"]
    # a clear keeps a pinned note, which the cleared one superseded: current again
    await repo.supersede("older", "old", "workspace", WS)
    await repo.pin("older", "workspace", WS)
    assert await repo.clear("workspace", WS) == 1
    (kept,) = await repo.list("workspace", WS)
    assert (kept.key, kept.superseded_by, kept.active(0)) == ("older", None, True)


async def test_an_evicted_note_that_superseded_another_revives_it(store: Store) -> None:
    repo = store.notes
    small = MemoryLimits(max_entries=3, max_chars=16_000, max_entry_chars=2_000)
    for key in ("new", "pinned-old", "third"):
        await _remember(repo, key, key, limits=small)
    await repo.pin("pinned-old", "workspace", WS)
    await repo.supersede("pinned-old", "new", "workspace", WS)
    result = await _remember(repo, "fourth", "fourth", limits=small)
    assert [n.key for n in result.evicted] == ["new"]
    assert [n.key for n in result.revived] == ["pinned-old"]
    note = await repo.get("pinned-old", "workspace", WS)
    assert note is not None and note.superseded_by is None


async def test_a_runs_later_entry_replaces_the_one_it_logged_earlier_that_day(
    store: Store,
) -> None:
    """A run logs its entry at each end, a pause included: the later entry replaces the earlier
    one of the same day (another run's lines, and another day's, stay); a line promoted to a note
    keeps its promotion, on the new entry's same line or, when the entry no longer says it, as it
    was."""
    log = store.daily_log
    day = 1_760_000_000.0  # 2025-10-09
    await log.write_entry(
        WS, [("goal", "fix it"), ("outcome", "awaiting_approval after 1 step")], run_id=4, at=day
    )
    await log.write_entry(WS, [("goal", "other")], run_id=5, at=day + 1)
    (goal, paused) = [x for x in await log.lines(WS) if x.run_id == 4]
    await log.promote(goal.id, "the-goal", "workspace", WS)
    await log.promote(paused.id, "paused", "workspace", WS)
    final = [("goal", "fix it"), ("outcome", "finished after 3 steps"), ("files", "a.py")]
    await log.write_entry(WS, final, run_id=4, at=day + 60)
    await log.write_entry(WS, [("goal", "fix it")], run_id=4, at=day + 86_400)  # the next day
    assert [(x.day, x.run_id, x.field, x.text, x.promoted) for x in await log.lines(WS)] == [
        ("2025-10-09", 4, "outcome", "awaiting_approval after 1 step", "paused"),
        ("2025-10-09", 5, "goal", "other", None),
        ("2025-10-09", 4, "goal", "fix it", "the-goal"),
        ("2025-10-09", 4, "outcome", "finished after 3 steps", None),
        ("2025-10-09", 4, "files", "a.py", None),
        ("2025-10-10", 4, "goal", "fix it", None),
    ]
