"""MCP servers started in the background: a run never waits for one that hangs at start, a late
server's tools join the run at the next request with a notice to the model, and a server the
model was told about that then fails is reported to it too.

Real stdio subprocesses of the test server; a ``gated`` one starts serving only when the test
says so, so when its tools arrive is decided by the test, not by timing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp_support import MARK_VAR, needs_proc, new_mark, server_script_args, wait_until_gone
from mcp_test_server import GATE_VAR
from watching_provider import Watching

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.contract import TaskContract
from io_tui.core.mcp.config import StdioServer
from io_tui.core.mcp.hub import McpHub
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

ALLOW_MCP = Policy().with_layer(Layer("t", (Rule(Act.EXEC, Effect.ALLOW, "mcp__*"),)))


def stdio(mode: str, **extra: Any) -> StdioServer:
    env = extra.pop("env", {})
    return StdioServer(command=sys.executable, args=server_script_args(mode), env=env, **extra)


@needs_proc
async def test_a_run_never_waits_for_a_server_that_hangs_at_start(
    store: Store, workspace: Path
) -> None:
    mark = new_mark()
    servers = {
        "stuck": stdio("hang-at-start", env={MARK_VAR: mark}, startup_timeout_s=600),
        "fine": stdio("serve"),
    }
    provider = Watching(
        [{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}, {"text": "done"}], {}
    )
    async with McpHub(servers, background=True, ready_wait_s=0) as hub:
        await hub.wait_for("fine")
        harness = Harness(
            store=store, provider=provider, approver=ApproveAll(), late_tools=hub, policy=ALLOW_MCP
        )
        result = await start_run(harness, TaskContract("list", workspace))
        assert result.outcome is Outcome.FINISHED
        # the run ended while the hanging server was still inside its 600 s start-up
        assert {s.name: s.state for s in hub.statuses()} == {"stuck": "starting", "fine": "ready"}
        assert hub.starting() == ("MCP server 'stuck'",)
    first_tools, first_said = provider.seen[0]
    assert "mcp__fine__echo" in first_tools
    assert "still starting: MCP server 'stuck'" in first_said
    assert wait_until_gone(mark) == []  # leaving the hub ended the hanging start too


async def test_a_late_server_joins_the_run_and_the_model_is_told(
    store: Store, workspace: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    hub = McpHub({"late": stdio("gated", env={GATE_VAR: str(gate)})}, background=True)

    async def open_the_gate() -> None:
        gate.write_text("serve")
        await hub.wait_all()

    provider = Watching(
        [
            {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
            {"tool_calls": [{"name": "mcp__late__echo", "arguments": {"message": "hi"}}]},
            {"text": "done"},
        ],
        {1: open_the_gate},
    )
    async with hub:
        harness = Harness(
            store=store, provider=provider, approver=ApproveAll(), late_tools=hub, policy=ALLOW_MCP
        )
        result = await start_run(harness, TaskContract("echo", workspace))
    assert result.outcome is Outcome.FINISHED
    (tools1, said1), (tools2, said2), (_tools3, said3) = provider.seen
    assert not any(name.startswith("mcp__") for name in tools1)
    assert "io-tui: still starting: MCP server 'late'" in said1
    assert "mcp__late__echo" in tools2 and "mcp__late__add" in tools2
    assert "io-tui: MCP server 'late' is now ready; its tools are offered" in said2
    assert "mcp__late__echo" in said2
    assert said3.count("is now ready") == 1  # said once, kept in its step
    trace = await build_trace(store, result.run_id)
    steps = trace["steps"]
    assert any("is now ready" in m for m in steps[1]["operator_messages"])
    assert steps[1]["observations"][0]["text"].endswith("echo: hi")


async def test_a_server_the_model_was_told_about_that_fails_is_reported(
    store: Store, workspace: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    hub = McpHub({"late": stdio("gated", env={GATE_VAR: str(gate)})}, background=True)
    problems: list[str] = []
    hub.watch(lambda arrival: problems.append(arrival.problem or ""))

    async def fail_it() -> None:
        gate.write_text("exit")
        await hub.wait_all()

    provider = Watching(
        [{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}, {"text": "done"}],
        {1: fail_it},
    )
    async with hub:
        harness = Harness(store=store, provider=provider, approver=ApproveAll(), late_tools=hub)
        result = await start_run(harness, TaskContract("x", workspace))
    assert result.outcome is Outcome.FINISHED
    [problem] = problems
    assert problem.startswith("MCP server 'late' failed to start") and "gate said exit" in problem
    _tools, said = provider.seen[1]
    assert f"io-tui: {problem}. Its tools will not be offered." in said


async def test_a_run_waits_for_starting_servers_at_most_ready_wait_s(
    store: Store, workspace: Path
) -> None:
    """With time to spare, a server that is ready within ``ready_wait_s`` is in the first
    request and no notice is needed."""
    provider = Watching([{"text": "done"}], {})
    async with McpHub({"t": stdio("serve")}, background=True, ready_wait_s=120) as hub:
        harness = Harness(store=store, provider=provider, approver=ApproveAll(), late_tools=hub)
        await start_run(harness, TaskContract("x", workspace))
    [(tools, said)] = provider.seen
    assert "mcp__t__echo" in tools and "io-tui:" not in said


async def test_progress_is_published_live_and_never_stored(
    store: Store, workspace: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    seen: list[Any] = []

    class Sink:
        def emit(self, event: Any) -> None:
            seen.append(event)

    provider = Watching(
        [
            {"tool_calls": [{"name": "mcp__t__stepped", "arguments": {"gate": str(gate)}}]},
            {"text": "done"},
        ],
        {},
    )
    async with McpHub({"t": stdio("serve")}) as hub:
        harness = Harness(
            store=store,
            provider=provider,
            approver=ApproveAll(),
            late_tools=hub,
            policy=ALLOW_MCP,
            sink=Sink(),
        )
        result = await start_run(harness, TaskContract("step", workspace))
    progress = [e.detail for e in seen if e.kind.value == "tool_progress"]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
        (1, 3, "warming up"),
        (3, 3, "done"),
    ]
    assert progress[0]["name"] == "mcp__t__stepped" and progress[0]["call_id"]
    stored = {e.kind for e in await store.trace.events(result.run_id)}
    assert "observation" in stored and "tool_progress" not in stored
