"""One ask: an act the policy leaves to a human, put to the run's operator and decided once.

A tool call (``calls.py``) and an MCP server's request in the middle of a call
(``server_asks.py``) go the same way, so they are checked, recorded and remembered alike
whichever cockpit decides:

policy (a deny refuses, an allow approves) → the request persisted (every inbox shows it) →
announced (``approval_requested``) → the run marked asking while the policy's reviewer model,
if it names one (``reviewed.py``), then its approver decides → the first decision recorded
wins (another cockpit, ``io-tui decide``, may have decided first) →
announced (``approval_decided``) → a REMEMBER, or a deny with a rule (always reject), saved as
a remembered rule and applied to the run's policy at once.

A tool call's request can wait: a deferral leaves it pending (the run pauses, the request waits
in the inbox). A server's cannot (the server waits inside its call): a deferral is recorded,
and so is no answer within ``wait_s`` or a call that ends while its request waits; none is left
pending.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from io_tui.core.authority.approvals import ApprovalRequest, ApproveAll, Decision, DecisionKind
from io_tui.core.authority.policy import Act, Effect, Policy, Verdict
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.events import EventKind
from io_tui.core.hooks.moments import RunHooks
from io_tui.core.run.harness import Harness
from io_tui.core.run.reviewed import ReviewerSeat, reviewed
from io_tui.core.store import Store
from io_tui.core.store.leases import Fence

CALL_ENDED = "io-tui (the call ended before an answer)"


class AskingRun(Protocol):
    """What an ask needs of the run that asks (``RunState`` is one): its store, approver
    (``harness.approver``), id, workspace, current policy and reviewer, its events, its asking
    status, and its lease (``fence``: every write checks it; ``keep_lease``: renewed before a
    call performs, if it may have lapsed)."""

    store: Store
    harness: Harness
    run_id: int
    workspace: Workspace
    policy: Policy
    fence: Fence | None
    hooks: RunHooks | None  # its hooks (``core/hooks``): ``Notification`` when it asks
    reviewers: ReviewerSeat

    def publish(self, kind: EventKind, detail: dict[str, Any] | None = None) -> None: ...

    async def flush_events(self) -> None: ...

    async def asking(self, asking: bool) -> None: ...

    async def keep_lease(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Question:
    """What a run asks to do: ``act`` on ``target``, for the call ``call_id`` of ``step``.
    ``content`` is what the operator reviews (a write's bytes, a server's request)."""

    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any]
    act: Act
    target: str
    content: str


@dataclass(frozen=True, slots=True)
class Asked:
    """How a question was decided, the policy's verdict on it, and its persisted request
    (None: the policy decided alone, nobody was asked)."""

    decision: Decision
    verdict: Verdict
    request: ApprovalRequest | None = None

    @property
    def approval_id(self) -> int | None:
        return self.request.id if self.request is not None else None


async def ask(
    run: AskingRun,
    question: Question,
    *,
    policy_may_allow: bool = True,
    can_wait: bool = True,
    wait_s: float | None = None,
    policy: Policy | None = None,
) -> Asked:
    """Decide ``question`` for ``run``: by its policy when a rule denies it (a DENY decided by
    ``policy``) or allows it (an APPROVE, unless ``policy_may_allow`` is False: only the
    operator can fill a server's form); else by its operator (``put_to_operator``)."""
    verdict = (policy or run.policy).explain(question.act, question.target)
    if verdict.effect is Effect.DENY:
        reason = f"refused by policy ({verdict.rule_text}, layer {verdict.layer})"
        return Asked(Decision.deny(reason, decided_by="policy"), verdict)
    if verdict.effect is Effect.ALLOW and policy_may_allow:
        return Asked(Decision.approve(decided_by="policy"), verdict)
    request = await run.store.approvals.create(
        ApprovalRequest(
            id=0,
            run_id=run.run_id,
            step=question.step,
            call_id=question.call_id,
            tool=question.tool,
            arguments=question.arguments,
            act=question.act,
            target=question.target,
            content=question.content,
            rule=verdict.rule_text,
            layer=verdict.layer,
            workspace=str(run.workspace.root),
        ),
        fence=run.fence,
    )
    run.publish(
        EventKind.APPROVAL_REQUESTED,
        {"approval_id": request.id, "act": question.act.value, "target": question.target,
         "rule": verdict.rule_text, "layer": verdict.layer},
    )  # fmt: skip
    decision = await put_to_operator(run, request, can_wait=can_wait, wait_s=wait_s)
    return Asked(decision, verdict, request)


async def put_to_operator(
    run: AskingRun,
    request: ApprovalRequest,
    *,
    can_wait: bool = True,
    wait_s: float | None = None,
) -> Decision:
    """Put a persisted request (a new one, or one still pending when its run resumes) to the
    run's reviewer model (a tool call's request, when the policy names one) and, unless it
    approves or denies, to the run's approver, the run marked asking meanwhile, and return the
    decision that stands.

    A DEFER of a request that ``can_wait`` stays unrecorded: the request stays pending. Any
    other decision is recorded unless someone recorded one first, whose decision stands; it is
    then taken (``take_decision``). Without ``can_wait``, no answer within ``wait_s`` is a
    defer, and a call that ends (this task cancelled) records one before it goes."""
    await run.asking(True)
    if run.hooks is not None and run.hooks.has("Notification"):
        await run.hooks.notify(
            f"io-tui run {run.run_id} needs your approval: {request.act.value} {request.target}"
        )
    try:
        async with asyncio.timeout(wait_s):
            decision = await reviewed(run, request) if can_wait else None
            if decision is None:
                decision = await _human(run, request)
    except TimeoutError:
        decision = Decision.defer(decided_by=f"io-tui (unanswered within {wait_s or 0:.1f}s)")
    except asyncio.CancelledError:
        if not can_wait:  # the call ended (or the run stopped): never left pending
            ended = Decision.defer(decided_by=CALL_ENDED)
            await asyncio.shield(run.store.approvals.record_decision(request.id, ended))
        raise
    finally:
        await run.asking(False)
    if decision.kind is DecisionKind.DEFER and can_wait:
        run.publish(
            EventKind.APPROVAL_DECIDED,
            {"approval_id": request.id, "decision": "defer", "decided_by": decision.decided_by},
        )
        return decision
    if not await run.store.approvals.record_decision(request.id, decision):
        record = await run.store.approvals.get(request.id)  # decided elsewhere first
        decision = record.decision if record and record.decision else decision
    await take_decision(run, request, decision)
    return decision


async def _human(run: AskingRun, request: ApprovalRequest) -> Decision:
    """The run's approver's decision; an escalation from the reviewer is never answered by one
    that approves everything unasked (``--approve all``): it waits in the inbox instead."""
    approver = run.harness.approver
    if run.policy.reviewer is not None and isinstance(approver, ApproveAll):
        return Decision.defer(decided_by="io-tui (escalated by the reviewer: a human decides)")
    return await approver.decide(request)


async def take_decision(run: AskingRun, request: ApprovalRequest, decision: Decision) -> None:
    """A recorded decision on ``request`` (recorded here, or elsewhere while the run was
    paused), announced, and its rule remembered: a REMEMBER's allows, a deny's (always reject)
    denies, in the store and in the run's policy from now on."""
    run.publish(
        EventKind.APPROVAL_DECIDED,
        {
            "approval_id": request.id,
            "decision": decision.kind.value,
            "reason": decision.reason,
            "decided_by": decision.decided_by,
            "call_id": request.call_id,
            "tool": request.tool,
            "asked_at": request.created_at or None,
        },
    )
    rule = decision.rule
    if rule is None or decision.kind not in (DecisionKind.REMEMBER, DecisionKind.DENY):
        return
    workspace = str(run.workspace.root)
    await run.store.rules.add(
        act=rule.act,
        pattern=rule.pattern,
        scope=rule.scope,
        workspace=workspace,
        run_id=run.run_id,
        approval_id=request.id,
        effect=Effect.DENY if decision.kind is DecisionKind.DENY else Effect.ALLOW,
    )
    layer = await run.store.rules.layer_for(workspace=workspace, run_id=run.run_id)
    run.policy = run.policy.with_layer(layer)
