"""Pending approvals and remembered rules: durable, so a decision can come from anywhere, later.

Whoever waits for a request decided in another process (a worker's approver, the ACP
permission bridge, the TUI's desk) waits through ``ApprovalRepo.wait_decided``: on PostgreSQL
it hears the decision announced (``live.announce_decided``), on SQLite it reads the request
again every ``poll_s``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import aiosqlite

from io_tui.core.authority.acts import Act, Effect
from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.events import EventKind
from io_tui.core.store.db import Connection, Database, fetch
from io_tui.core.store.leases import Fence, fenced
from io_tui.core.store.live import FALLBACK_S, Live, announce, announce_decided

if TYPE_CHECKING:  # what reviews and the remembered layer are: read where they are asked for,
    # so reading a run's approvals (``io-tui trace``) loads neither the policy nor the reviewer
    from io_tui.core.authority.policy import Layer
    from io_tui.core.authority.review import Review

DECIDED_POLL_S = 0.5  # on SQLite: how often a wait for a decision reads its request again
RUNS_PER_READ = 500  # run ids per statement when reviews are read for many runs


def _request(row: aiosqlite.Row) -> ApprovalRequest:
    return ApprovalRequest(
        id=row["id"],
        run_id=row["run_id"],
        step=row["step"],
        call_id=row["call_id"],
        tool=row["tool"],
        arguments=json.loads(row["arguments"]),
        act=Act(row["act"]),
        target=row["target"],
        content=row["content"],
        rule=row["rule"],
        layer=row["layer"],
        workspace=row["workspace"],
        created_at=row["created_at"],
    )


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """A request with its decision, what was performed, and what a reviewer model said of it
    (``reviews``, oldest first: read where an audit or an inbox shows them)."""

    request: ApprovalRequest
    status: str  # pending | decided
    decision: Decision | None
    performed: dict[str, Any] | None
    decided_at: float | None
    reviews: tuple[Review, ...] = ()

    def to_json(self) -> dict[str, Any]:
        r = self.request
        return {
            "id": r.id,
            "run_id": r.run_id,
            "step": r.step,
            "tool": r.tool,
            "act": r.act.value,
            "target": r.target,
            "content": r.content,
            "rule": r.rule,
            "layer": r.layer,
            "status": self.status,
            "decision": self.decision.to_json() if self.decision else None,
            "performed": self.performed,
            "created_at": r.created_at,
            "decided_at": self.decided_at,
            "reviews": [review.to_json() for review in self.reviews],
        }


def _record(row: aiosqlite.Row) -> ApprovalRecord:
    return ApprovalRecord(
        request=_request(row),
        status=row["status"],
        decision=Decision.from_json(json.loads(row["decision"])) if row["decision"] else None,
        performed=json.loads(row["performed"]) if row["performed"] else None,
        decided_at=row["decided_at"],
    )


class ApprovalRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(
        self, request: ApprovalRequest, *, fence: Fence | None = None
    ) -> ApprovalRequest:
        """Persist the exact proposed action before anyone is asked; returns it with its id.
        ``fence``: the asking driver's (``LeaseLost``, nothing written, once another holds the
        run)."""
        values = (
            request.run_id,
            request.step,
            request.call_id,
            request.tool,
            json.dumps(request.arguments),
            request.act.value,
            request.target,
            request.content,
            request.rule,
            request.layer,
            request.workspace,
            time.time(),
        )

        def insert(conn: Connection) -> int:
            fenced(fence, conn)
            cursor = conn.execute(
                "INSERT INTO approvals (run_id, step, call_id, tool, arguments, act, target,"
                " content, rule, layer, workspace, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            assert cursor.lastrowid is not None
            announce(conn, [request.run_id])  # every attached inbox shows it
            return cursor.lastrowid

        approval_id = await self.db.write(insert)
        row = await self.db.fetchone("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        assert row is not None
        return _request(row)

    async def get(self, approval_id: int) -> ApprovalRecord | None:
        row = await self.db.fetchone("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        return _record(row) if row else None

    async def pending(self) -> list[ApprovalRecord]:
        """Every request still pending, with what a reviewer said of it (why it escalated)."""
        rows = await self.db.fetchall(
            "SELECT * FROM approvals WHERE status = 'pending' ORDER BY id"
        )
        return await self.with_reviews([_record(r) for r in rows])

    async def for_run(self, run_id: int) -> list[ApprovalRecord]:
        rows = await self.db.fetchall(
            "SELECT * FROM approvals WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [_record(r) for r in rows]

    async def history(self) -> list[ApprovalRecord]:
        """Every request, decided or not, with its reviews (the audit)."""
        rows = await self.db.fetchall("SELECT * FROM approvals ORDER BY id")
        return await self.with_reviews([_record(r) for r in rows])

    async def with_reviews(self, records: Sequence[ApprovalRecord]) -> list[ApprovalRecord]:
        """``records`` with their reviews: the ``approval_reviewed`` events of their runs."""
        from io_tui.core.authority.review import Review

        run_ids = sorted({r.request.run_id for r in records})
        found: dict[int, list[Review]] = {}
        for start in range(0, len(run_ids), RUNS_PER_READ):
            chunk = run_ids[start : start + RUNS_PER_READ]
            rows = await self.db.fetchall(
                "SELECT detail FROM events WHERE kind = ?"
                f" AND run_id IN ({','.join('?' * len(chunk))}) ORDER BY id",
                (EventKind.APPROVAL_REVIEWED.value, *chunk),
            )
            for row in rows:
                review = Review.from_json(json.loads(row["detail"]))
                found.setdefault(review.approval_id, []).append(review)
        return [replace(r, reviews=tuple(found.get(r.request.id, ()))) for r in records]

    async def reviews_of(self, approval_id: int) -> list[Review]:
        """What reviewers said of one request, oldest first."""
        record = await self.get(approval_id)
        if record is None:
            return []
        (reviewed,) = await self.with_reviews([record])
        return list(reviewed.reviews)

    async def record_decision(self, approval_id: int, decision: Decision) -> bool:
        """Store a decision on a pending request. False if it was already decided (first wins).
        Announced to the run's listeners and the queue's: a paused queue run whose requests are
        all decided is a worker's to claim."""

        def update(conn: Connection) -> bool:
            decided = conn.execute(
                "UPDATE approvals SET decision = ?, status = 'decided', decided_at = ?"
                " WHERE id = ? AND status = 'pending' RETURNING run_id",
                (json.dumps(decision.to_json()), time.time(), approval_id),
            ).fetchone()
            if decided is not None:
                announce(conn, [decided[0]], queue=True)
                announce_decided(conn, [approval_id])
            return decided is not None

        return await self.db.write(update)

    async def wait_decided(
        self, approval_id: int, *, poll_s: float = DECIDED_POLL_S, fallback_s: float = FALLBACK_S
    ) -> Decision:
        """The decision on ``approval_id`` once one is recorded, by this process or any other
        (another cockpit, ``io-tui decide``, a cancel); at once if it already is. LookupError
        if there is no such request. It waits for as long as it takes: bound it with
        ``asyncio.timeout``, or cancel it.

        On PostgreSQL the request is read again as each decision is announced, and every
        ``fallback_s`` in case an announcement was missed; listening takes a connection of its
        own while it waits. On SQLite, which announces nothing (or while that connection is
        lost), it is read every ``poll_s``."""
        async with Live(self.db).decision_wakeups() as wakeup:
            while True:  # listening before the first read: no decision falls between
                record = await self.get(approval_id)
                if record is None:
                    raise LookupError(f"no approval request {approval_id}")
                if record.decision is not None:
                    return record.decision
                await wakeup.wait(fallback_s if wakeup.listening else poll_s)

    async def record_performed(self, approval_id: int, performed: dict[str, Any]) -> None:
        await self.db.write(
            partial(
                _update,
                "UPDATE approvals SET performed = ? WHERE id = ?",
                (json.dumps(performed), approval_id),
            )
        )


@dataclass(frozen=True, slots=True)
class RememberedRule:
    id: int
    act: Act
    effect: Effect
    pattern: str
    scope: str
    workspace: str | None
    run_id: int | None
    approval_id: int | None
    created_at: float
    revoked_at: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "act": self.act.value,
            "effect": self.effect.value,
            "pattern": self.pattern,
            "scope": self.scope,
            "workspace": self.workspace,
            "run_id": self.run_id,
            "approval_id": self.approval_id,
            "created_at": self.created_at,
            "revoked": self.revoked_at is not None,
        }


class RuleRepo:
    """Rules a human chose to remember. They form the ``remembered`` layer, which can never beat
    a deny because policy evaluation is deny-first across every layer."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(
        self,
        *,
        act: Act,
        pattern: str,
        scope: str,
        workspace: str | None,
        run_id: int | None,
        approval_id: int | None = None,
        effect: Effect = Effect.ALLOW,
    ) -> int:
        values = (
            act.value,
            effect.value,
            pattern,
            scope,
            workspace,
            run_id,
            approval_id,
            time.time(),
        )

        def insert(conn: Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO rules (act, effect, pattern, scope, workspace, run_id, approval_id,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

        return await self.db.write(insert)

    async def list(self, *, include_revoked: bool = False) -> list[RememberedRule]:
        return await self.db.call(partial(_rules, include_revoked))

    async def revoke(self, rule_id: int) -> bool:
        return await self.db.write(
            partial(
                _update,
                "UPDATE rules SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time.time(), rule_id),
            )
        )

    async def layer_for(self, *, workspace: str, run_id: int) -> Layer:
        """The ``remembered`` layer that applies to one run in one workspace."""
        return await self.db.call(partial(remembered_layer, workspace, run_id))


def _rules(include_revoked: bool, conn: Connection) -> list[RememberedRule]:
    where = "" if include_revoked else " WHERE revoked_at IS NULL"
    rows = fetch(f"SELECT * FROM rules{where} ORDER BY id", (), conn, many=True)
    return [
        RememberedRule(
            id=r["id"],
            act=Act(r["act"]),
            effect=Effect(r["effect"]),
            pattern=r["pattern"],
            scope=r["scope"],
            workspace=r["workspace"],
            run_id=r["run_id"],
            approval_id=r["approval_id"],
            created_at=r["created_at"],
            revoked_at=r["revoked_at"],
        )
        for r in rows
    ]


def remembered_layer(workspace: str, run_id: int, conn: Connection) -> Layer:
    """``RuleRepo.layer_for`` on a connection: read along with another hand-off (the commit of
    the model's answer, right before its calls run: ``RunState.commit_step``)."""
    from io_tui.core.authority.policy import Layer, Rule

    rules = [
        Rule(r.act, r.effect, r.pattern)
        for r in _rules(False, conn)
        if r.scope == "global"
        or (r.scope == "workspace" and r.workspace == workspace)
        or (r.scope == "run" and r.run_id == run_id)
    ]
    return Layer("remembered", tuple(rules))


def _update(sql: str, params: tuple[Any, ...], conn: Connection) -> bool:
    """One statement; whether it changed a row."""
    return conn.execute(sql, params).rowcount > 0
