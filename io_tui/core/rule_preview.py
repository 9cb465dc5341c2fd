"""Steering helpers behind the approval UI and the audit commands (DESIGN §3.4). No Textual.

- ``suggest_pattern``: a sensible pattern to remember for a request (a write's folder glob, an
  exec's program and subcommand, e.g. ``git status*``).
- ``preview_matches``: every earlier request in the store a candidate rule would have matched,
  under exactly the matching the policy uses (``Rule.matches``) and the rule's scope.
- ``check_rewrite``: validate an operator's edited arguments and re-check them against the run's
  policy, so the UI can refuse an edit that crosses a deny before it is ever submitted.
- ``audit_stats`` / ``audit_row``: approval rate, median time to decide, proposed vs performed.
- ``recall_history``: which requests carried a memory note (the ``memory_recalls`` table).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from io_tui.core.approvals import ApprovalRequest, DecisionKind, RememberRule, RuleScope
from io_tui.core.policy import Act, Effect, Policy, Rule, Verdict
from io_tui.core.store import ApprovalRecord, Store
from io_tui.core.tools.base import Gate, ToolContext, ToolError
from io_tui.core.tools.registry import ToolRegistry, default_registry
from io_tui.core.workspace import Workspace

SCOPES: tuple[RuleScope, ...] = ("run", "workspace", "global")
SCOPE_LABELS: dict[str, str] = {
    "run": "this run",
    "workspace": "this workspace",
    "global": "everywhere",
}
APPROVING = frozenset({DecisionKind.APPROVE, DecisionKind.REWRITE, DecisionKind.REMEMBER})


# -- remember: the suggested pattern and the live preview -------------------------------------


def suggest_pattern(request: ApprovalRequest) -> str:
    """The pattern a remember rule starts from.

    A path act gets its folder's glob (``src/app.py`` → ``src/*``; a file at the root keeps its
    name, which as a slash-free pattern matches that basename anywhere). An exec gets its program
    and subcommand (``git status*`` for ``git status --short``), or the program alone when there is
    no subcommand (``pytest`` for ``pytest -q``); an MCP tool (``mcp__server__tool``) is
    remembered exactly.
    """
    target = request.target.replace("\\", "/")
    if request.act is Act.EXEC:
        if request.tool != "run_command":
            return target
        hint = command_hint(request)
        return f"{hint}*" if " " in hint else hint
    parent = PurePosixPath(target).parent
    if str(parent) in ("", "."):
        return target
    return f"{parent}/*"


def command_hint(request: ApprovalRequest) -> str:
    """For an exec: the program and subcommand the human saw, e.g. ``git status``."""
    if request.act is not Act.EXEC:
        return ""
    argv = _argv(request)
    words = [argv[0].rsplit("/", 1)[-1]] if argv else [request.target]
    if len(argv) > 1 and not argv[1].startswith("-"):
        words.append(argv[1])
    return " ".join(words)


def _argv(request: ApprovalRequest) -> list[str]:
    raw = request.arguments.get("argv")
    if isinstance(raw, list):
        return [str(a) for a in raw]
    try:
        parsed = json.loads(request.content)
    except ValueError:
        return []
    return [str(a) for a in parsed] if isinstance(parsed, list) else []


def in_scope(record: ApprovalRecord, scope: RuleScope, *, workspace: str, run_id: int) -> bool:
    """Whether a rule remembered with ``scope`` (from ``run_id`` in ``workspace``) applies to the
    request — the same test ``RuleRepo.layer_for`` uses."""
    if scope == "global":
        return True
    if scope == "workspace":
        return record.request.workspace == workspace
    return record.request.run_id == run_id


def preview_matches(
    records: Iterable[ApprovalRecord],
    rule: RememberRule,
    *,
    workspace: str,
    run_id: int,
    before_id: int | None = None,
) -> list[ApprovalRecord]:
    """Every request (older than ``before_id`` when given) the rule would have matched."""
    candidate = Rule(rule.act, Effect.ALLOW, rule.pattern)
    return [
        r
        for r in records
        if (before_id is None or r.request.id < before_id)
        and candidate.matches(r.request.act, r.request.target)
        and in_scope(r, rule.scope, workspace=workspace, run_id=run_id)
    ]


def validate_pattern(pattern: str) -> str | None:
    """A problem with a pattern, or None. Over-broad patterns are allowed but named."""
    text = pattern.strip()
    if not text:
        return "the pattern is empty"
    if text != pattern:
        return "the pattern has leading or trailing spaces"
    return None


# -- rewrite: validate and re-check against the policy ------------------------------------------


@dataclass(frozen=True, slots=True)
class RewriteCheck:
    """The outcome of checking an edited action: ``problem`` is None when it may be submitted."""

    arguments: dict[str, Any]
    problem: str | None = None
    verdict: Verdict | None = None
    gate: Gate | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


async def run_policy(store: Store, request: ApprovalRequest) -> Policy:
    """The policy the request's run enforces now: its recorded policy plus remembered rules."""
    row = await store.runs.get(request.run_id)
    policy = Policy.from_json(row.policy, source=f"run {request.run_id}") if row else Policy()
    layer = await store.rules.layer_for(workspace=request.workspace, run_id=request.run_id)
    return policy.with_layer(layer)


async def check_rewrite(
    store: Store,
    request: ApprovalRequest,
    arguments: dict[str, Any],
    *,
    registry: ToolRegistry | None = None,
    policy: Policy | None = None,
) -> RewriteCheck:
    """Validate ``arguments`` with the tool's own model, gate them, and check the policy.

    An edit the policy denies is refused here (core refuses it again when it is performed, since no
    approval may cross a deny).
    """
    if not isinstance(arguments, dict):
        return RewriteCheck({}, "the arguments must be a JSON object")
    registry = registry or default_registry()
    try:
        tool = registry.get(request.tool)
    except ToolError:
        # Not a built-in (an MCP tool, say): nothing to validate here; core re-checks the target.
        return RewriteCheck(arguments)
    try:
        args = tool.parse(arguments)
        workspace = Workspace(Path(request.workspace))
        ctx = ToolContext(
            workspace=workspace, run_id=request.run_id, step=request.step, cap_chars=0
        )
        gate = await tool.gate(args, ctx)
    except ToolError as exc:
        return RewriteCheck(arguments, str(exc))
    if gate is None:
        return RewriteCheck(arguments, gate=None)
    policy = policy or await run_policy(store, request)
    verdict = policy.explain(gate.act, gate.target)
    if verdict.effect is Effect.DENY:
        return RewriteCheck(
            arguments,
            f"refused: {gate.act.value} {gate.target} is denied by rule '{verdict.rule_text}'"
            f" in layer '{verdict.layer}'; an edit can never cross a deny",
            verdict,
            gate,
        )
    return RewriteCheck(arguments, None, verdict, gate)


# -- audit --------------------------------------------------------------------------------------


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
        }

    def summary(self) -> str:
        rate = "—" if self.approval_rate is None else f"{self.approval_rate:.0%}"
        median = "—" if self.median_seconds is None else format_duration(self.median_seconds)
        return (
            f"{self.total} requests: {self.decided} decided, {self.pending} pending · "
            f"approval rate {rate} · median time to decide {median}"
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
        argv = _argv(request)
        return " ".join(argv) if argv else f"{request.tool} {json.dumps(request.arguments)}"
    if request.tool in ("write_file", "edit_file"):
        lines = request.content.count("\n") + (0 if request.content.endswith("\n") else 1)
        return f"{request.tool} {request.target} ({lines} lines)"
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
    )


# -- memory recall history ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recall:
    request_id: int | None
    run_id: int
    step: int
    at: float


async def recall_history(store: Store, scope: str, workspace: str, key: str) -> list[Recall]:
    """Which requests carried a note, oldest first (``memory_recalls``)."""
    rows = await store.db.fetchall(
        "SELECT request_id, run_id, step, at FROM memory_recalls"
        " WHERE scope = ? AND workspace = ? AND key = ? ORDER BY id",
        (scope, workspace if scope != "global" else "", key),
    )
    return [Recall(r["request_id"], r["run_id"], r["step"], r["at"]) for r in rows]
