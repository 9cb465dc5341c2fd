"""McpHub against the SDK's own MCPServer: in process, and as a stdio subprocess of a tiny script.

Failure cases use the subprocess: a command that does not exist, a server that dies or hangs at
start, a tool that kills its server mid-call, a tool that never answers. Process leaks are checked
through an environment marker in /proc.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from mcp_support import (
    MARK_VAR,
    TEST_SERVER,
    needs_proc,
    new_mark,
    processes_with_mark,
    server_script_args,
    wait_until_gone,
)
from mcp_test_server import HANGING_VAR, PNG_1PX, build_server
from waits import until

from io_tui.core.authority.approvals import ApproveAll, DenyAll
from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.boundary.untrusted import frame
from io_tui.core.contract import TaskContract
from io_tui.core.ledger import ObsKind
from io_tui.core.mcp.config import HttpServer, StdioServer
from io_tui.core.mcp.connection import MAX_RESTARTS, TRANSPORT_LOST, Connection, InProcessServer
from io_tui.core.mcp.hub import McpHub
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness, harness_registry
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.run.mcp_hubs import build_hub
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.tools.base import ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.registry import ToolRegistry

SERVER_SOURCE = TEST_SERVER.read_text()


def stdio(
    mode: str = "serve", *, mark: str = "", env: dict[str, str] | None = None, **timeouts: float
) -> StdioServer:
    env = {**({MARK_VAR: mark} if mark else {}), **(env or {})}
    return StdioServer(command=sys.executable, args=server_script_args(mode), env=env, **timeouts)


async def call(hub: McpHub, name: str, arguments: dict | None = None) -> ToolOutcome:
    tool = {t.name: t for t in hub.tools}[name]
    args = tool.parse(arguments or {})
    return await tool.run(args, ToolContext(None, 0, 1, 10_000))  # type: ignore[arg-type]


# -- in process --


async def test_in_process_server_tools_are_registered_with_schemas() -> None:
    async with McpHub({"demo": InProcessServer(build_server())}) as hub:
        assert hub.problems == ()
        registry = ToolRegistry()
        hub.register_into(registry)
        names = registry.names()
        assert "mcp__demo__echo" in names and "mcp__demo__tiny_image" in names
        spec = {s.name: s for s in registry.specs()}["mcp__demo__add"]
        assert spec.parameters["required"] == ["a", "b"]
        assert spec.parameters["properties"]["a"]["type"] == "integer"
        assert (await call(hub, "mcp__demo__add", {"a": 2, "b": 3})).text == "5"
        weather = await call(hub, "mcp__demo__weather", {"city": "Oslo"})
        assert '"sky": "clear"' in weather.text and weather.kind is ObsKind.MCP
        image = await call(hub, "mcp__demo__tiny_image")
        assert image.text.splitlines() == ["a pixel:", f"[image image/png, {len(PNG_1PX)} bytes]"]
        failed = await call(hub, "mcp__demo__fail", {"reason": "disk full"})
        assert failed.is_error and "disk full" in failed.text
        # a 200 KB file sent as text and as {"content": text} is kept once: 200 KB, not 400
        file = await call(hub, "mcp__demo__read_text", {"size": 200_000})
        assert len(file.text) == 200_000 and file.text.startswith("line 0\nline 1\n")
        status = hub.statuses()[0]
        assert (status.name, status.transport, status.state) == ("demo", "in-process", "ready")


async def test_disabled_servers_are_not_started() -> None:
    servers = {
        "on": InProcessServer(build_server()),
        "off": InProcessServer(build_server(), enabled=False),
    }
    async with build_hub(servers) as hub:
        assert hub.disabled == ("off",)
        assert {t.server.name for t in hub.tools} == {"on"}


async def test_a_run_calls_an_mcp_tool_under_the_policy(
    store: Store, workspace: Path, write_script
) -> None:
    """Allowed by a rule: performed and recorded as an mcp observation. Denied: refused, naming
    the rule, without reaching the approver or the server."""
    script = write_script(
        [
            {"tool_calls": [{"name": "mcp__demo__echo", "arguments": {"message": "hi"}}]},
            {"tool_calls": [{"name": "mcp__demo__add", "arguments": {"a": 1, "b": 2}}]},
            {"text": "done"},
        ]
    )
    policy = Policy().with_layer(
        Layer(
            "project",
            (
                Rule(Act.EXEC, Effect.ALLOW, "mcp__demo__*"),
                Rule(Act.EXEC, Effect.DENY, "mcp__demo__add"),
            ),
        )
    )
    async with McpHub({"demo": InProcessServer(build_server())}) as hub:
        registry = harness_registry()
        hub.register_into(registry)
        harness = Harness(
            store=store,
            provider=ScriptedProvider.from_file(script),
            approver=DenyAll(),  # never consulted: allow and deny are decided by rules
            registry=registry,
            policy=policy,
        )
        result = await start_run(harness, TaskContract("use mcp", workspace))
    assert result.outcome is Outcome.DENIED  # its last tool call was refused
    trace = await build_trace(store, result.run_id)
    steps = trace["steps"]
    echo = steps[0]["observations"][0]
    text = frame("mcp__demo__echo", "mcp__demo__echo", "echo: hi")  # a server's answer is data
    assert (echo["kind"], echo["target"], echo["text"]) == ("mcp", "mcp__demo__echo", text)
    refused = steps[1]["observations"][0]
    assert refused["is_error"]
    assert "deny exec mcp__demo__add" in refused["text"] and "'project'" in refused["text"]
    assert trace["approvals"] == []


async def test_an_asked_mcp_call_persists_its_exact_arguments(
    store: Store, workspace: Path, write_script
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "mcp__demo__echo", "arguments": {"message": "hi"}}]},
            {"text": "ok"},
        ]
    )
    async with McpHub({"demo": InProcessServer(build_server())}) as hub:
        registry = harness_registry()
        hub.register_into(registry)
        harness = Harness(
            store=store,
            provider=ScriptedProvider.from_file(script),
            approver=ApproveAll(),
            registry=registry,
        )
        result = await start_run(harness, TaskContract("ask", workspace))
    trace = await build_trace(store, result.run_id)
    [approval] = trace["approvals"]
    assert (approval["act"], approval["target"]) == ("exec", "mcp__demo__echo")
    assert approval["content"] == '{"message": "hi"}'
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: hi")


# -- stdio subprocess: the real transport, failures, cleanup --


@needs_proc
async def test_stdio_server_runs_with_its_env_and_leaves_no_process() -> None:
    mark = new_mark()
    async with McpHub({"t": stdio(mark=mark)}) as hub:
        info = await call(hub, "mcp__t__info", {"var": MARK_VAR})
        assert f"{MARK_VAR}={mark}" in info.text
        assert len(processes_with_mark(mark)) == 1
    assert wait_until_gone(mark) == []


@needs_proc
async def test_startup_failures_are_problems_and_the_others_still_work() -> None:
    mark = new_mark()
    servers = {
        "good": stdio(mark=mark),
        "missing": StdioServer(command="io-tui-no-such-mcp-server"),
        "dies": stdio("exit-at-start", mark=mark),
        "hangs": stdio("hang-at-start", mark=mark, startup_timeout_s=1.5),
    }
    async with McpHub(servers) as hub:
        problems = "\n".join(hub.problems)
        assert len(hub.problems) == 3
        assert (
            "MCP server 'missing' failed to start: command not found: 'io-tui-no-such-mcp-server'"
            in problems
        )
        assert "MCP server 'dies' failed to start" in problems
        assert "fatal: missing API token for the test service" in problems  # its stderr
        assert "MCP server 'hangs' failed to start: did not start within 1.5s" in problems
        assert {t.server.name for t in hub.tools} == {"good"}
        assert (await call(hub, "mcp__good__echo", {"message": "ok"})).text == "echo: ok"
        states = {s.name: s.state for s in hub.statuses()}
        assert states == {"good": "ready", "missing": "failed", "dies": "failed", "hangs": "failed"}
        assert len(processes_with_mark(mark)) == 1  # the hanging one was killed already
    assert wait_until_gone(mark) == []


@needs_proc
async def test_a_crash_mid_call_is_reported_and_the_server_restarts_on_the_next_call() -> None:
    mark = new_mark()
    async with McpHub({"t": stdio(mark=mark)}) as hub:
        first_pid = (await call(hub, "mcp__t__info")).text.split()[0]
        with pytest.raises(ToolError) as caught:
            await call(hub, "mcp__t__crash")
        message = str(caught.value)
        assert message.startswith("MCP server 't' crashed during the 'crash' call")
        assert "about to crash: simulated fault" in message  # the server's last stderr line
        assert "restarted on the next call" in message
        assert hub.statuses()[0].state == "crashed"
        second_pid = (await call(hub, "mcp__t__info")).text.split()[0]
        assert second_pid != first_pid
        assert hub.statuses()[0].state == "ready"
        assert (await call(hub, "mcp__t__echo", {"message": "again"})).text == "echo: again"
    assert wait_until_gone(mark) == []


@needs_proc
async def test_a_server_s_own_server_error_is_a_refusal_not_a_crash() -> None:
    """-32000 is the SDK's code for a closed connection and JSON-RPC's first "server error"
    code, which servers use for their own failures: the server that answers with it is up."""
    mark = new_mark()
    async with McpHub({"t": stdio(mark=mark)}) as hub:
        pid = (await call(hub, "mcp__t__info")).text.split()[0]
        with pytest.raises(ToolError) as caught:
            await call(hub, "mcp__t__reject", {"message": "quota exceeded", "code": -32000})
        assert str(caught.value).startswith("MCP server 't' refused reject")
        assert "quota exceeded" in str(caught.value)
        assert hub.statuses()[0].state == "ready"
        assert (await call(hub, "mcp__t__info")).text.split()[0] == pid  # not restarted
    assert wait_until_gone(mark) == []


@pytest.mark.parametrize("said", sorted(TRANSPORT_LOST))
def test_the_sdk_s_own_words_for_a_lost_transport_are_a_crash(said: str) -> None:
    """The SDK answers a call whose transport was lost (a closed pipe, an SSE stream that ended
    without the answer) with -32000 and its own words: the call may have taken effect, and
    the server is restarted; the same code with a server's own words is a refusal."""
    from mcp import MCPError

    link = Connection("h", HttpServer(url="http://127.0.0.1:9/mcp"))
    lost = link._call_failed("write", MCPError(-32000, said), 0)
    assert str(lost).startswith("MCP server 'h' crashed during the 'write' call")
    assert link.state == "crashed"
    link = Connection("h", HttpServer(url="http://127.0.0.1:9/mcp"))
    refused = link._call_failed("write", MCPError(-32000, "quota exceeded"), 0)
    assert str(refused).startswith("MCP server 'h' refused write")
    assert link.state == "stopped"


async def test_a_server_that_keeps_crashing_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    async with McpHub({"t": stdio()}) as hub:
        for _ in range(MAX_RESTARTS + 1):
            with pytest.raises(ToolError, match="crashed during"):
                await call(hub, "mcp__t__crash")
        with pytest.raises(
            ToolError, match=f"unavailable: .*gave up after {MAX_RESTARTS} restarts"
        ):
            await call(hub, "mcp__t__echo", {"message": "x"})
        assert hub.statuses()[0].state == "failed"


async def test_a_failed_restart_is_reported_and_retried_later(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER_SOURCE)
    server = StdioServer(command=sys.executable, args=[str(script)])
    async with McpHub({"t": server}) as hub:
        with pytest.raises(ToolError, match="crashed during"):
            await call(hub, "mcp__t__crash")
        script.write_text("import sys\nsys.stderr.write('broken install\\n')\nsys.exit(1)\n")
        with pytest.raises(ToolError) as caught:
            await call(hub, "mcp__t__echo", {"message": "x"})
        assert "could not be restarted" in str(caught.value)
        assert "broken install" in str(caught.value)
        script.write_text(SERVER_SOURCE)
        assert (await call(hub, "mcp__t__echo", {"message": "back"})).text == "echo: back"


@needs_proc
async def test_a_hanging_call_times_out_and_the_server_stays_usable() -> None:
    mark = new_mark()
    async with McpHub({"t": stdio(mark=mark, call_timeout_s=1.0)}) as hub:
        started = asyncio.get_running_loop().time()
        with pytest.raises(ToolError) as caught:
            await call(hub, "mcp__t__hang")
        assert asyncio.get_running_loop().time() - started < 5
        assert "MCP server 't' timed out: hang did not answer within 1s" in str(caught.value)
        assert "still running" in str(caught.value)
        assert (await call(hub, "mcp__t__echo", {"message": "alive"})).text == "echo: alive"
        # twice in a row: restarted before the next call
        with pytest.raises(ToolError):
            await call(hub, "mcp__t__hang")
        with pytest.raises(ToolError, match="restarted before the next call"):
            await call(hub, "mcp__t__hang")
        assert (await call(hub, "mcp__t__echo", {"message": "fresh"})).text == "echo: fresh"
    assert wait_until_gone(mark) == []


async def test_invalid_arguments_never_reach_the_server() -> None:
    async with McpHub({"demo": InProcessServer(build_server())}) as hub:
        tool = {t.name: t for t in hub.tools}["mcp__demo__add"]
        with pytest.raises(ToolError, match=r"b: 'two' is not of type 'integer'"):
            tool.parse({"a": 1, "b": "two"})
        with pytest.raises(ToolError, match="expected a JSON object"):
            tool.parse(["a"])  # type: ignore[arg-type]


@needs_proc
async def test_cancelling_the_owner_of_a_hub_leaves_no_process(tmp_path: Path) -> None:
    """A run cancelled while a call is in flight still closes the hub and its servers."""
    mark = new_mark()

    hanging = tmp_path / "hanging"

    async def session() -> None:
        async with McpHub({"t": stdio(mark=mark, env={HANGING_VAR: str(hanging)})}) as hub:
            await call(hub, "mcp__t__hang")

    task = asyncio.create_task(session())
    await until(hanging.exists, "the server to be inside the call")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(mark) == []


@needs_proc
async def test_cancelling_a_hub_while_it_starts_leaves_no_process() -> None:
    mark = new_mark()
    task = asyncio.create_task(McpHub({"t": stdio("hang-at-start", mark=mark)}).__aenter__())
    await until(lambda: processes_with_mark(mark), "the server's process to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(mark) == []


async def test_a_missing_env_reference_stops_only_that_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("IO_TUI_NO_SUCH_TOKEN", raising=False)
    servers = {
        "ok": InProcessServer(build_server()),
        "web": HttpServer(
            url="http://127.0.0.1:9/mcp", headers={"X-Key": "${IO_TUI_NO_SUCH_TOKEN}"}
        ),
        "cli": StdioServer(command=sys.executable, env={"TOKEN": "${IO_TUI_NO_SUCH_TOKEN}"}),
    }
    async with McpHub(servers) as hub:
        assert sorted(hub.problems) == [
            "MCP server 'cli' failed to start: env.TOKEN refers to ${IO_TUI_NO_SUCH_TOKEN}, "
            "which is not set",
            "MCP server 'web' failed to start: headers.X-Key refers to ${IO_TUI_NO_SUCH_TOKEN}, "
            "which is not set",
        ]
        assert {t.server.name for t in hub.tools} == {"ok"}
