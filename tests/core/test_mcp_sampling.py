"""server-everything's trigger-sampling-request: the server asks the client's model mid-call. io-tui
puts it to the run's operator as an approval (with the server's messages) and only then answers
through the run's own provider; a denial is the server's error, never a model call."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import server_everything_entry
from watching_provider import Watching

from io_tui.core.authority.approvals import ApprovalRequest, Decision, DecisionKind, RememberRule
from io_tui.core.authority.policy import Act
from io_tui.core.contract import TaskContract
from io_tui.core.mcp.config import StdioServer
from io_tui.core.mcp.hub import McpHub
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

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
    forever = float("inf")  # the calls' deadlines: not what this test is about
    connection._samplers = [(sampler("run 1"), forever)]
    one = await connection._sample(None, params)
    assert isinstance(one, CreateMessageResult) and asked == ["run 1"]
    connection._samplers.append((sampler("run 2"), forever))
    both = await connection._sample(None, params)
    assert isinstance(both, ErrorData) and "cannot tell" in both.message
    assert asked == ["run 1"]


class Remembering:
    """Approves the tool calls; on the sampling ask, sees the run marked asking, then approves
    it and remembers a rule for the rest of the run."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.asked: list[ApprovalRequest] = []
        self.statuses: list[str] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        if not request.tool.endswith("__sampling"):
            return Decision.approve(decided_by="test")
        row = await self.store.runs.get(request.run_id)
        assert row is not None
        self.statuses.append(row.status)
        rule = RememberRule(request.target, Act.EXEC, "run")
        return Decision(DecisionKind.REMEMBER, rule=rule, decided_by="test")


async def test_sampling_is_asked_as_any_act_and_a_remembered_rule_applies(
    store: Store, workspace: Path
) -> None:
    """The run is marked asking while its operator decides, a REMEMBER saves its rule (the
    second request of the run is allowed by it, not asked), and each answer's request is kept
    in the trace."""
    server = StdioServer(command="node", args=[str(server_everything_entry()), "stdio"])
    call = {"name": TRIGGER, "arguments": {"prompt": "say hi", "maxTokens": 40}}
    turns = [
        {"tool_calls": [call]},
        {"text": "first answer"},
        {"tool_calls": [call]},
        {"text": "second answer"},
        {"text": "done"},
    ]
    operator = Remembering(store)
    async with McpHub({"everything": server}) as hub:
        harness = Harness(store=store, provider=Watching(turns, {}), approver=operator,
                          late_tools=hub)  # fmt: skip
        result = await start_run(harness, TaskContract("sample twice", workspace))
    assert result.outcome is Outcome.FINISHED
    assert [r.tool for r in operator.asked] == [TRIGGER, "mcp__everything__sampling", TRIGGER]
    assert operator.statuses == ["asking"]
    rules = await store.rules.list()
    assert [(r.act, r.pattern) for r in rules] == [(Act.EXEC, "mcp__everything__sampling")]
    trace = await build_trace(store, result.run_id)
    texts = [s["observations"][0]["text"] for s in trace["steps"][:2]]
    assert "first answer" in texts[0] and "second answer" in texts[1]
    sampled = [r for r in trace["requests"] if r["purpose"] == "sampling"]
    assert len(sampled) == 2
    assert "Resource trigger-sampling-request context: say hi" in str(sampled[0]["messages"])


class SecondCockpit:
    """Approves the tool call; while the sampling ask is open here, another cockpit denies it
    first (as ``io-tui decide`` would): its decision stands, not this approval."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.tool.endswith("__sampling"):
            elsewhere = Decision.deny("decided in the other cockpit", decided_by="bob")
            assert await self.store.approvals.record_decision(request.id, elsewhere)
        return Decision.approve(decided_by="test")


async def test_the_first_decision_recorded_wins_a_sampling_ask(
    store: Store, workspace: Path
) -> None:
    server = StdioServer(command="node", args=[str(server_everything_entry()), "stdio"])
    call = {"name": TRIGGER, "arguments": {"prompt": "say hi", "maxTokens": 40}}
    provider = Watching([{"tool_calls": [call]}, {"text": "never asked"}, {"text": "done"}], {})
    async with McpHub({"everything": server}) as hub:
        harness = Harness(store=store, provider=provider, approver=SecondCockpit(store),
                          late_tools=hub)  # fmt: skip
        result = await start_run(harness, TaskContract("sample", workspace))
    observation = (await build_trace(store, result.run_id))["steps"][0]["observations"][0]
    assert (
        "did not approve the sampling request: decided in the other cockpit"
        in (observation["text"])
    )
    assert len(provider.seen) == 2  # the server's request never reached the model
    (record,) = [r for r in await store.approvals.for_run(result.run_id) if r.request.tool
                 .endswith("__sampling")]  # fmt: skip
    assert record.decision is not None and record.decision.decided_by == "bob"
