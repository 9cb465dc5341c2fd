"""Real MCP servers as a user meets them: mcp-server-time (PyPI) and
@modelcontextprotocol/server-everything (npm), over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import (
    MARK_VAR,
    free_port,
    needs_proc,
    new_mark,
    processes_with_mark,
    server_everything_entry,
    wait_for_port,
    wait_until_gone,
)

from io_tui.core.mcp.config import HttpServer, StdioServer
from io_tui.core.mcp.hub import McpHub
from io_tui.core.tools.base import ToolContext, ToolError, ToolOutcome


async def call(hub: McpHub, name: str, arguments: dict | None = None) -> ToolOutcome:
    tool = {t.name: t for t in hub.tools}[name]
    return await tool.run(tool.parse(arguments or {}), ToolContext(None, 0, 1, 10_000))  # type: ignore[arg-type]


def time_server(**extra: object) -> StdioServer:
    return StdioServer(
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="session")
def everything() -> Path:
    return server_everything_entry()


# -- mcp-server-time (PyPI) --


async def test_mcp_server_time_tools_and_calls() -> None:
    async with McpHub({"time": time_server()}) as hub:
        assert hub.problems == ()
        names = {t.name for t in hub.tools}
        assert names == {"mcp__time__get_current_time", "mcp__time__convert_time"}
        now = await call(hub, "mcp__time__get_current_time", {"timezone": "Europe/Paris"})
        data = json.loads(now.text)
        assert data["timezone"] == "Europe/Paris" and "datetime" in data
        converted = await call(
            hub,
            "mcp__time__convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert json.loads(converted.text)["target"]["datetime"].endswith("T21:00:00+09:00")
        bad = await call(hub, "mcp__time__get_current_time", {"timezone": "Mars/Olympus"})
        assert bad.is_error and "Mars/Olympus" in bad.text
        with pytest.raises(ToolError, match="'timezone' is a required property"):
            {t.name: t for t in hub.tools}["mcp__time__get_current_time"].parse({})


@needs_proc
async def test_mcp_server_time_console_script_leaves_no_process() -> None:
    script = Path(sys.executable).with_name("mcp-server-time")
    if not script.exists():
        pytest.skip(f"no console script at {script}")
    mark = new_mark()
    async with McpHub({"time": StdioServer(command=str(script), env={MARK_VAR: mark})}) as hub:
        assert len(hub.tools) == 2
        assert processes_with_mark(mark)
    assert wait_until_gone(mark) == []


# -- server-everything (npm), stdio --


@needs_proc
async def test_server_everything_over_stdio(everything: Path) -> None:
    mark = new_mark()
    server = StdioServer(
        command="node", args=[str(everything), "stdio"], env={MARK_VAR: mark, "IO_TUI_X": "42"}
    )
    async with McpHub({"everything": server}) as hub:
        assert hub.problems == ()
        names = {t.name for t in hub.tools}
        assert {"mcp__everything__echo", "mcp__everything__get-sum"} <= names
        echo = await call(hub, "mcp__everything__echo", {"message": "hello"})
        assert echo.text == "Echo: hello"
        total = await call(hub, "mcp__everything__get-sum", {"a": 2, "b": 40})
        assert "42" in total.text
        with pytest.raises(ToolError, match="nothing was sent to the server"):
            {t.name: t for t in hub.tools}["mcp__everything__get-sum"].parse({"a": "two", "b": 1})
        image = await call(hub, "mcp__everything__get-tiny-image")
        assert "[image image/png, " in image.text and "bytes]" in image.text
        assert len(image.text) < 500  # summarized, never the base64 payload
        ref = await call(
            hub,
            "mcp__everything__get-resource-reference",
            {"resourceType": "Text", "resourceId": 1},
        )
        assert "[resource demo://resource/dynamic/text/1 text/plain" in ref.text
        structured = await call(
            hub, "mcp__everything__get-structured-content", {"location": "New York"}
        )
        assert "temperature" in json.loads(structured.text)
        env = await call(hub, "mcp__everything__get-env")
        assert '"IO_TUI_X": "42"' in env.text
        assert "OPENAI_API_KEY" not in env.text  # only a minimal environment is inherited
    assert wait_until_gone(mark) == []


async def test_server_everything_progress_is_live_tool_progress(everything: Path) -> None:
    """trigger-long-running-operation reports each step when asked with a progress token: each
    becomes a ``tool_progress`` event naming the call."""
    server = StdioServer(command="node", args=[str(everything), "stdio"])
    events: list[tuple[str, dict]] = []
    ctx = ToolContext(
        None,  # type: ignore[arg-type]
        0,
        1,
        10_000,
        emit=lambda kind, detail: events.append((kind, detail)),
        call_id="c1",
    )
    async with McpHub({"everything": server}) as hub:
        tool = {t.name: t for t in hub.tools}["mcp__everything__trigger-long-running-operation"]
        outcome = await tool.run(tool.parse({"duration": 0.4, "steps": 4}), ctx)
    assert "Long running operation completed" in outcome.text
    assert [kind for kind, _ in events] == ["tool_progress"] * 4
    assert [(d["progress"], d["total"]) for _, d in events] == [(n, 4) for n in (1, 2, 3, 4)]
    assert {(d["call_id"], d["name"]) for _, d in events} == {
        ("c1", "mcp__everything__trigger-long-running-operation")
    }


# -- server-everything (npm), streamable HTTP on 127.0.0.1 --


class HttpEverything:
    """server-everything in streamableHttp mode on a free 127.0.0.1 port, in its own process
    group (it binds every interface; tests connect to 127.0.0.1 only)."""

    def __init__(self, entry: Path) -> None:
        self.entry = entry
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        proc = subprocess.Popen(
            ["node", str(self.entry), "streamableHttp"],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(proc)
        wait_for_port(self.port)

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def everything_http(everything: Path) -> Iterator[HttpEverything]:
    server = HttpEverything(everything)
    server.start()
    try:
        yield server
    finally:
        server.kill()


async def test_server_everything_over_streamable_http(everything_http: HttpEverything) -> None:
    server = HttpServer(
        url=everything_http.url, headers={"X-Io-Tui-Test": "1"}, startup_timeout_s=20
    )
    async with McpHub({"web": server}) as hub:
        assert hub.problems == ()
        assert hub.statuses()[0].transport == "http"
        echo = await call(hub, "mcp__web__echo", {"message": "over http"})
        assert echo.text == "Echo: over http"


async def test_an_http_server_that_goes_away_is_reported_and_reconnected(
    everything_http: HttpEverything,
) -> None:
    server = HttpServer(url=everything_http.url, startup_timeout_s=10, call_timeout_s=10)
    async with McpHub({"web": server}) as hub:
        assert (await call(hub, "mcp__web__echo", {"message": "1"})).text == "Echo: 1"
        everything_http.kill()
        with pytest.raises(ToolError, match="MCP server 'web' crashed"):
            await call(hub, "mcp__web__echo", {"message": "2"})
        with pytest.raises(ToolError, match="could not be restarted"):
            await call(hub, "mcp__web__echo", {"message": "3"})
        everything_http.start()
        assert (await call(hub, "mcp__web__echo", {"message": "4"})).text == "Echo: 4"


async def test_an_unreachable_http_server_is_a_startup_problem() -> None:
    server = HttpServer(url=f"http://127.0.0.1:{free_port()}/mcp", startup_timeout_s=10)
    async with McpHub({"down": server}) as hub:
        [problem] = hub.problems
        assert problem.startswith("MCP server 'down' failed to start: ConnectError")
