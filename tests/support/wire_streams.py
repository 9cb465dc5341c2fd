"""Streamed answers in a vendor's wire format, for a replay server to send: a text, a tool call."""

from __future__ import annotations

import json


def openai_stream(
    *,
    text: str = "",
    call: tuple[str, dict] | None = None,
    usage=(120, 9),
    call_id: str = "call_abc",
) -> bytes:
    chunks: list[dict] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    ]
    for word in text.split(" ") if text else []:
        chunks.append({"choices": [{"index": 0, "delta": {"content": word + " "}}]})
    if call:
        name, args = call
        raw = json.dumps(args)
        chunks.append(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": call_id,
                                    "type": "function",
                                    "function": {"name": name, "arguments": ""},
                                }
                            ]
                        },
                    }
                ]
            }
        )
        for start in range(0, len(raw), 7):
            chunks.append(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {"index": 0, "function": {"arguments": raw[start : start + 7]}}
                                ]
                            },
                        }
                    ]
                }
            )
    finish = "tool_calls" if call else "stop"
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append(
        {"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}
    )
    body = "".join(
        f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', 'model': 'm', **c})}\n\n"
        for c in chunks
    )
    return (body + "data: [DONE]\n\n").encode()
