"""The run loop: assemble → ask the model → gate each tool call → record → commit → repeat.

A run is one asyncio task. It talks outward only through its EventSink and its Approver; the
store is the authority, so a run paused on a deferred approval, or interrupted by its process
dying, resumes in any process from the store alone (``resume_run``). A step is committed as soon
as the model answers; each call is written as an intent before it executes (a call that only
reads: with its observation) and its observation committed after, so a resume continues from
the last committed call and reconciles the ones in flight (``reconcile``). The process driving
a run holds its lease and refreshes its heartbeat.

What a run is given lives in ``harness``; what changes while it goes (step, history, tokens,
events, committing a step) in ``run_state``; the model request path (context engine, working
completions, request records) in ``model_turn``. A sub-agent is a child run this loop starts
(``spawn``); a child that pauses or is interrupted stops its parent with it, on its call, and
the parent's resume hands the call to the same child again (``sub_agents``).

The lease fences the driver (``store/leases.py``): every write it makes checks that the run is
still its take, and a driver that finds otherwise (``LeaseLost``: it was stopped past its lease
and the run taken over) stops at once, writing nothing and performing no further call. A store
that cannot be written (unreachable past its retries, full) stops the run where it is:
resumable (``interrupted``), never ``failed``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.context.ladder import LadderExhausted
from io_tui.core.contract import TaskContract, contract_from_json, contract_to_json
from io_tui.core.events import HAND_BACK, LEASE_LOST, OPERATOR_CANCEL, READER_GONE, EventKind
from io_tui.core.hooks.moments import load_run_hooks
from io_tui.core.hooks.runner import HookRun
from io_tui.core.ledger import ObsKind
from io_tui.core.providers.base import ErrorKind, ProviderError
from io_tui.core.providers.messages import ToolCall
from io_tui.core.run.calls import CallResult, CallRunner
from io_tui.core.run.harness import CHILD_DEFAULT_STEPS, Harness
from io_tui.core.run.log_entry import append_run_log
from io_tui.core.run.model_turn import (
    ask_model,
    ask_pinned,
    build_engine,
    request_tokens,
    run_cache_key,
    truncated_note,
)
from io_tui.core.run.origin import RunOrigin
from io_tui.core.run.outcome import Outcome, RunResult, status_for
from io_tui.core.run.pinned import pinned_request
from io_tui.core.run.reconcile import (
    ReconcileChoice,
    ReconcileNeeded,
    Reconciler,
    RefuseReconcile,
    discard_unfinished,
    safe_to_repeat,
    what_is_known,
)
from io_tui.core.run.server_asks import expire_server_asks
from io_tui.core.run.state import RunState
from io_tui.core.run.sub_agents import ENDED, WAITING, child_of_call
from io_tui.core.store import LeaseLost, StoreDamaged, StoreError, StoreFull, StoreUnreachable
from io_tui.core.store.checkpoints import BEFORE, END, RESUMED
from io_tui.core.store.intents import IntentRow
from io_tui.core.store.leases import HEARTBEAT_S, OWNER, Fence, RunBusy
from io_tui.core.store.notes import recalled
from io_tui.core.store.requests import RequestRecord
from io_tui.core.store.runs import FIRST_EPOCH, RunRow
from io_tui.core.telemetry import Parent, RunTrace
from io_tui.core.tools.agent import SpawnAgent
from io_tui.core.tools.base import SubTask, ToolOutcome
from io_tui.core.tools.command import sandbox_status

VERIFY_TIMEOUT_S = 300
STOP_HOOK_TURNS = 3  # a Stop hook sends the model on at most this often in one run


async def start_run(
    harness: Harness,
    contract: TaskContract,
    *,
    parent_run_id: int | None = None,
    seed_run_id: int | None = None,
    on_created: Callable[[int], Awaitable[None]] | None = None,
    parent_trace: RunTrace | None = None,
) -> RunResult:
    """Create a run in the store and drive it to an outcome (``on_created``: told its id
    before it takes a step)."""
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
        origin=harness.origin.to_json() if harness.origin is not None else None,
    )
    state = RunState(harness, contract, run_id, workspace, parent_run_id=parent_run_id)
    state.hold(Fence(run_id, OWNER.id, FIRST_EPOCH))
    state.parent_trace = parent_trace
    if on_created is not None:
        await on_created(run_id)
    return await Run(state).drive(resumed=False)


async def resume_run(
    harness: Harness, run_id: int, reconciler: Reconciler | None = None, *, first: bool = False
) -> RunResult:
    """Continue a paused or interrupted run under the same id, from the store alone: take its
    lease (``RunBusy`` when a live process drives it), reconcile the calls in flight at a crash
    (``reconciler``; without one, such a run stays interrupted), then go on. ``first``: the row
    was queued and never driven (a worker's claim), so the run starts rather than resumes."""
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
    fresh_fork = await _as_fork(state, row)
    state.hold(await harness.store.leases.acquire(run_id))
    await expire_server_asks(harness.store, run_id)  # asked by calls that ended with a process
    return await Run(state, reconciler).drive(resumed=not (first or fresh_fork))


async def _as_fork(state: RunState, row: RunRow) -> bool:
    """A fork's requests carry the prompt-cache key of the request it left from; one that has
    not taken a step of its own yet sends that request first, as recorded (``run/pinned``).
    Whether ``row`` is such a fresh fork."""
    if row.forked_from is None or row.fork_step is None:
        return False
    pinned = await pinned_request(state.store, row)
    state.cache_key = pinned.cache_key or run_cache_key(str(state.store.path), row.forked_from)
    if row.steps >= row.fork_step:
        return False
    state.pinned = pinned
    return True


async def _origin(state: RunState) -> RunOrigin | None:
    row = await state.store.runs.get(state.run_id)
    return RunOrigin.from_json(row.origin) if row is not None else None


async def run_trace(state: RunState, origin: RunOrigin | None, *, resumed: bool) -> RunTrace:
    """Where the run sits in its distributed trace: a resume continues the trace its
    ``run_started`` recorded; a sub-agent takes its parent's trace; a new run nests under the
    span its origin names (a queued run's queuing span) or the caller's ``TRACEPARENT``, else
    starts a trace of its own."""
    if resumed:
        started = await state.store.trace.events(state.run_id, kinds=[EventKind.RUN_STARTED.value])
        recorded = RunTrace.from_json(started[0].detail.get("trace")) if started else None
        if recorded is not None:
            return recorded
    if state.parent_trace is not None:
        return state.parent_trace.child()
    parent = Parent.parse(origin.trace) if origin is not None else None
    return RunTrace.start(parent or Parent.from_env())


def hook_announcer(state: RunState) -> Callable[[HookRun, dict[str, Any]], None]:
    """Each hook's run as the run's ``hook`` event (in the trace, exported as a span)."""

    def announce(done: HookRun, extra: dict[str, Any]) -> None:
        state.publish(
            EventKind.HOOK,
            {
                "event": done.event,
                "command": done.command,
                "source": done.source,
                "exit_code": done.exit_code,
                "timed_out": done.timed_out,
                "duration_s": done.duration_s,
                "stdout": done.stdout[-2000:],
                "stderr": done.stderr[-2000:],
                "error": done.error,
                **extra,
            },
        )

    return announce


class SubAgentStopped(Exception):
    """A sub-agent paused or was interrupted: the parent's call cannot end now, so the parent
    stops with it (``result``: the child's)."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(f"sub-agent run {result.run_id} is {result.status}")
        self.result = result


async def spawn(
    parent: RunState, task: SubTask, reconciler: Reconciler | None = None
) -> ToolOutcome:
    """Run a child to an outcome under the parent's policy narrowed by the task's rules, one
    level deeper; its tokens count against the parent's. A call handed to a child before (the
    parent resumes) goes on with that child: resumed if it stopped short (``reconciler`` for
    its calls in flight), its result read if it ended. A child that stops short again raises
    ``SubAgentStopped``."""
    child = parent.harness.child(parent.policy, task.rules)
    store = parent.store

    async def link(child_id: int) -> None:
        parent.publish(EventKind.SUB_AGENT, {"call_id": task.call_id, "run_id": child_id})
        await parent.flush_events()

    row = await child_of_call(store, parent.run_id, parent.step, task.call_id)
    if row is None:
        contract = replace(
            parent.contract,
            goal=task.goal,
            verify=None,
            max_steps=task.max_steps or CHILD_DEFAULT_STEPS,
            token_budget=parent.remaining_tokens(),
        )
        result = await start_run(
            child, contract, parent_run_id=parent.run_id, on_created=link,
            parent_trace=parent.trace,
        )  # fmt: skip
    elif row.status not in ENDED:
        await link(row.id)
        try:
            result = await resume_run(child, row.id, reconciler)
        except RunBusy as exc:  # driven elsewhere: the parent stops short, resumable
            result = replace(_result_of(row), status="interrupted", error=str(exc))
    else:  # it ended, and the parent's process died before recording its answer
        result = _result_of(row)
    if result.status in WAITING:
        raise SubAgentStopped(result)
    parent.charge(result.tokens)
    history = await store.runs.history(result.run_id)
    answer = next((r.text for r in reversed(history) if r.text), "(no answer)")
    text = (
        f"Sub-agent run {result.run_id} ended {result.outcome.value} after {result.steps} "
        f"steps ({result.tokens:,} tokens). Its final answer:\n{answer}"
    )
    failed = result.status != "finished"
    return ToolOutcome(
        text, ObsKind.AGENT, task.goal[:80], span=f"run {result.run_id}", is_error=failed,
        data=result.to_json(),
    )  # fmt: skip


class Run:
    """Drives one run's ``RunState`` to an outcome."""

    def __init__(self, state: RunState, reconciler: Reconciler | None = None) -> None:
        self.state = state
        self.reconciler = reconciler or RefuseReconcile()
        self.store = state.store
        self.contract = state.contract
        self.run_id = state.run_id
        self.last_step_denied = False
        self.verify_feedback_given = False
        self.stop_hook_turns = 0  # times a Stop hook sent the model on
        self.failure: str | None = None  # why the loop ended failed, for the run's ``error``
        # the step whose model request is in flight: its number, its requests so far and the
        # operator's messages it carries (kept, with what streamed, if the run is cancelled)
        self.asking: tuple[int, list[RequestRecord], tuple[str, ...]] | None = None
        self.waiting_on: int | None = None  # the sub-agent run it stopped with
        self.lease_lost: LeaseLost | None = None  # the heartbeat found the run taken over
        if state.harness.can_spawn:
            state.spawn = partial(spawn, state, reconciler=self.reconciler)

    # -- driving --

    async def drive(self, *, resumed: bool) -> RunResult:
        """The run to an outcome. ``LeaseLost`` when another process took it over meanwhile
        (nothing more was written or performed); ``StoreUnreachable`` or ``StoreFull`` when the
        store could not record where it stopped (it resumes from its last commit)."""
        driving = asyncio.current_task()
        assert driving is not None
        heartbeat = asyncio.create_task(self._heartbeat(driving))
        try:
            return await self._drive(resumed=resumed)
        except asyncio.CancelledError:
            if self.lease_lost is None:
                raise
            driving.uncancel()  # not cancelled from outside: stopped, for the reason below
            raise self.lease_lost from None
        finally:
            heartbeat.cancel()
            await asyncio.shield(self.state.reviewers.aclose())

    async def _heartbeat(self, driving: asyncio.Task[RunResult]) -> None:
        """Renew the run's lease while it goes: a stale renewal means its owner is gone. A
        renewal that finds the run taken over stops the run at once, whatever it is doing."""
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self.state.renew_lease()
            except LeaseLost as exc:
                if self.state.released:  # the run gave its lease up as this renewal went out
                    return
                self.lease_lost = exc
                driving.cancel(LEASE_LOST)
                return
            except (StoreError, sqlite3.Error):
                continue  # a busy store: the next beat tries again

    async def _say_sandbox(self) -> None:
        """Where commands cannot be sandboxed here, the run says so once, at its start."""
        state = self.state
        if "run_command" not in state.registry:
            return
        status = await asyncio.to_thread(sandbox_status, state.policy)
        if status.available:
            return
        if state.policy.sandbox.require:
            text = (
                f"no sandbox here ({status.reason}); [sandbox] require = true: commands are refused"
            )
        else:
            text = f"commands run without a sandbox: {status.reason}"
        state.publish(EventKind.WARNING, {"message": text})

    async def _drive(self, *, resumed: bool) -> RunResult:
        state = self.state
        try:
            state.history = await self.store.runs.history(self.run_id)
            state.step = state.history[-1].step if state.history else 0
            origin = await _origin(state)
            session = origin.session if origin is not None else None
            state.trace = await run_trace(state, origin, resumed=resumed)
            state.publish(
                EventKind.RUN_RESUMED if resumed else EventKind.RUN_STARTED,
                {
                    "goal": self.contract.goal,
                    "workspace": str(state.workspace.root),
                    "parent_run_id": state.parent_run_id,
                    "provider": state.harness.provider.name,
                    "model": state.harness.provider.model,
                    "trace": state.trace.to_json(),
                    "session": session,
                    **({"fork_of": state.pinned.source} if state.pinned is not None else {}),
                },
            )
            await self._say_sandbox()
            blocked = await self._start_hooks(origin, session, resumed=resumed)
            if blocked is not None:
                self.failure = blocked
                return await self._end(Outcome.FAILED, error=blocked)
            if resumed:
                paused = await self._finish_last_step()
                if paused is not None:
                    return await self._end(paused, error=self.failure)
            outcome = await self._loop()
            return await self._end(outcome, error=self.failure)
        except ReconcileNeeded as exc:
            return await self._end(Outcome.INTERRUPTED, error=str(exc))
        except (StoreDamaged, LeaseLost):
            raise  # nothing more is written: the run stays as it was left (or as its owner has it)
        except StoreError as exc:
            return await self._stopped_by_store(exc)
        except asyncio.CancelledError as exc:
            if LEASE_LOST in exc.args:
                raise  # another process drives it now: nothing more is written
            # an operator's interrupt says so (``OPERATOR_CANCEL``); quitting the app does not
            if HAND_BACK in exc.args or READER_GONE in exc.args:  # resumable: another process
                # (a worker, ``io-tui resume``) takes it over
                await asyncio.shield(self._end(Outcome.INTERRUPTED))
                raise
            reason = OPERATOR_CANCEL if OPERATOR_CANCEL in exc.args else None
            await asyncio.shield(self._cancelled(reason))
            raise
        except Exception as exc:
            return await self._end(Outcome.FAILED, error=_one_line(exc))

    async def _stopped_by_store(self, exc: StoreError) -> RunResult:
        """The store refused a write (unreachable past its retries, full, locked past its busy
        timeout): the run stops at its last commit, resumable, never ``failed``. Where the end
        can still be written the run says ``interrupted`` and why; where it cannot, the error
        goes up, saying so (the row keeps its lease until that expires, then it is reaped)."""
        run_id = self.run_id
        said = f"run {run_id}: {exc}; it stopped at its last commit"
        if isinstance(exc, StoreUnreachable):  # nothing gets through: say so, and stop
            raise StoreUnreachable(
                f"{said} and is interrupted once its lease runs out: `io-tui resume {run_id}`"
                " when the database is back"
            ) from None
        try:
            return await self._end(Outcome.INTERRUPTED, error=str(exc))
        except StoreError:
            if isinstance(exc, StoreFull):
                raise StoreFull(
                    f"{said}, resumable: `io-tui resume {run_id}` once there is room"
                ) from None
            raise exc from None

    async def _start_hooks(
        self, origin: RunOrigin | None, session: str | None, *, resumed: bool
    ) -> str | None:
        """The run's hooks loaded (``core/hooks``), ``SessionStart`` run (and, for a new
        top-level run, ``UserPromptSubmit`` on its goal): what they add goes to the model as
        an operator message; returns why the prompt is blocked, if it is."""
        state = self.state
        configured = origin.settings.hooks if origin is not None else {}
        conversation = session or f"io-tui-run-{self.run_id}"
        state.hooks, notices = load_run_hooks(
            configured, state.workspace, conversation, hook_announcer(state)
        )
        for notice in notices:
            state.publish(EventKind.WARNING, {"message": notice})
        hooks = state.hooks
        if hooks is None:
            return None
        added = [await hooks.session_start("resume" if resumed else "startup")]
        if not resumed and state.parent_run_id is None and hooks.has("UserPromptSubmit"):
            blocked, context = await hooks.user_prompt_submit(self.contract.goal)
            if blocked is not None:
                return f"the prompt was blocked by a UserPromptSubmit hook: {blocked}"
            added.append(context)
        for text in added:
            if text:
                await self.store.runs.add_operator_message(self.run_id, f"Hook context: {text}")
        return None

    async def _cancelled(self, reason: str | None) -> RunResult:
        """The run is cancelled: the step whose answer was streaming keeps what it had
        streamed, marked interrupted (its request too, with the text as its partial output),
        then the run ends ``cancelled``."""
        asking, self.asking = self.asking, None
        if asking is not None:
            step, requests, operator_messages = asking
            if requests or self.state.streamed:
                await self.state.commit_step(
                    step,
                    decision={"interrupted": True},
                    text=self.state.streamed,
                    requests=requests,
                    operator_messages=operator_messages,
                )
        return await self._end(Outcome.CANCELLED, error=reason)

    async def _end(self, outcome: Outcome, error: str | None = None) -> RunResult:
        state = self.state
        if state.hooks is not None and state.hooks.has("SessionEnd"):
            await asyncio.shield(state.hooks.session_end(outcome.value))
        status = status_for(outcome)
        detail: dict[str, Any] = {"status": status, "outcome": outcome.value, "error": error}
        if self.waiting_on is not None:
            detail["waiting_on"] = self.waiting_on
        await append_run_log(state, outcome, error)  # the workspace's daily log (memory)
        if state.checkpoints is not None and await state.checkpoints.taken():
            await state.checkpoint(state.step, END)  # what its last step left: a rewind's base
            await state.prune_checkpoints()
        finished = state.record(EventKind.RUN_FINISHED, detail)
        # why a resume stopped short is the caller's to print, not the run's to keep
        await state.end(status, outcome.value, None if outcome is Outcome.INTERRUPTED else error)
        state.announce(finished)
        row = await self.store.runs.get(self.run_id)
        return RunResult(
            self.run_id,
            status,
            outcome,
            row.steps if row else state.step,
            row.tokens if row else state.tokens,
            error,
            self.waiting_on,
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
            # the step's notes are read in the same hand-off, for its request (``ask_model``);
            # both were read as the step before ended, in its last commit, when it was that
            ahead, state.ahead = state.ahead, None
            if ahead is not None and ahead[0] == step - 1:
                _, waiting, state.recalled = ahead
                taken = (
                    await self.store.runs.take_operator_messages(
                        self.run_id, step, fence=state.fence
                    )
                    if waiting
                    else []
                )
            else:
                taken, state.recalled = await self.store.runs.take_operator_messages_with(
                    self.run_id,
                    step,
                    partial(recalled, str(state.workspace.root)),
                    fence=state.fence,
                )
            operator_messages = tuple(taken)
            for text in operator_messages:
                state.publish(EventKind.OPERATOR_MESSAGE, {"text": text})
            notices = await state.late_arrivals()  # MCP servers ready since the last request
            engine.offer_tools(state.specs())
            if notices:
                for text in notices:
                    state.publish(EventKind.WARNING, {"message": text})
                operator_messages += notices  # stored with the step: a resume says it again
            requests: list[RequestRecord] = []
            pinned, state.pinned = state.pinned, None
            self.asking, state.streamed = (step, requests, operator_messages), ""
            try:
                if pinned is not None and pinned.step == step:
                    response = await ask_pinned(state, pinned, operator_messages, requests)
                else:
                    response = await ask_model(state, engine, operator_messages, requests)
            except ProviderError as exc:
                self.asking = None
                self.failure = str(exc)
                corrections = engine.corrections_at(step)
                await state.commit_step(
                    step,
                    decision={"error": str(exc)},
                    requests=requests,
                    operator_messages=operator_messages,
                    corrections=corrections,
                )
                if isinstance(exc, LadderExhausted):
                    return Outcome.STATE_NOT_PRESERVED
                return (
                    Outcome.CONTEXT_OVERFLOW
                    if exc.kind is ErrorKind.CONTEXT_OVERFLOW
                    else Outcome.FAILED
                )
            self.asking = None
            corrections = engine.corrections_at(step)  # sent with the step: recorded with it
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
                    corrections=corrections,
                    tokens=tokens,
                )
                if response.truncated:  # a cut answer is not a finished one (model_turn)
                    self.failure = truncated_note(response)
                    return Outcome.TRUNCATED
                outcome = await self._after_model_stopped()
                if outcome is not None:
                    return outcome
                continue
            # the model's answer is durable before any call runs: a resume goes on from here
            await state.commit_step(
                step,
                decision={"pending_calls": [c.id for c in calls]},
                text=response.text,
                calls=calls,
                requests=requests,
                operator_messages=operator_messages,
                corrections=corrections,
                tokens=tokens,
                final=False,
                read_rules=True,  # for its calls, right after (``_call_runner``)
            )
            paused = await self._run_step_calls(calls, step, resuming=False)
            if paused is not None:
                return paused

    async def _after_model_stopped(self) -> Outcome | None:
        """The model stopped calling tools: a ``Stop`` (or ``SubagentStop``) hook may send it
        on; else verify if the contract says how, else finish."""
        hooks = self.state.hooks
        event = "SubagentStop" if self.state.parent_run_id is not None else "Stop"
        if hooks is not None and hooks.has(event) and self.state.step < self.contract.max_steps:
            go_on = await hooks.stop(sub_agent=event == "SubagentStop")
            if go_on and self.stop_hook_turns < STOP_HOOK_TURNS:
                self.stop_hook_turns += 1
                await self.store.runs.add_operator_message(
                    self.run_id, f"A {event} hook asks you to go on: {go_on}"
                )
                return None
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

        layer, state.remembered = state.remembered, None  # read as the step was committed
        if layer is None:
            layer = await self.store.rules.layer_for(
                workspace=str(state.workspace.root), run_id=self.run_id
            )
        if not state.policy.layers or state.policy.layers[-1] != layer:
            # the same rules as last time keep the same policy object: what is asked of it per
            # object (the derived parts' read verdicts) is then asked once
            state.policy = state.policy.with_layer(layer)
        return CallRunner(state, state.registry, state.tool_context)

    async def _run_step_calls(
        self, calls: Sequence[ToolCall], step: int, *, resuming: bool
    ) -> Outcome | None:
        """Run ``calls`` of ``step`` in order, committing each observation as it comes (the
        last commit announces the step); a deferred approval pauses the run. A step with a call
        that may change files first takes a checkpoint of the workspace (``resumed`` when a
        resume carries the step on); the run's end takes the last one (``_end``)."""
        if self.state.may_change_files(calls):
            await self.state.checkpoint(step, RESUMED if resuming else BEFORE)
        return await self._run_calls(calls, step, resuming=resuming)

    async def _run_calls(
        self, calls: Sequence[ToolCall], step: int, *, resuming: bool
    ) -> Outcome | None:
        state = self.state
        runner = await self._call_runner()
        results: list[CallResult] = []
        for position, call in enumerate(calls):
            rest = [c.id for c in calls[position + 1 :]]
            try:
                if resuming:
                    result = await self._resume_call(runner, call, step)
                else:
                    result = await runner.run(call, step)
            except SubAgentStopped as stopped:
                return await self._stop_with(stopped.result, step, [call.id, *rest])
            if result.deferred_approval is not None:
                await state.commit_step(
                    step,
                    decision={
                        "awaiting_approval": result.deferred_approval,
                        "pending_calls": [call.id, *rest],
                    },
                    update=True,
                )
                return Outcome.AWAITING_APPROVAL
            results.append(result)
            decision: dict[str, Any] = {"pending_calls": rest}
            if resuming and result.decision.get("approval_id") is not None:
                decision |= {
                    "awaiting_approval": None,
                    "resolved_approval": result.decision["approval_id"],
                }
            if resuming and call.name == SpawnAgent.name:
                decision["awaiting_sub_agent"] = None
            await state.commit_step(
                step,
                decision=decision,
                results=[result],
                update=True,
                final=not rest,
                read_ahead=not rest,  # the step ends: read what the next one reads first
            )
        self.last_step_denied = any(r.denied for r in results)
        return None

    async def _stop_with(self, child: RunResult, step: int, pending: list[str]) -> Outcome:
        """A sub-agent stopped short on the call ``pending[0]``: this run stops with it, the
        call unobserved, and the step says which run it waits on."""
        self.waiting_on = child.run_id
        await self.state.commit_step(
            step,
            decision={"awaiting_sub_agent": child.run_id, "pending_calls": pending},
            update=True,
        )
        if child.status == "interrupted":
            self.failure = f"its sub-agent run {child.run_id} stopped short: {child.error}"
            return Outcome.INTERRUPTED
        return Outcome.AWAITING_SUB_AGENT

    async def _finish_last_step(self) -> Outcome | None:
        """On resume: the calls of the last committed step that have no observation yet (a
        paused step's, or those of a step its process died in), in order."""
        history = self.state.history
        if not history:
            return None
        last = history[-1]
        if not last.tool_calls:
            # the model's final answer was committed and the process died before the run
            # ended: end it as it would have (verify, finish), never ask the model again
            rows = await self.store.trace.steps_after(self.run_id, last.step - 1, limit=1)
            if rows and rows[-1].decision.get("final"):
                return await self._after_model_stopped()
            return None
        observed = {o.call_id for o in last.observations}
        pending = [c for c in last.tool_calls if c.id not in observed]
        if not pending:
            return None
        return await self._run_step_calls(pending, last.step, resuming=True)

    async def _resume_call(self, runner: CallRunner, call: ToolCall, step: int) -> CallResult:
        """A call with no observation, on resume: a sub-agent → handed to its child again (or
        run, if it never got one); in flight at a crash → reconciled; asked and decided (or
        still pending) → its approval carried on; never started → run."""
        if call.name == SpawnAgent.name:
            return await runner.run(call, step)
        intent = await self.store.intents.latest(self.run_id, call.id)
        if intent is not None and intent.in_flight:
            return await self._reconcile(runner, call, intent)
        approvals = [
            a
            for a in await self.store.approvals.for_run(self.run_id)
            if a.request.call_id == call.id and a.request.step == step
        ]
        if approvals:
            record = approvals[-1]
            if record.decision is None:
                return await runner.ask_again(record.request)
            return await runner.decided(record.request, record.decision)
        return await runner.run(call, step)

    async def _reconcile(self, runner: CallRunner, call: ToolCall, intent: IntentRow) -> CallResult:
        """A call the policy says is safe to repeat (a read, a command a rule marks
        idempotent) re-runs; anything else goes to the operator: re-run (through the gate),
        mark done, or skip. The choice is an event and closes the intent with the result."""
        removed = await asyncio.to_thread(discard_unfinished, intent, self.state.workspace)
        choice = ReconcileChoice.RERUN
        why = safe_to_repeat(intent, self.state.policy)
        if why is None:
            in_flight = await asyncio.to_thread(
                what_is_known, self.run_id, intent, self.state.workspace
            )
            choice = await self.reconciler.reconcile(in_flight)
        detail = {"call_id": call.id, "tool": call.name, "intent_id": intent.id,
                  "choice": choice.value}  # fmt: skip
        if why is not None:
            detail["by"] = f"policy: {why}"
        if removed:  # the unfinished write's temporary files
            detail["removed"] = removed
        self.state.publish(EventKind.RECONCILED, detail)
        if choice is ReconcileChoice.RERUN:
            await self.store.intents.close(intent.id, "rerun", fence=self.state.fence)
            return await runner.run(call, intent.step)
        if choice is ReconcileChoice.DONE:
            text = (
                f"{call.name} was interrupted by a crash after it started; the operator "
                "confirmed it took effect. Its output was not recorded."
            )
            result = runner.noted(call, intent.step, text, is_error=False)
            result.closes_intent = (intent.id, "marked_done")
        else:
            text = (
                f"{call.name} was interrupted by a crash after it started and the operator "
                "chose not to re-run it: it may or may not have taken effect. Check before "
                "relying on it."
            )
            result = runner.noted(call, intent.step, text, is_error=True)
            result.closes_intent = (intent.id, "skipped")
        return result


def _result_of(row: RunRow) -> RunResult:
    """How a run that is not going ended (or stopped), from its row."""
    outcome = Outcome(row.outcome) if row.outcome else Outcome.INTERRUPTED
    return RunResult(row.id, row.status, outcome, row.steps, row.tokens, row.error)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
