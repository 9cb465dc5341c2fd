"""The app's end of the worker pipe (``core.hosts.process.client``), without Textual: a real worker
process, its asks answered through the listener's Future, a worker that dies reported lost."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from damaged_store import MALFORMED, damage_table, sha256
from mcp_support import (
    MARK_VAR,
    PYTHON,
    needs_proc,
    new_mark,
    parent_of,
    processes_with_mark,
    server_script_args,
    wait_until_gone,
)

from io_tui.config import Settings
from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.hosts.process import client as client_module
from io_tui.core.hosts.process.client import WorkerClient, WorkerError
from io_tui.core.run.outcome import RunResult
from io_tui.core.run.request import NewRunRequest
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

WRITE = {
    "text": "Writing.",
    "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}],
}
SLEEP = {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["sleep", "60"]}}]}


class Heard:
    """A ``WorkerListener`` that keeps what it hears and approves every ask."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.said: list[tuple[str, Any]] = []
        self.changed = asyncio.Event()

    def _note(self, what: str, detail: Any) -> None:
        self.said.append((what, detail))
        self.changed.set()

    def event(self, event: RunEvent) -> None:
        self.events.append(event)
        self.changed.set()

    def started(self, run_id: int) -> None:
        self._note("started", run_id)

    def stopped(self, run_id: int) -> None:
        self._note("stopped", run_id)

    def asked(self, request: ApprovalRequest, answer: asyncio.Future[Decision]) -> None:
        self._note("asked", request.target)
        answer.set_result(Decision.approve())

    def ended(self, result: RunResult | None, error: str | None) -> None:
        self._note("ended", (result.status if result else None, error))

    def notice(self, text: str) -> None:
        self._note("notice", text)

    def unexpected(self, what: str) -> None:
        self._note("unexpected", what)

    def lost(self, run_ids: list[int], code: int, stderr: str) -> None:
        self._note("lost", run_ids)

    def store_damaged(self, message: str) -> None:
        self._note("store_damaged", message)

    async def until(self, done: Callable[[], bool], limit: float = 30.0) -> None:
        async with asyncio.timeout(limit):
            while not done():
                self.changed.clear()
                await self.changed.wait()

    def kinds(self) -> list[str]:
        return [what for what, _ in self.said]


def _client(tmp_path: Path, heard: Heard) -> tuple[WorkerClient, set[asyncio.Task[None]]]:
    tasks: set[asyncio.Task[None]] = set()

    def spawn(work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    return WorkerClient(tmp_path / "store.db", Settings(), heard, spawn), tasks


def _script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


async def test_a_run_in_the_worker_asks_through_the_listener_and_ends(tmp_path: Path) -> None:
    heard = Heard()
    client, _ = _client(tmp_path, heard)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = _script(tmp_path / "s.json", [WRITE, {"text": "done"}])
    try:
        client.start(NewRunRequest("write a", workspace, script))
        await heard.until(lambda: "ended" in heard.kinds())
    finally:
        await client.close()
    assert heard.kinds() == ["started", "asked", "stopped", "ended"]
    assert dict(heard.said)["ended"] == ("finished", None)
    assert (workspace / "a.txt").read_text() == "new\n"
    kinds = [e.kind for e in heard.events]
    assert kinds[0] is EventKind.RUN_STARTED and kinds[-1] is EventKind.RUN_FINISHED
    assert not client.is_live(1)


async def test_a_worker_that_dies_reports_its_runs_lost(tmp_path: Path) -> None:
    heard = Heard()
    client, _ = _client(tmp_path, heard)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    try:
        client.start(NewRunRequest("sleep", workspace, _script(tmp_path / "s.json", [SLEEP])))
        await heard.until(lambda: client.is_live(1))
        assert client._process is not None
        client._process.kill()
        await heard.until(lambda: "lost" in heard.kinds())
    finally:
        await client.close()
    assert dict(heard.said)["lost"] == [1]
    assert heard.kinds()[-2:] == ["stopped", "lost"] and not client.is_live(1)


async def test_a_worker_on_a_damaged_store_ends_with_one_line_the_listener_gets(
    tmp_path: Path,
) -> None:
    """The worker checks the whole store at its open (after the app's first frame): a damaged
    one ends it before any run, with one line on stderr, which the listener gets as
    ``store_damaged`` (the app ends with it), not as a lost worker."""
    path = tmp_path / "store.db"
    async with await Store.open(path) as store:
        await store.notes.set("k", "v", "global", None)
    before = damage_table(path, "events")
    heard = Heard()
    client, _ = _client(tmp_path, heard)
    try:
        await client.prepare()
        await heard.until(lambda: "store_damaged" in heard.kinds())
    finally:
        await client.close()
    message = dict(heard.said)["store_damaged"]
    assert message.startswith(f"store {path} is damaged ({MALFORMED}); ")
    assert list(client.stderr_tail) == [message]  # no traceback, nothing else
    assert heard.kinds() == ["store_damaged"]
    assert sha256(path) == before


async def test_the_worker_starts_the_settings_servers_with_their_env(tmp_path: Path) -> None:
    """The settings the app sends keep a server's env values (JSON settings mask them as
    ``***``): the server the worker starts sees the value the config gives."""
    heard = Heard()
    client, _ = _client(tmp_path, heard)
    entry = {"command": PYTHON, "args": server_script_args(), "env": {"IO_TUI_TEST_VAR": "green"}}
    client.settings = Settings(mcp={"servers": {"t": entry}})  # type: ignore[arg-type]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    info = {"tool_calls": [{"name": "mcp__t__info", "arguments": {}}]}
    try:
        client.start(NewRunRequest("info", workspace, _script(tmp_path / "s.json", [info])))
        await heard.until(lambda: "ended" in heard.kinds(), 120)
    finally:
        await client.close()
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, 1)
    assert trace["steps"][0]["observations"][0]["text"].endswith(" IO_TUI_TEST_VAR=green")


def _mcp_client(tmp_path: Path, heard: Heard, mark: str) -> WorkerClient:
    """A client whose worker's settings have the test server ``t`` with prompts and a
    resource, its processes carrying ``mark``; its asks wait for however loaded the machine
    is."""
    entry = {"command": PYTHON, "args": server_script_args("offers"), "env": {MARK_VAR: mark}}
    client, _ = _client(tmp_path, heard)
    client.settings = Settings(mcp={"servers": {"t": entry}})  # type: ignore[arg-type]
    client.ask_timeout_s = 120.0
    return client


@needs_proc
async def test_the_operators_mcp_asks_are_answered_by_the_workers_servers(
    tmp_path: Path,
) -> None:
    """Prompts, a prompt's text, resources and a read, asked over the pipe, come from the
    worker's server, the same process its runs use; a prompt that never answers fails after the
    ask timeout with a message saying so, and the server answers the next ask."""
    heard, mark = Heard(), new_mark()
    client = _mcp_client(tmp_path, heard, mark)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    echo = {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"message": "hi"}}]}
    try:
        prompts = await client.mcp_prompts(workspace)
        assert [(row.server, row.name, row.required) for row in prompts.rows] == [
            ("t", "greet", ()),
            ("t", "review", ("file",)),
            ("t", "stall", ("seconds",)),
        ]
        assert (prompts.servers, prompts.problems) == (1, ())
        text = await client.mcp_prompt(workspace, "t", "review", {"file": "a.py"})
        assert text == "Review a.py for bugs."
        resources = await client.mcp_resources(workspace)
        assert [(row.kind, row.uri, row.name) for row in resources.rows] == [
            ("resource", "test://note", "note")
        ]
        assert await client.mcp_read(workspace, "t", "test://note") == (
            "[resource test://note text/plain, 27 chars]\na note from the test server"
        )
        client.ask_timeout_s = 2.0
        with pytest.raises(WorkerError, match=r"t/stall: no answer within 2s .*hung"):
            await client.mcp_prompt(workspace, "t", "stall", {"seconds": "3600"})
        client.ask_timeout_s = 120.0
        assert await client.mcp_prompt(workspace, "t", "greet", {}) == (
            "Say hello to the operator, briefly."
        )
        client.start(NewRunRequest("echo", workspace, _script(tmp_path / "s.json", [echo])))
        await heard.until(lambda: "ended" in heard.kinds(), 120)
        assert dict(heard.said)["ended"] == ("finished", None)
        servers = processes_with_mark(mark)
        assert len(servers) == 1 and parent_of(servers[0]) == client.pid
    finally:
        await client.close()
    assert wait_until_gone(mark) == []


async def test_an_mcp_ask_of_a_worker_that_stopped_answering_fails_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker itself hangs (stopped): the app's ask still ends, a WorkerError saying so."""
    monkeypatch.setattr(client_module, "REPLY_MARGIN_S", 0.5)
    heard = Heard()
    client, _ = _client(tmp_path, heard)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    try:
        assert (await client.mcp_prompts(workspace)).rows == ()  # it answers: no servers
        assert client.pid is not None
        os.kill(client.pid, signal.SIGSTOP)
        client.ask_timeout_s = 0.5
        try:
            with pytest.raises(WorkerError, match=r"the harness process did not answer within 1s"):
                await client.mcp_prompts(workspace)
        finally:
            os.kill(client.pid, signal.SIGCONT)
    finally:
        await client.close()
