"""One run's mutable state, in one place: its step, history, tokens, current policy, events on
their way to the store, and the tools it offers.

The loop (``run``) and the model request path (``model_turn``) read it and change it only
through its methods: publishing and recording events, charging tokens, handing tools their
context, committing a step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from io_tui.core.authority.policy import Layer
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.checkpoints.pruning import prune_checkpoints
from io_tui.core.checkpoints.taking import CheckpointError, RunCheckpoints
from io_tui.core.context.manifest import ManifestEntry, Section
from io_tui.core.contract import TaskContract, entry_cap_chars
from io_tui.core.derived.parts import DerivedContext, Files
from io_tui.core.derived.skills import ReadSkill, Skill, catalogue
from io_tui.core.events import LIVE_ONLY, EventKind, RunEvent
from io_tui.core.hooks.moments import RunHooks
from io_tui.core.ledger import Observation, StepRecord
from io_tui.core.memory.notes import MemoryNote
from io_tui.core.progress.keeper import ProgressKeeper
from io_tui.core.providers.base import ToolSpec
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.run.calls import CallResult
from io_tui.core.run.escalate import ask_outside_sandbox
from io_tui.core.run.harness import Harness
from io_tui.core.run.meter import CostMeter
from io_tui.core.run.pinned import PinnedRequest
from io_tui.core.run.reviewed import ReviewerSeat
from io_tui.core.run.server_asks import answer_server
from io_tui.core.store.approvals import remembered_layer
from io_tui.core.store.clock import host_monotonic
from io_tui.core.store.db import Connection
from io_tui.core.store.encoded import ListEncoder
from io_tui.core.store.leases import CONFIRM_S, LIVE_STATUSES, Fence
from io_tui.core.store.notes import recalled
from io_tui.core.store.requests import RequestRecord
from io_tui.core.store.runs import StepCommit, operator_waiting
from io_tui.core.store.tool_sets import tools_digest
from io_tui.core.telemetry import RunTrace, tap
from io_tui.core.tokens import Calibration
from io_tui.core.tools.base import Spawner, ToolContext, ToolError
from io_tui.core.tools.late import Arrival
from io_tui.core.tools.recall import find_recorded
from io_tui.core.tools.registry import ToolRegistry


class RunState:
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
        # where the run sits in its distributed trace, set as it starts (``loop``); a sub-agent
        # takes its parent's trace id
        self.trace: RunTrace | None = None
        self.parent_trace: RunTrace | None = None
        self.hooks: RunHooks | None = None  # loaded as it starts (``loop``), from its origin
        self.harness = harness
        self.store = harness.store
        self.contract = contract
        self.run_id = run_id
        self.workspace = workspace
        self.tokens = 0
        self.history: list[StepRecord] = []
        self.pending_events: list[RunEvent] = []
        self.step = 0
        self.extra_tokens = 0  # spent this step outside its working request: summaries, sub-agents
        self.step_tokens = 0  # committed so far for the current step (its commits add up)
        self.policy = harness.policy  # plus the store's remembered rules, refreshed per step
        self.reviewers = ReviewerSeat()  # the policy's reviewer model, once it is first asked
        self.registry = ToolRegistry(harness.registry)  # plus read_skill, once skills are found
        self.system_prompt = harness.system_prompt
        self.spawn: Spawner | None = None  # set by the loop while the harness may nest deeper
        self.calibration = Calibration()  # the estimate's drift per provider+model (tokens.py)
        self.tools_ignored_said = False  # the model did not receive the tools: said once
        self.streamed = ""  # the text the request in flight has streamed so far
        self.meter = CostMeter(contract.cache)  # each request's price with caching (meter.py)
        # consecutive requests share most messages, manifest entries and sections: each is
        # encoded once
        self.messages_json = ListEncoder(Message.to_json)
        self.entries_json = ListEncoder(ManifestEntry.to_json)
        self.sections_json = ListEncoder(Section.to_json)
        self._tool_specs: tuple[ToolSpec, ...] | None = None  # built once per run (pydantic)
        self._tool_set: tuple[str, list[dict[str, Any]]] | None = None  # its digest and JSON
        self._tool_sets_kept: set[str] = set()  # the digests stored in ``store.tool_sets``
        # the prompt-cache key its requests carry (``model_turn.cache_key``); a fork's is the
        # key of the run it left from, whose prefix its requests repeat
        self.cache_key: str | None = None
        # a fork's first request: the step it left from, as recorded (``run/pinned.py``)
        self.pinned: PinnedRequest | None = None
        self._arrivals_seen = 0  # of harness.late_tools' arrivals
        # reads made along with another hand-off to the store, for the next one to use: the
        # step's notes (read with its operator messages), the remembered rules its calls are
        # checked against (read in the transaction that commits the model's answer)
        self.recalled: tuple[list[MemoryNote], list[MemoryNote]] | None = None
        self.remembered: Layer | None = None
        # read in the transaction that ended a step, for the next one: (that step, whether an
        # operator message waits, the notes): ``Driver._loop`` then makes no read of its own
        self.ahead: tuple[int, bool, tuple[list[MemoryNote], list[MemoryNote]]] | None = None
        self._told_starting: set[str] = set()  # the sources the model was told are starting
        self._offered: dict[str, tuple[str, ...]] = {}  # each late source's tools, by name
        self._asked = False  # a model request was built in this process
        # the skill and tool catalogues, instructions and memory block, with what they depend on
        self.derived = DerivedContext(Files(workspace.root))
        # the run's progress ledger, folded from each batch of events once it is stored
        self.progress = ProgressKeeper(self.store, run_id, contract, workspace)
        self.fence: Fence | None = None  # the lease this process took: every write checks it
        self.released = False  # the run ended (or paused) and gave its lease up: none to renew
        self.lease_confirmed = host_monotonic()  # when the store last said the lease holds
        # the workspace's checkpoints around the steps that may change files (rewind, fork)
        self.checkpoints = (
            RunCheckpoints(self.store, run_id, workspace.root, contract.checkpoints)
            if contract.checkpoints.enabled
            else None
        )

    # -- the lease --

    def hold(self, fence: Fence) -> None:
        """This process has just taken the run's lease (``fence``)."""
        self.fence = fence
        self.released = False
        self.lease_confirmed = host_monotonic()

    async def renew_lease(self) -> None:
        """Renew the lease on the store's clock; ``LeaseLost`` once another holds the run."""
        if self.fence is None or self.released:
            return
        asked = host_monotonic()
        await self.store.leases.renew(self.fence)
        self.lease_confirmed = asked

    async def keep_lease(self) -> None:
        """Before a tool call performs: a lease last confirmed more than ``CONFIRM_S`` ago (this
        process may have been stopped meanwhile, and its run taken over) is renewed first, so
        a driver that lost its run performs nothing (``LeaseLost``)."""
        if host_monotonic() - self.lease_confirmed > CONFIRM_S:
            await self.renew_lease()

    # -- events --

    def publish(self, kind: EventKind, detail: dict[str, Any] | None = None) -> None:
        """An event for the sink now and for the store with the next flush or commit."""
        event = RunEvent(self.run_id, self.step, kind, detail or {})
        if kind not in LIVE_ONLY:
            self.pending_events.append(event)
        self.harness.sink.emit(event)
        tap(event)

    def record(self, kind: EventKind, detail: dict[str, Any], step: int | None = None) -> RunEvent:
        """An event to persist now and announce only once it is stored (``announce``), so a
        view that reloads from the store on hearing it finds everything it announces."""
        event = RunEvent(self.run_id, self.step if step is None else step, kind, detail)
        self.pending_events.append(event)
        return event

    def announce(self, event: RunEvent) -> None:
        self.harness.sink.emit(event)
        tap(event)

    async def flush_events(self) -> None:
        events, self.pending_events = self.pending_events, []
        if events:
            await self.store.runs.add_events(events, fence=self.fence)
            await self.progress.take(events)

    async def asking(self, asking: bool) -> None:
        """The run waits for (or has stopped waiting for) its operator: its events so far are
        stored and its status says so, for every cockpit."""
        await self.flush_events()
        await self.store.runs.set_status(
            self.run_id, "asking" if asking else "running", fence=self.fence
        )

    async def end(self, status: str, outcome: str, error: str | None) -> None:
        """The run's status change, written with the events still pending (its ``run_finished``)
        in one transaction."""
        events, self.pending_events = self.pending_events, []
        await self.store.runs.set_status(
            self.run_id,
            status,
            outcome,
            error=error,
            provider=self.harness.provider.describe(),
            events=events,
            fence=self.fence,
        )
        self.released = status not in LIVE_STATUSES
        if events:
            await self.progress.take(events)

    # -- budget --

    def remaining_tokens(self) -> int | None:
        budget = self.contract.token_budget
        return None if budget is None else max(0, budget - self.tokens)

    def charge(self, tokens: int) -> None:
        """Tokens spent outside the step's working request (a summary, a sub-agent): they count
        against the budget now and go to the store with the step's commit."""
        self.tokens += tokens
        self.extra_tokens += tokens

    # -- checkpoints --

    def may_change_files(self, calls: Sequence[ToolCall]) -> bool:
        """Whether any of ``calls`` may change the workspace's files (an unknown tool cannot:
        it fails before it runs)."""
        for call in calls:
            try:
                if self.registry.get(call.name).changes_files:
                    return True
            except ToolError:
                continue
        return False

    async def checkpoint(self, step: int, phase: str) -> None:
        """A checkpoint of the workspace, announced; one that fails is said as a warning and
        the run goes on (a rewind to this step then says it has no checkpoint)."""
        if self.checkpoints is None:
            return
        try:
            taken = await self.checkpoints.take(step, phase)
        except CheckpointError as exc:
            self.publish(
                EventKind.WARNING,
                {"message": f"no checkpoint {phase} step {step}: {exc}", "checkpoint": phase},
            )
            return
        row = taken.row
        self.publish(
            EventKind.CHECKPOINT,
            {
                "id": row.id,
                "phase": phase,
                "step": step,
                "commit": row.git_commit,
                "changed": row.changed,
                "skipped": len(row.skipped),
                "took_ms": round(taken.took_ms, 1),
            },
        )

    async def prune_checkpoints(self) -> None:
        """The workspace's checkpoints pruned by the policy (``checkpoints/pruning.py``): the
        runs whose checkpoints went are said; a prune that fails is a warning."""
        if self.checkpoints is None:
            return
        try:
            pruned = await prune_checkpoints(
                self.store, str(self.checkpoints.shadow.root), self.contract.checkpoints
            )
        except CheckpointError as exc:
            self.publish(EventKind.WARNING, {"message": f"checkpoints not pruned: {exc}"})
            return
        if pruned.dropped:
            self.publish(EventKind.CHECKPOINT, {"phase": "pruned", "runs": list(pruned.dropped)})

    # -- tools --

    def use_skills(self, skills: dict[str, Skill], listed: dict[str, Skill] | None = None) -> None:
        """Offer ``read_skill`` over ``skills`` and list ``listed`` (all of them unless said) in
        the system prompt (none: no ``read_skill``, and the harness's prompt alone)."""
        if skills:
            self.registry.register(ReadSkill(skills), replace=True)
            shown = catalogue(skills if listed is None else listed)
            self.system_prompt = f"{self.harness.system_prompt}\n\n{shown}".rstrip()
        else:
            self.registry.remove(ReadSkill.name)
            self.system_prompt = self.harness.system_prompt
        self._tool_specs = None

    async def late_arrivals(self) -> tuple[str, ...]:
        """Before a model request: offer the tools of the MCP servers that became ready since
        the last one (before the first, wait for them as long as the hub allows), and say so.

        Returns the notices for the model: the servers still starting (first request only),
        each one ready since (with its tools), each one the model was told about that failed,
        each resource this run read that its server says changed.
        The schemas are rebuilt only when a tool was added."""
        late = self.harness.late_tools
        if late is None:
            return ()
        if not self._asked:
            await late.settle()
        await late.relisted()
        arrivals = late.arrivals()
        fresh, self._arrivals_seen = arrivals[self._arrivals_seen :], len(arrivals)
        notices: list[str] = []
        for arrival in fresh:
            if arrival.replaces:
                notices += self._replace_tools(arrival)
                continue
            if arrival.updated is not None:
                if self._has_read(arrival.updated):
                    notices.append(
                        f"io-tui: {arrival.source} says {arrival.updated} changed since you read"
                        " it; read it again if you need what it says now."
                    )
                continue
            added = [tool.name for tool in arrival.tools if tool.name not in self.registry]
            for tool in arrival.tools:
                if tool.name in added:
                    self.registry.register(tool)
            # what it offers, to replace when its list changes (a name another holds is theirs)
            self._offered[arrival.source] = tuple(
                t.name for t in arrival.tools if self.registry.holds(t)
            )
            if added:
                self._tool_specs = None
                if self._asked:
                    notices.append(
                        f"io-tui: {arrival.source} is now ready; its tools are offered from this"
                        f" request on: {', '.join(added)}."
                    )
            elif arrival.problem is not None and arrival.source in self._told_starting:
                notices.append(f"io-tui: {arrival.problem}. Its tools will not be offered.")
        if not self._asked:
            self._told_starting = set(late.starting())
            if self._told_starting:
                notices.append(
                    f"io-tui: still starting: {', '.join(sorted(self._told_starting))}. Their"
                    " tools will be offered once they are ready, and you will be told."
                )
        self._asked = True
        return tuple(notices)

    def _replace_tools(self, arrival: Arrival) -> list[str]:
        """A source's tool list changed: offer its new list in place of what it offered (a
        name another source holds stays that one's), and say what joined or left."""
        before = self._offered.get(arrival.source, ())
        now = tuple(
            t.name for t in arrival.tools if t.name in before or t.name not in self.registry
        )
        for name in before:
            if name not in now:
                self.registry.remove(name)
        for tool in arrival.tools:
            if tool.name in now:
                self.registry.register(tool, replace=True)
        self._offered[arrival.source] = now
        self._tool_specs = None
        added = [n for n in now if n not in before]
        gone = [n for n in before if n not in now]
        if not added and not gone:
            return []
        changes = ([f"offered from this request on: {', '.join(added)}"] if added else []) + (
            [f"withdrawn: {', '.join(gone)}"] if gone else []
        )
        return [f"io-tui: {arrival.source} changed its tools; {'; '.join(changes)}."]

    def _has_read(self, target: str) -> bool:
        return any(obs.target == target for rec in self.history for obs in rec.observations)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools' schemas, generated once, and again when late tools join the registry."""
        if self._tool_specs is None:
            self._tool_specs = self.registry.specs()
            self._tool_set = None
        return self._tool_specs

    def tool_set(self) -> tuple[str, list[dict[str, Any]]]:
        """The schemas offered now as JSON, and their digest (``store.tool_sets``)."""
        specs = self.specs()
        if self._tool_set is None:
            data = [spec.to_json() for spec in specs]
            self._tool_set = (tools_digest(data), data)
        return self._tool_set

    async def keep_tool_set(self) -> None:
        """Store the schemas offered now, once per distinct set: a request names them."""
        digest, data = self.tool_set()
        if digest not in self._tool_sets_kept:
            await self.store.tool_sets.put(digest, data)
            self._tool_sets_kept.add(digest)

    def tool_context(self, step: int) -> ToolContext:
        ceiling = self.contract.context.ceiling(self.remaining_tokens())
        return ToolContext(
            self.workspace,
            self.run_id,
            step,
            entry_cap_chars(ceiling),
            policy=self.policy,
            notes=self.store.notes,
            memory_limits=self.contract.memory,
            emit=lambda kind, detail: self.publish(EventKind(kind), detail),
            spawn=self.spawn,
            sample=partial(answer_server, self, step),
            escalate=partial(ask_outside_sandbox, self, step),
            recall=partial(find_recorded, self.store.runs, self.run_id, str(self.workspace.root)),
        )

    # -- committing --

    async def commit_step(
        self,
        step: int,
        *,
        decision: dict[str, Any],
        text: str = "",
        calls: tuple[ToolCall, ...] = (),
        results: Sequence[CallResult] = (),
        requests: Sequence[RequestRecord] = (),
        operator_messages: tuple[str, ...] = (),
        corrections: Sequence[tuple[Observation, str]] = (),
        tokens: int = 0,
        update: bool = False,
        final: bool = True,
        read_rules: bool = False,
        read_ahead: bool = False,
    ) -> None:
        """The step's text, tool calls, decision, observations, requests, events and tokens go
        to the store in one transaction, then into the history. ``update``: add ``results``
        to the last step (its calls' results, one by one, or a paused step finished on resume)
        instead of appending one. A step is committed as soon as the model has answered and
        then once per call; only its ``final`` commit announces ``step_committed``. The
        ``corrections`` sent at the step's boundary (``context/correct.py``) go with its first
        commit. ``read_rules``: the remembered rules are read in the commit's transaction, for
        the calls that run next (``remembered``). ``read_ahead``: the commit ends the step, and
        what the next step reads first is read in its transaction (``ahead``)."""
        observations = [
            *corrections,
            *((r.observation, r.full_text) for r in results if r.observation is not None),
        ]
        tokens, self.extra_tokens = tokens + self.extra_tokens, 0
        self.step_tokens = tokens + (self.step_tokens if update else 0)
        committed = None
        if final:
            detail = {
                "tool_calls": len(calls or self._last_calls(step)),
                "tokens": self.step_tokens,
            }
            if decision.get("interrupted"):
                detail["interrupted"] = True  # its answer was cut off by the run's cancel
            committed = self.record(EventKind.STEP_COMMITTED, detail, step)
        events, self.pending_events = self.pending_events, []
        new_obs = tuple(o for o, _ in observations if not o.corrects)
        fixed = tuple(o for o, _ in corrections)
        # the ledger's new revision, folded first, is saved in the step's own transaction; a
        # keeper that has not folded the store yet folds it once this batch is stored
        keeper, revision = self.progress, None
        loaded = keeper.loaded
        if loaded:
            try:
                revision = keeper.prepare(events, new_obs, text, step)
            except Exception:
                keeper.unload()  # ``take`` folds the store once the batch is in it
                loaded = False
        try:
            done = await self.store.runs.commit_step(
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
                    closed_intents=[r.closes_intent for r in results if r.closes_intent],
                    intents=[r.intent for r in results if r.intent is not None],
                ),
                provider=self.harness.provider.describe(),
                fence=self.fence,
                progress=None if revision is None else revision.row,
                read=self._read_along(read_rules, read_ahead),
            )
        except BaseException:
            keeper.unload()  # it folded a batch the store may not hold
            raise
        self.remembered = done.read if read_rules else None
        self.ahead = (step, *done.read) if read_ahead else None
        if not loaded:
            await keeper.take(events, new_obs, text, step)
        elif revision is not None and done.revision is not None:
            keeper.saved(revision, done.revision)
        elif keeper.unsettled:
            await keeper.settle()
        if committed is not None:
            self.announce(committed)
        if update and self.history and self.history[-1].step == step:
            last = self.history[-1]
            self.history[-1] = StepRecord(
                step,
                last.text,
                last.tool_calls,
                last.observations + new_obs,
                last.operator_messages,
                last.corrections + fixed,
            )
        else:
            self.history.append(StepRecord(step, text, calls, new_obs, operator_messages, fixed))

    def _read_along(self, rules: bool, ahead: bool) -> Callable[[Connection], Any] | None:
        """What a step's commit reads in its transaction: the remembered rules for its calls,
        or the next step's first read (whether an operator message waits, and the notes)."""
        workspace = str(self.workspace.root)
        if rules:
            return partial(remembered_layer, workspace, self.run_id)
        if ahead:
            return partial(_next_step_read, self.run_id, workspace)
        return None

    def _last_calls(self, step: int) -> tuple[ToolCall, ...]:
        last = self.history[-1] if self.history else None
        return last.tool_calls if last is not None and last.step == step else ()


def _next_step_read(
    run_id: int, workspace: str, conn: Connection
) -> tuple[bool, tuple[list[MemoryNote], list[MemoryNote]]]:
    return operator_waiting(run_id, conn), recalled(workspace, conn)
