"""MCP resources, prompts and roots with the real @modelcontextprotocol/server-everything over
stdio: resources listed and read through the tools io-tui offers for them, reads checked by the
read policy, a subscribed resource's update told to the run that read it; prompts listed and
filled; the workspace offered as the root."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import server_everything_entry
from waits import until
from watching_provider import Watching

from io_tui.core.authority.approvals import DenyAll
from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.contract import TaskContract
from io_tui.core.mcp.config import StdioServer
from io_tui.core.mcp.hub import McpHub
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.tools.base import ToolContext

TEXT_1 = "demo://resource/dynamic/text/1"


@pytest.fixture(scope="module")
def everything() -> StdioServer:
    return StdioServer(command="node", args=[str(server_everything_entry()), "stdio"])


def policy(*rules: Rule) -> Policy:
    return Policy().with_layer(Layer("project", rules))


async def test_resources_are_listed_read_and_checked_as_reads(
    store: Store, workspace: Path, everything: StdioServer
) -> None:
    read = {"name": "mcp__everything__read_resource"}
    provider = Watching(
        [
            {"tool_calls": [{"name": "mcp__everything__list_resources", "arguments": {}}]},
            {"tool_calls": [{**read, "arguments": {"uri": TEXT_1}}]},
            {
                "tool_calls": [
                    {**read, "arguments": {"uri": "demo://resource/static/document/features.md"}}
                ]
            },
            {"text": "done"},
        ],
        {},
    )
    deny_docs = Rule(Act.READ, Effect.DENY, "mcp:everything:demo://resource/static/*")
    async with McpHub({"everything": everything}) as hub:
        names = {tool.name for tool in hub.tools}
        assert {"mcp__everything__list_resources", "mcp__everything__read_resource"} <= names
        harness = Harness(
            store=store,
            provider=provider,
            approver=DenyAll(),  # never asked: reads are allowed, or denied by the rule
            late_tools=hub,
            policy=policy(deny_docs),
        )
        result = await start_run(harness, TaskContract("read", workspace))
    assert result.outcome is Outcome.DENIED  # its last call was refused
    steps = (await build_trace(store, result.run_id))["steps"]
    listing = steps[0]["observations"][0]
    assert "demo://resource/static/document/" in listing["text"]
    assert "templates (fill in the {fields} and read the URI):" in listing["text"]
    assert "demo://resource/dynamic/text/{resourceId}" in listing["text"]
    text = steps[1]["observations"][0]
    assert (text["kind"], text["target"]) == ("mcp", f"mcp:everything:{TEXT_1}")
    assert f"[resource {TEXT_1} text/plain" in text["text"] and not text["is_error"]
    refused = steps[2]["observations"][0]
    assert (
        refused["is_error"]
        and "deny read mcp:everything:demo://resource/static/*" in (refused["text"])
    )


async def test_a_subscribed_resource_that_changes_is_told_to_the_run_that_read_it(
    store: Store, workspace: Path, everything: StdioServer
) -> None:
    hub = McpHub({"everything": everything})

    async def an_update_arrives() -> None:
        await until(lambda: any(a.updated for a in hub.arrivals()), "a resource update", 30)

    provider = Watching(
        [
            {
                "tool_calls": [
                    {"name": "mcp__everything__read_resource", "arguments": {"uri": TEXT_1}}
                ]
            },
            {"tool_calls": [{"name": "mcp__everything__toggle-subscriber-updates"}]},
            {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
            {"text": "done"},
        ],
        {3: an_update_arrives},
    )
    allow_exec = Rule(Act.EXEC, Effect.ALLOW, "mcp__everything__*")
    async with hub:
        harness = Harness(
            store=store,
            provider=provider,
            approver=DenyAll(),
            late_tools=hub,
            policy=policy(allow_exec),
        )
        result = await start_run(harness, TaskContract("watch", workspace))
    assert result.outcome is Outcome.FINISHED
    _tools, said = provider.seen[3]
    assert (
        f"io-tui: MCP server 'everything' says mcp:everything:{TEXT_1} changed since you read it"
        in said
    )


async def test_prompts_are_listed_and_filled_and_the_workspace_is_the_root(
    workspace: Path, everything: StdioServer
) -> None:
    root = workspace.resolve().as_uri()  # noqa: ASYNC240 - a path name, no I/O to speak of
    async with McpHub({"everything": everything}, roots=[workspace]) as hub:
        prompts = {p.name: p for p in await hub.prompts()}
        assert {"simple-prompt", "args-prompt"} <= set(prompts)
        assert prompts["simple-prompt"].required == ()
        assert prompts["args-prompt"].required == ("city",)
        simple = await hub.prompt_text("everything", "simple-prompt", {})
        assert simple.strip()
        filled = await hub.prompt_text("everything", "args-prompt", {"city": "Lyon"})
        assert "Lyon" in filled
        tool = {t.name: t for t in hub.tools}["mcp__everything__get-roots-list"]
        roots = await tool.run(tool.parse({}), ToolContext(None, 0, 1, 10_000))  # type: ignore[arg-type]
        assert root in roots.text
