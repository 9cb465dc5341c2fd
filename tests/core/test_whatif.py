""" "What if" probes against a real HTTP server replaying recorded provider streams: the server
receives exactly the recorded request with the asked changes (each checked against the
request's manifest and the run's recorded results), the answer is stored with the run, nothing
it proposes is executed, and a batch counts how often the first proposed call differs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from replay_server import ReplayServer, sse_reply
from wire_streams import openai_stream

from io_tui.core import (
    ApproveAll,
    ContextBudget,
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    start_run,
)
from io_tui.core.providers.presets import make_provider
from io_tui.core.steering.whatif.edits import Variant
from io_tui.core.steering.whatif.probe import ProbeError, baseline, send_batch, send_probe
from io_tui.core.text.heads import MEMORY_HEADER

WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire" / "openai_chat"
RECORDED_TOOL_CALL = (WIRE / "tool_call_single_strict.sse").read_bytes()  # get_weather(city)
RECORDED_TEXT = (WIRE / "text_plain.sse").read_bytes()


@pytest.fixture
async def server() -> AsyncIterator[ReplayServer]:
    srv = ReplayServer()
    await srv.start()
    yield srv
    await srv.stop()


def read(i: int, path: str) -> dict[str, Any]:
    args = {"path": path, "offset": 1, "limit": 40}
    return {"tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": args}]}


@pytest.fixture
async def run_id(store: Store, tmp_path: Path, write_script: Any) -> int:
    """Six reads of forty numbered lines under a 1,200-token ceiling, then a seventh that
    repeats the first: the first results are elided by step 5, collapsed by step 8, and the
    repeat is dropped (it is the first's result again)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(6):
        lines = (f"line {j} of file {i} with some words" for j in range(200))
        (ws / f"f{i}.txt").write_text("\n".join(lines))
    turns = [read(i, f"f{i}.txt") for i in range(6)] + [read(6, "f0.txt"), {"text": "done"}]
    harness = Harness(
        store, ScriptedProvider.from_file(write_script(turns)), ApproveAll(), policy=Policy()
    )
    contract = TaskContract("read", ws, max_steps=20, context=ContextBudget(max_tokens=1200))
    result = await start_run(harness, contract)
    assert result.status == "finished"
    return result.run_id


def states(request: Any) -> dict[str, str]:
    return {e["call_id"]: e["state"] for e in request.manifest["entries"] if e["call_id"]}


async def result_of(store: Store, run_id: int, call_id: str) -> str:
    recorded = await store.runs.recorded(run_id, call_id)
    assert recorded is not None
    return recorded[0].text


async def test_a_restored_stub_is_sent_whole_and_nothing_else_changes(
    store: Store, run_id: int, server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-whatif")
    base = await baseline(store, run_id, 5)
    assert states(base.request)["r0"] == "elided"
    server.add(sse_reply(RECORDED_TEXT), sse_reply(RECORDED_TOOL_CALL))
    provider = make_provider("openai", model="gpt-4o", base_url=server.base_url + "/v1")
    try:
        await send_probe(store, base, Variant("as recorded"), provider)
        probe = await send_probe(store, base, Variant(restore=("r0",)), provider)
    finally:
        await provider.aclose()

    # on the wire: the recorded request sent as it was, then with one message changed
    as_recorded, sent = server.requests[-2].body, server.requests[-1].body
    assert len(sent["messages"]) == len(as_recorded["messages"])
    pairs = zip(sent["messages"], as_recorded["messages"], strict=True)
    [index] = [i for i, (a, b) in enumerate(pairs) if a != b]
    assert {k: v for k, v in sent.items() if k != "messages"} == {
        k: v for k, v in as_recorded.items() if k != "messages"
    }
    recorded = base.request.messages  # as the run recorded them: the same message changed
    assert recorded[index]["tool_call_id"] == "r0"
    assert sent["messages"][index]["content"] == await result_of(store, run_id, "r0")
    assert "recall_result" in recorded[index]["content"]  # the stub it replaced
    assert [t["function"]["name"] for t in sent["tools"]] == [t.name for t in base.tools]
    assert sent["prompt_cache_key"] == base.request.manifest["cache_key"]

    row = await store.probes.get(probe.row.id)
    assert row is not None
    expected = [*recorded[:index], {**recorded[index], "content": sent["messages"][index]["content"]},
                *recorded[index + 1 :]]  # fmt: skip
    assert row.messages == expected
    assert row.answer is not None and row.answer["tool_calls"][0]["name"] == "get_weather"
    assert probe.answer.first_tool == "get_weather"
    assert row.changes[1] == {"op": "restore", "call_id": "r0", "was": "elided",
                              "chars": len(sent["messages"][index]["content"]),
                              "chars_before": len(recorded[index]["content"])}  # fmt: skip
    assert [s.step for s in await store.trace.steps(run_id)] == list(range(1, 9))  # not run


async def test_collapsed_and_dropped_results_come_back_in_step_order(
    store: Store, run_id: int, server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-whatif")
    base = await baseline(store, run_id, 8)
    assert (states(base.request)["r1"], states(base.request)["r6"]) == ("collapsed", "dropped")
    server.add(sse_reply(RECORDED_TEXT))
    provider = make_provider("openai", model="gpt-4o", base_url=server.base_url + "/v1")
    memory = f"{MEMORY_HEADER}\n- style: tabs"
    try:
        await send_probe(
            store, base, Variant(restore=("r1", "r6"), drop=("r5",), memory=memory), provider
        )
    finally:
        await provider.aclose()
    sent = server.requests[-1].body["messages"]
    roles = [(m["role"], m.get("tool_call_id") or [c["id"] for c in m.get("tool_calls", [])])
             for m in sent]  # fmt: skip
    r1 = roles.index(("assistant", ["r1"]))
    assert roles[r1 + 1] == ("tool", "r1")
    assert roles[r1 + 2] == ("assistant", ["r4"])  # before the next step kept in the request
    assert sent[r1 + 1]["content"] == await result_of(store, run_id, "r1")
    assert roles[-2:] == [("assistant", ["r6"]), ("tool", "r6")]
    assert ("tool", "r5") not in roles and ("assistant", ["r5"]) not in roles
    stable = base.request.manifest["boundary"]["stable_messages"]
    assert sent[stable] == {"role": "user", "content": memory}  # there was no memory block


async def test_a_batch_tells_an_effect_from_noise(
    store: Store, run_id: int, server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-whatif")
    base = await baseline(store, run_id, 8)
    assert base.answer.first_call is None  # the recorded answer: "done", no tool call
    # the recorded request twice (no tool call, as recorded), the changed one twice (a call)
    server.add(sse_reply(RECORDED_TEXT), sse_reply(RECORDED_TEXT))
    server.add(sse_reply(RECORDED_TOOL_CALL), sse_reply(RECORDED_TOOL_CALL))
    provider = make_provider("openai", model="gpt-4o", base_url=server.base_url + "/v1")
    try:
        batch = await send_batch(store, base, [Variant(restore=("r1",))], provider, 2)
    finally:
        await provider.aclose()
    as_recorded, edited = batch.tallies
    assert (as_recorded.variant, as_recorded.answers, as_recorded.other_tool) == (
        "as recorded", 2, 0)  # fmt: skip
    assert (edited.answers, edited.other_tool, edited.other_call) == (2, 2, 2)
    assert edited.first_calls == {'get_weather {"city": "San Francisco", "state": "CA"}': 2}
    stored = await store.probes.for_run(run_id, 8)
    assert [p.batch for p in stored] == [batch.id] * 4
    assert json.loads(json.dumps(batch.to_json()))["variants"][1]["first_tool_differs"] == 2


async def test_a_proposed_write_is_never_executed(
    store: Store, run_id: int, server: ReplayServer, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-whatif")
    base = await baseline(store, run_id, 3)
    write = ("write_file", {"path": "pwned.txt", "content": "x"})
    server.add(sse_reply(openai_stream(call=write, call_id="w1")))
    provider = make_provider("openai", model="gpt-4o", base_url=server.base_url + "/v1")
    try:
        probe = await send_probe(store, base, Variant(drop=("r1",)), provider)
    finally:
        await provider.aclose()
    assert probe.answer.first_tool == "write_file"
    assert not (tmp_path / "ws" / "pwned.txt").exists()
    assert len(await store.trace.observations(run_id)) == 7


async def test_edits_that_do_not_apply_say_why(store: Store, run_id: int) -> None:
    base = await baseline(store, run_id, 8)
    from io_tui.core.steering.whatif.probe import variant_request

    with pytest.raises(ProbeError, match="r1 is not in this request to drop: its result is coll"):
        variant_request(base, Variant(drop=("r1",)))
    with pytest.raises(ProbeError, match="call nope is not a call of this run"):
        variant_request(base, Variant(restore=("nope",)))
    with pytest.raises(ProbeError, match="no working request at step 42"):
        await baseline(store, run_id, 42)


async def test_a_probe_cancelled_while_its_text_is_shown_closes_its_stream(
    store: Store, run_id: int
) -> None:
    """The operator leaves the what-if view while a probe's text streams in: the provider's
    stream (an HTTP response, for a real one) is closed then, not when the collector runs."""
    import asyncio

    from io_tui.core.providers.base import CompletionRequest, StreamEvent, TextDelta

    closed = asyncio.Event()

    class Streaming:
        name, model = "streaming", "m"

        async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
            try:
                yield TextDelta("thinking")
                yield TextDelta("never shown")
            finally:
                closed.set()

    shown = asyncio.Event()

    async def on_text(text: str) -> None:
        shown.set()
        await asyncio.Event().wait()  # the view is still painting it when the probe is left

    base = await baseline(store, run_id, 5)
    probe = asyncio.create_task(
        send_probe(store, base, Variant("as recorded"), Streaming(), on_text=on_text)  # type: ignore[arg-type]
    )
    await shown.wait()
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert closed.is_set()
