"""The run queue on a real SQLite store: enqueue, claim (labels, takeover, decided pauses),
workers, and a worker driving scripted runs in-process (asks answered from another connection,
calls in flight held for the operator, draining, git workspaces)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_support import server_script_args

from io_tui.core import (
    Decision,
    GitSource,
    Policy,
    QueueWorker,
    ScriptedProvider,
    Store,
    TaskContract,
    WorkerOptions,
    decide,
    enqueue_run,
)
from io_tui.core.mcp.config import StdioServer
from io_tui.core.run.origin import RunOrigin
from io_tui.core.run.settings import RunSettings
from io_tui.core.steering.trace import build_trace
from io_tui.core.store.clock import StoreTime
from io_tui.core.store.leases import LEASE_TTL_S, OWNER

ALLOW = Policy.from_json({"defaults": {"write": "allow", "exec": "allow"}}, source="test")


async def put(store: Store, script: Path, workspace: Path, **kwargs: Any) -> int:
    contract = TaskContract(goal="t", workspace=workspace, max_steps=6)
    policy = kwargs.pop("policy", ALLOW)
    return await enqueue_run(store, contract, ScriptedProvider.from_file(script), policy, **kwargs)


async def until_stored(read: Any, what: str, count: int = 1) -> None:
    """Until ``read()`` (a store query: the worker writes it from its own task) returns
    ``count`` rows."""
    async with asyncio.timeout(20):
        while len(await read()) < count:  # noqa: ASYNC110 - the rows are the only signal
            await asyncio.sleep(0.02)


@pytest.fixture
async def both(store_on_both):
    """A store on SQLite, then on PostgreSQL (tests/support/pg_cluster.py)."""
    opened = await Store.open(store_on_both)
    try:
        yield opened
    finally:
        await opened.close()


def write_turns(write_script, n: int = 1) -> Path:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"w{i}", "name": "write_file",
                         "arguments": {"path": f"f{i}.txt", "content": f"{i}\n"}}]}
        for i in range(n)
    ]  # fmt: skip
    return write_script([*turns, {"text": "done"}])


def worker(store: Store, tmp_path: Path, **options: Any) -> QueueWorker:
    opts = WorkerOptions(scratch=tmp_path / "scratch", poll_s=0.02, until_empty=True, **options)
    return QueueWorker(store, opts, log=lambda line: None)


async def test_a_queued_run_is_claimed_once_with_its_lease(both, workspace, write_script):
    run_id = await put(both, write_turns(write_script), workspace)
    row = await both.runs.get(run_id)
    assert row is not None and row.status == "queued"
    assert await both.leases.holder(run_id) is None
    claim = await both.queue.claim(())
    assert claim is not None and claim.entry.run_id == run_id and claim.status == "queued"
    holder = await both.leases.holder(run_id)
    assert holder is not None and holder.owner == OWNER.id
    assert await both.queue.claim(()) is None  # nobody claims it twice
    entry = await both.queue.entry(run_id)
    assert entry is not None and entry.claims == 1 and entry.claimed_by == OWNER.id


async def test_a_worker_claims_only_runs_whose_labels_it_serves(both, workspace, write_script):
    script = write_turns(write_script)
    gpu = await put(both, script, workspace, labels=["gpu", "linux"])
    plain = await put(both, script, workspace)
    first = await both.queue.claim(())
    assert first is not None and first.entry.run_id == plain
    assert await both.queue.claim(("gpu",)) is None  # it lacks "linux"
    claim = await both.queue.claim(("linux", "gpu", "big"))
    assert claim is not None and claim.entry.run_id == gpu
    assert claim.entry.labels == ("gpu", "linux")


async def test_concurrent_claimers_never_take_one_run_twice_and_honour_labels(
    store_on_both, workspace, write_script
):
    """Six connections (processes, as the store sees them) claim at once until the queue has
    nothing for them: every run is taken exactly once, each by a claimer serving its labels."""
    script = write_turns(write_script)
    asks = [(), ("gpu",), ("gpu", "linux"), ("arm",)]
    served = [(), ("gpu",), ("gpu", "linux"), ("linux", "gpu", "big"), ("arm",), ()]
    first = await Store.open(store_on_both)
    stores = [first, *[await Store.open(store_on_both) for _ in served[1:]]]
    try:
        wanted = {
            await put(first, script, workspace, labels=list(asks[i % len(asks)])): asks[i % 4]
            for i in range(40)
        }
        taken: list[list[tuple[int, tuple[str, ...]]]] = [[] for _ in served]

        async def claimer(at: int) -> None:
            while (claim := await stores[at].queue.claim(served[at])) is not None:
                taken[at].append((claim.entry.run_id, claim.entry.labels))
                await asyncio.sleep(0)  # let the others in between

        await asyncio.wait_for(asyncio.gather(*map(claimer, range(len(served)))), 60)
    finally:
        for opened in stores:
            await opened.close()
    runs = [run_id for mine in taken for run_id, _ in mine]
    assert len(runs) == len(set(runs)) == len(wanted)  # each once, and none left behind
    for at, mine in enumerate(taken):
        assert all(set(labels) <= set(served[at]) for _, labels in mine)
        assert all(labels == wanted[run_id] for run_id, labels in mine)
    reopened = await Store.open(store_on_both)
    try:
        entries = await reopened.queue.entries()
    finally:
        await reopened.close()
    assert {e.run_id: e.claims for e in entries.values()} == dict.fromkeys(wanted, 1)


async def test_a_postgresql_claim_passes_over_a_locked_row_without_waiting(
    pg_url, workspace, write_script
):
    """SKIP LOCKED: with run 1's queue row locked by another transaction (a claimer that has
    not committed yet), a claim takes run 2 at once instead of waiting for it; the lock gone,
    run 1 is claimed next."""
    import psycopg

    store = await Store.open(pg_url)
    try:
        one, two = [await put(store, write_turns(write_script), workspace) for _ in range(2)]
        with psycopg.connect(pg_url) as other:  # a transaction, not autocommit
            other.execute("SELECT 1 FROM queue WHERE run_id = %s FOR UPDATE", (one,))
            claim = await asyncio.wait_for(store.queue.claim(()), 20)
            assert claim is not None and claim.entry.run_id == two
            assert await asyncio.wait_for(store.queue.claim(()), 20) is None
            other.rollback()
        claim = await store.queue.claim(())
        assert claim is not None and claim.entry.run_id == one
    finally:
        await store.close()


async def test_a_postgresql_claim_waits_for_a_writer_holding_the_store_lock(
    pg_url, workspace, write_script
):
    """The claim takes the store's advisory lock shared: a repo's read-then-write (holding it
    exclusively) never sees a claim commit in between."""
    import psycopg

    from io_tui.core.store.db import APPLICATION_ID

    store = await Store.open(pg_url)
    try:
        run_id = await put(store, write_turns(write_script), workspace)
        with psycopg.connect(pg_url) as writer:
            writer.execute("SELECT pg_advisory_xact_lock(%s)", (APPLICATION_ID,))
            claiming = asyncio.ensure_future(store.queue.claim(()))
            async with asyncio.timeout(20):  # until the claim waits on the lock, on the server
                while not writer.execute(  # noqa: ASYNC110 - the server is the only signal
                    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone():
                    await asyncio.sleep(0.02)
            assert not claiming.done()
            writer.commit()
        claim = await asyncio.wait_for(claiming, 20)
        assert claim is not None and claim.entry.run_id == run_id
    finally:
        await store.close()


async def test_an_interrupted_queue_run_is_taken_over_unless_held(both, workspace, write_script):
    run_id = await put(both, write_turns(write_script), workspace)
    assert await both.queue.claim(()) is not None
    await both.runs.set_status(run_id, "interrupted", "interrupted")  # its worker died
    await both.queue.hold(run_id, "a write was in flight")
    assert await both.queue.claim(()) is None
    assert await both.queue.release(run_id, "skip")
    claim = await both.queue.claim(())
    assert claim is not None and claim.status == "interrupted"
    assert claim.entry.reconcile == "skip"
    entry = await both.queue.entry(run_id)
    assert entry is not None and entry.reconcile is None  # the choice is for one claim


async def test_a_run_outside_the_queue_is_never_claimed(both, workspace):
    run_id = await both.runs.create(
        goal="t", workspace=str(workspace), contract={}, provider={}, policy={}
    )
    await both.runs.set_status(run_id, "interrupted", "interrupted")
    assert await both.queue.claim(()) is None
    assert not await both.queue.release(run_id, "skip")


async def test_workers_register_beat_drain_and_list_the_runs_they_hold(
    both, workspace, write_script
):
    await both.queue.register(("gpu",), 2)
    run_id = await put(both, write_turns(write_script), workspace)
    await both.queue.claim(("gpu",))
    assert await both.queue.beat() is False
    (row,) = await both.queue.workers()
    assert (row.id, row.pid, row.labels, row.concurrency) == (OWNER.id, OWNER.pid, ("gpu",), 2)
    now = await both.leases.now()
    assert row.runs == (run_id,) and row.state(now) == "up"
    assert await both.queue.request_drain([OWNER.id, "nobody"]) == [OWNER.id]
    assert await both.queue.beat() is True
    assert (await both.queue.workers())[0].state(now) == "draining"
    later = StoreTime(now.at + LEASE_TTL_S + 1, now.clock)  # its beats stopped a lease ago
    assert (await both.queue.workers())[0].state(later) == "gone"
    await both.queue.stopped()
    assert await both.queue.workers() == []
    assert [w.to_json(now)["state"] for w in await both.queue.workers(include_stopped=True)] == [
        "stopped"
    ]


async def test_a_worker_drives_the_queue_to_empty(both, workspace, write_script):
    script = write_turns(write_script, 2)
    ids = [await put(both, script, workspace) for _ in range(3)]
    w = worker(both, workspace.parent, concurrency=2)
    await asyncio.wait_for(w.serve(), 30)
    assert sorted(w.results) == ids
    for run_id in ids:
        row = await both.runs.get(run_id)
        assert row is not None and row.status == "finished" and row.steps == 3
        assert await both.leases.holder(run_id) is None
        kinds = [e.kind for e in await both.trace.events(run_id, 0)]
        assert kinds[0] == "run_started" and "run_resumed" not in kinds
    assert (await both.queue.workers(include_stopped=True))[0].stopped_at is not None


async def test_an_idle_postgresql_worker_wakes_at_an_enqueue_not_at_its_poll(
    pg_url, workspace, write_script
):
    """A worker that polls once a minute takes a run queued while it idles at once: the
    enqueue's NOTIFY (``Live.queue_wakeups``) starts its next round."""
    store = await Store.open(pg_url)
    try:
        opts = WorkerOptions(scratch=workspace.parent / "scratch", poll_s=60.0)
        w = QueueWorker(store, opts, log=lambda line: None)
        serving = asyncio.create_task(w.serve())
        await asyncio.wait_for(w.listening.wait(), 20)
        await asyncio.sleep(0.5)  # its rounds found nothing: it waits for the next
        run_id = await put(store, write_turns(write_script), workspace)
        async with asyncio.timeout(20):  # a third of the poll: only a wake-up gets there
            while run_id not in w.results:  # noqa: ASYNC110 - the worker's own record
                await asyncio.sleep(0.05)
        w.drain()
        await asyncio.wait_for(serving, 20)
    finally:
        await store.close()


async def test_a_run_queued_while_the_worker_sets_up_its_listening_is_taken_at_once(
    store, workspace, write_script, monkeypatch
):
    """A run queued after the worker's first round looked and before its LISTEN was live
    notified nobody: the worker takes one more round once it listens, not after ``poll_s``."""
    setting_up = store.live.queue_wakeups
    queued: list[int] = []

    @contextlib.asynccontextmanager
    async def late_listening() -> Any:
        await asyncio.sleep(0.5)  # the first round has looked by now, and found nothing
        queued.append(await put(store, write_turns(write_script), workspace))
        async with setting_up() as wakeup:
            yield wakeup

    monkeypatch.setattr(store.live, "queue_wakeups", late_listening)
    w = QueueWorker(store, WorkerOptions(scratch=workspace.parent / "s", poll_s=60.0), log=print)
    serving = asyncio.create_task(w.serve())
    async with asyncio.timeout(20):  # a third of the poll: only the round at listening gets there
        while not queued or queued[0] not in w.results:  # noqa: ASYNC110 - the worker's record
            await asyncio.sleep(0.05)
    w.drain()
    await asyncio.wait_for(serving, 20)


async def test_an_ask_on_a_worker_waits_in_the_store_for_any_decider(
    store, store_path, workspace, write_script
):
    run_id = await put(store, write_turns(write_script), workspace, policy=Policy())
    w = worker(store, workspace.parent)
    serving = asyncio.create_task(w.serve())
    await until_stored(lambda: store.approvals.pending(), "the ask")
    (record,) = await store.approvals.pending()
    other = await Store.open(store_path)  # another process's cockpit
    try:
        decided = await decide(other, record.request.id, Decision.approve())
        assert decided.result is None  # the worker holding the run carries it out
        second = decide(other, record.request.id, Decision.deny("late"))
        with pytest.raises(Exception, match="already decided"):
            await second
    finally:
        await other.close()
    await asyncio.wait_for(serving, 30)
    assert w.results[run_id].status == "finished"
    assert (workspace / "f0.txt").read_text() == "0\n"


async def test_a_postgresql_worker_hears_a_decision_at_once_not_at_its_poll(
    pg_url, workspace, write_script
):
    """A worker that would look at its ask once every ten minutes carries out a decision made
    by another process at once: the decision's NOTIFY (``ApprovalRepo.wait_decided``)."""
    store = await Store.open(pg_url)
    other = await Store.open(pg_url)  # another process's cockpit
    opts = WorkerOptions(scratch=workspace.parent / "scratch", poll_s=600.0)
    w = QueueWorker(store, opts, log=lambda line: None)
    serving = asyncio.create_task(w.serve())
    try:
        run_id = await put(store, write_turns(write_script), workspace, policy=Policy())
        await until_stored(lambda: store.approvals.pending(), "the ask")
        (record,) = await store.approvals.pending()
        await decide(other, record.request.id, Decision.approve())
        async with asyncio.timeout(20):  # far short of the poll: only the NOTIFY gets there
            while run_id not in w.results:  # noqa: ASYNC110 - the worker's own record
                await asyncio.sleep(0.05)
        assert w.results[run_id].status == "finished"
    finally:
        w.drain()  # a worker still waiting defers its ask and stops
        await asyncio.wait_for(serving, 20)
        await other.close()
        await store.close()


async def test_draining_defers_an_ask_and_a_decided_pause_goes_back_to_the_queue(
    store, workspace, write_script
):
    run_id = await put(store, write_turns(write_script), workspace, policy=Policy())
    w = worker(store, workspace.parent)
    serving = asyncio.create_task(w.serve())
    await until_stored(lambda: store.approvals.pending(), "the ask")
    w.drain()
    await asyncio.wait_for(serving, 30)
    row = await store.runs.get(run_id)
    assert row is not None and row.status == "paused"
    assert await store.queue.claim(()) is None  # its request is still pending
    (record,) = await store.approvals.pending()
    assert (
        await decide(store, record.request.id, Decision.approve())
    ).result is None  # not resumed here
    again = worker(store, workspace.parent)
    await asyncio.wait_for(again.serve(), 30)
    assert again.results[run_id].status == "finished"
    assert (workspace / "f0.txt").exists()


async def test_handing_back_ends_a_run_interrupted_for_another_worker(
    store, tmp_path, workspace, write_script
):
    release = workspace / "release"  # in the workspace: the command's sandbox writes nowhere else
    code = f"while [ ! -e {release} ]; do sleep 0.02; done; echo ran >> {workspace}/effects"
    script = write_script(
        [
            {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}]},
            {"tool_calls": [{"id": "x1", "name": "run_command",
                             "arguments": {"argv": ["sh", "-c", code]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    run_id = await put(store, script, workspace)
    w = worker(store, tmp_path)
    serving = asyncio.create_task(w.serve())
    await until_stored(lambda: store.intents.for_run(run_id), "the command's intent", 2)
    w.hand_back()
    await asyncio.wait_for(serving, 30)
    row = await store.runs.get(run_id)
    assert row is not None and row.status == "interrupted"
    # the command was in flight: the next worker holds the run for the operator, never re-runs it
    nxt = worker(store, tmp_path)
    await asyncio.wait_for(nxt.serve(), 30)
    entry = await store.queue.entry(run_id)
    assert entry is not None and entry.held and "run_command" in entry.held
    assert not (workspace / "effects").exists()
    await store.queue.release(run_id, "rerun")
    release.touch()
    last = worker(store, tmp_path)
    await asyncio.wait_for(last.serve(), 30)
    assert last.results[run_id].status == "finished"
    assert (workspace / "effects").read_text() == "ran\n"  # once: the operator's rerun


async def test_a_queued_run_gets_the_mcp_servers_it_was_queued_with(
    both, workspace, write_script, monkeypatch
):
    """The run's origin records its server with the secret as a variable name only; the worker
    that claims it starts that server for it, the secret from the worker's own config."""
    monkeypatch.delenv("IO_TUI_TEST_VAR", raising=False)
    queued = StdioServer(
        command=sys.executable, args=server_script_args(), env={"IO_TUI_TEST_VAR": "s3cret"}
    )
    origin = RunOrigin.at_start(RunSettings(), {"t": queued})
    script = write_script(
        [
            {"tool_calls": [{"id": "m1", "name": "mcp__t__info", "arguments": {}}]},
            {"text": "done"},
        ]
    )
    policy = Policy.from_json({"defaults": {"exec": "allow", "net": "allow"}}, source="test")
    run_id = await put(both, script, workspace, origin=origin, policy=policy)
    row = await both.runs.get(run_id)
    assert row is not None and "s3cret" not in json.dumps(row.origin)
    w = worker(both, workspace.parent, servers={"t": queued})  # the worker's config has the value
    await asyncio.wait_for(w.serve(), 60)
    assert w.results[run_id].status == "finished"
    trace = await build_trace(both, run_id)
    (seen,) = trace["steps"][0]["observations"]
    assert "IO_TUI_TEST_VAR=s3cret" in seen["text"]


async def test_a_run_queued_without_a_record_of_servers_gets_the_built_in_tools(
    store, workspace, write_script
):
    script = write_script(
        [
            {"tool_calls": [{"id": "m1", "name": "mcp__t__info", "arguments": {}}]},
            {"text": "done"},
        ]
    )
    run_id = await put(store, script, workspace)
    mine = StdioServer(command=sys.executable, args=server_script_args())
    w = worker(store, workspace.parent, servers={"t": mine})  # never started for its own sake
    await asyncio.wait_for(w.serve(), 60)
    trace = await build_trace(store, run_id)
    (seen,) = trace["steps"][0]["observations"]
    assert seen["is_error"] and "IO_TUI_TEST_VAR" not in seen["text"]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare repository with one commit on main (README.md)."""
    src, bare = tmp_path / "src", tmp_path / "remote.git"
    src.mkdir()
    git("init", "--quiet", "-b", "main", cwd=src)
    (src / "README.md").write_text("# remote\n")
    git("add", ".", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "one", cwd=src)
    git("clone", "--quiet", "--bare", str(src), str(bare), cwd=tmp_path)
    return bare


async def test_a_git_run_is_checked_out_in_scratch_and_pushed_back(
    store, tmp_path, remote, write_script
):
    script = write_turns(write_script)
    source = GitSource(str(remote), "main", "agent/result")
    run_id = await put(store, script, tmp_path / "unused", git=source)
    row = await store.runs.get(run_id)
    assert row is not None and row.workspace.startswith("git:")
    w = worker(store, tmp_path)
    await asyncio.wait_for(w.serve(), 60)
    assert w.results[run_id].status == "finished"
    checkout = tmp_path / "scratch" / f"run-{run_id}"
    row = await store.runs.get(run_id)
    assert row is not None and row.workspace == str(checkout)
    assert json.loads(json.dumps(row.contract))["workspace"] == str(checkout)
    assert (checkout / "README.md").exists() and (checkout / "f0.txt").exists()
    entry = await store.queue.entry(run_id)
    assert entry is not None and entry.pushed and entry.pushed.startswith("pushed agent/result")
    files = git("ls-tree", "--name-only", "agent/result", cwd=remote)
    assert files.split() == ["README.md", "f0.txt"]


async def test_a_takeover_whose_workspace_is_gone_is_held(store, tmp_path, write_script):
    ws = tmp_path / "gone"
    ws.mkdir()
    run_id = await put(store, write_turns(write_script), ws)
    await store.queue.claim(())
    await store.runs.set_status(run_id, "interrupted", "interrupted")
    ws.rmdir()
    w = worker(store, tmp_path)
    await asyncio.wait_for(w.serve(), 30)
    entry = await store.queue.entry(run_id)
    assert entry is not None and entry.held and "not reachable" in entry.held
    row = await store.runs.get(run_id)
    assert row is not None and row.status == "interrupted"


async def test_a_run_its_worker_cannot_drive_is_held_not_claimed_again(
    store, workspace, write_script
):
    script = write_turns(write_script)
    run_id = await put(store, script, workspace)
    script.unlink()  # its provider cannot be rebuilt
    w = worker(store, workspace.parent)
    await asyncio.wait_for(w.serve(), 30)
    row = await store.runs.get(run_id)
    assert row is not None and row.status == "interrupted"
    entry = await store.queue.entry(run_id)
    assert entry is not None and entry.claims == 1
    assert entry.held and "could not drive it" in entry.held


async def test_a_busy_store_costs_a_worker_one_round_not_its_runs(
    store, workspace, write_script, monkeypatch
):
    from io_tui.core import StoreError

    run_id = await put(store, write_turns(write_script), workspace)
    real, failures = store.queue.claim, []

    async def busy_once(labels):
        if not failures:
            failures.append(1)
            raise StoreError("store: the database is locked by another process (waited 5 s)")
        return await real(labels)

    monkeypatch.setattr(store.queue, "claim", busy_once)
    lines: list[str] = []
    w = QueueWorker(
        store,
        WorkerOptions(scratch=workspace.parent, poll_s=0.02, until_empty=True),
        log=lines.append,
    )
    await asyncio.wait_for(w.serve(), 30)
    assert failures == [1] and w.results[run_id].status == "finished"
    assert any("locked" in line for line in lines)


@pytest.mark.parametrize("table", ["queue", "events"], ids=["by a claim", "by a run"])
async def test_a_worker_whose_store_turns_out_damaged_stops_with_it(
    tmp_path, workspace, write_script, table
):
    """Not a busy store to wait out: ``serve`` raises ``StoreDamaged`` (``io-tui worker``
    prints it, exit 2) instead of trying round after round, and gives nothing back: the
    claimed run stays as the damage left it."""
    from damaged_store import damage_table

    from io_tui.core import StoreDamaged

    path = tmp_path / "queue.db"
    async with await Store.open(path) as healthy:
        run_id = await put(healthy, write_turns(write_script), workspace)
    damage_table(path, table)
    lines: list[str] = []
    async with await Store.open(path) as store:  # no check: as if damaged since
        w = QueueWorker(
            store,
            WorkerOptions(scratch=tmp_path / "scratch", poll_s=0.02, until_empty=True),
            log=lines.append,
        )
        with pytest.raises(StoreDamaged, match="is damaged"):
            await asyncio.wait_for(w.serve(), 30)
    assert not any("given back" in line or "store:" in line for line in lines), lines
    if table == "events":
        import sqlite3
        from contextlib import closing

        with closing(sqlite3.connect(path)) as conn:
            held = conn.execute("SELECT held FROM queue WHERE run_id = ?", (run_id,)).fetchone()
        assert held == (None,)
