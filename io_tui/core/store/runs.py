"""Runs as the run loop writes them: created, stepped (steps, observations, requests, events in
one transaction), paused, finished; their summaries and operator messages. The authority every
view rebuilds from, read back through ``TraceRepo`` (``trace.py``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, TypeVar

import aiosqlite

from io_tui.core.events import LIVE_ONLY, RunEvent
from io_tui.core.ledger import Observation, ObsKind, Seen, StepRecord
from io_tui.core.providers.messages import ToolCall
from io_tui.core.store.clock import store_time
from io_tui.core.store.db import Connection, Database, fetch, row_as
from io_tui.core.store.intents import Intent, insert_done
from io_tui.core.store.leases import LEASE_RELEASED, LIVE_STATUSES, OWNER, Fence, fenced
from io_tui.core.store.live import announce
from io_tui.core.store.progress import save_progress
from io_tui.core.store.requests import RequestRecord, Written, insert_request
from io_tui.core.store.trace import tool_calls

T = TypeVar("T")
FIRST_EPOCH = 1  # the lease epoch of a run's first driver, the process that creates it


@dataclass(frozen=True, slots=True)
class RunRow:
    id: int
    goal: str
    workspace: str
    status: str
    outcome: str | None
    parent_run_id: int | None
    seed_run_id: int | None
    contract: dict[str, Any]
    provider: dict[str, Any]
    policy: dict[str, Any]
    steps: int
    tokens: int
    error: str | None
    created_at: float
    updated_at: float
    finished_at: float | None
    # how it was started (``core.run.origin.RunOrigin.to_json``); None for a run from before schema 5
    origin: dict[str, Any] | None = None
    # a fork (schema 9): the run and the step it starts from, as that step's request was recorded
    forked_from: int | None = None
    fork_step: int | None = None

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> RunRow:
        return row_as(
            cls,
            row,
            contract=json.loads(row["contract"]),
            provider=json.loads(row["provider"]),
            policy=json.loads(row["policy"]),
            origin=json.loads(row["origin"]) if row["origin"] else None,
        )


@dataclass(frozen=True, slots=True)
class StepCommit:
    """Everything one step writes, committed in one transaction."""

    step: int
    text: str
    tool_calls: Sequence[ToolCall]
    decision: dict[str, Any]
    # (bounded observation, full text): the step's corrections (``Observation.corrects``),
    # then its calls' results
    observations: Sequence[tuple[Observation, str]]
    requests: Sequence[RequestRecord]
    events: Sequence[RunEvent]
    tokens: int
    operator_messages: Sequence[str] = ()
    # intents an operator's reconciliation closes (id, status); every other intent still
    # ``started`` for an observation's call closes ``done`` with it
    closed_intents: Sequence[tuple[int, str]] = ()
    # the intents of calls that only read, written ``done`` with their observations
    # (``Tool.only_reads``: none was written before they ran)
    intents: Sequence[Intent] = ()


class Committed(NamedTuple):
    """What a step's commit gives back: the number of the progress revision saved with it (None:
    none was), and what the read made along with it gave (None: none was asked)."""

    revision: int | None
    read: Any


class RunRepo:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._written: dict[int, Written] = {}  # run id -> its last request stored here

    async def create(
        self,
        *,
        goal: str,
        workspace: str,
        contract: dict[str, Any],
        provider: dict[str, Any],
        policy: dict[str, Any],
        parent_run_id: int | None = None,
        seed_run_id: int | None = None,
        origin: dict[str, Any] | None = None,
    ) -> int:
        row = (
            goal,
            workspace,
            json.dumps(contract),
            json.dumps(provider),
            json.dumps(policy),
            json.dumps(origin) if origin is not None else None,
            parent_run_id,
            seed_run_id,
        )
        return await self.db.write(partial(_create, row, time.time()))

    async def get(self, run_id: int) -> RunRow | None:
        row = await self.db.fetchone("SELECT * FROM runs WHERE id = ?", (run_id,))
        return RunRow.from_row(row) if row else None

    async def all(self, *, limit: int = 10_000) -> list[RunRow]:
        """The first ``limit`` runs, oldest first."""
        rows = await self.db.fetchall("SELECT * FROM runs ORDER BY id LIMIT ?", (limit,))
        return [RunRow.from_row(r) for r in rows]

    async def latest(self, limit: int) -> list[RunRow]:
        """The newest ``limit`` top-level runs (no sub-agents), newest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM runs WHERE parent_run_id IS NULL ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [RunRow.from_row(r) for r in rows]

    async def of_session(self, session: str | None = None) -> list[RunRow]:
        """The top-level runs an ACP session started (``RunOrigin.session``; every session's
        when ``session`` is None), oldest first."""
        value = json.dumps(session) if session is not None else '"'
        rows = await self.db.fetchall(
            "SELECT * FROM runs WHERE parent_run_id IS NULL AND origin LIKE ? ORDER BY id",
            (f'%"session": {value}%',),
        )
        return [RunRow.from_row(r) for r in rows]

    async def forget_session(self, session: str) -> int:
        """Untie the runs ACP session ``session`` started from it (their origin's session
        becomes null): ``of_session`` no longer finds them. How many runs it untied."""
        tied = f'"session": {json.dumps(session)}'
        return await self.db.write(
            partial(
                _changed,
                "UPDATE runs SET origin = REPLACE(origin, ?, ?) WHERE origin LIKE ?",
                (tied, '"session": null', f"%{tied}%"),
            )
        )

    async def set_status(
        self,
        run_id: int,
        status: str,
        outcome: str | None = None,
        *,
        error: str | None = None,
        provider: dict[str, Any] | None = None,
        events: Sequence[RunEvent] = (),
        fence: Fence | None = None,
    ) -> None:
        """A status change; a run that stops going (paused, ended) gives its lease up.

        ``events`` (the ``run_finished`` that says why) go in the same transaction, so no reader
        and no crash ever sees a run whose trace says it ended while its row says it runs.
        ``fence``: its driver's (``LeaseLost``, nothing written, once another holds the run)."""
        now = time.time()
        finished = now if status in {"finished", "failed", "cancelled"} else None
        if finished or status == "paused":  # a resumed run starts new chains
            self._written.pop(run_id, None)
        lease = "" if status in LIVE_STATUSES else LEASE_RELEASED
        params = (
            status,
            outcome,
            error,
            json.dumps(provider) if provider is not None else None,
            now,
            finished,
            run_id,
        )

        def update(conn: Connection) -> None:
            fenced(fence, conn)
            insert_events(events, conn)
            conn.execute(
                "UPDATE runs SET status = ?, outcome = ?, error = COALESCE(?, error),"
                " provider = COALESCE(?, provider), updated_at = ?, finished_at = ?"
                f"{lease} WHERE id = ?",
                params,
            )
            announce(conn, [run_id])

        await self.db.write(update)

    async def commit_step(
        self,
        run_id: int,
        commit: StepCommit,
        *,
        provider: dict[str, Any] | None = None,
        fence: Fence | None = None,
        progress: tuple[int, str, dict[str, Any]] | None = None,
        read: Callable[[Connection], Any] | None = None,
    ) -> Committed:
        """Write the step row, its observations, requests and events in one transaction.

        Committing a step number that already exists (a step resumed after a deferred approval)
        adds the new observations and merges the decision. ``fence``: its driver's (``LeaseLost``,
        nothing written, once another holds the run). ``progress``: a new revision of the run's
        progress ledger (step, digest, ledger) that folds this commit in, saved in the same
        transaction (``ProgressRepo.save``): its revision number is returned. ``read``: a read
        made in the same transaction once the step is written (the remembered rules its calls
        are checked against), its result returned.
        """
        last = self._written.get(run_id)
        now = time.time()
        step = partial(_commit_step, run_id, commit, provider, now, last)
        save = None if progress is None else partial(save_progress, run_id, *progress, now)

        def commit_all(conn: Connection) -> tuple[Written | None, Committed]:
            fenced(fence, conn)
            written = step(conn)
            revision = save(conn) if save is not None else None
            return written, Committed(revision, read(conn) if read is not None else None)

        written, committed = await self.db.write(commit_all)
        self._remember(run_id, written)
        return committed

    def _remember(self, run_id: int, written: Written | None) -> None:
        """After a commit (never before: a rolled-back row cannot be a base)."""
        if written is not None:
            self._written[run_id] = written

    async def add_events(self, events: Sequence[RunEvent], *, fence: Fence | None = None) -> None:
        await self.db.write(partial(_fenced, fence, partial(insert_events, events)))

    async def add_request(
        self, run_id: int, request: RequestRecord, *, fence: Fence | None = None
    ) -> None:
        last = self._written.get(run_id)
        insert = partial(insert_request, run_id, request, time.time(), last)
        written = await self.db.write(partial(_fenced, fence, insert))
        self._remember(run_id, written)

    async def history(self, run_id: int) -> list[StepRecord]:
        """The run's steps as the context engine sees them (bounded observations)."""
        steps = await self.db.fetchall(
            "SELECT step, text, tool_calls, operator_messages FROM steps"
            " WHERE run_id = ? ORDER BY step",
            (run_id,),
        )
        obs_rows = await self.db.fetchall(
            "SELECT * FROM observations WHERE run_id = ? ORDER BY id", (run_id,)
        )
        by_step: dict[int, list[Observation]] = {}
        corrections: dict[int, list[Observation]] = {}
        for row in obs_rows:
            obs = _observation(row)
            (corrections if obs.corrects else by_step).setdefault(obs.step, []).append(obs)
        records = []
        for row in steps:
            records.append(
                StepRecord(
                    step=row["step"],
                    text=row["text"],
                    tool_calls=tool_calls(row["tool_calls"]),
                    observations=tuple(by_step.get(row["step"], ())),
                    operator_messages=tuple(json.loads(row["operator_messages"])),
                    corrections=tuple(corrections.get(row["step"], ())),
                )
            )
        return records

    async def recorded(self, run_id: int, call_id: str) -> tuple[Observation, str] | None:
        """One call's result as recorded: the bounded observation and the tool's whole output
        (``recall_result`` reads it back), or None when the run has no such call."""
        row = await self.db.fetchone(
            "SELECT * FROM observations WHERE run_id = ? AND call_id = ?", (run_id, call_id)
        )
        return None if row is None else (_observation(row), row["full_text"])

    async def children(self, run_id: int) -> list[RunRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM runs WHERE parent_run_id = ? ORDER BY id", (run_id,)
        )
        return [RunRow.from_row(r) for r in rows]

    # -- summaries (compaction is bought once per run, reused across resume) --

    async def summaries(self, run_id: int) -> list[tuple[int, str]]:
        rows = await self.db.fetchall(
            "SELECT through_step, text FROM summaries WHERE run_id = ? ORDER BY through_step",
            (run_id,),
        )
        return [(r["through_step"], r["text"]) for r in rows]

    async def add_summary(self, run_id: int, through_step: int, text: str) -> None:
        await self.db.write(
            partial(
                _execute,
                "INSERT INTO summaries (run_id, through_step, text, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (run_id, through_step)"
                " DO UPDATE SET text = excluded.text, created_at = excluded.created_at",
                (run_id, through_step, text, time.time()),
            )
        )

    # -- operator messages: steering a live run --

    async def add_operator_message(self, run_id: int, text: str) -> int:
        def insert(conn: Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO operator_messages (run_id, text, created_at) VALUES (?, ?, ?)",
                (run_id, text, time.time()),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

        return await self.db.write(insert)

    async def take_operator_messages(
        self, run_id: int, step: int, *, fence: Fence | None = None
    ) -> list[str]:
        return (await self.take_operator_messages_with(run_id, step, _nothing, fence=fence))[0]

    async def take_operator_messages_with(
        self,
        run_id: int,
        step: int,
        read: Callable[[Connection], T],
        *,
        fence: Fence | None = None,
    ) -> tuple[list[str], T]:
        """The run's operator messages not delivered yet, marked delivered at ``step``; and
        ``read(connection)``, in the same first hand-off (a step's other read: its notes)."""

        def take(conn: Connection) -> list[str]:
            fenced(fence, conn)
            rows = conn.execute(
                "SELECT id, text FROM operator_messages"
                " WHERE run_id = ? AND delivered_step IS NULL ORDER BY id",
                (run_id,),
            ).fetchall()
            if rows:
                conn.execute(
                    "UPDATE operator_messages SET delivered_step = ?"
                    " WHERE run_id = ? AND delivered_step IS NULL",
                    (step, run_id),
                )
            return [r["text"] for r in rows]

        def waiting(conn: Connection) -> tuple[bool, T]:
            fenced(fence, conn)
            return operator_waiting(run_id, conn), read(conn)

        # asked every step, and most steps have none: a read says so (the lease checked as
        # before), and only a step with a message waiting takes the store's write lock
        found, got = await self.db.call(waiting)
        if not found:
            return [], got
        return await self.db.write(take), got


def _observation(row: aiosqlite.Row) -> Observation:
    seen = json.loads(row["seen"]) if row["seen"] else {}
    start, end = seen.get("ran_ns", (0, 0))
    return Observation(
        step=row["step"],
        call_id=row["call_id"],
        tool=row["tool"],
        kind=ObsKind(row["kind"]),
        target=row["target"],
        text=row["text"],
        span=row["span"],
        full_chars=len(row["full_text"]),
        is_error=bool(row["is_error"]),
        seen=tuple(Seen.from_json(s) for s in seen.get("seen", ())),
        ran_ns=(int(start), int(end)),
        corrects=row["corrects"],
    )


def _seen_json(obs: Observation) -> str:
    if not obs.seen and obs.ran_ns == (0, 0):
        return ""
    return json.dumps({"seen": [s.to_json() for s in obs.seen], "ran_ns": list(obs.ran_ns)})


def _commit_step(
    run_id: int,
    commit: StepCommit,
    provider: dict[str, Any] | None,
    now: float,
    last: Written | None,
    conn: Connection,
) -> Written | None:
    """Everything one step writes (``RunRepo.commit_step``), run inside its transaction;
    returns what the run's next request may extend (``requests.py``)."""
    full_result = "\n".join(full for obs, full in commit.observations if not obs.corrects)
    existing = conn.execute(
        "SELECT decision, result FROM steps WHERE run_id = ? AND step = ?",
        (run_id, commit.step),
    ).fetchone()
    if existing is None:
        conn.execute(
            "INSERT INTO steps (run_id, step, text, tool_calls, decision, result, tokens,"
            " operator_messages, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                commit.step,
                commit.text,
                json.dumps([c.to_json() for c in commit.tool_calls]),
                json.dumps(commit.decision),
                full_result,
                commit.tokens,
                json.dumps(list(commit.operator_messages)),
                now,
            ),
        )
    else:
        decision = {**json.loads(existing["decision"]), **commit.decision}
        result = "\n".join(p for p in (existing["result"], full_result) if p)
        conn.execute(
            "UPDATE steps SET decision = ?, result = ?, tokens = tokens + ?"
            " WHERE run_id = ? AND step = ?",
            (json.dumps(decision), result, commit.tokens, run_id, commit.step),
        )
    # (an empty batch is not handed to SQLite: the commit of a model's answer has none)
    if commit.observations:
        conn.executemany(
            "INSERT INTO observations (run_id, step, call_id, tool, kind, target, span, text,"
            " full_text, is_error, seen, corrects) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    obs.step,
                    obs.call_id,
                    obs.tool,
                    obs.kind.value,
                    obs.target,
                    obs.span,
                    obs.text,
                    full,
                    int(obs.is_error),
                    _seen_json(obs),
                    obs.corrects,
                )
                for obs, full in commit.observations
            ],
        )
    insert_done(commit.intents, now, conn)
    if commit.closed_intents:
        conn.executemany(
            "UPDATE intents SET status = ?, ended_at = ? WHERE id = ?",
            [(status, now, intent_id) for intent_id, status in commit.closed_intents],
        )
    if commit.observations:
        conn.executemany(
            "UPDATE intents SET status = 'done', ended_at = ?"
            " WHERE run_id = ? AND call_id = ? AND status = 'started'",
            [(now, run_id, obs.call_id) for obs, _ in commit.observations],
        )
    for req in commit.requests:
        last = insert_request(run_id, req, now, last, conn)
    insert_events(commit.events, conn)
    conn.execute(
        "UPDATE runs SET steps = MAX(steps, ?), tokens = tokens + ?,"
        " provider = COALESCE(?, provider), updated_at = ? WHERE id = ?",
        (
            commit.step,
            commit.tokens,
            json.dumps(provider) if provider is not None else None,
            now,
            run_id,
        ),
    )
    return last


def _fenced(fence: Fence | None, fn: Callable[[Connection], T], conn: Connection) -> T:
    """``fn(conn)`` once the driver's ``fence`` holds (``leases.Fence.check``)."""
    fenced(fence, conn)
    return fn(conn)


def operator_waiting(run_id: int, conn: Connection) -> bool:
    """Whether an operator message waits for the run (``take_operator_messages`` takes it)."""
    waiting = "SELECT 1 FROM operator_messages WHERE run_id = ? AND delivered_step IS NULL LIMIT 1"
    return fetch(waiting, (run_id,), conn, many=False) is not None


def _nothing(conn: Connection) -> None:
    return None


def _execute(sql: str, params: tuple[Any, ...], conn: Connection) -> None:
    conn.execute(sql, params)


def _changed(sql: str, params: tuple[Any, ...], conn: Connection) -> int:
    """One statement; how many rows it changed."""
    return conn.execute(sql, params).rowcount


def _create(row: tuple[Any, ...], now: float, conn: Connection) -> int:
    """A new run, leased to this process (its first epoch) on the store's clock."""
    clock = store_time(conn)
    cursor = conn.execute(
        "INSERT INTO runs (goal, workspace, status, contract, provider, policy, origin,"
        " parent_run_id, seed_run_id, created_at, updated_at,"
        " lease_owner, lease_host, lease_pid, lease_heartbeat, lease_epoch, lease_renewed,"
        " lease_clock) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*row, now, now, OWNER.id, OWNER.host, OWNER.pid, now, FIRST_EPOCH, clock.at, clock.clock),
    )
    run_id = cursor.lastrowid
    assert run_id is not None
    announce(conn, [run_id])
    return run_id


def insert_events(events: Sequence[RunEvent], conn: Connection) -> None:
    """The events (never a live-only one: text deltas, progress), announced with each run's
    newest (``live.py``)."""
    stored = [e for e in events if e.kind not in LIVE_ONLY]
    if not stored:
        return
    conn.executemany(
        "INSERT INTO events (run_id, step, kind, detail, at) VALUES (?, ?, ?, ?, ?)",
        [(e.run_id, e.step, e.kind.value, json.dumps(e.detail), e.at) for e in stored],
    )
    announce(conn, {e.run_id for e in stored})
