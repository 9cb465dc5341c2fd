"""A "what if" probe against a real llama.cpp server (xllamacpp + SmolLM2-135M): the request it
sends over HTTP is the recorded one with exactly the asked change (a stubbed result restored,
checked against the manifest and the run's recorded result), and the model's answer is stored
with the run, nothing executed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from llama_server import llama_server

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
from io_tui.core.steering.whatif.probe import baseline, send_probe

N_CTX = 8192


class Recording(httpx.AsyncBaseTransport):
    """A real HTTP transport that keeps each request body it sends."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.bodies: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.bodies.append(json.loads(await request.aread()))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_probe_sends_the_edited_request_to_llama_cpp_and_keeps_its_answer(
    store: Store, tmp_path: Path, write_script: Any
) -> None:
    server = llama_server(N_CTX)  # skips where xllamacpp or the GGUF is missing
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(4):
        (ws / f"f{i}.txt").write_text("\n".join(f"fact {j} of file {i}" for j in range(80)))
    turns = [
        {"tool_calls": [{"id": f"r{i}", "name": "read_file",
                         "arguments": {"path": f"f{i}.txt", "offset": 1, "limit": 60}}]}
        for i in range(4)
    ] + [{"text": "done"}]  # fmt: skip
    harness = Harness(
        store, ScriptedProvider.from_file(write_script(turns)), ApproveAll(), policy=Policy()
    )
    contract = TaskContract("read", ws, max_steps=10, context=ContextBudget(max_tokens=1000))
    run = await start_run(harness, contract)
    base = await baseline(store, run.run_id, 5)
    entries = {e["call_id"]: e["state"] for e in base.request.manifest["entries"]}
    stubbed = next(c for c, state in entries.items() if state in ("elided", "collapsed"))

    transport = Recording()
    provider = make_provider(
        "llamacpp",
        model="smollm2",
        base_url=server.listening_address.rstrip("/") + "/v1",
        transport=transport,
        timeout=600,
        max_output_tokens=32,
    )
    try:
        probe = await send_probe(store, base, Variant(restore=(stubbed,)), provider)
    finally:
        await provider.aclose()

    [body] = [b for b in transport.bodies if "messages" in b]
    restored = (await store.runs.recorded(run.run_id, stubbed) or (None, ""))[0]
    assert restored is not None
    results = {m.get("tool_call_id"): m["content"] for m in body["messages"] if m["role"] == "tool"}
    assert results[stubbed] == restored.text  # the stub's result, sent whole
    row = await store.probes.get(probe.row.id)
    assert row is not None and len(row.messages) == len(body["messages"])
    assert [m["content"] for m in row.messages] == [m["content"] for m in body["messages"]]
    assert row.error is None and row.usage is not None and row.usage["prompt_tokens"] > 0
    assert row.answer is not None and (row.answer["text"] or row.answer["tool_calls"])
    assert [s.step for s in await store.trace.steps(run.run_id)] == [1, 2, 3, 4, 5]
