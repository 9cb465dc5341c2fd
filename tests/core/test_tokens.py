"""The token estimate and its calibration per model: the function, and through the run loop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hypothesis import given, strategies as st
from token_reference import reference_tokens

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import ContextBudget, TaskContract, estimate_tokens as reexported
from io_tui.core.providers.base import Completed, CompletionRequest, Response, Usage
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.store import Store
from io_tui.core.tokens import MAX_FACTOR, Calibration, estimate_tokens, raw_ceiling

READ = {"name": "read_file", "arguments": {"path": "src/app.py"}}


@given(st.text())
def test_the_estimate_is_the_byte_weights_recounted_one_byte_at_a_time(text: str) -> None:
    assert estimate_tokens(text) == reference_tokens(text)


def test_the_estimate_weighs_what_a_tokenizer_splits() -> None:
    assert reexported is estimate_tokens
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("hello world") == 3  # cl100k: 2
    # same length, more tokens: digits and JSON punctuation split where words merge
    words, digits, json_text = "abcdefghij" * 10, "0123456789" * 10, '{"a": [1]}' * 10
    assert estimate_tokens(words) < estimate_tokens(json_text) < estimate_tokens(digits)
    assert estimate_tokens("日本語") > estimate_tokens("abc")
    assert estimate_tokens("\udcff") == 2  # a lone surrogate (3 bytes) does not raise


def test_the_factor_is_the_bounded_median_of_the_newest_ratios() -> None:
    cal = Calibration()
    assert cal.factor("p", "m") == 1.0
    for reported in (120, 130, 125):
        cal.observe("p", "m", 100, reported)
    assert cal.factor("p", "m") == 1.25
    cal.observe("p", "m", 100, 900)  # one odd report does not move it far
    assert cal.factor("p", "m") == 1.3
    cal.observe("p", "m", 100, 0)  # no usage teaches nothing
    assert cal.factor("p", "m") == 1.3
    for _ in range(3):
        cal.observe("p", "m", 100, 900)
    assert cal.factor("p", "m") == MAX_FACTOR
    assert cal.factor("p", "other") == 1.0  # per provider+model
    assert cal.next_key("p", "other") == ("p", "m")  # the one that answered last
    assert raw_ceiling(24_000, 1.25) == 19_200


def test_tool_schemas_a_server_drops_are_detected_and_not_counted() -> None:
    cal = Calibration()
    # 2,000 estimated of which 1,800 are tool schemas; the server reports 240: it dropped them
    cal.observe("llamacpp", "m", 2_000, 240, tools=1_800)
    assert not cal.counts_tools("llamacpp", "m")
    assert cal.factor("llamacpp", "m") == 1.2
    cal.observe("llamacpp", "m", 2_100, 360, tools=1_800)  # the estimate less the schemas
    assert cal.factor("llamacpp", "m") == 1.2
    # a server that renders them reports more than half of the whole estimate: counted
    cal.observe("openai", "m", 2_000, 2_100, tools=1_800)
    assert cal.counts_tools("openai", "m") and cal.factor("openai", "m") == 1.05


class Reporting:
    """The scripted turns, with the prompt tokens a model whose tokenizer yields 1.4× the
    estimate would report (plus 4 tokens of framing per message, and the tool schemas only when
    ``tools`` is set)."""

    name, model = "reporting", "m"

    def __init__(self, script: Path, *, tools: bool) -> None:
        self.scripted = ScriptedProvider.from_file(script)
        self.tools = tools

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model}

    async def aclose(self) -> None:
        await self.scripted.aclose()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        texts = [m.content for m in request.messages]
        texts += [c.name + json.dumps(c.arguments) for m in request.messages for c in m.tool_calls]
        if self.tools:
            schemas = [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in request.tools
            ]
            texts.append(json.dumps(schemas))
        prompt = round(1.4 * sum(map(estimate_tokens, texts))) + 4 * len(request.messages)
        async for event in self.scripted.stream(request):
            if isinstance(event, Completed):
                r = event.response
                usage = Usage(prompt, 5)
                event = Completed(Response(r.text, r.tool_calls, usage, "stop", "m", "reporting"))
            yield event


async def calibrated_requests(
    store: Store, workspace: Path, write_script: Any, *, tools: bool
) -> list[dict[str, Any]]:
    turns = [{"tool_calls": [READ]} for _ in range(6)] + [{"text": "done"}]
    harness = Harness(
        store=store,
        provider=Reporting(write_script(turns), tools=tools),
        approver=ApproveAll(),
        policy=Policy(),
    )
    contract = TaskContract("look", workspace, context=ContextBudget(max_tokens=4_000))
    result = await start_run(harness, contract)
    return [r for r in await store.trace.requests(result.run_id) if r.purpose == "work"]


async def test_the_run_calibrates_from_the_reported_usage(store, workspace, write_script) -> None:
    requests = await calibrated_requests(store, workspace, write_script, tools=True)
    assert len(requests) == 7
    for n, request in enumerate(requests, start=1):
        manifest = request.manifest
        cal = manifest["calibration"]
        assert cal["tools_counted"] and cal["ceiling_tokens"] == request.ceiling_tokens == 4_000
        assert cal["raw_est_tokens"] == manifest["est_tokens"] + manifest["frame_tokens"]
        assert request.est_tokens == cal["calibrated_tokens"]
        assert request.est_tokens == round(cal["raw_est_tokens"] * cal["factor"])
        # the engine fitted the ceiling in raw estimated tokens
        assert manifest["ceiling_tokens"] == raw_ceiling(4_000, cal["factor"])
        if n == 1:
            assert cal["factor"] == 1.0
        if n >= 3:
            assert 1.35 < cal["factor"] < 1.5
            assert abs(request.est_tokens / request.reported_tokens - 1) <= 0.05


async def test_a_server_that_drops_the_tool_schemas_is_not_charged_for_them(
    store, workspace, write_script
) -> None:
    requests = await calibrated_requests(store, workspace, write_script, tools=False)
    first = requests[0].manifest
    tools = next(s["est_tokens"] for s in first["sections"] if s["name"] == "tools")
    assert tools > 1_000 and first["calibration"]["tools_counted"]
    for request in requests[1:]:
        manifest = request.manifest
        cal = manifest["calibration"]
        assert not cal["tools_counted"]
        assert cal["raw_est_tokens"] == manifest["est_tokens"] + manifest["frame_tokens"] - tools
        assert abs(request.est_tokens / request.reported_tokens - 1) <= 0.05
