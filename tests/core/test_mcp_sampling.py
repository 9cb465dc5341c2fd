"""server-everything's trigger-sampling-request: the server asks the client's model mid-call. io-tui
puts it to the run's operator as an approval (with the server's messages) and only then answers
through the run's own provider; a denial is the server's error, never a model call."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import server_everything_entry
from watching_provider import Watching

from io_tui.core.approvals import ApprovalRequest, Decision
from io_tui.core.contract import TaskContract
from io_tui.core.harness import Harness
from io_tui.core.mcp import McpHub, StdioServer
from io_tui.core.run import Outcome, start_run
from io_tui.core.store import Store
from io_tui.core.trace import build_trace

TRIGGER = "mcp__everything__trigger-sampling-request"


class Operator:
    """Approves the tool call; approves or denies the sampling request as told."""

    def __init__(self, sampling: bool) -> None:
        self.sampling = sampling
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        if request.tool.endswith("__sampling") and not self.sampling:
            return Decision.deny(reason="not for this server", decided_by="test")
        return Decision.approve(decided_by="test")


@pytest.mark.parametrize("approved", [True, False])
async def test_sampling_is_answered_by_the_runs_model_only_once_approved(
    store: Store, workspace: Path, approved: bool
) -> None:
    server = StdioServer(command="node", args=[str(server_everything_entry()), "stdio"])
    call = {"name": TRIGGER, "arguments": {"prompt": "say hi", "maxTokens": 40}}
    turns = [{"tool_calls": [call]}, {"text": "Hello from the run's model"}, {"text": "done"}]
    provider = Watching(turns, {})
    operator = Operator(sampling=approved)
    async with McpHub({"everything": server}) as hub:
        harness = Harness(store=store, provider=provider, approver=operator, late_tools=hub)
        result = await start_run(harness, TaskContract("sample", workspace))
    assert result.outcome is Outcome.FINISHED
    tool_ask, sampling_ask = operator.asked
    assert tool_ask.target == TRIGGER
    assert (sampling_ask.act.value, sampling_ask.target) == ("exec", "mcp__everything__sampling")
    assert "MCP server 'everything' asks the model (at most 40 tokens):" in sampling_ask.content
    assert "[system] You are a helpful test server." in sampling_ask.content
    assert "[user] Resource trigger-sampling-request context: say hi" in sampling_ask.content
    observation = (await build_trace(store, result.run_id))["steps"][0]["observations"][0]
    if approved:
        assert "Hello from the run's model" in observation["text"]
        assert len(provider.seen) == 3  # the run's two requests and the server's one
        _tools, said = provider.seen[1]
        assert "Resource trigger-sampling-request context: say hi" in said
    else:
        assert "Hello from the run's model" not in observation["text"]
        assert "did not approve the sampling request: not for this server" in observation["text"]
        assert len(provider.seen) == 2  # the model was never asked for the server


async def test_a_sampling_request_with_two_calls_in_flight_goes_to_neither() -> None:
    """One connection serves every run of a worker: with two calls on it in flight a request
    cannot be told apart, so it is refused, never put to the wrong run's operator."""
    from types import SimpleNamespace

    from mcp_types import CreateMessageResult, ErrorData, SamplingMessage, TextContent

    from io_tui.core.mcp.connection import Connection

    connection = Connection("everything", StdioServer(command="true"))
    asked: list[str] = []

    def sampler(run: str):  # type: ignore[no-untyped-def]
        async def answer(ask: object) -> str:
            asked.append(run)
            return f"{run} answers"

        return answer

    params = SimpleNamespace(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
        system_prompt=None,
        max_tokens=10,
    )
    connection._samplers = [sampler("run 1")]
    one = await connection._sample(None, params)
    assert isinstance(one, CreateMessageResult) and asked == ["run 1"]
    connection._samplers.append(sampler("run 2"))
    both = await connection._sample(None, params)
    assert isinstance(both, ErrorData) and "cannot tell" in both.message
    assert asked == ["run 1"]
