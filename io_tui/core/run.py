"""The run loop: assemble → ask the model → gate each tool call → record → commit → repeat.

A run is one asyncio task. It talks outward only through its EventSink and its Approver; the
store is the authority, so a run paused on a deferred approval resumes in any process from the
store alone (``resume_run``).

The model request path (context engine, working completions, request records) lives in
``model_turn``; committing a step in ``step_commit``; spawning sub-agents in ``subagents``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from io_tui.core.approvals import Approver
from io_tui.core.calls import CallResult, CallRunner
from io_tui.core.context import ManifestEntry
from io_tui.core.contract import (
    TaskContract,
    contract_from_json,
    contract_to_json,
    entry_cap_chars,
)
from io_tui.core.events import OPERATOR_CANCEL, EventKind, EventSink, NullSink, RunEvent
from io_tui.core.ledger import StepRecord
from io_tui.core.model_turn import ask_model, build_engine, remaining_tokens, request_tokens
from io_tui.core.outcome import Outcome, RunResult, status_for
from io_tui.core.policy import Policy
from io_tui.core.providers.base import (
    ErrorKind,
    Message,
    Provider,
    ProviderError,
    ToolCall,
    ToolSpec,
)
from io_tui.core.step_commit import commit_step
from io_tui.core.store import RequestRecord, Store
from io_tui.core.store.encoded import ListEncoder
from io_tui.core.subagents import MAX_AGENT_DEPTH, spawn
from io_tui.core.tokens import Calibration
from io_tui.core.tools.agent import SpawnAgent
from io_tui.core.tools.base import ToolContext
from io_tui.core.tools.memory_tools import Forget, Remember
from io_tui.core.tools.registry import ToolRegistry, default_registry
from io_tui.core.workspace import Workspace

SYSTEM_PROMPT = """You are a careful coding agent working inside one workspace directory.
Use the tools to inspect and change files and to run commands; paths are relative to the
workspace root. Read before you edit, keep changes minimal, and run the project's checks.
Tool results may be shortened: a marker says what was left out and how to get it back.
Some actions need a human's approval; a refusal or denial says why, so adapt instead of retrying.
When the task is done, reply with a short summary and no tool calls."""

VERIFY_TIMEOUT_S = 300


@dataclass
class Harness:
    """Everything a run needs besides its contract."""

    store: Store
    provider: Provider
    approver: Approver
    sink: EventSink = field(default_factory=NullSink)
    registry: ToolRegistry = field(default_factory=lambda: harness_registry())
    policy: Policy = field(default_factory=Policy)
    system_prompt: str = SYSTEM_PROMPT
    depth: int = 0  # 0 for a top-level run; a sub-agent's harness is one deeper


def harness_registry() -> ToolRegistry:
    """The built-in tools of DESIGN §3.7; ``read_skill`` is added per run (skills vary)."""
    registry = default_registry()
    for tool in (Remember(), Forget(), SpawnAgent()):
        registry.register(tool)
    return registry


async def start_run(
    harness: Harness,
    contract: TaskContract,
    *,
    parent_run_id: int | None = None,
    seed_run_id: int | None = None,
) -> RunResult:
    """Create a run in the store and drive it to an outcome."""
    workspace = Workspace(contract.workspace)  # raises WorkspaceError for a bad root
    run_id = await harness.store.runs.create(
        goal=contract.goal,
        workspace=str(workspace.root),
        contract=contract_to_json(contract),
        provider=harness.provider.describe(),
        policy=harness.policy.to_json(),
        parent_run_id=parent_run_id,
        seed_run_id=seed_run_id,
    )
    run = Run(harness, contract, run_id, workspace, parent_run_id=parent_run_id)
    return await run.drive(resumed=False)


async def resume_run(harness: Harness, run_id: int) -> RunResult:
    """Continue a paused run under the same id, from the store alone."""
    row = await harness.store.runs.get(run_id)
    if row is None:
        raise ValueError(f"no run {run_id} in the store")
    contract = contract_from_json(row.contract)
    run = Run(
        harness, contract, run_id, Workspace(contract.workspace), parent_run_id=row.parent_run_id
    )
    run.tokens = row.tokens
    return await run.drive(resumed=True)


class Run:
    def __init__(
        self,
        harness: Harness,
        contract: TaskContract,
        run_id: int,
        workspace: Workspace,
        *,
        parent_run_id: int | None = None,
    ) -> None:
        self.parent_run_id = parent_run_id
        self.h = harness
        self.store = harness.store
        self.contract = contract
        self.run_id = run_id
        self.workspace = workspace
        self.tokens = 0
        self.history: list[StepRecord] = []
        self.pending_events: list[RunEvent] = []
        self.step = 0
        self.last_step_denied = False
        self.verify_feedback_given = False
        self.extra_tokens = 0  # spent this step outside its working request: summaries, sub-agents
        self.registry = ToolRegistry(self.h.registry)  # plus read_skill, once skills are found
        self.system_prompt = self.h.system_prompt
        self.tool_specs: tuple[ToolSpec, ...] | None = None  # built once per run (pydantic)
        self.calibration = Calibration()  # the estimate's drift per provider+model (tokens.py)
        # consecutive requests share most messages and manifest entries: each is encoded once
        self.messages_json = ListEncoder(Message.to_json)
        self.entries_json = ListEncoder(ManifestEntry.to_json)

    # -- events --

    def emit(self, kind: EventKind, detail: dict[str, Any] | None = None) -> None:
        event = RunEvent(self.run_id, self.step, kind, detail or {})
        if kind is not EventKind.TEXT_DELTA:
            self.pending_events.append(event)
        self.h.sink.emit(event)

    def record(self, kind: EventKind, detail: dict[str, Any], step: int | None = None) -> RunEvent:
        """An event to persist now and announce only once it is stored (``announce``), so a
        view that reloads from the store on hearing it finds everything it announces."""
        event = RunEvent(self.run_id, self.step if step is None else step, kind, detail)
        self.pending_events.append(event)
        return event

    def announce(self, event: RunEvent) -> None:
        self.h.sink.emit(event)

    async def flush_events(self) -> None:
        events, self.pending_events = self.pending_events, []
        if events:
            await self.store.runs.add_events(events)

    # -- driving --

    async def drive(self, *, resumed: bool) -> RunResult:
        try:
            self.history = await self.store.runs.history(self.run_id)
            self.step = self.history[-1].step if self.history else 0
            self.emit(
                EventKind.RUN_RESUMED if resumed else EventKind.RUN_STARTED,
                {
                    "goal": self.contract.goal,
                    "workspace": str(self.workspace.root),
                    "parent_run_id": self.parent_run_id,
                    "provider": self.h.provider.name,
                    "model": self.h.provider.model,
                },
            )
            if resumed:
                paused = await self._finish_paused_step()
                if paused is not None:
                    return await self._end(paused)
            outcome = await self._loop()
            return await self._end(outcome)
        except asyncio.CancelledError as exc:
            # an operator's interrupt says so (``OPERATOR_CANCEL``); quitting the app does not
            reason = OPERATOR_CANCEL if OPERATOR_CANCEL in exc.args else None
            await asyncio.shield(self._end(Outcome.CANCELLED, error=reason))
            raise
        except Exception as exc:
            return await self._end(Outcome.FAILED, error=_one_line(exc))

    async def _end(self, outcome: Outcome, error: str | None = None) -> RunResult:
        status = status_for(outcome)
        finished = self.record(
            EventKind.RUN_FINISHED, {"status": status, "outcome": outcome.value, "error": error}
        )
        await self.flush_events()
        await self.store.runs.set_status(
            self.run_id, status, outcome.value, error=error, provider=self.h.provider.describe()
        )
        self.announce(finished)
        row = await self.store.runs.get(self.run_id)
        return RunResult(
            self.run_id,
            status,
            outcome,
            row.steps if row else self.step,
            row.tokens if row else self.tokens,
            error,
        )

    async def _loop(self) -> Outcome:
        engine = await build_engine(self)
        while True:
            if self.step >= self.contract.max_steps:
                return Outcome.STEP_CAP
            budget = self.contract.token_budget
            if budget is not None and self.tokens >= budget:
                return Outcome.TOKEN_BUDGET
            self.step += 1
            operator_messages = tuple(
                await self.store.runs.take_operator_messages(self.run_id, self.step)
            )
            for text in operator_messages:
                self.emit(EventKind.OPERATOR_MESSAGE, {"text": text})
            requests: list[RequestRecord] = []
            try:
                response = await ask_model(self, engine, operator_messages, requests)
            except ProviderError as exc:
                await commit_step(
                    self, self.step, "", (), [], requests, {"error": str(exc)}, operator_messages
                )
                return (
                    Outcome.CONTEXT_OVERFLOW
                    if exc.kind is ErrorKind.CONTEXT_OVERFLOW
                    else Outcome.FAILED
                )
            tokens = sum(request_tokens(r) for r in requests)
            self.tokens += tokens
            calls = response.tool_calls
            if not calls:
                await commit_step(
                    self,
                    self.step,
                    response.text,
                    (),
                    [],
                    requests,
                    {"final": True},
                    operator_messages,
                    tokens,
                )
                outcome = await self._after_model_stopped()
                if outcome is not None:
                    return outcome
                continue
            results, deferred = await self._run_calls(calls, self.step)
            decision: dict[str, Any] = {}
            if deferred is not None:
                decision = {
                    "awaiting_approval": deferred,
                    "pending_calls": [c.id for c in calls[len(results) + 1 :]],
                }
            await commit_step(
                self,
                self.step,
                response.text,
                calls,
                results,
                requests,
                decision,
                operator_messages,
                tokens,
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
        if self.verify_feedback_given or self.step >= self.contract.max_steps:
            return Outcome.FAILED if self.step < self.contract.max_steps else Outcome.STEP_CAP
        self.verify_feedback_given = True
        await self.store.runs.add_operator_message(
            self.run_id,
            f"Verification `{' '.join(self.contract.verify)}` failed; it must pass before the task "
            f"is done. Its output ends:\n{output[-1500:]}",
        )
        return None

    async def _verify(self) -> tuple[bool, str]:
        assert self.contract.verify
        result = await self.workspace.exec(list(self.contract.verify), VERIFY_TIMEOUT_S)
        passed = result.exit_code == 0 and not result.timed_out
        self.emit(
            EventKind.VERIFY,
            {
                "argv": list(self.contract.verify),
                "exit_code": result.exit_code,
                "passed": passed,
                "output_tail": result.output[-2000:],
            },
        )
        await self.flush_events()
        return passed, result.output

    # -- tools --

    async def _current_policy(self) -> Policy:
        layer = await self.store.rules.layer_for(
            workspace=str(self.workspace.root), run_id=self.run_id
        )
        return self.h.policy.with_layer(layer)

    def tool_context(self, step: int) -> ToolContext:
        ceiling = self.contract.context.ceiling(remaining_tokens(self))
        services: dict[str, Any] = {
            "memory_limits": self.contract.memory,
            "emit": lambda _kind, detail: self.emit(EventKind.MEMORY, detail),
            "policy": self.h.policy,
            "memory": self.store.memory,
        }
        if self.h.depth < MAX_AGENT_DEPTH:
            services["spawn"] = partial(spawn, self)
        return ToolContext(self.workspace, self.run_id, step, entry_cap_chars(ceiling), services)

    async def _call_runner(self) -> CallRunner:
        async def on_asking(asking: bool) -> None:
            await self.flush_events()
            await self.store.runs.set_status(self.run_id, "asking" if asking else "running")

        self.h.policy = await self._current_policy()
        return CallRunner(
            store=self.store,
            registry=self.registry,
            approver=self.h.approver,
            policy=self.h.policy,
            run_id=self.run_id,
            workspace=str(self.workspace.root),
            emit=self.emit,
            make_context=self.tool_context,
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
        if not self.history:
            return None
        rows = await self.store.trace.steps(self.run_id)
        decision = rows[-1].decision if rows else {}
        approval_id = decision.get("awaiting_approval")
        if approval_id is None:
            return None
        record = await self.store.approvals.get(approval_id)
        if record is None or record.decision is None:
            return Outcome.AWAITING_APPROVAL
        last = self.history[-1]
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
        await commit_step(
            self,
            last.step,
            last.text,
            last.tool_calls,
            results,
            [],
            new_decision,
            (),
            0,
            update=True,
        )
        if deferred is not None:
            return Outcome.AWAITING_APPROVAL
        self.last_step_denied = any(r.denied for r in results)
        return None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
