"""An MCP server's sampling request (``sampling/createMessage``), answered through the run's own
provider only after the operator approves it.

The server asks while one of its tools is being called by a run; the request becomes an
approval like any other act: checked as ``exec`` on ``mcp__<server>__sampling`` (deny first, then
allow or ask), persisted with the server's messages as its content, and put to the run's
approver. A deferral cannot wait (the server is waiting inside its call), so only an approval
sends it; anything else is refused to the server with the reason. The answer's tokens count
against the run's budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from io_tui.core.approvals import ApprovalRequest, DecisionKind
from io_tui.core.events import EventKind
from io_tui.core.policy import Act, Effect
from io_tui.core.providers.base import CompletionRequest, Message, complete
from io_tui.core.tools.base import ToolError


@dataclass(frozen=True, slots=True)
class SamplingAsk:
    """What a server asked the model: its messages as (role, text), a system prompt, a limit."""

    server: str
    target: str  # what the policy checks: ``mcp__<server>__sampling``
    messages: tuple[tuple[str, str], ...]
    system_prompt: str | None = None
    max_tokens: int | None = None

    def text(self) -> str:
        """The request as the operator reads it in the approval."""
        head = f"MCP server '{self.server}' asks the model"
        limit = f" (at most {self.max_tokens:,} tokens)" if self.max_tokens else ""
        lines = [head + limit + ":"]
        if self.system_prompt:
            lines.append(f"[system] {self.system_prompt}")
        lines += [f"[{role}] {text}" for role, text in self.messages]
        return "\n".join(lines)


async def answer_sampling(state: Any, step: int, call_id: str, ask: SamplingAsk) -> str:
    """The model's answer to ``ask`` once the policy and the operator allow it; ToolError (the
    server is told why) otherwise. ``state`` is the asking run's ``RunState``."""
    verdict = state.policy.explain(Act.EXEC, ask.target)
    if verdict.effect is Effect.DENY:
        raise ToolError(f"refused by policy ({verdict.rule_text}, layer {verdict.layer})")
    if verdict.effect is Effect.ASK:
        request = await state.store.approvals.create(
            ApprovalRequest(
                id=0,
                run_id=state.run_id,
                step=step,
                call_id=f"{call_id}:sampling",
                tool=ask.target,
                arguments={"messages": [list(m) for m in ask.messages],
                           "system_prompt": ask.system_prompt, "max_tokens": ask.max_tokens},
                act=Act.EXEC,
                target=ask.target,
                content=ask.text(),
                rule=verdict.rule_text,
                layer=verdict.layer,
                workspace=str(state.workspace.root),
            )
        )  # fmt: skip
        state.publish(
            EventKind.APPROVAL_REQUESTED,
            {"approval_id": request.id, "act": Act.EXEC.value, "target": ask.target,
             "rule": verdict.rule_text, "layer": verdict.layer},
        )  # fmt: skip
        decision = await state.harness.approver.decide(request)
        await state.store.approvals.record_decision(request.id, decision)
        state.publish(
            EventKind.APPROVAL_DECIDED,
            {"approval_id": request.id, "decision": decision.kind.value, "reason": decision.reason},
        )
        if decision.kind not in (DecisionKind.APPROVE, DecisionKind.REMEMBER):
            reason = decision.reason or "no reason given"
            raise ToolError(f"the operator did not approve the sampling request: {reason}")
        await state.store.approvals.record_performed(request.id, {"performed": True})
    messages = [Message("system", ask.system_prompt)] if ask.system_prompt else []
    messages += [Message("assistant" if r == "assistant" else "user", t) for r, t in ask.messages]
    response = await complete(
        state.harness.provider,
        CompletionRequest(messages=tuple(messages), max_output_tokens=ask.max_tokens),
    )
    if response.usage:
        state.charge(response.usage.prompt_tokens + response.usage.completion_tokens)
    return response.text
