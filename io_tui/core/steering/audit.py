"""The audit of past approval requests (``io-tui approvals --history``, the audit screen):
approval rate, median time to decide, and per request what was proposed against what was
performed, and what a reviewer model said of it beside who decided (DESIGN §3.4). No Textual.
"""

from __future__ import annotations

import json
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.authority.approvals import APPROVING, ApprovalRequest, DecisionKind
from io_tui.core.authority.policy import Act
from io_tui.core.authority.review import Review, ReviewVerdict, by_reviewer
from io_tui.core.steering.remember import request_argv
from io_tui.core.store.approvals import ApprovalRecord


@dataclass(frozen=True, slots=True)
class AuditStats:
    total: int
    pending: int
    decided: int
    approved: int
    denied: int
    rewritten: int
    remembered: int
    approval_rate: float | None  # approved (incl. rewrite/remember) / decided
    median_seconds: float | None  # created → decided, over decided requests
    reviewed: int = 0  # requests a reviewer model reviewed
    by_reviewer: int = 0  # decisions a reviewer model made (approve or deny)
    escalated: int = 0  # requests a reviewer escalated to a human

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "pending": self.pending,
            "decided": self.decided,
            "approved": self.approved,
            "denied": self.denied,
            "rewritten": self.rewritten,
            "remembered": self.remembered,
            "approval_rate": self.approval_rate,
            "median_seconds_to_decide": self.median_seconds,
            "reviewed": self.reviewed,
            "decided_by_reviewer": self.by_reviewer,
            "escalated": self.escalated,
        }

    def summary(self) -> str:
        rate = "—" if self.approval_rate is None else f"{self.approval_rate:.0%}"
        median = "—" if self.median_seconds is None else format_duration(self.median_seconds)
        reviewer = (
            f" · reviewer: {self.reviewed} reviewed, {self.by_reviewer} decided,"
            f" {self.escalated} escalated"
            if self.reviewed
            else ""
        )
        return (
            f"{self.total} request{'' if self.total == 1 else 's'}: {self.decided} decided,"
            f" {self.pending} pending · "
            f"approval rate {rate} · median time to decide {median}{reviewer}"
        )


def audit_stats(records: Sequence[ApprovalRecord]) -> AuditStats:
    decided = [r for r in records if r.decision is not None]
    kinds = [r.decision.kind for r in decided if r.decision is not None]
    approved = sum(1 for k in kinds if k in APPROVING)
    waits = [
        r.decided_at - r.request.created_at
        for r in decided
        if r.decided_at is not None and r.request.created_at
    ]
    return AuditStats(
        total=len(records),
        pending=sum(1 for r in records if r.status == "pending"),
        decided=len(decided),
        approved=approved,
        denied=sum(1 for k in kinds if k is DecisionKind.DENY),
        rewritten=sum(1 for k in kinds if k is DecisionKind.REWRITE),
        remembered=sum(1 for k in kinds if k is DecisionKind.REMEMBER),
        approval_rate=approved / len(decided) if decided else None,
        median_seconds=statistics.median(waits) if waits else None,
        reviewed=sum(1 for r in records if r.reviews),
        by_reviewer=sum(1 for r in decided if r.decision and by_reviewer(r.decision.decided_by)),
        escalated=sum(
            1 for r in records if any(v.verdict is ReviewVerdict.ESCALATE for v in r.reviews)
        ),
    )


def format_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def proposed_text(request: ApprovalRequest) -> str:
    """One line naming what the model proposed."""
    if request.act is Act.EXEC:
        argv = request_argv(request)
        return shlex.join(argv) if argv else f"{request.tool} {json.dumps(request.arguments)}"
    if request.tool in ("write_file", "edit_file"):
        lines = request.content.count("\n") + (0 if request.content.endswith("\n") else 1)
        return f"{request.tool} {request.target} ({lines} line{'' if lines == 1 else 's'})"
    return f"{request.tool} {json.dumps(request.arguments, ensure_ascii=False)}"


def performed_text(record: ApprovalRecord) -> str:
    """One line naming what was actually done (or why nothing was)."""
    if record.status == "pending":
        return "pending"
    performed = record.performed
    if performed is None:
        return "decided; not yet performed"
    if not performed.get("performed"):
        why = performed.get("refused_by") or performed.get("error") or "denied"
        return f"not performed: {why}"
    args = performed.get("arguments")
    suffix = " (failed)" if performed.get("error") else ""
    if record.decision is not None and record.decision.kind is DecisionKind.REWRITE:
        return f"rewritten: {json.dumps(args, ensure_ascii=False)}{suffix}"
    return f"as proposed{suffix}"


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    run_id: int
    step: int
    asked_at: float
    decided_at: float | None
    act: str
    target: str
    rule: str
    layer: str
    decision: str
    decided_by: str
    reason: str
    proposed: str
    performed: str
    reviews: tuple[Review, ...] = ()

    @property
    def review(self) -> str:
        """The latest review in a few words (``escalate by llamacpp:smollm2``); "" if none."""
        if not self.reviews:
            return ""
        last = self.reviews[-1]
        return f"{last.verdict.value} by {last.reviewer}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "step": self.step,
            "asked_at": self.asked_at,
            "decided_at": self.decided_at,
            "act": self.act,
            "target": self.target,
            "rule": self.rule,
            "layer": self.layer,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "reason": self.reason,
            "proposed": self.proposed,
            "performed": self.performed,
            "reviews": [review.to_json() for review in self.reviews],
        }


def audit_row(record: ApprovalRecord) -> AuditRow:
    req = record.request
    decision = record.decision
    return AuditRow(
        id=req.id,
        run_id=req.run_id,
        step=req.step,
        asked_at=req.created_at,
        decided_at=record.decided_at,
        act=req.act.value,
        target=req.target,
        rule=req.rule,
        layer=req.layer,
        decision=decision.kind.value if decision else "pending",
        decided_by=decision.decided_by if decision else "",
        reason=(decision.reason or "") if decision else "",
        proposed=proposed_text(req),
        performed=performed_text(record),
        reviews=record.reviews,
    )
