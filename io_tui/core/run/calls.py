"""One tool call, from the model's arguments to a recorded observation.

validate → gate → the ask (``ask.py``: the policy, else the operator) → intent → perform →
bound. The same ``apply_decision`` path serves a live decision and one made later, after a
restart. Every call is written to the store as an intent (its exact arguments, the approval
that allowed it) before it executes; the step commit of its observation closes the intent. A
call that only reads is run again by a resumed run either way, so its intent is written with
its observation instead (``store/intents.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from io_tui.core import telemetry
from io_tui.core.authority.approvals import ApprovalRequest, Decision, DecisionKind
from io_tui.core.authority.policy import Act, Effect, Rule, Verdict
from io_tui.core.boundary.untrusted import frame
from io_tui.core.context.stubs import rest_hint
from io_tui.core.errors import ServerError, WorkspaceError
from io_tui.core.events import EventKind
from io_tui.core.hooks.moments import HOOK_LAYER
from io_tui.core.ledger import Observation, ObsKind, bound_text
from io_tui.core.providers.messages import ToolCall
from io_tui.core.run.ask import AskingRun, Question, ask, put_to_operator, take_decision
from io_tui.core.store.intents import Intent
from io_tui.core.tools.base import Gate, Tool, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.registry import ToolRegistry


@dataclass
class CallResult:
    """What one call produced: an observation and its full text, or a deferral."""

    observation: Observation | None
    full_text: str = ""
    deferred_approval: int | None = None
    denied: bool = False
    decision: dict[str, Any] = field(default_factory=dict)
    closes_intent: tuple[int, str] | None = None  # an operator's reconciliation (id, status)
    intent: Intent | None = None  # a call that only reads: its intent, committed with it


@dataclass
class CallRunner:
    """Carries out the calls of one run (``state``: its store, policy, approver, events) with the
    tools of ``registry``, each in the context ``make_context`` gives its step."""

    state: AskingRun
    registry: ToolRegistry
    make_context: Callable[[int], ToolContext]

    async def run(self, call: ToolCall, step: int) -> CallResult:
        ctx = self.make_context(step)
        self.state.publish(
            EventKind.TOOL_CALLED,
            {"call_id": call.id, "name": call.name, "arguments": call.arguments},
        )
        try:
            tool, args, gate = await self._prepare(call, ctx)
        except ToolError as exc:
            return self._error(call, step, str(exc), ctx.cap_chars)
        hooks = self.state.hooks
        said = None
        if hooks is not None and hooks.has("PreToolUse"):
            said = await hooks.pre_tool_use(call.name, call.arguments, call.id)
        told = f"The PreToolUse hook `{said.command}` said: {said.reason}\n" if said else ""
        if gate is None:
            if said is not None and said.effect is Effect.DENY:
                verdict = Verdict(Act.EXEC, call.name, Effect.DENY,
                                  Rule(Act.EXEC, Effect.DENY, call.name), HOOK_LAYER)  # fmt: skip
                return self._refused(call, step, verdict, ctx.cap_chars, prefix=told)
            return await self._perform(call, step, tool, args, ctx)
        question = Question(
            step, call.id, call.name, call.arguments, gate.act, gate.target, gate.content
        )
        # the hooks' decision is a policy layer of its own for this call (``core/hooks``)
        policy = self.state.policy.with_layer(said.layer(gate.act, gate.target)) if said else None
        asked = await ask(self.state, question, policy=policy)
        if asked.request is not None:
            return await self._carry_out(asked.request, asked.decision)
        if asked.decision.kind is DecisionKind.DENY:
            hooked = told if asked.verdict.layer == HOOK_LAYER else ""
            return self._refused(call, step, asked.verdict, ctx.cap_chars, prefix=hooked)
        return await self._perform(call, step, tool, args, ctx, gate=gate)

    async def ask_again(self, request: ApprovalRequest) -> CallResult:
        """A request still pending when its run resumes, put to the operator again."""
        return await self._carry_out(request, await put_to_operator(self.state, request))

    async def decided(self, request: ApprovalRequest, decision: Decision) -> CallResult:
        """A request decided while its run was paused: the decision taken, then carried out."""
        await take_decision(self.state, request, decision)
        return await self.apply_decision(request, decision)

    async def _carry_out(self, request: ApprovalRequest, decision: Decision) -> CallResult:
        if decision.kind is DecisionKind.DEFER:
            return CallResult(None, deferred_approval=request.id)
        return await self.apply_decision(request, decision)

    async def apply_decision(self, request: ApprovalRequest, decision: Decision) -> CallResult:
        """Carry out a human decision taken on a persisted request (``ask.take_decision``:
        announced, its rule remembered), re-checking the policy first."""
        step = request.step
        ctx = self.make_context(step)
        call = ToolCall(request.call_id, request.tool, request.arguments)
        if decision.kind is DecisionKind.DENY:
            reason = decision.reason or "no reason given"
            text = f"The operator denied {request.act.value} {request.target}: {reason}. Adapt your approach."
            await self.state.store.approvals.record_performed(request.id, {"performed": False})
            result = self._error(call, step, text, ctx.cap_chars, target=request.target)
            result.denied = True
            return result
        arguments = request.arguments
        note = ""
        if decision.kind is DecisionKind.REWRITE and decision.arguments is not None:
            arguments = decision.arguments
            note = (
                f"The operator rewrote your {request.tool} call. Performed with arguments "
                f"{json.dumps(arguments)} instead of {json.dumps(request.arguments)}.\n"
            )
        try:
            tool = self.registry.get(request.tool)
            args = tool.parse(arguments)
            gate = await tool.gate(args, ctx)
        except ToolError as exc:
            await self.state.store.approvals.record_performed(
                request.id, {"performed": False, "error": str(exc)}
            )
            return self._error(
                call, step, f"{note}The approved action is no longer valid: {exc}", ctx.cap_chars,
                target=request.target,
            )  # fmt: skip
        if gate is not None:
            verdict = self.state.policy.explain(gate.act, gate.target)
            if verdict.effect is Effect.DENY:
                await self.state.store.approvals.record_performed(
                    request.id, {"performed": False, "refused_by": verdict.explain()}
                )
                return self._refused(call, step, verdict, ctx.cap_chars, prefix=note)
            if decision.kind is not DecisionKind.REWRITE and gate.content != request.content:
                # The file changed under a paused write: perform exactly the persisted bytes.
                tool, args = self._persisted_write(request)
                note += (
                    "The file changed after you proposed this; the approved bytes were written.\n"
                )
        result = await self._perform(
            call, step, tool, args, ctx, note=note, gate=gate, approval_id=request.id
        )
        await self.state.store.approvals.record_performed(
            request.id,
            {
                "performed": True,
                "arguments": arguments,
                "error": bool(result.observation and result.observation.is_error),
            },
        )
        result.decision = {"approval_id": request.id, "decision": decision.kind.value}
        return result

    def _persisted_write(self, request: ApprovalRequest) -> tuple[Tool, Any]:
        tool = self.registry.get("write_file")
        return tool, tool.parse({"path": request.target, "content": request.content})

    async def _prepare(self, call: ToolCall, ctx: ToolContext) -> tuple[Tool, Any, Gate | None]:
        if call.arguments_error:
            raise ToolError(
                f"arguments for {call.name} were not valid JSON: {call.arguments_error}"
            )
        tool = self.registry.get(call.name)
        args = tool.parse(call.arguments)
        return tool, args, await tool.gate(args, ctx)

    async def _perform(
        self,
        call: ToolCall,
        step: int,
        tool: Tool,
        args: Any,
        ctx: ToolContext,
        note: str = "",
        *,
        gate: Gate | None = None,
        approval_id: int | None = None,
    ) -> CallResult:
        intent = Intent(
            self.state.run_id,
            step,
            call.id,
            call.name,
            call.arguments,
            gate.act.value if gate else "",
            gate.target if gate else "",
            approval_id,
            await _file_before(ctx, gate),
        )
        if tool.only_reads:  # its intent goes with its observation: re-run after a crash anyway
            result = await self._execute(call, step, tool, args, ctx, note, gate)
            result.intent = intent
            return result
        # written before it runs: in flight at a crash, it is reconciled
        await self.state.store.intents.begin(intent, fence=self.state.fence)
        return await self._execute(call, step, tool, args, ctx, note, gate)

    async def _execute(
        self,
        call: ToolCall,
        step: int,
        tool: Tool,
        args: Any,
        ctx: ToolContext,
        note: str,
        gate: Gate | None,
    ) -> CallResult:
        await self.state.keep_lease()  # stopped since the intent? then not without the lease
        started = time.time_ns()  # the clock of file mtimes: a change is put down to this run
        try:
            outcome = framed(call.name, await tool.run(args, replace(ctx, call_id=call.id)))
        except ServerError as exc:
            return self._observe(call, step, server_failed(call, exc, gate, note), ctx.cap_chars)
        except ToolError as exc:
            target = gate.target if gate else ""
            return self._error(call, step, note + str(exc), ctx.cap_chars, target=target)
        result = self._observe(call, step, outcome, ctx.cap_chars, note, (started, time.time_ns()))
        hooks = self.state.hooks
        if hooks is not None and hooks.has("PostToolUse"):
            said = await hooks.post_tool_use(
                call.name, call.arguments, call.id, result.full_text, outcome.is_error
            )
            if said:  # the model reads it with its next request
                await self.state.store.runs.add_operator_message(
                    self.state.run_id, f"PostToolUse hook on {call.name} ({call.id}): {said}"
                )
        return result

    def _observe(
        self,
        call: ToolCall,
        step: int,
        outcome: ToolOutcome,
        cap: int,
        note: str = "",
        ran_ns: tuple[int, int] = (0, 0),
    ) -> CallResult:
        full = note + outcome.text
        obs = Observation(
            step=step,
            call_id=call.id,
            tool=call.name,
            kind=outcome.kind,
            target=outcome.target,
            text=bound_text(full, cap, rest_hint(call.id, len(full), cap)),
            span=outcome.span,
            full_chars=len(full),
            is_error=outcome.is_error,
            seen=outcome.seen,
            ran_ns=ran_ns,
        )
        telemetry.tool_result(self.state.run_id, call.id, full)
        self.state.publish(
            EventKind.OBSERVATION,
            {
                "call_id": call.id,
                "name": call.name,
                "kind": obs.kind.value,
                "target": obs.target,
                "chars": obs.full_chars,
                "is_error": obs.is_error,
            },
        )
        return CallResult(obs, full)

    def noted(self, call: ToolCall, step: int, text: str, *, is_error: bool) -> CallResult:
        """An observation the harness writes for a call it does not run (a reconciled one)."""
        kind = ObsKind.ERROR if is_error else ObsKind.MESSAGE
        outcome = ToolOutcome(text=text, kind=kind, target=call.name, is_error=is_error)
        return self._observe(call, step, outcome, self.make_context(step).cap_chars)

    def _error(
        self, call: ToolCall, step: int, message: str, cap: int, target: str = ""
    ) -> CallResult:
        """A failed or refused call's observation. ``target``: what it acted on, when known (the
        path or command a refusal names, which its stub and the inspector show); else the tool."""
        outcome = ToolOutcome(
            text=message, kind=ObsKind.ERROR, target=target or call.name, is_error=True
        )
        return self._observe(call, step, outcome, cap)

    def _refused(
        self, call: ToolCall, step: int, verdict: Verdict, cap: int, prefix: str = ""
    ) -> CallResult:
        self.state.publish(
            EventKind.TOOL_REFUSED,
            {
                "call_id": call.id,
                "act": verdict.act.value,
                "target": verdict.target,
                "rule": verdict.rule_text,
                "layer": verdict.layer,
            },
        )
        text = (
            f"{prefix}Refused by policy: {verdict.act.value} {verdict.target} is denied by rule "
            f"'{verdict.rule_text}' in layer '{verdict.layer}'. Do not retry it; choose another way."
        )
        result = self._error(call, step, text, cap, target=verdict.target)
        result.denied = True
        return result


BEFORE_MAX_BYTES = 256_000  # a write's file kept in its intent up to this size


async def _file_before(ctx: ToolContext, gate: Gate | None) -> dict[str, Any] | None:
    """What a write's file holds before it: the reconciliation's diff after a crash."""
    if gate is None or gate.act is not Act.WRITE:
        return None
    return await asyncio.to_thread(_before, ctx, gate.target)


def _before(ctx: ToolContext, path: str) -> dict[str, Any]:
    text = ctx.workspace.current_text(path, max_bytes=BEFORE_MAX_BYTES)
    try:
        exists = ctx.workspace.resolve(path).exists()
    except (WorkspaceError, OSError):
        exists = False
    return {"exists": exists, "text": text}


def framed(tool: str, outcome: ToolOutcome) -> ToolOutcome:
    """``outcome`` headed with its source, as untrusted data (``untrusted.frame``), unless it
    is the receipt of a file write the harness made (``edited PATH: …``, ``created PATH (…)``):
    the harness's own words on the model's own call, runtime evidence (``context.labels``), not
    data from the world."""
    if outcome.kind is ObsKind.WRITE and not outcome.is_error:
        return outcome
    return replace(outcome, text=frame(tool, outcome.target, outcome.text, _names(outcome)))


def _names(outcome: ToolOutcome) -> bool:
    """Whether the result's first line names its target already: a command's ``$ argv``."""
    head = outcome.text.partition("\n")[0]
    return outcome.kind is ObsKind.EXEC and head == f"$ {outcome.target}"


def server_failed(call: ToolCall, exc: ServerError, gate: Gate | None, note: str) -> ToolOutcome:
    """A call an MCP server failed: the harness's sentence, then the server's words (its error
    text, its stderr) framed as data. The whole is the server's result: untrusted data on its
    authority (``context.labels``), whatever its words say."""
    quoted = frame(f"MCP server {exc.server}", "", exc.quoted) if exc.quoted else ""
    text = f"{note}{exc.said}:\n{quoted}" if quoted else f"{note}{exc.said}"
    target = gate.target if gate else call.name
    return ToolOutcome(text=text, kind=ObsKind.MCP, target=target, is_error=True)
