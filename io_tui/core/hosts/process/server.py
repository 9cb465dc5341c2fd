"""The worker process: runs the app's runs and speaks ``protocol`` on stdin and stdout.

Each ``start``, ``run`` and ``decide`` becomes one asyncio task keyed by the app's tag. Events
are written as they come; writes made in one loop turn leave in one ``write`` (a burst of events
is one pipe write, not hundreds). A run's asks go to the app (``AppApprover``) unless the app
asked for a fixed approver. stdout carries only protocol lines; anything else goes to stderr,
which the app keeps the tail of for when the worker dies.

The worker owns the app's MCP servers (``McpHubs``): its runs take their tools from its hubs,
and the operator's ``mcp_*`` asks (the app's prompts and resource browser) are answered from
the same ones, so each server runs once, here.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.core.authority.approvals import FIXED_APPROVERS, ApprovalRequest, Approver, Decision
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract, contract_from_json
from io_tui.core.events import OPERATOR_CANCEL, RunEvent
from io_tui.core.hosts.process.protocol import READ_CHUNK, LineBuffer, encode, event_message
from io_tui.core.providers.base import Provider
from io_tui.core.providers.factory import provider_from_description
from io_tui.core.run.harness import Harness
from io_tui.core.run.launch import prepare_run
from io_tui.core.run.loop import start_run
from io_tui.core.run.mcp_hubs import McpHubs
from io_tui.core.run.origin import RunOrigin
from io_tui.core.run.request import NewRunRequest
from io_tui.core.run.settings import RunSettings
from io_tui.core.steering.decisions import DecideError, decide
from io_tui.core.store import Store, StoreDamaged, StoreError, StoreLocation, store_trouble
from io_tui.core.tools.base import ToolError

if TYPE_CHECKING:
    from io_tui.core.mcp.hub import McpHub


class WorkerServer:
    """The runs of one app, as tasks; ``serve`` reads the app's commands until stdin closes."""

    def __init__(self, store: Store, write: Callable[[bytes], object]) -> None:
        self.store = store
        self.settings = RunSettings()
        self._write = write
        self._pending: list[bytes] = []
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.run_tags: dict[int, str] = {}  # run id → the tag of the task driving it
        self.asks: dict[int, asyncio.Future[Decision]] = {}  # approval id → the app's answer
        self.asking: set[str] = set()  # tags of the tasks waiting on an ask
        self.closing = False
        self.hubs = McpHubs(
            self.settings, self._notice, self.store
        )  # the app's MCP servers, for all
        self.damaged: StoreDamaged | None = None  # the store turned out damaged: the worker ends
        self._stop = asyncio.Event()  # stop reading orders (a damaged store)

    # -- output --

    def send(self, message: dict[str, Any]) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(encode(message))

    def _flush(self) -> None:
        data, self._pending = b"".join(self._pending), []
        if data:
            self._write(data)

    # -- input --

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Carry out the app's orders until its stdin closes (or the store turns out damaged:
        then ``damaged`` says so), then shut down."""
        reading = asyncio.ensure_future(self._read_orders(reader))
        stopped = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait([reading, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if reading.done():
            reading.result()  # what broke the reading, raised as before
        else:
            reading.cancel()
        await self.shutdown()

    async def _read_orders(self, reader: asyncio.StreamReader) -> None:
        lines = LineBuffer()
        while chunk := await reader.read(READ_CHUNK):
            for message in lines.feed(chunk):
                try:
                    self.handle(message)
                except (KeyError, TypeError, ValueError) as exc:
                    print(f"io-tui worker: bad command {message!r}: {exc}", file=sys.stderr)

    def handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "hello":
            self.settings = RunSettings.from_json(message["settings"])
            self.hubs = McpHubs(self.settings, self._notice, self.store)
            self.hubs.start()
        elif op == "start":
            request = NewRunRequest.from_json(message["request"])
            self._spawn(
                message["tag"], self._start(message["tag"], request, message.get("approve"))
            )
        elif op == "run":
            self._spawn(message["tag"], self._run(message))
        elif op == "decide":
            decision = Decision.from_json(message["decision"])
            self._spawn(
                message["tag"], self._decide(message["tag"], message["approval_id"], decision)
            )
        elif op == "answer":
            future = self.asks.get(message["approval_id"])
            if future is not None and not future.done():
                future.set_result(Decision.from_json(message["decision"]))
        elif op == "cancel":
            task = self.tasks.get(self.run_tags.get(message["run_id"], ""))
            if task is not None:
                task.cancel(OPERATOR_CANCEL)
        elif op in MCP_ASKS:
            self._spawn(message["tag"], self._answer(message))
        else:
            raise ValueError(f"unknown op {op!r}")

    async def shutdown(self) -> None:
        """stdin closed: defer every open ask (those runs pause durably, their requests wait in
        the inbox), cancel every other run, and wait for all of them to end."""
        self.closing = True
        for future in self.asks.values():
            if not future.done():
                future.set_result(Decision.defer(decided_by="io-tui (app closed)"))
        for tag, task in self.tasks.items():
            if tag not in self.asking:
                task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        await self.hubs.aclose()  # stops the MCP servers
        self._flush()

    def _notice(self, text: str) -> None:
        self.send({"t": "notice", "text": text})

    async def _answer(self, message: dict[str, Any]) -> None:
        """An ``mcp_*`` ask of the operator's, answered from the runs' hubs: a ``reply`` with
        its value, or with the error that kept it (a hung server's, after ``timeout_s``)."""
        tag, op, timeout_s = message["tag"], message["op"], message.get("timeout_s")
        workspace = Path(message["workspace"]) if message.get("workspace") else None
        hubs = self.hubs
        value: Any
        try:
            if op == "mcp_prompts":
                value = (await hubs.prompts(workspace, timeout_s)).to_json()
            elif op == "mcp_resources":
                value = (await hubs.resources(workspace, timeout_s)).to_json()
            elif op == "mcp_prompt":
                arguments = {str(k): str(v) for k, v in message["arguments"].items()}
                value = await hubs.prompt_text(
                    workspace, message["server"], message["name"], arguments, timeout_s
                )
            else:
                value = await hubs.read(workspace, message["server"], message["uri"], timeout_s)
        except ToolError as exc:
            self.send({"t": "reply", "tag": tag, "error": str(exc)})
        except Exception as exc:  # the ask failed; the worker and its runs go on
            traceback.print_exc()
            self.send({"t": "reply", "tag": tag, "error": f"{type(exc).__name__}: {exc}"})
        else:
            self.send({"t": "reply", "tag": tag, "value": value})

    # -- the tasks --

    def _spawn(self, tag: str, work: Coroutine[Any, Any, None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                self.send({"t": "ended", "tag": tag, "result": None})
            except StoreDamaged as exc:  # nothing can be written: the worker ends, saying why
                self.damaged = self.damaged or exc
                self._stop.set()
            except StoreError as exc:  # the run stopped where it was (full, out of reach, taken
                # over): said to the operator, and the worker and the other runs go on
                self.send({"t": "notice", "text": str(exc), "title": store_trouble(exc)})
                self.send({"t": "ended", "tag": tag, "result": None})
            except Exception as exc:  # the task failed; the worker and the other runs go on
                traceback.print_exc()
                self.send({"t": "failed", "tag": tag, "error": f"{type(exc).__name__}: {exc}"})
            finally:
                self.tasks.pop(tag, None)

        self.tasks[tag] = asyncio.get_running_loop().create_task(guarded())

    async def _start(self, tag: str, request: NewRunRequest, approve: str | None) -> None:
        try:
            run = await prepare_run(self.store, self.settings, request)
        except ValueError as exc:
            self.send({"t": "failed", "tag": tag, "error": str(exc)})
            return
        hub = await self.hubs.for_run(run.found, run.contract.workspace, run.notices)
        await self._drive(
            tag, run.contract, run.provider, run.policy, approve, request.seed_run_id,
            run.origin, hub,
        )  # fmt: skip

    async def _run(self, message: dict[str, Any]) -> None:
        """A run from the parts the app made (the demo's): its contract, provider and policy."""
        tag = message["tag"]
        try:
            contract = contract_from_json(message["contract"])
            policy = Policy.from_json(message["policy"], source="the app's policy")
            provider = provider_from_description(message["provider"])
        except ValueError as exc:
            self.send({"t": "failed", "tag": tag, "error": str(exc)})
            return
        await self._drive(tag, contract, provider, policy, message.get("approve"))

    async def _drive(
        self,
        tag: str,
        contract: TaskContract,
        provider: Provider,
        policy: Policy,
        approve: str | None,
        seed_run_id: int | None = None,
        origin: RunOrigin | None = None,
        hub: McpHub | None = None,
    ) -> None:
        if hub is None:
            hub = await self.hubs.shared()
        harness = Harness(
            store=self.store,
            provider=provider,
            approver=self._approver(tag, approve),
            sink=PipeSink(self, tag),
            policy=policy,
            registry=self.hubs.registry(hub),
            origin=origin,
            late_tools=hub,
        )
        try:
            result = await start_run(harness, contract, seed_run_id=seed_run_id)
        finally:
            await provider.aclose()
        self.send({"t": "ended", "tag": tag, "result": result.to_json()})

    async def _decide(self, tag: str, approval_id: int, decision: Decision) -> None:
        record = await self.store.approvals.get(approval_id)
        run_id = record.request.run_id if record is not None else None
        registry = await self.hubs.resume_registry(self.store, run_id)
        try:
            decided = await decide(
                self.store,
                approval_id,
                decision,
                approver=self._approver(tag, None),
                sink=PipeSink(self, tag),
                registry=registry,
            )
        except DecideError as exc:
            self.send({"t": "failed", "tag": tag, "error": str(exc)})
            return
        result = decided.result.to_json() if decided.result is not None else None
        self.send({"t": "ended", "tag": tag, "result": result, "run_id": decided.run_id})

    def _approver(self, tag: str, approve: str | None) -> Approver:
        fixed = FIXED_APPROVERS.get(approve or "")
        return fixed() if fixed is not None else AppApprover(self, tag)

    def started(self, tag: str, run_id: int) -> None:
        self.run_tags[run_id] = tag
        self.send({"t": "started", "tag": tag, "run_id": run_id})


MCP_ASKS = frozenset({"mcp_prompts", "mcp_prompt", "mcp_resources", "mcp_read"})


class PipeSink:
    """A run's events, written to the app; the first one names the run the tag drives."""

    def __init__(self, server: WorkerServer, tag: str) -> None:
        self.server = server
        self.tag = tag
        self.run_id: int | None = None

    def emit(self, event: RunEvent) -> None:
        if self.run_id is None:
            self.run_id = event.run_id
            self.server.started(self.tag, event.run_id)
        self.server.send(event_message(event))


class AppApprover:
    """Asks the app (which shows the approval modal) and waits for its ``answer``."""

    def __init__(self, server: WorkerServer, tag: str) -> None:
        self.server = server
        self.tag = tag

    async def decide(self, request: ApprovalRequest) -> Decision:
        if self.server.closing:
            return Decision.defer(decided_by="io-tui (app closed)")
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.server.asks[request.id] = future
        self.server.asking.add(self.tag)
        self.server.send({"t": "ask", "request": request.to_json()})
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                future.set_result(Decision.defer(decided_by="io-tui (run cancelled)"))
            raise
        finally:
            self.server.asks.pop(request.id, None)
            self.server.asking.discard(self.tag)


async def main(store_path: StoreLocation) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK * 16)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # The protocol keeps the pipe on a descriptor of its own; fd 1 becomes stderr, so neither a
    # stray print nor a child process that inherits stdout can write into the protocol.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    # the whole file checked first (as `io-tui run` does; after the app's first frame): a
    # damaged store ends the worker before a run starts, and the app with it (EXIT_STORE_DAMAGED)
    async with await Store.open(store_path, check=True) as store:
        # The harness's modules and the open store live as long as the worker: frozen, the
        # collector's full passes, which stall every run's events, stop walking them.
        gc.freeze()
        server = WorkerServer(store, write)
        await server.serve(reader)
    if server.damaged is not None:
        raise server.damaged
    return 0
