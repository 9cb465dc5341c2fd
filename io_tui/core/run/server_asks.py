"""An MCP server's requests in the middle of one of its tool calls, asked of the run whose call
it is and answered (``answer_server``), as ``ToolContext.sample`` hands them over:

- sampling (``mcp.sampling.SamplingAsk``): answered through the run's own provider only after
  the operator approves it; its request is kept in the run's trace (``purpose: sampling``) and
  its tokens count against the run's budget;
- elicitation (``mcp.elicitation.ElicitAsk``): a form the operator fills, declines or cancels.

Each is the one ask (``ask.ask``) as ``exec`` on ``mcp__<server>__sampling`` (or
``__elicitation``), persisted with the server's request as its content. It cannot wait (the
server waits inside its call): a deferral, no answer within what is left of the server's
``call_timeout_s`` (``wait_s``), or the call ending while its request waits is recorded, never
left pending, and the server is told. A request left pending by a process that died is decided
(``expire_server_asks``) once nobody can answer it.
"""

from __future__ import annotations

from typing import Any, Protocol

from io_tui.core.authority.approvals import APPROVING, Decision, DecisionKind
from io_tui.core.authority.policy import Act
from io_tui.core.mcp.asks import is_server_ask
from io_tui.core.mcp.elicitation import ELICITATION, ElicitAnswer, ElicitAsk
from io_tui.core.mcp.sampling import SAMPLING, SamplingAsk
from io_tui.core.providers.base import CompletionRequest, complete
from io_tui.core.providers.messages import Message
from io_tui.core.run.ask import AskingRun, Question, ask
from io_tui.core.store import Store
from io_tui.core.store.requests import RequestRecord
from io_tui.core.tokens import estimate_tokens
from io_tui.core.tools.base import ToolError

ENDED_WITH_PROCESS = "io-tui (the call that asked ended with its process)"


class ServingRun(AskingRun, Protocol):
    """What answering a server needs of its run (``RunState`` is one): an ask's needs, and
    tokens charged to its budget (a sampling's)."""

    def charge(self, tokens: int) -> None: ...


async def answer_server(
    run: ServingRun, step: int, call_id: str, asked: SamplingAsk | ElicitAsk
) -> str | ElicitAnswer:
    """The answer to a server's request made during the call ``call_id`` of ``step``."""
    if isinstance(asked, SamplingAsk):
        return await answer_sampling(run, step, call_id, asked)
    return await answer_elicitation(run, step, call_id, asked)


async def answer_sampling(run: ServingRun, step: int, call_id: str, sampling: SamplingAsk) -> str:
    """The model's answer to ``sampling`` once the policy and the operator allow it; ToolError
    (the server is told why) otherwise."""
    arguments: dict[str, Any] = {
        "messages": [list(m) for m in sampling.messages],
        "system_prompt": sampling.system_prompt,
        "max_tokens": sampling.max_tokens,
    }
    target = sampling.target
    question = Question(
        step, f"{call_id}:{SAMPLING}", target, arguments, Act.EXEC, target, sampling.text()
    )
    asked = await ask(run, question, can_wait=False, wait_s=sampling.wait_s)
    decision, approval_id = asked.decision, asked.approval_id
    if decision.kind not in APPROVING:
        if approval_id is None:  # the policy refused it
            raise ToolError(decision.reason or "refused by policy")
        reason = decision.reason or (
            "deferred, and a sampling request cannot wait"
            if decision.kind is DecisionKind.DEFER
            else "no reason given"
        )
        await run.store.approvals.record_performed(approval_id, {"performed": False})
        raise ToolError(f"the operator did not approve the sampling request: {reason}")
    if approval_id is not None:
        await run.store.approvals.record_performed(approval_id, {"performed": True})
    messages = [Message("system", sampling.system_prompt)] if sampling.system_prompt else []
    messages += [
        Message("assistant" if role == "assistant" else "user", text)
        for role, text in sampling.messages
    ]
    request = CompletionRequest(messages=tuple(messages), max_output_tokens=sampling.max_tokens)
    response = await complete(run.harness.provider, request)
    usage = response.usage
    if usage:
        run.charge(usage.prompt_tokens + usage.completion_tokens)
    await run.store.runs.add_request(
        run.run_id,
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
            manifest={"sampling": {"server": sampling.server, "call_id": call_id,
                                   "approval_id": approval_id}},
            attempts=[a.to_json() for a in response.attempts],
            provider=response.provider,
            model=response.model,
        ),
        fence=run.fence,
    )  # fmt: skip
    return response.text


async def answer_elicitation(
    run: AskingRun, step: int, call_id: str, form: ElicitAsk
) -> ElicitAnswer:
    """The operator's answer to ``form`` (a policy allow cannot fill it), recorded with its
    request."""
    arguments: dict[str, Any] = {"message": form.message, "requested_schema": form.schema}
    target = form.target
    question = Question(
        step, f"{call_id}:{ELICITATION}", target, arguments, Act.EXEC, target, form.text()
    )
    asked = await ask(run, question, policy_may_allow=False, can_wait=False, wait_s=form.wait_s)
    answer = form.answer_for(asked.decision)
    if asked.approval_id is not None:
        await run.store.approvals.record_performed(
            asked.approval_id,
            {"performed": answer.action == "accept", "action": answer.action,
             "content": answer.content, "reason": answer.reason or None},
        )  # fmt: skip
    return answer


async def expire_server_asks(store: Store, run_id: int) -> list[int]:
    """Decide (a defer saying why) the server requests of ``run_id`` still pending when no
    process drives the run: the calls that asked ended with the process that made them, so
    no answer can reach them, and each would otherwise wait in every inbox for ever. Returns
    their ids."""
    ended = Decision.defer(decided_by=ENDED_WITH_PROCESS)
    waiting = [
        r.request.id
        for r in await store.approvals.for_run(run_id)
        if r.status == "pending" and is_server_ask(r.request)
    ]
    return [id_ for id_ in waiting if await store.approvals.record_decision(id_, ended)]
