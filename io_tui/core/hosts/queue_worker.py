"""A long-running worker (``io-tui worker``): claims queued runs whose labels it serves, drives
each under its lease, and gives it back; the store is the only coordinator (docs/SCALE-OUT.md).

- **Claims** go through ``QueueRepo.claim`` (one transaction that takes the lease too). Before
  each round the worker turns runs whose driver died ``interrupted`` (``LeaseRepo.reap``): a
  worker killed on this host is noticed at once (its pid is gone), one on another host when its
  heartbeat is ``LEASE_TTL_S`` old. Such a run is claimed again (a takeover) and resumed under
  the durable-runs rules: a call in flight the policy says is safe to repeat (a read, a command
  a rule marks ``idempotent``) re-runs; any other write, command or MCP call in flight is never
  re-run without the operator: the run stays ``interrupted`` and is held (``held`` says why)
  until the operator's choice releases it (the TUI's Resume, or ``io-tui resume RUN --queue
  --reconcile …``), and the next claim applies that choice. Each claim takes the lease's next
  epoch: a worker that was stopped past its lease and comes back finds its run taken over at
  its next write or renewal (``LeaseLost``) and lets it go, having performed nothing more.
- **Asks** wait in the store (``StoreApprover``): every attached inbox shows the request, the
  first to decide wins, and the worker holding the run reads the decision there.
- **Workspaces**: the recorded path (a shared volume the worker reaches) or a git remote and
  ref, cloned into the worker's scratch directory on the first claim, with a branch pushed back
  when the run finishes. A takeover whose checkout this worker cannot reach is held.
- **Tools**: the built-ins, and the MCP servers the run was queued with (its ``RunOrigin``,
  recorded by ``enqueue_run``), started for that run alone and stopped when the worker lets it
  go. A secret the record names only as a variable comes from this worker's environment or
  from its own config's server of the same name (``WorkerOptions.servers``); a server that does
  not start is a line in the worker's log, and the run goes on without it.
- **Draining** (``drain``: SIGTERM, or ``io-tui worker --drain ID`` read at the heartbeat):
  nothing new is claimed, asks are deferred (the run pauses; any worker resumes it once it is
  decided), the runs in progress finish. ``hand_back`` (a second signal) ends them now,
  ``interrupted``, for another worker to take over.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from io_tui.core import telemetry
from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract, contract_to_json
from io_tui.core.events import HAND_BACK
from io_tui.core.providers.base import Provider
from io_tui.core.run.launch import prepare_run
from io_tui.core.run.loop import resume_run
from io_tui.core.run.mcp_hubs import registry_with
from io_tui.core.run.origin import RunOrigin
from io_tui.core.run.outcome import Outcome, RunResult
from io_tui.core.run.reconcile import (
    FixedReconciler,
    InFlight,
    ReconcileChoice,
    ReconcileNeeded,
    Reconciler,
)
from io_tui.core.run.request import NewRunRequest
from io_tui.core.run.settings import RunSettings
from io_tui.core.steering.decisions import harness_for_run
from io_tui.core.store import LeaseLost, Store, StoreDamaged, StoreError, StoreUnreachable
from io_tui.core.store.leases import HEARTBEAT_S, OWNER, Fence
from io_tui.core.store.queue import GIT_WORKSPACE, Claim, GitSource
from io_tui.core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from io_tui.core.mcp.connection import ServerSource

POLL_S = 0.5  # how often an idle worker looks at the queue, and an ask at its request (SQLite)
GIT_TIMEOUT_S = 300
GIVE_BACK_TRIES = 10


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    scratch: Path  # where git runs are checked out, one directory per run
    labels: tuple[str, ...] = ()
    concurrency: int = 1
    poll_s: float = POLL_S
    until_empty: bool = False  # stop once no run it serves is queued or driven by anyone
    # this worker's own MCP servers (its config's): where a run's recorded server names a secret
    # only as a variable this process has not set, the value of the same server here fills it
    servers: Mapping[str, ServerSource] = field(default_factory=dict)


class StoreApprover:
    """A worker's approver: the request is already in the store (every attached TUI's inbox
    shows it); wait for whoever decides it first (``ApprovalRepo.wait_decided``: announced on
    PostgreSQL, read every ``poll_s`` on SQLite). A draining worker defers it instead: the run
    pauses, and once the request is decided any worker claims it again."""

    def __init__(self, store: Store, draining: asyncio.Event, poll_s: float = POLL_S) -> None:
        self.store = store
        self.draining = draining
        self.poll_s = poll_s

    async def decide(self, request: ApprovalRequest) -> Decision:
        decided = asyncio.ensure_future(
            self.store.approvals.wait_decided(request.id, poll_s=self.poll_s)
        )
        draining = asyncio.ensure_future(self.draining.wait())
        try:
            await asyncio.wait((decided, draining), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (decided, draining):
                task.cancel()
            for task in (decided, draining):  # the wait's listening connection closed
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if decided.done() and not decided.cancelled():
            return decided.result()
        return Decision.defer(decided_by="worker (draining)")


class HoldReconciler:
    """A takeover with no operator at hand: a call in flight that needs one stops the resume
    (the run stays ``interrupted``) and says how to go on; ``asked`` keeps the reason."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.asked: str | None = None

    async def reconcile(self, call: InFlight) -> ReconcileChoice:
        intent = call.intent
        self.asked = (
            f"{intent.tool} (call {intent.call_id}, step {intent.step}) was in flight when the "
            f"run's last driver stopped: resume run {call.run_id} from the TUI, or `io-tui resume "
            f"{call.run_id} --queue --reconcile rerun|done|skip`"
        )
        # held before the run turns interrupted, so no other worker claims it meanwhile
        await self.store.queue.hold(call.run_id, self.asked)
        raise ReconcileNeeded(f"run {call.run_id}: {self.asked}")


@dataclass
class QueueWorker:
    store: Store
    options: WorkerOptions
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr))

    def __post_init__(self) -> None:
        self.draining = asyncio.Event()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()
        self.listening = asyncio.Event()  # queue notifications reach it (PostgreSQL)
        self.results: dict[int, RunResult] = {}
        self.damaged: StoreDamaged | None = None  # the store turned out damaged: the worker stops

    def drain(self) -> None:
        if not self.draining.is_set():
            self.log("draining: no new claims; the runs in progress finish, asks are deferred")
        self.draining.set()
        self._wake.set()

    def hand_back(self) -> None:
        """End the runs in progress now, ``interrupted``, for another worker to take over."""
        self.drain()
        for task in self.tasks.values():
            task.cancel(HAND_BACK)

    def signal(self) -> None:
        """SIGTERM / SIGINT: the first drains, the next hands the runs back."""
        if self.draining.is_set():
            self.log("handing the runs in progress back")
            self.hand_back()
        else:
            self.drain()

    async def serve(self) -> None:
        options = self.options
        await self.store.queue.register(options.labels, options.concurrency)
        beat = asyncio.create_task(self._beat())
        listen = asyncio.create_task(self._listen())
        try:
            while not self.draining.is_set() and self.damaged is None:
                self._wake.clear()  # before the round: a wake-up during it (a drain) holds
                try:
                    if not await self._round():
                        break
                except StoreDamaged as exc:
                    self.damaged = exc
                    break
                except StoreError as exc:  # a store busy past its timeout: the next round
                    self.log(f"store: {exc}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), options.poll_s)
            if self.draining.is_set():  # `io-tui workers` says so however it was asked
                with contextlib.suppress(StoreError):
                    await self.store.queue.request_drain([OWNER.id])
            if self.damaged is not None:  # nothing can be written: its runs stop where they are
                for task in self.tasks.values():
                    task.cancel()
            if self.tasks:
                await asyncio.wait(list(self.tasks.values()))
            if self.damaged is not None:
                raise self.damaged
        finally:
            beat.cancel()
            listen.cancel()
            if self.damaged is None:
                await self.store.queue.stopped()

    async def _listen(self) -> None:
        """On PostgreSQL a queue notification (an enqueue, a release, a decision) starts the
        next round at once rather than after ``poll_s``; on SQLite this only waits."""
        async with self.store.live.queue_wakeups() as wakeup:
            # one more round now: what was queued while the LISTEN was being set up (after the
            # first round looked) notified nobody, and would otherwise wait for ``poll_s``
            self.listening.set()
            self._wake.set()
            while True:
                if await wakeup.wait(self.options.poll_s):
                    self._wake.set()

    async def _round(self) -> bool:
        """Reap, claim what there is room for; False once ``until_empty`` has nothing left."""
        options = self.options
        await self.store.leases.reap()
        while len(self.tasks) < options.concurrency and not self.draining.is_set():
            claim = await self.store.queue.claim(options.labels)
            if claim is None:
                break
            self._start(claim)
        if options.until_empty and not self.tasks:
            return bool(await self.store.queue.unsettled(options.labels))
        return True

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                if await self.store.queue.beat():
                    self.drain()
            except StoreError:
                continue  # a busy store: the next beat tries again

    def _start(self, claim: Claim) -> None:
        run_id = claim.entry.run_id
        task = asyncio.create_task(self._guarded(claim), name=f"run {run_id}")
        self.tasks[run_id] = task

        def done(_: asyncio.Task[None]) -> None:
            self.tasks.pop(run_id, None)
            self._wake.set()

        task.add_done_callback(done)

    async def _guarded(self, claim: Claim) -> None:
        """``_drive``; a run whose driving broke outside the run loop is given back
        ``interrupted``, as a crash would leave it: for the next claim when the store was busy
        past its timeout, held for the operator for anything else (its provider cannot be
        rebuilt here, …), so that no worker claims a broken run over and over."""
        run_id = claim.entry.run_id
        try:
            await self._drive(claim)
        except StoreDamaged as exc:  # nothing to give back: the worker stops (``serve``)
            self.damaged = self.damaged or exc
            self._wake.set()
        except LeaseLost as exc:  # another worker drives it: nothing to give back
            self.log(str(exc))
        except StoreUnreachable as exc:  # given back once the store answers again, saying why
            self.log(str(exc))
            await self._give_back(run_id, str(exc), hold=False)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            self.log(f"run {run_id}: given back after {reason}")
            await self._give_back(run_id, reason, hold=not isinstance(exc, StoreError))

    async def _give_back(self, run_id: int, reason: str, *, hold: bool) -> None:
        """Turn the run ``interrupted`` with ``reason`` as its error, for the next claim (held
        for the operator first when ``hold``), trying again while the store is busy or out of
        reach; still failing, the lease dies with this process and the run is reaped then."""
        for _ in range(GIVE_BACK_TRIES):
            try:
                if hold:
                    await self.store.queue.hold(run_id, f"its worker could not drive it: {reason}")
                await self.store.runs.set_status(
                    run_id,
                    "interrupted",
                    "interrupted",
                    error=reason,
                    fence=Fence(run_id, OWNER.id, None),
                )
                self.log(f"run {run_id}: given back (interrupted)")
                return
            except LeaseLost:
                return  # another worker took it over meanwhile: it is theirs
            except StoreError:
                await asyncio.sleep(self.options.poll_s)

    async def _drive(self, claim: Claim) -> None:
        entry, run_id = claim.entry, claim.entry.run_id
        first = claim.status == "queued"
        self.log(f"run {run_id}: claimed ({'new' if first else claim.status})")
        try:
            workspace = await self._workspace(claim)
        except WorkspaceLost as exc:
            await self.store.queue.hold(run_id, str(exc))
            await self.store.runs.set_status(run_id, "interrupted", Outcome.INTERRUPTED.value)
            self.log(f"run {run_id}: held: {exc}")
            return
        reconciler: Reconciler
        holding = HoldReconciler(self.store)
        reconciler = (
            FixedReconciler(ReconcileChoice(entry.reconcile)) if entry.reconcile else holding
        )
        approver = StoreApprover(self.store, self.draining, self.options.poll_s)
        async with self._tools(run_id) as registry:
            harness = await harness_for_run(self.store, run_id, approver, registry=registry)
            try:
                result = await resume_run(harness, run_id, reconciler, first=first)
            except asyncio.CancelledError:
                self.log(f"run {run_id}: handed back")
                return
            finally:
                await harness.provider.aclose()
        self.results[run_id] = result
        if holding.asked is not None:
            self.log(f"run {run_id}: held for the operator: {holding.asked}")
            return
        why = f": {result.error}" if result.error else ""
        self.log(
            f"run {run_id}: {result.status} ({result.outcome.value}) after {result.steps}"
            f" steps{why}"
        )
        if entry.git is not None and entry.git.push_branch and result.status == "finished":
            pushed = await push_branch(workspace, entry.git, run_id, result)
            await self.store.queue.set_pushed(run_id, pushed)
            self.log(f"run {run_id}: {pushed}")

    @asynccontextmanager
    async def _tools(self, run_id: int) -> AsyncIterator[ToolRegistry]:
        """The built-in tools and, while the run is driven, the MCP servers it was queued with
        (none for a run queued without a record of them)."""
        row = await self.store.runs.get(run_id)
        origin = RunOrigin.from_json(row.origin if row is not None else None)
        servers = origin.servers_here(self.options.servers) if origin is not None else {}
        async with registry_with(servers, lambda text: self.log(f"run {run_id}: {text}")) as tools:
            yield tools

    async def _workspace(self, claim: Claim) -> Path:
        """The run's workspace on this worker: the recorded path, or (a git run's first claim)
        a fresh checkout in the scratch directory, recorded as the run's workspace."""
        run_id, git = claim.entry.run_id, claim.entry.git
        row = await self.store.runs.get(run_id)
        assert row is not None
        if git is not None and row.workspace.startswith(GIT_WORKSPACE):  # not checked out yet
            target = self.options.scratch / f"run-{run_id}"
            await checkout(git, target)
            await self.store.queue.set_workspace(run_id, str(target))
            return target
        path = Path(row.workspace)
        if not await asyncio.to_thread(path.is_dir):
            where = "its checkout" if git is not None else "its workspace"
            raise WorkspaceLost(f"{where} {path} is not reachable from this worker")
        return path


class WorkspaceLost(Exception):
    """A run's workspace is not where this worker can reach it."""


async def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    proc = await asyncio.create_subprocess_exec(
        "git",
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise WorkspaceLost(f"git {args[0]} took over {GIT_TIMEOUT_S} s") from None
    text = out.decode(errors="replace").strip()
    if proc.returncode != 0:
        last = text.splitlines()[-1] if text else f"exit {proc.returncode}"
        raise WorkspaceLost(f"git {args[0]} failed: {last}")
    return text


async def checkout(git: GitSource, target: Path) -> None:
    """Clone ``git.remote`` into ``target`` (a fresh directory) and check ``git.ref`` out."""
    # a clone its worker died in (the run never saw it) goes
    await asyncio.to_thread(shutil.rmtree, target, ignore_errors=True)
    await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
    await _git("clone", "--quiet", "--no-checkout", git.remote, str(target))
    await _git("checkout", "--quiet", "--detach", git.ref, cwd=target)


async def push_branch(workspace: Path, git: GitSource, run_id: int, result: RunResult) -> str:
    """Commit what the run left in its checkout and push it to ``git.push_branch``; one line
    saying what was pushed, or why not."""
    assert git.push_branch
    identity = ("-c", "user.name=io-tui worker", "-c", "user.email=io-tui@localhost")
    try:
        await _git("add", "--all", cwd=workspace)
        message = f"io-tui run {run_id}: {result.status} after {result.steps} steps"
        await _git(*identity, "commit", "--quiet", "--allow-empty", "-m", message, cwd=workspace)
        await _git("push", "--quiet", "origin", f"HEAD:refs/heads/{git.push_branch}", cwd=workspace)
        sha = await _git("rev-parse", "--short", "HEAD", cwd=workspace)
    except WorkspaceLost as exc:
        return f"not pushed: {exc}"
    return f"pushed {git.push_branch} at {sha}"


async def enqueue_run(
    store: Store,
    contract: TaskContract,
    provider: Provider,
    policy: Policy,
    *,
    labels: Sequence[str] = (),
    git: GitSource | None = None,
    origin: RunOrigin | None = None,
) -> int:
    """Put a run on the queue (``io-tui run --queue``): recorded whole (contract, provider,
    policy, and ``origin``: the settings and MCP servers the worker driving it rebuilds),
    ``queued``, for the first worker that serves ``labels``; its id."""
    workspace = f"{GIT_WORKSPACE}{git.remote}@{git.ref}" if git else str(contract.workspace)
    parent = telemetry.enqueued(contract.goal)  # the queuing span the run nests under
    if origin is not None and parent is not None:
        origin = origin.model_copy(update={"trace": parent.header()})
    return await store.queue.enqueue(
        goal=contract.goal,
        workspace=workspace,
        contract={**contract_to_json(contract), "workspace": workspace},
        provider=provider.describe(),
        policy=policy.to_json(),
        labels=labels,
        git=git,
        origin=origin.to_json() if origin is not None else None,
    )


async def enqueue_request(
    store: Store, settings: RunSettings, request: NewRunRequest
) -> tuple[int, list[str]]:
    """The new-run dialog's "Run on: the queue": the run built as this process would start it
    (``prepare_run``; ValueError when it cannot start, or when an MCP file does not load),
    queued with ``request.labels`` and the settings and MCP servers a run started here in its
    workspace gets; its id, and the lines to show (what the workspace's ``.mcp.json`` adds)."""
    run = await prepare_run(store, settings, request)
    try:
        announcement = run.found.announcement()
        problems = [*run.notices, *([announcement] if announcement is not None else [])]
        run_id = await enqueue_run(
            store, run.contract, run.provider, run.policy, labels=request.labels,
            origin=run.origin,
        )  # fmt: skip
    finally:
        await run.provider.aclose()
    return run_id, problems
