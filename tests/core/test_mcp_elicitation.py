"""server-everything's trigger-elicitation-request: the server asks the operator to fill in a
form mid-call. io-tui puts it to the run's operator as an ask (the form's schema with it); a
filled form is accepted, a deny declines, a defer or no answer cancels, and an approver that
cannot show a form (the CLI's, headless) declines with its reason recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp_support import server_everything_entry
from watching_provider import Watching

from io_tui.core.authority.approvals import ApprovalRequest, ApproveAll, Decision, DecisionKind
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.mcp.config import StdioServer
from io_tui.core.mcp.connection import ANSWER_MARGIN_S
from io_tui.core.mcp.elicitation import ElicitAsk, form_fields, form_problems, is_elicitation
from io_tui.core.mcp.hub import McpHub
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

TRIGGER = "mcp__everything__trigger-elicitation-request"
FORM = {"name": "Ada Lovelace", "check": True, "integer": 7}


class Operator:
    """Approves the tool call; answers the form as told (None: approve without a form)."""

    def __init__(self, answer: Decision | None) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []
        self.form_asked = asyncio.Event()

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        if not is_elicitation(request):
            return Decision.approve(decided_by="test")
        self.form_asked.set()
        if self.answer is None:
            await asyncio.Event().wait()  # never answers
        assert self.answer is not None
        return self.answer


async def elicit(store: Store, workspace: Path, approver: Any, **server: Any) -> tuple[str, Any]:
    """Run a model that calls the trigger once: the call's observation, the form's record."""
    source = StdioServer(command="node", args=[str(server_everything_entry()), "stdio"], **server)
    turns = [{"tool_calls": [{"name": TRIGGER, "arguments": {}}]}, {"text": "done"}]
    async with McpHub({"everything": source}) as hub:
        harness = Harness(store=store, provider=Watching(turns, {}), approver=approver,
                          late_tools=hub)  # fmt: skip
        result = await start_run(harness, TaskContract("elicit", workspace))
    assert result.outcome is Outcome.FINISHED
    observation = (await build_trace(store, result.run_id))["steps"][0]["observations"][0]
    records = [r for r in await store.approvals.for_run(result.run_id)
               if is_elicitation(r.request)]  # fmt: skip
    return observation["text"], records[0] if records else None


async def test_a_filled_form_is_accepted_and_its_content_sent(
    store: Store, workspace: Path
) -> None:
    operator = Operator(Decision(DecisionKind.APPROVE, arguments=FORM, decided_by="test"))
    text, record = await elicit(store, workspace, operator)
    assert "User provided the requested information" in text
    assert "- Name: Ada Lovelace" in text and "- Favorite Integer: 7" in text
    ask = operator.asked[1]
    assert (ask.act.value, ask.target) == ("exec", "mcp__everything__elicitation")
    assert ask.content.startswith("MCP server 'everything' asks you to fill in a form: Please")
    assert "  name* (string): Your full, legal name" in ask.content
    assert ask.arguments["requested_schema"]["required"] == ["name"]
    assert record.performed == {"performed": True, "action": "accept", "content": FORM,
                                "reason": None}  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "said", "action", "reason"),
    [
        (Decision.deny("not today", decided_by="test"), "declined", "decline", "not today"),
        (Decision.defer(decided_by="test"), "cancelled", "cancel", "not answered (test)"),
        # a form that does not match its schema (no name) is never sent
        (Decision(DecisionKind.APPROVE, arguments={"check": True}), "declined", "decline",
         "the form does not match the request: form: 'name' is a required property"),
    ],
)  # fmt: skip
async def test_a_deny_declines_and_a_defer_cancels(
    store: Store, workspace: Path, answer: Decision, said: str, action: str, reason: str
) -> None:
    text, record = await elicit(store, workspace, Operator(answer))
    assert said in text.lower() and "User provided" not in text
    assert record.status == "decided"  # never left pending in the inbox
    assert (record.performed["action"], record.performed["reason"]) == (action, reason)


async def test_headless_approval_declines_with_the_reason_recorded(
    store: Store, workspace: Path
) -> None:
    """``--approve all`` (or the terminal's y) cannot fill a form: declined, saying so."""
    text, record = await elicit(store, workspace, ApproveAll())
    assert "declined" in text.lower()
    assert record.performed["action"] == "decline"
    assert record.performed["reason"] == (
        "approved by approve-all without a filled form (a form is filled in the TUI's approval)"
    )


async def test_an_unanswered_form_is_cancelled_within_the_call_timeout(
    store: Store, workspace: Path
) -> None:
    """Nobody answers: before the call's call_timeout_s runs out (what is left of it, less
    the margin for the answer to reach the server) the form is cancelled and recorded, the
    server hears it, and the run goes on with the server's answer, not a timeout."""
    # 10 s: the whole margin (a tenth of a 3 s timeout, 0.3 s, was once too little for a loaded
    # machine to record the cancel and hear the server's answer)
    timeout = 10
    text, record = await elicit(store, workspace, Operator(None), call_timeout_s=timeout)
    assert record.status == "decided" and record.performed["action"] == "cancel"
    waited = record.decision.decided_by.removeprefix("io-tui (unanswered within ")
    assert waited != record.decision.decided_by
    assert float(waited.removesuffix("s)")) <= timeout - ANSWER_MARGIN_S
    assert "cancel" in text.lower() and "timed out" not in text


async def test_a_form_waiting_when_its_run_is_cancelled_is_recorded_not_left_pending(
    store: Store, workspace: Path
) -> None:
    """The run is stopped while its form waits for the operator: the ask is decided (a defer
    saying why) rather than left pending in every cockpit's inbox forever."""
    operator = Operator(None)
    source = StdioServer(command="node", args=[str(server_everything_entry()), "stdio"])
    turns = [{"tool_calls": [{"name": TRIGGER, "arguments": {}}]}, {"text": "done"}]
    async with McpHub({"everything": source}) as hub:
        harness = Harness(store=store, provider=Watching(turns, {}), approver=operator,
                          late_tools=hub)  # fmt: skip
        run = asyncio.create_task(start_run(harness, TaskContract("elicit", workspace)))
        async with asyncio.timeout(30):
            await operator.form_asked.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    (record,) = [r for r in await store.approvals.for_run(operator.asked[1].run_id)
                 if is_elicitation(r.request)]  # fmt: skip
    assert record.status == "decided"
    assert record.decision.decided_by == "io-tui (the call ended before an answer)"


async def test_a_policy_deny_declines_without_asking(store: Store, workspace: Path) -> None:
    deny = {"act": "exec", "effect": "deny", "pattern": "mcp__*__elicitation"}
    policy = Policy.from_json({"layers": [{"name": "t", "rules": [deny]}]})
    operator = Operator(Decision.approve(decided_by="test"))
    source = StdioServer(command="node", args=[str(server_everything_entry()), "stdio"])
    turns = [{"tool_calls": [{"name": TRIGGER, "arguments": {}}]}, {"text": "done"}]
    async with McpHub({"everything": source}) as hub:
        harness = Harness(store=store, provider=Watching(turns, {}), approver=operator,
                          late_tools=hub, policy=policy)  # fmt: skip
        result = await start_run(harness, TaskContract("elicit", workspace))
    text = (await build_trace(store, result.run_id))["steps"][0]["observations"][0]["text"]
    assert "declined" in text.lower()
    assert [r.tool for r in operator.asked] == [TRIGGER]


def test_the_form_is_read_from_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "yours"},
            "pet": {"type": "string", "enum": ["c", "d"], "enumNames": ["Cats", "Dogs"]},
            "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
            "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}},
            "n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        },
        "required": ["name"],
    }
    fields = {f.name: f for f in form_fields(schema)}
    assert (fields["name"].kind, fields["name"].required, fields["name"].title) == (
        "string", True, "Name")  # fmt: skip
    assert (fields["pet"].kind, fields["pet"].options) == ("choice", (("c", "Cats"), ("d", "Dogs")))
    assert fields["hero"].options == (("h1", "Superman"),)
    assert (fields["fish"].kind, fields["fish"].options) == ("choices", (("f1", "Tuna"),))
    assert (fields["n"].default, fields["n"].minimum, fields["n"].maximum) == (3, 1, 9)
    assert form_problems(schema, {"name": "x", "n": 3}) == ""
    assert form_problems(schema, {"name": "x", "n": 10}) == "n: 10 is greater than the maximum of 9"
    ask = ElicitAsk("s", "mcp__s__elicitation", "Who?", schema)
    assert "  pet (one of c, d)" in ask.text()
