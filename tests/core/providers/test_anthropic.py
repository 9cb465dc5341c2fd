"""The Messages wire: recorded Anthropic streams decoded, requests encoded as the API expects."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from provider_helpers import WEATHER, Script, recorded, run, sse, sse_response

from io_tui.core.providers.anthropic import AnthropicProvider
from io_tui.core.providers.base import CompletionRequest, ErrorKind, ProviderError, Usage
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.providers.retry import RetryPolicy


def provider(script: Script, **kw: object) -> AnthropicProvider:
    options: dict[str, object] = {"retry": RetryPolicy(max_attempts=1)}
    options.update(kw)
    return AnthropicProvider(
        model="claude-test",
        base_url="https://api.example.test",
        transport=script.transport,
        **options,  # type: ignore[arg-type]
    )


async def test_basic_text_even_without_a_final_blank_line() -> None:
    body = recorded("anthropic_messages/basic_response.sse")
    assert not body.endswith(b"\n")  # the recording stops right after message_stop's data
    deltas, response = await run(provider(Script([sse_response(body)])))
    assert deltas == ["Hello", " there", "!"]
    assert response.text == "Hello there!"
    assert response.finish_reason == "end_turn"
    assert response.usage == Usage(prompt_tokens=11, completion_tokens=6)
    assert response.usage.cache_reported is False  # this older recording has no cache fields
    assert response.model == "claude-3-opus-latest"
    assert response.provider == "anthropic"


async def test_tool_use_accumulates_input_json_delta() -> None:
    body = recorded("anthropic_messages/tool_use_response.sse")
    deltas, response = await run(provider(Script([sse_response(body)])))
    assert "".join(deltas) == "I'll check the current weather in Paris for you."
    assert response.tool_calls == (
        ToolCall("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"}),
    )
    assert response.finish_reason == "tool_use"
    assert response.usage == Usage(prompt_tokens=377, completion_tokens=65)
    assert response.usage.cache_reported is True  # cache_read/creation_input_tokens: 0


async def test_refusal_is_a_clear_finish_reason() -> None:
    body = recorded("anthropic_messages/refusal_response.sse")
    deltas, response = await run(provider(Script([sse_response(body)])))
    assert deltas == []
    assert response.text == ""
    assert response.finish_reason == "refusal"
    assert response.tool_calls == ()


async def test_incomplete_partial_json_becomes_an_arguments_error() -> None:
    body = recorded("anthropic_messages/incomplete_partial_json_response.sse")
    _deltas, response = await run(provider(Script([sse_response(body)])))
    assert response.text.startswith("I'll create a comprehensive tax guide")
    assert response.finish_reason == "max_tokens"
    [call] = response.tool_calls
    assert call.id == "toolu_01EKqbqmZrGRXy18eN7m9kvY"
    assert call.name == "make_file"
    assert call.arguments == {}
    assert call.arguments_error is not None and "not valid JSON" in call.arguments_error
    assert response.usage == Usage(prompt_tokens=450, completion_tokens=124)


async def test_usage_halves_merge_and_cache_counts_join_the_prompt() -> None:
    body = sse(
        {
            "type": "message_start",
            "message": {
                "model": "claude-x",
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 1,
                    "cache_read_input_tokens": 900,
                    "cache_creation_input_tokens": 40,
                },
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
        named=True,
    )
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.usage == Usage(
        prompt_tokens=950, completion_tokens=7, cache_read_tokens=900, cache_write_tokens=40
    )


async def test_tool_use_without_deltas_uses_the_start_input() -> None:
    body = sse(
        {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "list_dir", "input": {}},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
        named=True,
    )
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.tool_calls == (ToolCall("t1", "list_dir", {}),)


async def test_error_event_mid_stream_is_classified() -> None:
    body = sse(
        {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 3}}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        named=True,
    )
    with pytest.raises(ProviderError) as info:
        await run(provider(Script([sse_response(body)])))
    assert info.value.kind is ErrorKind.SERVER
    assert "Overloaded" in info.value.message
    assert info.value.partial is False


async def test_stream_cut_without_stop_is_malformed() -> None:
    body = recorded("anthropic_messages/tool_use_response.sse")
    cut = body[: body.index(b"event: message_delta")]
    with pytest.raises(ProviderError) as info:
        await run(provider(Script([sse_response(cut)])))
    assert info.value.kind is ErrorKind.MALFORMED
    assert info.value.partial is True


def test_request_encoding_pairs_tool_use_and_results() -> None:
    wire = AnthropicProvider(model="m").wire
    calls = (ToolCall("t1", "read_file", {"path": "a"}), ToolCall("t2", "read_file", {"path": "b"}))
    request = CompletionRequest(
        messages=(
            Message("system", "Be careful."),
            Message("user", "look"),
            Message("assistant", "Reading both.", tool_calls=calls),
            Message("tool", "A", tool_call_id="t1"),
            Message("tool", "B", tool_call_id="t2"),
            Message("user", "and?"),
            Message("assistant", "", tool_calls=(ToolCall("t3", "list_dir", {}),)),
            Message("tool", "[]", tool_call_id="t3"),
        ),
        tools=(WEATHER,),
        max_output_tokens=123,
    )
    body = wire.body(request, "m", stream=True)
    cache = {"cache_control": {"type": "ephemeral"}}
    assert body["system"] == [{"type": "text", "text": "Be careful."} | cache]
    assert body["max_tokens"] == 123 and body["stream"] is True and body["model"] == "m"
    assert "temperature" not in body
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                {"type": "text", "text": "and?"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t3", "name": "list_dir", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "[]"} | cache],
        },
    ]


CACHED = {"type": "ephemeral"}


def marked(body: dict[str, Any]) -> list[str]:
    """Where the body carries cache_control: 'system', 'tool NAME', or each marked block's text."""
    out = ["system"] if isinstance(body.get("system"), list) else []
    out += [f"tool {t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    for turn in body["messages"]:
        for block in turn["content"]:
            if block.get("cache_control") == CACHED:
                out.append(block.get("text") or block.get("content") or block.get("name"))
    return out


def conversation(n: int) -> tuple[Message, ...]:
    messages: list[Message] = [Message("system", "Be careful."), Message("user", "goal")]
    for i in range(n):
        messages.append(Message("assistant", "", (ToolCall(f"c{i}", "read_file", {}),)))
        messages.append(Message("tool", f"result {i}", tool_call_id=f"c{i}"))
    return tuple(messages)


def test_working_requests_cache_the_system_prompt_and_the_last_message() -> None:
    wire = AnthropicProvider(model="m").wire
    body = wire.body(CompletionRequest(conversation(3), tools=(WEATHER,)), "m", stream=True)
    assert marked(body) == ["system", "result 2"]


def test_named_breakpoints_are_marked_at_most_four_in_all() -> None:
    wire = AnthropicProvider(model="m").wire
    request = CompletionRequest(conversation(6), cache_breakpoints=(1, 3, 5, 7, 13))
    assert marked(wire.body(request, "m", stream=True)) == [
        "system", "result 1", "result 2", "result 5"
    ]  # fmt: skip
    request = CompletionRequest(conversation(2), cache_breakpoints=(1, 99))
    assert marked(wire.body(request, "m", stream=True)) == ["system", "goal"]


def test_a_breakpoint_on_a_message_without_blocks_marks_the_one_before() -> None:
    messages = (*conversation(1), Message("assistant", ""))  # an empty turn sends no block
    request = CompletionRequest(messages, cache_breakpoints=(len(messages) - 1,))
    assert marked(AnthropicProvider(model="m").wire.body(request, "m", stream=True)) == [
        "system", "result 0"
    ]  # fmt: skip


def test_without_a_system_prompt_the_tools_end_the_first_cached_part() -> None:
    request = CompletionRequest(conversation(1)[1:], tools=(WEATHER,))
    body = AnthropicProvider(model="m").wire.body(request, "m", stream=True)
    assert marked(body) == ["tool get_weather", "result 0"]


def test_summary_requests_of_their_own_are_not_cached() -> None:
    request = CompletionRequest(conversation(2), tools=(WEATHER,), purpose="summary")
    body = AnthropicProvider(model="m").wire.body(request, "m", stream=True)
    assert body["system"] == "Be careful." and marked(body) == []


def test_a_summary_that_repeats_the_working_request_reads_its_cache() -> None:
    # the working request marked its last message; the summary repeats it and asks after it
    work = CompletionRequest(conversation(2), tools=(WEATHER,))
    asked = (*work.messages, Message("user", "Write the summary of steps 1–2"))
    summary = CompletionRequest(
        asked, tools=(WEATHER,), purpose="summary", cache_breakpoints=(len(work.messages) - 1,)
    )
    wire = AnthropicProvider(model="m").wire
    assert marked(wire.body(summary, "m", stream=True)) == marked(wire.body(work, "m", stream=True))


async def test_headers_and_url() -> None:
    script = Script([sse_response(recorded("anthropic_messages/basic_response.sse"))])
    await run(provider(script, api_key="sk-ant-xyz"))
    [request] = script.requests
    assert str(request.url) == "https://api.example.test/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-xyz"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers


async def test_non_streaming_body() -> None:
    payload = {
        "type": "message",
        "model": "claude-x",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "t1", "name": "grep", "input": {"pattern": "TODO"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 20, "output_tokens": 8, "cache_read_input_tokens": 100},
    }
    script = Script([httpx.Response(200, json=payload)])
    deltas, response = await run(provider(script, streaming=False))
    assert deltas == ["Let me look."]
    assert response.tool_calls == (ToolCall("t1", "grep", {"pattern": "TODO"}),)
    assert response.usage == Usage(prompt_tokens=120, completion_tokens=8, cache_read_tokens=100)
    assert response.finish_reason == "tool_use"


def test_base_url_with_v1_is_forgiven() -> None:
    wire = AnthropicProvider(model="m").wire
    assert wire.url("https://proxy.test/v1/") == "https://proxy.test/v1/messages"
    assert wire.url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages"


def test_non_object_tool_input_is_an_arguments_error() -> None:
    wire = AnthropicProvider(model="m").wire
    draft = wire.decode_body(
        {
            "content": [{"type": "tool_use", "id": "t", "name": "x", "input": [1]}],
            "stop_reason": "tool_use",
        }
    )
    [call] = draft.tool_calls
    assert (
        call.arguments == {} and call.arguments_error == "arguments must be a JSON object, not list"
    )
