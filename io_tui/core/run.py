"""The run loop: assemble → ask the model → gate each tool call → record → commit → repeat.

A run is one asyncio task. It talks outward only through its EventSink and its Approver; the
store is the authority, so a run paused on a deferred approval resumes in any process from the
store alone (``resume_run``).

What a run is given lives in ``harness``; what changes while it goes (step, history, tokens,
events, committing a step) in ``run_state``; the model request path (context engine, working
completions, request records) in ``model_turn``. A sub-agent is a child run this loop starts
(``spawn``).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial
from typing import Any

from io_tui.core.calls import CallResult, CallRunner
from io_tui.core.contract import TaskContract, contract_from_json, contract_to_json
from io_tui.core.events import OPERATOR_CANCEL, EventKind
from io_tui.core.harness import CHILD_DEFAULT_STEPS, Harness
from io_tui.core.ledger import ObsKind
from io_tui.core.model_turn import ask_model, build_engine, request_tokens
from io_tui.core.outcome import Outcome, RunResult, status_for
from io_tui.core.providers.base import ErrorKind, ProviderError, ToolCall
from io_tui.core.run_state import RunState
from io_tui.core.store import RequestRecord
from io_tui.core.tools.base import SubTask, ToolOutcome
from io_tui.core.workspace import Workspace

VERIFY_TIMEOUT_S = 300


async def start_run(
    harness: Harness,
    contract: TaskContract,
    *,
    parent_run_id: int | None = None,
    seed_run_id: int | None = None,
) -> RunResult:
    """Create a run in the store and drive it to an outcome."""
    # raises WorkspaceError for a bad root
    workspace = Workspace(contract.workspace, env_allow=contract.env_allow)
    run_id = await harness.store.runs.create(
        goal=contract.goal,
        workspace=str(workspace.root),
        contract=contract_to_json(contract),
        provider=harness.provider.describe(),
        policy=harness.policy.to_json(),
        parent_run_id=parent_run_id,
        seed_run_id=seed_run_id,
    )
    run = Run(RunState(harness, contract, run_id, workspace, parent_run_id=parent_run_id))
    return await run.drive(resumed=False)


async def resume_run(harness: Harness, run_id: int) -> RunResult:
    """Continue a paused run under the same id, from the store alone."""
    row = await harness.store.runs.get(run_id)
    if row is None:
        raise ValueError(f"no run {run_id} in the store")
    contract = contract_from_json(row.contract)
    state = RunState(
        harness,
        contract,
        run_id,
        Workspace(contract.workspace, env_allow=contract.env_allow),
        parent_run_id=row.parent_run_id,
    )
    state.tokens = row.tokens
    return await Run(state).drive(resumed=True)


async def spawn(parent: RunState, task: SubTask) -> ToolOutcome:
    """Run a child to an outcome under the parent's policy narrowed by the task's rules, one
    level deeper; its tokens count against the parent's."""
    child = parent.harness.child(parent.policy, task.rules)
    contract = replace(
        parent.contract,
        goal=task.goal,
        verify=None,
        max_steps=task.max_steps or CHILD_DEFAULT_STEPS,
        token_budget=parent.remaining_tokens(),
    )
    result = await start_run(child, contract, parent_run_id=parent.run_id)
    parent.charge(result.tokens)
    history = await parent.store.runs.history(result.run_id)
    answer = next((r.text for r in reversed(history) if r.text), "(no answer)")
    text = (
        f"Sub-agent run {result.run_id} ended {result.outcome.value} after {result.steps} "
        f"steps ({result.tokens:,} tokens). Its final answer:\n{answer}"
    )
    failed = result.status != "finished"
    return ToolOutcome(text, ObsKind.AGENT, task.goal[:80], is_error=failed, data=result.to_json())


class Run:
    """Drives one run's ``RunState`` to an outcome."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.store = state.store
        self.contract = state.contract
        self.run_id = state.run_id
        self.last_step_denied = False
        self.verify_feedback_given = False
        self.failure: str | None = None  # why the loop ended failed, for the run's ``error``
        if state.harness.can_spawn:
            state.spawn = partial(spawn, state)

    # -- driving --

    async def drive(self, *, resumed: bool) -> RunResult:
        state = self.state
        try:
            state.history = await self.store.runs.history(self.run_id)
            state.step = state.history[-1].step if state.history else 0
            state.publish(
                EventKind.RUN_RESUMED if resumed else EventKind.RUN_STARTED,
                {
                    "goal": self.contract.goal,
                    "workspace": str(state.workspace.root),
                    "parent_run_id": state.parent_run_id,
                    "provider": state.harness.provider.name,
                    "model": state.harness.provider.model,
                },
            )
            if resumed:
                paused = await self._finish_paused_step()
                if paused is not None:
                    return await self._end(paused)
            outcome = await self._loop()
            return await self._end(outcome, error=self.failure)
        except asyncio.CancelledError as exc:
            # an operator's interrupt says so (``OPERATOR_CANCEL``); quitting the app does not
            reason = OPERATOR_CANCEL if OPERATOR_CANCEL in exc.args else None
            await asyncio.shield(self._end(Outcome.CANCELLED, error=reason))
            raise
        except Exception as exc:
            return await self._end(Outcome.FAILED, error=_one_line(exc))

    async def _end(self, outcome: Outcome, error: str | None = None) -> RunResult:
        state = self.state
        status = status_for(outcome)
        finished = state.record(
            EventKind.RUN_FINISHED, {"status": status, "outcome": outcome.value, "error": error}
        )
        await state.flush_events()
        await self.store.runs.set_status(
            self.run_id,
            status,
            outcome.value,
            error=error,
            provider=state.harness.provider.describe(),
        )
        state.announce(finished)
        row = await self.store.runs.get(self.run_id)
        return RunResult(
            self.run_id,
            status,
            outcome,
            row.steps if row else state.step,
            row.tokens if row else state.tokens,
            error,
        )

    async def _loop(self) -> Outcome:
        state = self.state
        engine = await build_engine(state)
        while True:
            if state.step >= self.contract.max_steps:
                return Outcome.STEP_CAP
            budget = self.contract.token_budget
            if budget is not None and state.tokens >= budget:
                return Outcome.TOKEN_BUDGET
            state.step += 1
            step = state.step
            operator_messages = tuple(
                await self.store.runs.take_operator_messages(self.run_id, step)
            )
            for text in operator_messages:
                state.publish(EventKind.OPERATOR_MESSAGE, {"text": text})
            requests: list[RequestRecord] = []
            try:
                response = await ask_model(state, engine, operator_messages, requests)
            except ProviderError as exc:
                self.failure = str(exc)
                await state.commit_step(
                    step,
                    decision={"error": str(exc)},
                    requests=requests,
                    operator_messages=operator_messages,
                )
                return (
                    Outcome.CONTEXT_OVERFLOW
                    if exc.kind is ErrorKind.CONTEXT_OVERFLOW
                    else Outcome.FAILED
                )
            tokens = sum(request_tokens(r) for r in requests)
            state.tokens += tokens
            calls = response.tool_calls
            if not calls:
                await state.commit_step(
                    step,
                    decision={"final": True},
                    text=response.text,
                    requests=requests,
                    operator_messages=operator_messages,
                    tokens=tokens,
                )
                outcome = await self._after_model_stopped()
                if outcome is not None:
                    return outcome
                continue
            results, deferred = await self._run_calls(calls, step)
            decision: dict[str, Any] = {}
            if deferred is not None:
                decision = {
                    "awaiting_approval": deferred,
                    "pending_calls": [c.id for c in calls[len(results) + 1 :]],
                }
            await state.commit_step(
                step,
                decision=decision,
                text=response.text,
                calls=calls,
                results=results,
                requests=requests,
                operator_messages=operator_messages,
                tokens=tokens,
            )
            if deferred is not None:
                return Outcome.AWAITING_APPROVAL
            self.last_step_denied = any(r.denied for r in results)

    async def _after_model_stopped(self) -> Outcome | None:
        """The model stopped calling tools: verify if the contract says how, else finish."""
        if not self.contract.verify:
            return Outcome.DENIED if self.last_step_denied else Outcome.FINISHED
        passed, output = await self._verify()
        if passed:
            return Outcome.SUCCESS
        step = self.state.step
        if self.verify_feedback_given or step >= self.contract.max_steps:
            self.failure = f"verification `{' '.join(self.contract.verify)}` failed"
            return Outcome.FAILED if step < self.contract.max_steps else Outcome.STEP_CAP
        self.verify_feedback_given = True
        await self.store.runs.add_operator_message(
            self.run_id,
            f"Verification `{' '.join(self.contract.verify)}` failed; it must pass before the task "
            f"is done. Its output ends:\n{output[-1500:]}",
        )
        return None

    async def _verify(self) -> tuple[bool, str]:
        assert self.contract.verify
        result = await self.state.workspace.exec(list(self.contract.verify), VERIFY_TIMEOUT_S)
        passed = result.exit_code == 0 and not result.timed_out
        self.state.publish(
            EventKind.VERIFY,
            {
                "argv": list(self.contract.verify),
                "exit_code": result.exit_code,
                "passed": passed,
                "output_tail": result.output[-2000:],
            },
        )
        await self.state.flush_events()
        return passed, result.output

    # -- tools --

    async def _call_runner(self) -> CallRunner:
        state = self.state

        async def on_asking(asking: bool) -> None:
            await state.flush_events()
            await self.store.runs.set_status(self.run_id, "asking" if asking else "running")

        layer = await self.store.rules.layer_for(
            workspace=str(state.workspace.root), run_id=self.run_id
        )
        state.policy = state.policy.with_layer(layer)
        return CallRunner(
            store=self.store,
            registry=state.registry,
            approver=state.harness.approver,
            policy=state.policy,
            run_id=self.run_id,
            workspace=str(state.workspace.root),
            emit=state.publish,
            make_context=state.tool_context,
            on_asking=on_asking,
        )

    async def _run_calls(
        self, calls: tuple[ToolCall, ...], step: int
    ) -> tuple[list[CallResult], int | None]:
        runner = await self._call_runner()
        results: list[CallResult] = []
        for call in calls:
            result = await runner.run(call, step)
            if result.deferred_approval is not None:
                return results, result.deferred_approval
            results.append(result)
        return results, None

    async def _finish_paused_step(self) -> Outcome | None:
        """On resume: carry out the decided approval of the paused step, then its other calls."""
        state = self.state
        if not state.history:
            return None
        rows = await self.store.trace.steps(self.run_id)
        decision = rows[-1].decision if rows else {}
        approval_id = decision.get("awaiting_approval")
        if approval_id is None:
            return None
        record = await self.store.approvals.get(approval_id)
        if record is None or record.decision is None:
            return Outcome.AWAITING_APPROVAL
        last = state.history[-1]
        runner = await self._call_runner()
        results = [await runner.apply_decision(record.request, record.decision)]
        pending = [c for c in last.tool_calls if c.id in set(decision.get("pending_calls", []))]
        deferred = None
        still_pending: list[str] = []
        for position, call in enumerate(pending):
            result = await runner.run(call, last.step)
            if result.deferred_approval is not None:
                deferred = result.deferred_approval
                still_pending = [c.id for c in pending[position + 1 :]]
                break
            results.append(result)
        new_decision: dict[str, Any] = {
            "awaiting_approval": deferred,
            "resolved_approval": approval_id,
            "pending_calls": still_pending,
        }
        await state.commit_step(
            last.step,
            decision=new_decision,
            text=last.text,
            calls=last.tool_calls,
            results=results,
            update=True,
        )
        if deferred is not None:
            return Outcome.AWAITING_APPROVAL
        self.last_step_denied = any(r.denied for r in results)
        return None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
