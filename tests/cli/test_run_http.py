"""A whole ``io-tui run`` against a real HTTP server on 127.0.0.1, once per wire.

The server speaks each vendor's streaming format; the run must execute the tool call the model
streams, record usage per attempt in the trace, and never write the API key anywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
from replay_server import ReplayServer, sse_reply
from wire_streams import openai_stream

KEY = "sk-test-REDACT-ME-0123456789abcdef"


def anthropic_stream(
    *, text: str = "", call: tuple[str, dict] | None = None, usage=(130, 11)
) -> bytes:
    events: list[tuple[str, dict]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": usage[0], "output_tokens": 1},
                },
            },
        )
    ]
    index = 0
    if text:
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        index = 1
    if call:
        name, args = call
        raw = json.dumps(args)
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": name,
                        "input": {},
                    },
                },
            )
        )
        for start in range(0, len(raw), 5):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": raw[start : start + 5],
                        },
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if call else "end_turn"
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": usage[1]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


WIRES = {
    "openai-compatible": (openai_stream, "OPENAI_COMPATIBLE_API_KEY", "/v1"),
    "anthropic": (anthropic_stream, "ANTHROPIC_API_KEY", ""),
}


@pytest.mark.parametrize("preset", sorted(WIRES))
async def test_a_run_over_each_wire_executes_the_call_and_keeps_the_key_out(
    preset, tmp_path, workspace
):
    stream, key_env, suffix = WIRES[preset]
    server = ReplayServer()
    await server.start()
    server.add(
        sse_reply(stream(text="Reading it.", call=("read_file", {"path": "src/app.py"}))),
        sse_reply(stream(text="The bug is on line 2.")),
    )
    store = tmp_path / "http.db"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {key_env: KEY}
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "io_tui",
            "run",
            "find the bug",
            "--workspace",
            str(workspace),
            "--provider",
            preset,
            "--base-url",
            server.base_url + suffix,
            "--model",
            "test-model",
            "--store",
            str(store),
            "--json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await server.stop()
    assert proc.returncode == 0, err.decode() + out.decode()[-2000:]
    assert len(server.requests) == 2
    second = json.dumps(server.requests[1].body)
    assert "return a" in second  # the tool ran and its result went back to the model

    trace_proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "io_tui",
        "trace",
        "1",
        "--json",
        "--store",
        str(store),
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    trace_out, _ = await trace_proc.communicate()
    trace = json.loads(trace_out)
    assert trace["steps"][0]["tool_calls"][0]["name"] == "read_file"
    assert "return a" in trace["steps"][0]["result"]
    attempts = [a for r in trace["requests"] for a in r["attempts"]]
    assert attempts and all(a["usage"] and a["usage"]["prompt_tokens"] > 0 for a in attempts)
    assert trace["requests"][0]["reported_tokens"] == (120 if preset != "anthropic" else 130)
    assert trace["run"]["provider"]["preset"] == preset

    # the key went to the server, and nowhere else
    seen_key = [v for r in server.requests for v in r.headers.values() if KEY in v]
    assert seen_key
    stored = await asyncio.to_thread(lambda: [p.read_bytes() for p in tmp_path.glob("http.db*")])
    assert stored and all(KEY.encode() not in data for data in stored)
    assert KEY not in out.decode() + err.decode() + trace_out.decode()
