"""An MCP server's requests in the middle of one of its tool calls, put to the run's operator
through the same ask as any act (``ask_operator``):

- sampling (``sampling/createMessage``, ``SamplingAsk``): answered through the run's own provider
  only after the operator approves it;
- elicitation (``elicitation/create``, ``core.mcp.elicitation.ElicitAsk``): a form the operator
  fills, declines or cancels.

The ask is checked as ``exec`` on ``mcp__<server>__sampling`` (or ``__elicitation``): deny first,
then allow or ask. An ask is persisted with the server's request as its content, the run is
marked asking (``RunState.asking``: the cockpits' status), the approver decides, and the first
decision recorded wins (another cockpit, ``io-tui decide``, may have decided first); a REMEMBER
(or an always-reject deny) saves its rule as any approval's does. A deferral cannot wait (the server is waiting
inside its call), and nobody answers for longer than what is left of the server's
``call_timeout_s`` (less a margin for the answer to reach it): either is recorded, never left
pending, and the server is told; so is a call that ends while its request waits. The sampling answer's request is kept
in the run's trace (``purpose: sampling``) and its tokens count against the run's budget.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from io_tui.core.authority.approvals import ApprovalRequest, Decision, DecisionKind
from io_tui.core.authority.policy import Act, Effect
from io_tui.core.events import EventKind
from io_tui.core.providers.base import CompletionRequest, Message, complete
from io_tui.core.store import RequestRecord
from io_tui.core.tokens import estimate_tokens
from io_tui.core.tools.base import ToolError

APPROVING = (DecisionKind.APPROVE, DecisionKind.REMEMBER, DecisionKind.REWRITE)


@dataclass(frozen=True, slots=True)
class Asked:
    """What the operator (or the policy) decided on a server's request."""

    decision: Decision
    approval_id: int | None = None  # None: the policy decided alone (allow, or deny)


async def ask_operator(
    state: Any,
    step: int,
    call_id: str,
    *,
    target: str,
    arguments: dict[str, Any],
    content: str,
    wait_s: float | None = None,
    policy_allows: bool = True,
) -> Asked:
    """Put a server's request to the run's operator, as ``CallRunner`` puts a tool call.

    ``state`` is the asking run's ``RunState``. A policy deny is a DENY decided by the policy; a
    policy allow is an APPROVE unless ``policy_allows`` is False (an elicitation: only the
    operator can fill its form). Otherwise the request is persisted, announced, and decided by
    the approver within ``wait_s`` (a defer after that), and the first decision recorded wins.
    """
    verdict = state.policy.explain(Act.EXEC, target)
    if verdict.effect is Effect.DENY:
        reason = f"refused by policy ({verdict.rule_text}, layer {verdict.layer})"
        return Asked(Decision.deny(reason, decided_by="policy"))
    if verdict.effect is Effect.ALLOW and policy_allows:
        return Asked(Decision.approve(decided_by="policy"))
    workspace = str(state.workspace.root)
    request = await state.store.approvals.create(
        ApprovalRequest(
            id=0,
            run_id=state.run_id,
            step=step,
            call_id=f"{call_id}:{target.rsplit('__', 1)[-1]}",
            tool=target,
            arguments=arguments,
            act=Act.EXEC,
            target=target,
            content=content,
            rule=verdict.rule_text,
            layer=verdict.layer,
            workspace=workspace,
        )
    )
    state.publish(
        EventKind.APPROVAL_REQUESTED,
        {"approval_id": request.id, "act": Act.EXEC.value, "target": target,
         "rule": verdict.rule_text, "layer": verdict.layer},
    )  # fmt: skip
    await state.asking(True)
    try:
        async with asyncio.timeout(wait_s):
            decision = await state.harness.approver.decide(request)
    except TimeoutError:
        decision = Decision.defer(decided_by=f"io-tui (unanswered within {wait_s:.1f}s)")
    except asyncio.CancelledError:  # the call ended (or the run stopped): never left pending
        ended = Decision.defer(decided_by="io-tui (the call ended before an answer)")
        await asyncio.shield(state.store.approvals.record_decision(request.id, ended))
        raise
    finally:
        await state.asking(False)
    if not await state.store.approvals.record_decision(request.id, decision):
        record = await state.store.approvals.get(request.id)  # decided elsewhere first
        decision = record.decision if record and record.decision else decision
    state.publish(
        EventKind.APPROVAL_DECIDED,
        {"approval_id": request.id, "decision": decision.kind.value, "reason": decision.reason},
    )
    remembered = decision.kind in (DecisionKind.REMEMBER, DecisionKind.DENY)
    if remembered and decision.rule is not None:  # remember allows, always-reject denies
        rule = decision.rule
        effect = Effect.DENY if decision.kind is DecisionKind.DENY else Effect.ALLOW
        await state.store.rules.add(
            act=rule.act, pattern=rule.pattern, scope=rule.scope, workspace=workspace,
            run_id=state.run_id, approval_id=request.id, effect=effect,
        )  # fmt: skip
        layer = await state.store.rules.layer_for(workspace=workspace, run_id=state.run_id)
        state.policy = state.policy.with_layer(layer)
    return Asked(decision, request.id)


SERVER_ASKS = (":sampling", ":elicitation")  # how ``ask_operator`` ends a request's call id
ENDED_WITH_PROCESS = "io-tui (the call that asked ended with its process)"


def is_server_ask(request: ApprovalRequest) -> bool:
    """Whether an approval request is an MCP server's sampling or form request, made inside one
    of its tool calls: it can be answered only while that call lasts, in that process."""
    return request.call_id.endswith(SERVER_ASKS)


async def expire_server_asks(store: Any, run_id: int) -> list[int]:
    """Decide (a defer saying why) the server requests of ``run_id`` still pending when no
    process drives the run: the calls that asked ended with the process that made them, so
    no answer can reach them, and each would otherwise wait in every inbox for ever. Returns
    their ids. ``store``: the ``Store``."""
    ended = Decision.defer(decided_by=ENDED_WITH_PROCESS)
    waiting = [
        r.request.id
        for r in await store.approvals.for_run(run_id)
        if r.status == "pending" and is_server_ask(r.request)
    ]
    return [id_ for id_ in waiting if await store.approvals.record_decision(id_, ended)]


@dataclass(frozen=True, slots=True)
class SamplingAsk:
    """What a server asked the model: its messages as (role, text), a system prompt, a limit."""

    server: str
    target: str  # what the policy checks: ``mcp__<server>__sampling``
    messages: tuple[tuple[str, str], ...]
    system_prompt: str | None = None
    max_tokens: int | None = None
    wait_s: float | None = None  # how long the operator may take (what is left of the call)

    def text(self) -> str:
        """The request as the operator reads it in the approval."""
        head = f"MCP server '{self.server}' asks the model"
        limit = f" (at most {self.max_tokens:,} tokens)" if self.max_tokens else ""
        lines = [head + limit + ":"]
        if self.system_prompt:
            lines.append(f"[system] {self.system_prompt}")
        lines += [f"[{role}] {text}" for role, text in self.messages]
        return "\n".join(lines)

    async def answer(self, state: Any, step: int, call_id: str) -> str:
        return await answer_sampling(state, step, call_id, self)


async def answer_sampling(state: Any, step: int, call_id: str, ask: SamplingAsk) -> str:
    """The model's answer to ``ask`` once the policy and the operator allow it; ToolError (the
    server is told why) otherwise. ``state`` is the asking run's ``RunState``."""
    asked = await ask_operator(
        state, step, call_id, target=ask.target, content=ask.text(), wait_s=ask.wait_s,
        arguments={"messages": [list(m) for m in ask.messages],
                   "system_prompt": ask.system_prompt, "max_tokens": ask.max_tokens},
    )  # fmt: skip
    decision = asked.decision
    if decision.kind not in APPROVING:
        if decision.decided_by == "policy":
            raise ToolError(decision.reason or "refused by policy")
        reason = decision.reason or (
            "deferred, and a sampling request cannot wait"
            if decision.kind is DecisionKind.DEFER
            else "no reason given"
        )
        if asked.approval_id is not None:
            await state.store.approvals.record_performed(asked.approval_id, {"performed": False})
        raise ToolError(f"the operator did not approve the sampling request: {reason}")
    if asked.approval_id is not None:
        await state.store.approvals.record_performed(asked.approval_id, {"performed": True})
    messages = [Message("system", ask.system_prompt)] if ask.system_prompt else []
    messages += [Message("assistant" if r == "assistant" else "user", t) for r, t in ask.messages]
    request = CompletionRequest(messages=tuple(messages), max_output_tokens=ask.max_tokens)
    response = await complete(state.harness.provider, request)
    usage = response.usage
    if usage:
        state.charge(usage.prompt_tokens + usage.completion_tokens)
    await state.store.runs.add_request(
        state.run_id,
        RequestRecord(
            step=step,
            attempt=0,
            purpose="sampling",
            ceiling_tokens=0,
            est_tokens=sum(estimate_tokens(m.content) for m in messages),
            frame_tokens=0,
            reported_tokens=usage.prompt_tokens if usage else None,
            usage=usage.to_json() if usage else None,
            messages=[m.to_json() for m in messages],
            manifest={"sampling": {"server": ask.server, "call_id": call_id,
                                   "approval_id": asked.approval_id}},
            attempts=[a.to_json() for a in response.attempts],
            provider=response.provider,
            model=response.model,
        ),
    )  # fmt: skip
    return response.text
