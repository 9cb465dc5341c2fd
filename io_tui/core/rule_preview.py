"""Steering helpers behind the approval UI and the audit commands (DESIGN §3.4). No Textual.

- ``suggest_pattern``: the pattern a remember rule starts from — an exec's exact command line
  (never the bare program, which allows every command it runs), a write's folder glob.
- ``grant_text`` / ``command_examples``: what a pattern allows, in words, and the wider exec
  patterns with what each would allow (every example matches the request it is shown for).
- ``preview_matches`` / ``blast_radius``: every earlier request in the store a candidate rule
  would have allowed, under exactly the matching the policy uses (``Rule.matches``) and the
  rule's scope, and how many that is (in how many runs; how many of them a human denied).
- ``check_rewrite``: validate an operator's edited arguments and re-check them against the run's
  policy, so the UI can refuse an edit that crosses a deny before it is ever submitted.
- ``audit_stats`` / ``audit_row``: approval rate, median time to decide, proposed vs performed.
- ``recall_history``: which requests carried a memory note (the ``memory_recalls`` table).
"""

from __future__ import annotations

import json
import re
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
    """The pattern a remember rule starts from: the narrowest that still names the request.

    An exec gets its exact command line (``git status --short``, glob characters escaped), so the
    rule allows that command and nothing else; an MCP tool (``mcp__server__tool``) its exact name.
    A path act gets its folder's glob (``src/app.py`` → ``src/*``; a file at the root keeps its
    name, which as a slash-free pattern matches that basename anywhere).
    """
    target = request.target.replace("\\", "/")
    if request.act is Act.EXEC:
        return glob_escape(request.target)
    parent = PurePosixPath(target).parent
    if str(parent) in ("", "."):
        return target
    return f"{parent}/*"


_GLOB_CHARS = re.compile(r"([*?[])")
_ESCAPED = re.compile(r"\[([*?[])\]")


def glob_escape(text: str) -> str:
    """``text`` as a pattern that matches exactly ``text`` (``*``, ``?``, ``[`` bracketed)."""
    return _GLOB_CHARS.sub(r"[\1]", text)


def _has_wildcard(pattern: str) -> bool:
    return bool(_GLOB_CHARS.search(_ESCAPED.sub("", pattern)))


def grant_text(rule: RememberRule) -> str:
    """What ``rule`` allows, in words (the scope aside): the remember dialog shows it."""
    pattern = rule.pattern
    literal = _ESCAPED.sub(r"\1", pattern)
    if rule.act is Act.EXEC:
        if " " not in pattern:
            if pattern.startswith("mcp__") and not _has_wildcard(pattern):
                return f"calls to the MCP tool {literal}, with any arguments"
            if _has_wildcard(pattern):
                return f"every command whose program matches '{pattern}', with any arguments"
            return f"every '{literal}' command, with any arguments"
        if not _has_wildcard(pattern):
            return f"exactly the command '{literal}'"
        return f"every command line matching '{pattern}'"
    verb = rule.act.value
    if "/" not in pattern:
        if not _has_wildcard(pattern):
            return f"{verb} any file named '{literal}', in any folder"
        return f"{verb} any file whose name matches '{pattern}', in any folder"
    if not _has_wildcard(pattern):
        return f"{verb} exactly '{literal}'"
    return f"{verb} every path matching '{pattern}'"


def command_examples(request: ApprovalRequest) -> list[tuple[str, str]]:
    """For an exec: patterns from narrowest to widest, each with what it allows; every one of
    them matches ``request`` (so the hint never shows an example that would not have)."""
    if request.act is not Act.EXEC or request.tool != "run_command":
        return []
    exact = suggest_pattern(request)
    hint = command_hint(request)
    program = hint.split(" ", 1)[0]
    candidates = [(exact, "only this command")]
    if " " in hint:  # a subcommand: "git status *"
        candidates.append((f"{glob_escape(hint)} *", f"'{hint}' with any arguments"))
    candidates.append((glob_escape(program), f"every {program} command"))
    seen: set[str] = set()
    examples: list[tuple[str, str]] = []
    for pattern, meaning in candidates:
        if pattern in seen or not Rule(Act.EXEC, Effect.ALLOW, pattern).matches(
            Act.EXEC, request.target
        ):
            continue
        seen.add(pattern)
        examples.append((pattern, meaning))
    return examples


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


@dataclass(frozen=True, slots=True)
class BlastRadius:
    """What a candidate rule would have allowed among the earlier requests in the store."""

    act: Act
    allowed: list[ApprovalRecord]
    earlier: int  # earlier requests of the rule's act, in any scope
    runs: int  # distinct runs among ``allowed``
    denied: int  # of ``allowed``, how many a human denied

    def describe(self) -> str:
        """``would have allowed 3 of 41 earlier write requests (2 runs; 1 of them denied)``."""
        earlier = f"{self.earlier} earlier {self.act.value} requests"
        if not self.earlier:
            return f"no earlier {self.act.value} requests in the store to compare"
        if not self.allowed:
            return f"would have allowed none of the {earlier}"
        runs = "1 run" if self.runs == 1 else f"{self.runs} runs"
        extra = f"; {self.denied} of them denied" if self.denied else ""
        return f"would have allowed {len(self.allowed)} of the {earlier} ({runs}{extra})"


def blast_radius(
    records: Sequence[ApprovalRecord],
    rule: RememberRule,
    *,
    workspace: str,
    run_id: int,
    before_id: int | None = None,
) -> BlastRadius:
    allowed = preview_matches(
        records, rule, workspace=workspace, run_id=run_id, before_id=before_id
    )
    earlier = sum(
        1
        for r in records
        if r.request.act is rule.act and (before_id is None or r.request.id < before_id)
    )
    denied = sum(
        1 for r in allowed if r.decision is not None and r.decision.kind is DecisionKind.DENY
    )
    runs = len({r.request.run_id for r in allowed})
    return BlastRadius(rule.act, allowed, earlier, runs, denied)


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
