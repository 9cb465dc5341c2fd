"""Where the app's runs execute: in a harness worker process (the default) or in the app's loop.

Both hosts take the same orders — start a run, start the demo, interrupt, decide a paused run's
request, ask what the MCP servers of a workspace offer (``mcp_prompts``, ``mcp_prompt``,
``mcp_resources``, ``mcp_read``: the palette's prompts, the new-run dialog's, the resource
browser's) — and report the same way, in messages to the app they are given (never calls into it):
events into the app's ``EventPump``, asks as ``ApprovalRequested`` with a Future, ``RunStarted``
/ ``RunStopped`` as they take and drop a run, ends as ``RunEnded``, a dead worker as
``RunsLost`` and ``HarnessNotice``. What they need (store, settings, approver) is passed in.

- ``ProcessHost`` starts ``python -m io_tui.core.hosts.process`` on the app's store on first use,
  through the worker's client (``core.hosts.process.client``, no Textual), and turns what the worker
  says into the app's messages. The runs get a core of their own: the app's frames
  never wait for a SQLite commit, and a run's CPU never delays a key press. If the worker dies,
  the app says so (with the tail of its stderr) and starts a fresh one for the next run.
- ``InlineHost`` runs each run as a Textual worker in the app's own loop; tests use it to drive
  runs with in-memory providers (``run``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.worker import Worker, WorkerCancelled, WorkerFailed, get_current_worker

from io_tui.config import Settings
from io_tui.core import (
    OPERATOR_CANCEL,
    ApprovalRequest,
    Approver,
    Decision,
    NewRunRequest,
    RunEvent,
    RunResult,
    Store,
    ToolError,
    WorkerClient,
    WorkerError,
)
from io_tui.ui.bridge import BridgeSink, EventPump
from io_tui.ui.messages import (
    ApprovalRequested,
    HarnessNotice,
    RunEnded,
    RunsLost,
    RunStarted,
    RunStopped,
    StoreDamagedFound,
)

if TYPE_CHECKING:
    from io_tui.core import (
        McpHub,
        McpHubs,
        Offered,
        Policy,
        PromptRow,
        Provider,
        ResourceRow,
        RunOrigin,
        TaskContract,
    )

PAUSE_WAIT = 5.0  # seconds an inline run deferred at quit has to record its pause


class HostError(RuntimeError):
    """An order the host could not carry out (a decision for a request that is not pending…)."""


class RunHost(Protocol):
    async def prepare(self) -> None: ...
    def start(self, request: NewRunRequest) -> None: ...
    def start_demo(self, workspace: Path) -> None: ...
    def interrupt(self, run_id: int) -> bool: ...
    def is_live(self, run_id: int) -> bool: ...
    async def decide(self, approval_id: int, decision: Decision) -> RunResult | None: ...
    async def close(self) -> None: ...
    # what the MCP servers a run in ``workspace`` gets offer the operator
    async def mcp_prompts(self, workspace: Path) -> Offered[PromptRow]: ...
    async def mcp_prompt(
        self, workspace: Path, server: str, name: str, arguments: dict[str, str]
    ) -> str: ...
    async def mcp_resources(self, workspace: Path) -> Offered[ResourceRow]: ...
    async def mcp_read(self, workspace: Path, server: str, uri: str) -> str: ...


class ProcessHost:
    """Runs in a harness worker process (``core.hosts.process.client``); one per app, started on the
    first order. It turns what the worker says into the app's messages."""

    def __init__(
        self,
        app: App[Any],
        pump: EventPump,
        store: Store,
        settings: Settings,
        approve: str | None = None,
    ) -> None:
        self.app = app  # where its messages go and its workers run
        self.pump = pump
        self.store = store
        self.client = WorkerClient(store.path, settings, self, self._spawn, approve)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self.app.run_worker(work, group="harness-io", exit_on_error=False)

    # -- orders --

    async def prepare(self) -> None:
        await self.client.prepare()

    def start(self, request: NewRunRequest) -> None:
        self.client.start(request)

    def start_demo(self, workspace: Path) -> None:
        from io_tui.demo import demo_run

        self.client.run(*demo_run(workspace))

    def interrupt(self, run_id: int) -> bool:
        return self.client.interrupt(run_id)

    def is_live(self, run_id: int) -> bool:
        return self.client.is_live(run_id)

    async def decide(self, approval_id: int, decision: Decision) -> RunResult | None:
        try:
            return await self.client.decide(approval_id, decision)
        except WorkerError as exc:
            raise HostError(str(exc)) from None

    async def close(self) -> None:
        await self.client.close()

    # -- the operator's MCP asks, answered by the worker, whose servers they are --

    async def mcp_prompts(self, workspace: Path) -> Offered[PromptRow]:
        with _host_error(WorkerError):
            return await self.client.mcp_prompts(workspace)

    async def mcp_prompt(
        self, workspace: Path, server: str, name: str, arguments: dict[str, str]
    ) -> str:
        with _host_error(WorkerError):
            return await self.client.mcp_prompt(workspace, server, name, arguments)

    async def mcp_resources(self, workspace: Path) -> Offered[ResourceRow]:
        with _host_error(WorkerError):
            return await self.client.mcp_resources(workspace)

    async def mcp_read(self, workspace: Path, server: str, uri: str) -> str:
        with _host_error(WorkerError):
            return await self.client.mcp_read(workspace, server, uri)

    # -- what the worker says (``WorkerListener``) --

    def event(self, event: RunEvent) -> None:
        self.pump.put(event)

    def started(self, run_id: int) -> None:
        self.app.post_message(RunStarted(run_id))

    def stopped(self, run_id: int) -> None:
        self.app.post_message(RunStopped(run_id))

    def asked(self, request: ApprovalRequest, answer: asyncio.Future[Decision]) -> None:
        self.app.post_message(ApprovalRequested(request, answer))

    def ended(self, result: RunResult | None, error: str | None) -> None:
        self.app.post_message(RunEnded(result, error=error))

    def notice(self, text: str, title: str = "") -> None:
        if title:  # a run the store stopped: the operator must act (make room, …)
            self.app.post_message(HarnessNotice(text, title=title, severity="error", timeout=30))
        else:
            self.app.post_message(HarnessNotice(text, title="Harness", timeout=15))

    def unexpected(self, what: str) -> None:
        self.app.post_message(HarnessNotice(f"unexpected line from the harness: {what[:300]}"))

    def lost(self, run_ids: list[int], code: int, stderr: str) -> None:
        if run_ids:
            self.app.run_worker(self._reap(run_ids), group="db", exit_on_error=False)
        tail = stderr or "(nothing on stderr)"
        how = f"was killed ({_signal_name(-code)})" if code < 0 else f"exited with code {code}"
        runs = ""
        if run_ids:
            which = ", ".join(map(str, run_ids))
            runs = f"; interrupted: run{'s' if len(run_ids) > 1 else ''} {which} (R resumes)"
        self.app.post_message(
            HarnessNotice(
                f"the harness process {how}{runs}\n{tail[-600:]}",
                title="Harness stopped",
                severity="error",
                timeout=30,
            )
        )

    def store_damaged(self, message: str) -> None:
        self.app.post_message(StoreDamagedFound(message))

    async def _reap(self, run_ids: list[int]) -> None:
        """The runs the dead worker held turn ``interrupted`` (resumable: R) the one way any lost
        run does: their leases name a process that is gone, which the store's reaper finds (as
        every process's open and the app's poll do); then the app reloads them (``RunsLost``)."""
        await self.store.leases.reap()
        self.app.post_message(RunsLost(run_ids))


@contextlib.contextmanager
def _host_error(*kinds: type[Exception]) -> Iterator[None]:
    """An error of ``kinds`` raised as a ``HostError`` with its message."""
    try:
        yield
    except kinds as exc:
        raise HostError(str(exc)) from None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class InlineHost:
    """Runs in the app's own event loop, one Textual worker each (``group="runs"``); its runs ask
    ``approver`` (the app's ``UIApprover``, or a fixed one)."""

    def __init__(
        self,
        app: App[Any],
        pump: EventPump,
        store: Store,
        settings: Settings,
        approver: Approver,
    ) -> None:
        self.app = app  # where its messages go and its workers run
        self.pump = pump
        self.store = store
        self.settings = settings
        self.approver = approver
        self.workers: dict[int, Worker[Any]] = {}  # run id → the worker driving it, while live
        self.tasks: dict[int, asyncio.Task[Any]] = {}  # run id → the asyncio task it runs in
        self.asking: set[int] = set()  # runs waiting on an approver's answer
        self._hubs: McpHubs | None = None

    @property
    def hubs(self) -> McpHubs:
        """The app's MCP servers (its runs' and the operator's asks'), made on first use."""
        if self._hubs is None:
            from io_tui.core import McpHubs

            self._hubs = McpHubs(self.settings, self._notice, self.store)
        return self._hubs

    def build_approver(self) -> Approver:
        return _Asking(self.approver, self.asking)

    async def prepare(self) -> None:
        """Start the MCP servers now, as the worker does when it starts."""
        self.hubs.start()

    def start(self, request: NewRunRequest) -> None:
        self.app.run_worker(self._start_request(request), group="runs", exit_on_error=False)

    def start_demo(self, workspace: Path) -> None:
        from io_tui.demo import demo_run

        self.run(*demo_run(workspace))

    def interrupt(self, run_id: int) -> bool:
        """Cancel the run's task with ``OPERATOR_CANCEL``, which the run records as its reason
        (``Worker.cancel`` cancels with none)."""
        worker = self.workers.get(run_id)
        if worker is None:
            return False
        task = self.tasks.get(run_id)
        if task is not None and not task.done():
            task.cancel(OPERATOR_CANCEL)
        else:
            worker.cancel()
        return True

    def is_live(self, run_id: int) -> bool:
        return run_id in self.workers

    async def decide(self, approval_id: int, decision: Decision) -> RunResult | None:
        from io_tui.core import DecideError, decide

        record = await self.store.approvals.get(approval_id)
        run_id = record.request.run_id if record is not None else None
        registry = await self.hubs.resume_registry(self.store, run_id)
        sink = self._sink()
        try:
            decided = await decide(
                self.store,
                approval_id,
                decision,
                approver=self.build_approver(),
                sink=sink,
                registry=registry,
            )
        except DecideError as exc:
            raise HostError(str(exc)) from None
        finally:
            self._stopped(sink)
        return decided.result

    async def close(self) -> None:
        """As the worker process does: a run whose ask was deferred at quit (the approval desk
        answers every open ask so) gets ``PAUSE_WAIT`` to pause durably, its request left in
        the inbox; the other live runs are cancelled (each ends ``cancelled``, its store rows
        consistent)."""
        asking = [w for run_id, w in self.workers.items() if run_id in self.asking]
        await _settled(asking, PAUSE_WAIT)
        live = [w for w in self.app.workers if w.group == "runs" and w.is_running]
        for worker in live:
            worker.cancel()
        await _settled(live, PAUSE_WAIT)
        if self._hubs is not None:
            await self._hubs.aclose()

    # -- the operator's MCP asks, answered from the runs' own hubs --

    async def mcp_prompts(self, workspace: Path) -> Offered[PromptRow]:
        with _host_error(ToolError):
            return await self.hubs.prompts(workspace)

    async def mcp_prompt(
        self, workspace: Path, server: str, name: str, arguments: dict[str, str]
    ) -> str:
        with _host_error(ToolError):
            return await self.hubs.prompt_text(workspace, server, name, arguments)

    async def mcp_resources(self, workspace: Path) -> Offered[ResourceRow]:
        with _host_error(ToolError):
            return await self.hubs.resources(workspace)

    async def mcp_read(self, workspace: Path, server: str, uri: str) -> str:
        with _host_error(ToolError):
            return await self.hubs.read(workspace, server, uri)

    def _sink(self) -> BridgeSink:
        worker = get_current_worker()

        def named(run_id: int) -> None:
            self.workers[run_id] = worker
            if (task := asyncio.current_task()) is not None:  # the first event is the run's own
                self.tasks[run_id] = task
            self.app.post_message(RunStarted(run_id))

        return BridgeSink(self.pump, on_run_id=named)

    def _stopped(self, sink: BridgeSink) -> None:
        run_id = sink.run_id
        if run_id is None:
            return
        self.tasks.pop(run_id, None)
        if self.workers.pop(run_id, None) is not None:
            self.app.post_message(RunStopped(run_id))

    def run(
        self,
        contract: TaskContract,
        provider: Provider,
        policy: Policy,
        seed_run_id: int | None = None,
    ) -> Worker[None]:
        """Start a run from ready parts (the demo, a built request, a test's provider)."""
        work = self._run(contract, provider, policy, seed_run_id)
        return self.app.run_worker(work, group="runs", exit_on_error=False)

    async def _run(
        self,
        contract: TaskContract,
        provider: Provider,
        policy: Policy,
        seed_run_id: int | None,
        origin: RunOrigin | None = None,
        hub: McpHub | None = None,
    ) -> None:
        """Drive one run with ``hub``'s MCP tools (default: the shared servers', as the
        worker gives the demo)."""
        from io_tui.core import Harness, start_run

        sink = self._sink()
        try:
            if hub is None:
                hub = await self.hubs.shared()
            harness = Harness(
                store=self.store,
                provider=provider,
                approver=self.build_approver(),
                sink=sink,
                policy=policy,
                registry=self.hubs.registry(hub),
                origin=origin,
                late_tools=hub,
            )
            result = await start_run(harness, contract, seed_run_id=seed_run_id)
        finally:
            self._stopped(sink)
        self.app.post_message(RunEnded(result))

    def _notice(self, text: str) -> None:
        self.app.post_message(HarnessNotice(text))

    async def _start_request(self, request: NewRunRequest) -> None:
        from io_tui.core import prepare_run

        try:
            run = await prepare_run(self.store, self.settings, request)
        except ValueError as exc:
            self.app.post_message(RunEnded(None, error=str(exc)))
            return
        hub = await self.hubs.for_run(run.found, run.contract.workspace, run.notices)
        work = self._run(
            run.contract, run.provider, run.policy, request.seed_run_id, run.origin, hub
        )
        self.app.run_worker(work, group="runs", exit_on_error=False)


class _Asking:
    """An approver that notes which runs are waiting on it (``InlineHost.asking``)."""

    def __init__(self, approver: Approver, asking: set[int]) -> None:
        self.approver = approver
        self.asking = asking

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asking.add(request.run_id)
        try:
            return await self.approver.decide(request)
        finally:
            self.asking.discard(request.run_id)


async def _settled(workers: Iterable[Worker[Any]], within: float) -> None:
    """Wait for ``workers`` to end, however they end, for at most ``within`` seconds."""

    async def ended(worker: Worker[Any]) -> None:
        with contextlib.suppress(WorkerCancelled, WorkerFailed):
            await worker.wait()

    if waiting := [ended(worker) for worker in workers]:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waiting), within)
