"""The run loop: assemble → ask the model → gate each tool call → record → commit → repeat.

A run is one asyncio task. It talks outward only through its EventSink and its Approver; the
store is the authority, so a run paused on a deferred approval resumes in any process from the
store alone (``resume_run``).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from io_tui.core.approvals import Approver
from io_tui.core.calls import CallResult, CallRunner
from io_tui.core.context import (
    Assembly,
    ContextEngine,
    Frame,
    InstructionFile,
    ManifestEntry,
    RefreshFailed,
    Summary,
)
from io_tui.core.contract import (
    TaskContract,
    contract_from_json,
    contract_to_json,
    entry_cap_chars,
    estimate_tokens,
)
from io_tui.core.events import EventKind, EventSink, NullSink, RunEvent
from io_tui.core.instructions import load_instructions, oversized
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.memory import MemoryNote
from io_tui.core.policy import Act, Effect, Layer, Policy
from io_tui.core.providers.base import (
    Completed,
    CompletionRequest,
    ErrorKind,
    Message,
    Provider,
    ProviderError,
    Response,
    TextDelta,
    ToolCall,
    ToolSpec,
)
from io_tui.core.skills import ReadSkill, catalogue, discover_async
from io_tui.core.store import RequestRecord, StepCommit, Store
from io_tui.core.store.encoded import ListEncoder, manifest_text
from io_tui.core.tools.agent import SpawnAgent, SpawnAgentArgs
from io_tui.core.tools.base import ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.memory_tools import Forget, Remember
from io_tui.core.tools.registry import ToolRegistry, default_registry
from io_tui.core.workspace import Workspace
from io_tui.paths import bundled_dir, config_dir

SYSTEM_PROMPT = """You are a careful coding agent working inside one workspace directory.
Use the tools to inspect and change files and to run commands; paths are relative to the
workspace root. Read before you edit, keep changes minimal, and run the project's checks.
Tool results may be shortened: a marker says what was left out and how to get it back.
Some actions need a human's approval; a refusal or denial says why, so adapt instead of retrying.
When the task is done, reply with a short summary and no tool calls."""

VERIFY_TIMEOUT_S = 300


class Outcome(StrEnum):
    SUCCESS = "success"
    FINISHED = "finished"
    STEP_CAP = "step_cap_reached"
    TOKEN_BUDGET = "token_budget_exhausted"
    DENIED = "denied"
    AWAITING_APPROVAL = "awaiting_approval"
    CANCELLED = "cancelled"
    FAILED = "failed"
    CONTEXT_OVERFLOW = "context_overflow"


_STATUS = {
    Outcome.AWAITING_APPROVAL: "paused",
    Outcome.CANCELLED: "cancelled",
    Outcome.FAILED: "failed",
    Outcome.CONTEXT_OVERFLOW: "failed",
}


def status_for(outcome: Outcome) -> str:
    return _STATUS.get(outcome, "finished")


@dataclass(frozen=True, slots=True)
class RunResult:
    run_id: int
    status: str
    outcome: Outcome
    steps: int
    tokens: int
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outcome": self.outcome.value,
            "steps": self.steps,
            "tokens": self.tokens,
            "error": self.error,
        }


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


MAX_AGENT_DEPTH = 2
CHILD_DEFAULT_STEPS = 8
NARROWING_LAYER = "spawn-narrowing"


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
        self._tool_specs: tuple[ToolSpec, ...] | None = None  # built once per run (pydantic)
        # consecutive requests share most messages and manifest entries: each is encoded once
        self._messages_json = ListEncoder(Message.to_json)
        self._entries_json = ListEncoder(ManifestEntry.to_json)

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
                },
            )
            if resumed:
                paused = await self._finish_paused_step()
                if paused is not None:
                    return await self._end(paused)
            outcome = await self._loop()
            return await self._end(outcome)
        except asyncio.CancelledError:
            await asyncio.shield(self._end(Outcome.CANCELLED))
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
        engine = await self._engine()
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
                response = await self._ask_model(engine, operator_messages, requests)
            except ProviderError as exc:
                await self._commit(
                    self.step, "", (), [], requests, {"error": str(exc)}, operator_messages
                )
                return (
                    Outcome.CONTEXT_OVERFLOW
                    if exc.kind is ErrorKind.CONTEXT_OVERFLOW
                    else Outcome.FAILED
                )
            tokens = sum(_request_tokens(r) for r in requests)
            self.tokens += tokens
            calls = response.tool_calls
            if not calls:
                await self._commit(
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
            await self._commit(
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

    # -- the model --

    async def _instructions(self) -> tuple[InstructionFile, ...]:
        """AGENTS.md / CLAUDE.md, carried whole; a warning event when one is oversized."""
        found = await load_instructions(self.workspace.root)
        ceiling = self.contract.context.ceiling(self._remaining_tokens())
        for warning in oversized(found, ceiling):
            self.emit(EventKind.WARNING, {"message": warning})
        return found

    async def _load_skills(self) -> None:
        skills = await discover_async(
            self.workspace.root, bundled=bundled_dir("skills"), user=config_dir() / "skills"
        )
        if skills:
            self.registry.register(ReadSkill(skills), replace=True)
            self.system_prompt = f"{self.h.system_prompt}\n\n{catalogue(skills)}"

    def _specs(self) -> tuple[ToolSpec, ...]:
        """The tools' schemas, generated once: the registry is fixed after skills load."""
        if self._tool_specs is None:
            self._tool_specs = self.registry.specs()
        return self._tool_specs

    async def _engine(self) -> ContextEngine:
        await self._load_skills()
        self._tool_specs = None
        frame = Frame(
            system_prompt=self.system_prompt,
            tools=self._specs(),
            contract=self.contract,
            instructions=await self._instructions(),
        )
        summaries = [Summary(s, t) for s, t in await self.store.runs.summaries(self.run_id)]

        async def on_summary(summary: Summary) -> None:
            await self.store.runs.add_summary(self.run_id, summary.through_step, summary.text)
            self.emit(
                EventKind.COMPACTED,
                {"through_step": summary.through_step, "chars": len(summary.text)},
            )

        return ContextEngine(
            frame,
            refresh=self._refresh,
            summarize=self._summarize,
            summaries=summaries,
            on_summary=on_summary,
        )

    async def _ask_model(
        self,
        engine: ContextEngine,
        operator_messages: tuple[str, ...],
        requests: list[RequestRecord],
    ) -> Response:
        """One working completion, with one forced fold and retry on context overflow.

        Every attempt, failed or not, is appended to ``requests`` for the step's commit.
        """
        ceiling = self.contract.context.ceiling(self._remaining_tokens())
        history = [*self.history, StepRecord(self.step, "", operator_messages=operator_messages)]
        notes = await self._memory_notes()
        for attempt in (1, 2):
            assembly = await engine.build(
                history, ceiling_tokens=ceiling, notes=notes, force_fold=attempt == 2
            )
            self.emit(
                EventKind.REQUEST_STARTED,
                {
                    "attempt": attempt,
                    "ceiling_tokens": ceiling,
                    "est_tokens": assembly.total_est_tokens,
                    "frame_tokens": assembly.frame_tokens,
                },
            )
            started = time.monotonic()
            try:
                response = await self._stream(assembly)
            except ProviderError as exc:
                requests.append(self._request_record(assembly, attempt, None, exc))
                self.emit(
                    EventKind.REQUEST_FAILED,
                    {"attempt": attempt, "error": str(exc), "kind": exc.kind.value},
                )
                if exc.kind is ErrorKind.CONTEXT_OVERFLOW and attempt == 1:
                    continue
                raise
            requests.append(self._request_record(assembly, attempt, response, None))
            await self._record_recall(assembly)
            self.emit(
                EventKind.REQUEST_FINISHED,
                {
                    "attempt": attempt,
                    "reported_tokens": response.usage.prompt_tokens if response.usage else None,
                    "est_tokens": assembly.total_est_tokens,
                    "latency_s": round(time.monotonic() - started, 3),
                    "tool_calls": len(response.tool_calls),
                },
            )
            return response
        raise AssertionError("unreachable")

    async def _stream(self, assembly: Assembly) -> Response:
        request = CompletionRequest(messages=assembly.messages, tools=self._specs())
        async for event in self.h.provider.stream(request):
            if isinstance(event, TextDelta):
                self.emit(EventKind.TEXT_DELTA, {"text": event.text})
            elif isinstance(event, Completed):
                return event.response
        raise ProviderError(ErrorKind.MALFORMED, "stream ended without a response")

    def _request_record(
        self,
        assembly: Assembly,
        attempt: int,
        response: Response | None,
        error: ProviderError | None,
    ) -> RequestRecord:
        usage = response.usage if response else None
        attempts = response.attempts if response else tuple(error.attempts if error else ())
        return RequestRecord(
            step=self.step,
            attempt=attempt,
            purpose="work",
            ceiling_tokens=assembly.ceiling_tokens,
            est_tokens=assembly.total_est_tokens,
            frame_tokens=assembly.frame_tokens,
            reported_tokens=usage.prompt_tokens if usage else None,
            usage=usage.to_json() if usage else None,
            messages=self._messages_json.encode(assembly.messages),
            manifest=manifest_text(
                assembly.manifest_head(), self._entries_json.encode(assembly.entries)
            ),
            attempts=[a.to_json() for a in attempts],
            provider=response.provider if response else self.h.provider.name,
            model=response.model if response else self.h.provider.model,
            error=str(error) if error else None,
        )

    def _remaining_tokens(self) -> int | None:
        budget = self.contract.token_budget
        return None if budget is None else max(0, budget - self.tokens)

    async def _summarize(self, request: CompletionRequest) -> str:
        started = time.monotonic()
        response: Response | None = None
        async for event in self.h.provider.stream(request):
            if isinstance(event, Completed):
                response = event.response
        if response is None:
            raise ProviderError(ErrorKind.MALFORMED, "summary stream ended without a response")
        usage = response.usage
        tokens = usage.total if usage else sum(estimate_tokens(m.content) for m in request.messages)
        self.tokens += tokens
        self.extra_tokens += tokens
        await self.store.runs.add_request(
            self.run_id,
            RequestRecord(
                step=self.step,
                attempt=0,
                purpose="summary",
                ceiling_tokens=0,
                est_tokens=sum(estimate_tokens(m.content) for m in request.messages),
                frame_tokens=0,
                reported_tokens=usage.prompt_tokens if usage else None,
                usage=usage.to_json() if usage else None,
                messages=[m.to_json() for m in request.messages],
                manifest={},
                attempts=[a.to_json() for a in response.attempts],
                provider=response.provider,
                model=response.model,
                error=None,
            ),
        )
        self.emit(
            EventKind.COMPACTED,
            {"summary_tokens": tokens, "latency_s": round(time.monotonic() - started, 3)},
        )
        return response.text

    async def _refresh(self, obs: Observation) -> str:
        """Re-read a stale read through the same policy and containment as any read."""
        verdict = self.h.policy.explain(Act.READ, obs.target)
        if verdict.effect is not Effect.ALLOW:
            raise RefreshFailed(
                f"policy says {verdict.effect.value} for read ({verdict.rule_text}, layer {verdict.layer})"
            )
        tool = self.registry.get("read_file")
        arguments: dict[str, Any] = {"path": obs.target}
        if obs.span.startswith("lines "):
            first, _, last = obs.span[6:].partition("-")
            arguments["offset"] = int(first)
            if last:
                arguments["limit"] = int(last) - int(first) + 1
        ctx = self._tool_context(self.step)
        try:
            outcome = await tool.run(tool.parse(arguments), ctx)
        except ToolError as exc:
            raise RefreshFailed(str(exc)) from None
        if outcome.is_error:
            raise RefreshFailed(outcome.text)
        return outcome.text

    # -- memory --

    async def _memory_notes(self) -> list[MemoryNote]:
        return await self.store.memory.notes_for(str(self.workspace.root))

    async def _record_recall(self, assembly: Assembly) -> None:
        if not assembly.memory_keys:
            return
        resolved = await self.store.memory.record_recall(
            self.run_id, self.step, None, list(assembly.memory_keys), str(self.workspace.root)
        )
        self.emit(
            EventKind.MEMORY,
            {"op": "recall", "keys": list(assembly.memory_keys), "resolved": resolved},
        )

    # -- tools --

    async def _current_policy(self) -> Policy:
        layer = await self.store.rules.layer_for(
            workspace=str(self.workspace.root), run_id=self.run_id
        )
        return self.h.policy.with_layer(layer)

    def _tool_context(self, step: int) -> ToolContext:
        ceiling = self.contract.context.ceiling(self._remaining_tokens())
        services: dict[str, Any] = {
            "memory_limits": self.contract.memory,
            "emit": lambda _kind, detail: self.emit(EventKind.MEMORY, detail),
            "policy": self.h.policy,
            "memory": self.store.memory,
        }
        if self.h.depth < MAX_AGENT_DEPTH:
            services["spawn"] = self._spawn
        return ToolContext(self.workspace, self.run_id, step, entry_cap_chars(ceiling), services)

    async def _spawn(self, args: SpawnAgentArgs) -> ToolOutcome:
        """Run a child to an outcome under a narrowed policy; its tokens count against ours."""
        narrowing = Layer(NARROWING_LAYER, tuple(r.rule() for r in args.rules))
        child = Harness(
            store=self.store,
            provider=self.h.provider,
            approver=self.h.approver,
            sink=self.h.sink,
            registry=self.h.registry,
            policy=self.h.policy.with_layer(narrowing),
            system_prompt=self.h.system_prompt,
            depth=self.h.depth + 1,
        )
        contract = replace(
            self.contract,
            goal=args.goal,
            verify=None,
            max_steps=args.max_steps or CHILD_DEFAULT_STEPS,
            token_budget=self._remaining_tokens(),
        )
        result = await start_run(child, contract, parent_run_id=self.run_id)
        self.tokens += result.tokens
        self.extra_tokens += result.tokens
        history = await self.store.runs.history(result.run_id)
        answer = next((r.text for r in reversed(history) if r.text), "(no answer)")
        text = (
            f"Sub-agent run {result.run_id} ended {result.outcome.value} after {result.steps} "
            f"steps ({result.tokens:,} tokens). Its final answer:\n{answer}"
        )
        failed = result.status != "finished"
        return ToolOutcome(
            text, ObsKind.AGENT, args.goal[:80], is_error=failed, data=result.to_json()
        )

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
            make_context=self._tool_context,
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
        rows = await self.store.runs.steps(self.run_id)
        decision = json.loads(rows[-1]["decision"]) if rows else {}
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
        await self._commit(
            last.step, last.text, last.tool_calls, results, [], new_decision, (), 0, update=True
        )
        if deferred is not None:
            return Outcome.AWAITING_APPROVAL
        self.last_step_denied = any(r.denied for r in results)
        return None

    async def _commit(
        self,
        step: int,
        text: str,
        calls: tuple[ToolCall, ...],
        results: list[CallResult],
        requests: list[RequestRecord],
        decision: dict[str, Any],
        operator_messages: tuple[str, ...] = (),
        tokens: int = 0,
        *,
        update: bool = False,
    ) -> None:
        observations = [(r.observation, r.full_text) for r in results if r.observation is not None]
        tokens, self.extra_tokens = tokens + self.extra_tokens, 0
        committed = self.record(
            EventKind.STEP_COMMITTED, {"tool_calls": len(calls), "tokens": tokens}, step
        )
        events, self.pending_events = self.pending_events, []
        await self.store.runs.commit_step(
            self.run_id,
            StepCommit(
                step,
                text,
                calls,
                decision,
                observations,
                requests,
                events,
                tokens,
                operator_messages,
            ),
            provider=self.h.provider.describe(),
        )
        self.announce(committed)
        new_obs = tuple(o for o, _ in observations)
        if update and self.history and self.history[-1].step == step:
            last = self.history[-1]
            self.history[-1] = StepRecord(
                step,
                last.text,
                last.tool_calls,
                last.observations + new_obs,
                last.operator_messages,
            )
        else:
            self.history.append(StepRecord(step, text, calls, new_obs, operator_messages))


def _request_tokens(request: RequestRecord) -> int:
    if request.usage:
        return int(request.usage.get("prompt_tokens", 0)) + int(
            request.usage.get("completion_tokens", 0)
        )
    return request.est_tokens


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
