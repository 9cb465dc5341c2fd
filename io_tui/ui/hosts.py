"""Where the app's runs execute: in a harness worker process (the default) or in the app's loop.

Both hosts take the same orders — start a run, start the demo, interrupt, decide a paused run's
request — and report the same way, in messages to the app they are given (never calls into it):
events into the app's ``EventPump``, asks as ``ApprovalRequested`` with a Future, ``RunStarted``
/ ``RunStopped`` as they take and drop a run, ends as ``RunEnded``, a dead worker as
``RunsLost`` and ``HarnessNotice``. What they need (store, settings, approver) is passed in.

- ``ProcessHost`` starts ``python -m io_tui.core.worker`` on the app's store on first use and
  speaks ``core.worker.protocol`` with it. The runs get a core of their own: the app's frames
  never wait for a SQLite commit, and a run's CPU never delays a key press. If the worker dies,
  the app says so (with the tail of its stderr) and starts a fresh one for the next run.
- ``InlineHost`` runs each run as a Textual worker in the app's own loop; tests use it to drive
  runs with in-memory providers (``run``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.worker import Worker, WorkerCancelled, WorkerFailed, get_current_worker

from io_tui.config import Settings
from io_tui.core.approvals import ApprovalRequest, Approver, Decision
from io_tui.core.events import OPERATOR_CANCEL
from io_tui.core.outcome import RunResult
from io_tui.core.run_request import NewRunRequest
from io_tui.core.store import Store
from io_tui.core.worker.protocol import READ_CHUNK, LineBuffer, encode, event_from
from io_tui.ui.bridge import BridgeSink, EventPump
from io_tui.ui.messages import (
    ApprovalRequested,
    HarnessNotice,
    RunEnded,
    RunsLost,
    RunStarted,
    RunStopped,
)

if TYPE_CHECKING:
    from io_tui.core.contract import TaskContract
    from io_tui.core.policy import Policy
    from io_tui.core.providers.base import Provider

WORKER_MODULE = "io_tui.core.worker"
CLOSE_TIMEOUT_S = 10.0
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


class ProcessHost:
    """Runs in a harness worker process; one per app, started on the first order."""

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
        self.settings = settings
        self.approve = approve  # None: asks go to the app; else a FIXED_APPROVERS name
        self.live: dict[int, str] = {}  # run id → tag
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._process: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()  # one worker, however many orders race to start it
        self._tags = itertools.count(1)
        self._decisions: dict[str, asyncio.Future[RunResult | None]] = {}
        self._asks: dict[int, asyncio.Future[Decision]] = {}
        self._closing = False
        self._reader: asyncio.Future[None] | None = None

    # -- orders --

    async def prepare(self) -> None:
        """Start the worker now (the app does after its first frame), so the first run need not
        wait for the worker's imports."""
        await self._ensure()

    def start(self, request: NewRunRequest) -> None:
        self._order("start", request=request.to_json(), approve=self.approve)

    def start_demo(self, workspace: Path) -> None:
        self._order("demo", workspace=str(workspace), approve=self.approve)

    def interrupt(self, run_id: int) -> bool:
        if run_id not in self.live:
            return False
        self._order("cancel", run_id=run_id)
        return True

    def is_live(self, run_id: int) -> bool:
        return run_id in self.live

    async def decide(self, approval_id: int, decision: Decision) -> RunResult | None:
        tag = self._tag()
        future: asyncio.Future[RunResult | None] = asyncio.get_running_loop().create_future()
        self._decisions[tag] = future
        msg = {
            "op": "decide",
            "tag": tag,
            "approval_id": approval_id,
            "decision": decision.to_json(),
        }
        await self._send(msg)
        return await future

    async def close(self) -> None:
        """Close the worker's stdin: it defers open asks, cancels the other runs and exits."""
        self._closing = True
        process = self._process
        if process is None or process.returncode is not None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:  # the reader keeps draining stdout meanwhile, so the worker never blocks on it
            await asyncio.wait_for(process.wait(), CLOSE_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reader is not None:
            await asyncio.wait([self._reader], timeout=1.0)

    # -- the pipe --

    def _tag(self) -> str:
        return f"t{next(self._tags)}"

    def _order(self, op: str, **fields: Any) -> None:
        """Send an order from a worker; a worker that cannot be started or written to is
        reported as a run that did not start."""

        async def send() -> None:
            try:
                await self._send({"op": op, "tag": self._tag(), **fields})
            except (OSError, HostError) as exc:
                error = f"the harness process is not available: {exc}"
                self.app.post_message(RunEnded(None, error=error))

        self.app.run_worker(send(), group="harness-io", exit_on_error=False)

    async def _send(self, message: dict[str, Any]) -> None:
        process = await self._ensure()
        assert process.stdin is not None
        process.stdin.write(encode(message))
        await process.stdin.drain()

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self._closing:
            raise HostError("the app is closing")
        async with self._starting:
            if self._process is None or self._process.returncode is not None:
                self._process = await self._spawn()
            return self._process

    async def _spawn(self) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER_MODULE,
            "--store",
            str(self.store.path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None
        settings = self.settings.model_dump(mode="json")
        process.stdin.write(encode({"op": "hello", "settings": settings}))
        self._reader = asyncio.ensure_future(self._read(process))  # until the worker exits
        return process

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None and process.stderr is not None
        errors = asyncio.ensure_future(self._read_stderr(process.stderr))
        lines = LineBuffer()
        try:
            while chunk := await process.stdout.read(READ_CHUNK):
                for message in lines.feed(chunk):
                    try:
                        self._receive(message)
                    except (KeyError, TypeError, ValueError) as exc:
                        self._unexpected(f"{exc!r} in {message}")
            code = await process.wait()
            await errors
        finally:
            errors.cancel()
        self._lost(code)

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    def _receive(self, message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind == "event":
            self.pump.put(event_from(message["e"]))
        elif kind == "started":
            self.live[message["run_id"]] = message["tag"]
            self.app.post_message(RunStarted(message["run_id"]))
        elif kind == "ask":
            self._ask(ApprovalRequest.from_json(message["request"]))
        elif kind in ("ended", "failed"):
            self._ended(message)
        elif kind == "notice":
            notice = HarnessNotice(str(message["text"]), title="Harness", timeout=15)
            self.app.post_message(notice)
        else:
            self._unexpected(str(message))

    def _unexpected(self, what: str) -> None:
        """A line the protocol does not know: reported, skipped; the runs go on."""
        self.app.post_message(HarnessNotice(f"unexpected line from the harness: {what[:300]}"))

    def _ask(self, request: ApprovalRequest) -> None:
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._asks[request.id] = future

        def answered(done: asyncio.Future[Decision]) -> None:
            self._asks.pop(request.id, None)
            if done.cancelled() or self._closing:
                return
            answer = {
                "op": "answer",
                "approval_id": request.id,
                "decision": done.result().to_json(),
            }
            self.app.run_worker(self._send(answer), group="harness-io", exit_on_error=False)

        future.add_done_callback(answered)
        self.app.post_message(ApprovalRequested(request, future))

    def _ended(self, message: dict[str, Any]) -> None:
        tag = message["tag"]
        for run_id in [r for r, t in self.live.items() if t == tag]:
            del self.live[run_id]
            self.app.post_message(RunStopped(run_id))
        result = RunResult.from_json(message["result"]) if message.get("result") else None
        error = message.get("error")
        decision = self._decisions.pop(tag, None)
        if decision is not None:
            if error is not None:
                decision.set_exception(HostError(error))
            else:
                decision.set_result(result)
            return
        if result is not None or error is not None:
            self.app.post_message(RunEnded(result, error=error))

    def _lost(self, code: int) -> None:
        """The worker exited: expected at close; otherwise its live runs are lost with it."""
        lost = sorted(self.live)
        self.live.clear()
        for run_id in lost:
            self.app.post_message(RunStopped(run_id))
        for ask in self._asks.values():
            ask.cancel()  # nobody is waiting for the answer any more
        for decision in self._decisions.values():
            if not decision.done():
                decision.set_exception(HostError(f"the harness process exited (code {code})"))
        self._asks.clear()
        self._decisions.clear()
        if self._closing:
            return
        if lost:
            self.app.run_worker(self._mark_lost(lost, code), group="db", exit_on_error=False)
        tail = "\n".join(self.stderr_tail) or "(nothing on stderr)"
        runs = f"; runs lost: {', '.join(map(str, lost))}" if lost else ""
        self.app.post_message(
            HarnessNotice(
                f"the harness process exited with code {code}{runs}\n{tail[-600:]}",
                title="Harness stopped",
                severity="error",
                timeout=30,
            )
        )

    async def _mark_lost(self, run_ids: list[int], code: int) -> None:
        """The runs the dead worker held end ``failed`` in the store (they would say 'running'
        forever), and the app reloads them (``RunsLost``)."""
        store = self.store
        for run_id in run_ids:
            row = await store.runs.get(run_id)
            if row is not None and row.status in ("running", "asking"):
                error = f"the harness process exited (code {code}) while the run was live"
                await store.runs.set_status(run_id, "failed", "failed", error=error)
        self.app.post_message(RunsLost(run_ids))


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

    def build_approver(self) -> Approver:
        return _Asking(self.approver, self.asking)

    async def prepare(self) -> None:
        return None

    def start(self, request: NewRunRequest) -> None:
        self.app.run_worker(self._start_request(request), group="runs", exit_on_error=False)

    def start_demo(self, workspace: Path) -> None:
        from io_tui import demo
        from io_tui.core.providers.scripted import ScriptedProvider

        provider = ScriptedProvider.from_file(demo.SCRIPT)
        self.run(demo.demo_contract(workspace), provider, demo.demo_policy())

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
        from io_tui.core.decisions import DecideError, decide

        sink = self._sink()
        try:
            decided = await decide(
                self.store, approval_id, decision, approver=self.build_approver(), sink=sink
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
        self, contract: TaskContract, provider: Provider, policy: Policy, seed_run_id: int | None
    ) -> None:
        from io_tui.core.run import Harness, start_run

        sink = self._sink()
        harness = Harness(
            store=self.store,
            provider=provider,
            approver=self.build_approver(),
            sink=sink,
            policy=policy,
        )
        try:
            result = await start_run(harness, contract, seed_run_id=seed_run_id)
        finally:
            self._stopped(sink)
        self.app.post_message(RunEnded(result))

    async def _start_request(self, request: NewRunRequest) -> None:
        from io_tui.core.launch import build_run

        try:
            contract, provider, policy = await build_run(self.store, self.settings, request)
        except ValueError as exc:
            self.app.post_message(RunEnded(None, error=str(exc)))
            return
        self.run(contract, provider, policy, request.seed_run_id)


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
