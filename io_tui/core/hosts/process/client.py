"""The app's end of the harness worker's pipe: starts ``python -m io_tui.core.hosts.process`` on a store
and speaks ``protocol`` with it. No Textual: what the worker says goes to a ``WorkerListener``
(the UI's ``ProcessHost`` turns it into messages), and the coroutines the client sends from run
on the caller's ``spawn`` (the UI's workers).

One client per app, its worker started on the first order (or ``prepare``). If the worker dies,
the runs it held are reported lost (``WorkerListener.lost``, with the tail of its stderr) and a
fresh worker starts for the next order.

The worker owns the app's MCP servers; the app asks it what they offer (``mcp_prompts``,
``mcp_prompt``, ``mcp_resources``, ``mcp_read``), each answered within ``ask_timeout_s`` or
failed with a ``WorkerError`` saying so (a hung server, or a worker that stopped answering).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections import deque
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract, contract_to_json
from io_tui.core.events import RunEvent
from io_tui.core.hosts.process.protocol import (
    EXIT_STORE_DAMAGED,
    READ_CHUNK,
    LineBuffer,
    encode,
    event_from,
)
from io_tui.core.mcp.offered import ASK_TIMEOUT_S, Offered, PromptRow, ResourceRow
from io_tui.core.providers.base import Provider
from io_tui.core.run.outcome import RunResult
from io_tui.core.run.request import NewRunRequest
from io_tui.core.run.settings import RunSettings
from io_tui.core.store import StoreLocation

WORKER_MODULE = "io_tui.core.hosts.process"
CLOSE_TIMEOUT_S = 10.0
REPLY_MARGIN_S = 5.0  # an ask's reply may come this long after the worker's own bound


class WorkerError(RuntimeError):
    """An order the worker could not carry out (the app is closing, a decision it refused…)."""


class WorkerListener(Protocol):
    """What the worker says, as it says it (called on the client's loop)."""

    def event(self, event: RunEvent) -> None: ...

    def started(self, run_id: int) -> None:
        """The worker drives ``run_id`` now."""

    def stopped(self, run_id: int) -> None:
        """The worker no longer drives ``run_id`` (it ended, or the worker died)."""

    def asked(self, request: ApprovalRequest, answer: asyncio.Future[Decision]) -> None:
        """A live run asks: set ``answer`` (the client sends it back)."""

    def ended(self, result: RunResult | None, error: str | None) -> None:
        """A run started by an order ended (``result``), or could not start (``error``)."""

    def notice(self, text: str, title: str = "") -> None:
        """Something the user should read; ``title``: what it is about (a store that stopped a
        run says which: ``store_trouble``), else the harness in general."""

    def unexpected(self, what: str) -> None:
        """A line the protocol does not know: skipped; the runs go on."""

    def lost(self, run_ids: list[int], code: int, stderr: str) -> None:
        """The worker exited on its own (not at ``close``), holding ``run_ids``."""

    def store_damaged(self, message: str) -> None:
        """The worker ended because the store is damaged (``StoreDamaged``: ``message``); the
        runs it held stopped where they were (``stopped`` said so for each)."""


class WorkerClient:
    """Orders to the worker, and what it answers to the ``listener``."""

    def __init__(
        self,
        store_path: StoreLocation,
        settings: RunSettings,
        listener: WorkerListener,
        spawn: Callable[[Coroutine[Any, Any, None]], object],
        approve: str | None = None,
        ask_timeout_s: float = ASK_TIMEOUT_S,
    ) -> None:
        self.store_path = store_path
        self.settings = settings
        self.listener = listener
        self.spawn = spawn  # runs a coroutine the client sends from (an order, an answer)
        self.approve = approve  # None: asks go to the listener; else a FIXED_APPROVERS name
        self.ask_timeout_s = ask_timeout_s  # an mcp_* ask fails after this (the worker's bound)
        self.live: dict[int, str] = {}  # run id → tag
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._process: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()  # one worker, however many orders race to start it
        self._tags = itertools.count(1)
        self._decisions: dict[str, asyncio.Future[RunResult | None]] = {}
        self._asks: dict[int, asyncio.Future[Decision]] = {}
        self._replies: dict[str, asyncio.Future[Any]] = {}  # tag → an mcp_* ask's answer
        self._closing = False
        self._reader: asyncio.Future[None] | None = None

    # -- orders --

    async def prepare(self) -> None:
        """Start the worker now (the app does after its first frame), so the first run need not
        wait for the worker's imports."""
        await self._ensure()

    def start(self, request: NewRunRequest) -> None:
        self._order("start", request=request.to_json(), approve=self.approve)

    def run(self, contract: TaskContract, provider: Provider, policy: Policy) -> None:
        """Start a run from ready parts (the demo's); the worker rebuilds the provider from
        its description."""
        self._order(
            "run",
            contract=contract_to_json(contract),
            provider=provider.describe(),
            policy=policy.to_json(),
            approve=self.approve,
        )

    def interrupt(self, run_id: int) -> bool:
        if run_id not in self.live:
            return False
        self._order("cancel", run_id=run_id)
        return True

    def is_live(self, run_id: int) -> bool:
        return run_id in self.live

    @property
    def pid(self) -> int | None:
        """The worker process's id while it runs (the kill trials kill it)."""
        process = self._process
        return process.pid if process is not None and process.returncode is None else None

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

    # -- the operator's asks of the worker's MCP servers --

    async def mcp_prompts(self, workspace: Path) -> Offered[PromptRow]:
        """The prompts of the MCP servers a run in ``workspace`` gets."""
        answer = await self._ask_mcp("mcp_prompts", workspace=str(workspace))
        return Offered.from_json(answer, PromptRow.from_json)

    async def mcp_prompt(
        self, workspace: Path, server: str, name: str, arguments: dict[str, str]
    ) -> str:
        """Prompt ``server/name`` filled with ``arguments``, as text."""
        fields = {"server": server, "name": name, "arguments": arguments}
        return str(await self._ask_mcp("mcp_prompt", workspace=str(workspace), **fields))

    async def mcp_resources(self, workspace: Path) -> Offered[ResourceRow]:
        """The resources and templates of the MCP servers a run in ``workspace`` gets."""
        answer = await self._ask_mcp("mcp_resources", workspace=str(workspace))
        return Offered.from_json(answer, ResourceRow.from_json)

    async def mcp_read(self, workspace: Path, server: str, uri: str) -> str:
        """Resource ``uri`` of ``server``, as text."""
        return str(
            await self._ask_mcp("mcp_read", workspace=str(workspace), server=server, uri=uri)
        )

    async def _ask_mcp(self, op: str, **fields: Any) -> Any:
        """Send an ``mcp_*`` ask and wait for its ``reply``: its value, or a WorkerError with
        why not (the worker's, or that it did not answer within ``ask_timeout_s``)."""
        tag = self._tag()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._replies[tag] = future
        limit = self.ask_timeout_s + REPLY_MARGIN_S  # the worker's bound, and its reply's way
        try:
            await self._send({"op": op, "tag": tag, "timeout_s": self.ask_timeout_s, **fields})
            async with asyncio.timeout(limit):
                return await future
        except TimeoutError:
            raise WorkerError(f"the harness process did not answer within {limit:g}s") from None
        except OSError as exc:
            raise WorkerError(f"the harness process is not available: {exc}") from None
        finally:
            self._replies.pop(tag, None)

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
        """Send an order from ``spawn``; a worker that cannot be started or written to is
        reported as a run that did not start."""

        async def send() -> None:
            try:
                await self._send({"op": op, "tag": self._tag(), **fields})
            except (OSError, WorkerError) as exc:
                self.listener.ended(None, f"the harness process is not available: {exc}")

        self.spawn(send())

    async def _send(self, message: dict[str, Any]) -> None:
        process = await self._ensure()
        assert process.stdin is not None
        process.stdin.write(encode(message))
        await process.stdin.drain()

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self._closing:
            raise WorkerError("the app is closing")
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
            str(self.store_path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None
        # not mode="json": that masks the MCP servers' env and header values, which the worker
        # starts the servers with (``encode`` writes paths and the like as text)
        settings = self.settings.model_dump(include=set(RunSettings.model_fields))
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
                        self.listener.unexpected(f"{exc!r} in {message}")
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
            self.listener.event(event_from(message["e"]))
        elif kind == "started":
            self.live[message["run_id"]] = message["tag"]
            self.listener.started(message["run_id"])
        elif kind == "ask":
            self._ask(ApprovalRequest.from_json(message["request"]))
        elif kind in ("ended", "failed"):
            self._ended(message)
        elif kind == "notice":
            self.listener.notice(str(message["text"]), str(message.get("title") or ""))
        elif kind == "reply":
            self._replied(message["tag"], message.get("value"), message.get("error"))
        else:
            self.listener.unexpected(str(message))

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
            self.spawn(self._send(answer))

        future.add_done_callback(answered)
        self.listener.asked(request, future)

    def _replied(self, tag: str, value: Any, error: str | None) -> None:
        future = self._replies.get(tag)
        if future is None or future.done():
            return  # its asker gave up waiting
        if error is not None:
            future.set_exception(WorkerError(error))
        else:
            future.set_result(value)

    def _ended(self, message: dict[str, Any]) -> None:
        tag = message["tag"]
        if tag in self._replies:  # an ask whose task ended without a reply (the worker closing)
            self._replied(tag, None, message.get("error") or "the harness process stopped it")
            return
        for run_id in [r for r, t in self.live.items() if t == tag]:
            del self.live[run_id]
            self.listener.stopped(run_id)
        result = RunResult.from_json(message["result"]) if message.get("result") else None
        error = message.get("error")
        decision = self._decisions.pop(tag, None)
        if decision is not None:
            if error is not None:
                decision.set_exception(WorkerError(error))
            else:
                decision.set_result(result)
            return
        if result is not None or error is not None:
            self.listener.ended(result, error)

    def _lost(self, code: int) -> None:
        """The worker exited: expected at close; otherwise its live runs are lost with it."""
        lost = sorted(self.live)
        self.live.clear()
        for run_id in lost:
            self.listener.stopped(run_id)
        for ask in self._asks.values():
            ask.cancel()  # nobody is waiting for the answer any more
        for waiting in [*self._decisions.values(), *self._replies.values()]:
            if not waiting.done():
                waiting.set_exception(WorkerError(f"the harness process exited (code {code})"))
        self._asks.clear()
        self._decisions.clear()
        if self._closing:
            return
        if code == EXIT_STORE_DAMAGED and self.stderr_tail:
            self.listener.store_damaged(self.stderr_tail[-1])
        else:
            self.listener.lost(lost, code, "\n".join(self.stderr_tail))


__all__ = ["WorkerClient", "WorkerError", "WorkerListener"]
