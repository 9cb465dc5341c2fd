"""Providers against a real HTTP server on 127.0.0.1 replaying recorded streams chunk by chunk.

Bytes arrive in 48-byte pieces with small pauses, so events straddle reads; faults are injected
at the socket: refusals with Retry-After, 5xx, bodies cut mid-event, a hanging server, and a
keep-alive connection the server drops when it is reused.
"""

from __future__ import annotations

import pytest
from provider_helpers import Sleeps, ask, recorded, run, sse
from replay_server import ReplayServer, Reply, json_reply, sse_reply

from io_tui.core.providers.anthropic import AnthropicProvider
from io_tui.core.providers.base import (
    Completed,
    ErrorKind,
    ProviderError,
    Retrying,
    TextDelta,
    Usage,
)
from io_tui.core.providers.messages import ToolCall
from io_tui.core.providers.openai_compat import OpenAICompatProvider
from io_tui.core.providers.retry import RetryPolicy

TEXT = recorded("openai_chat/text_plain.sse")
TEXT_REPLY = "I'm unable to provide real-time weather updates."


def openai(server: ReplayServer, retry: RetryPolicy, **kw: object) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        model="gpt-4o",
        base_url=server.base_url + "/v1",
        api_key="sk-live-test",
        retry=retry,
        **kw,  # type: ignore[arg-type]
    )


def anthropic(server: ReplayServer, retry: RetryPolicy) -> AnthropicProvider:
    return AnthropicProvider(
        model="claude-test", base_url=server.base_url, api_key="sk-ant-test", retry=retry
    )


async def test_openai_recordings_replayed(server: ReplayServer, retry: RetryPolicy) -> None:
    server.add(
        sse_reply(TEXT),
        sse_reply(recorded("openai_chat/tool_calls_parallel_2calls.sse")),
        sse_reply(recorded("openai_chat/refusal_with_logprobs.sse")),
    )
    async with openai(server, retry) as provider:
        deltas, text = await run(provider)
        _, tools = await run(provider)
        _, refusal = await run(provider)
    assert text.text.startswith(TEXT_REPLY) and "".join(deltas) == text.text
    assert text.usage == Usage(prompt_tokens=14, completion_tokens=30)
    assert [c.name for c in tools.tool_calls] == ["GetWeatherArgs", "get_stock_price"]
    assert tools.tool_calls[1].arguments == {"ticker": "AAPL", "exchange": "NASDAQ"}
    assert refusal.text == "I'm very sorry, but I can't assist with that."
    seen = server.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-live-test"
    assert seen.body["stream"] is True and seen.body["model"] == "gpt-4o"
    assert {r.connection for r in server.requests} == {1}  # one keep-alive connection


async def test_anthropic_recordings_replayed(server: ReplayServer, retry: RetryPolicy) -> None:
    server.add(
        sse_reply(recorded("anthropic_messages/basic_response.sse")),
        sse_reply(recorded("anthropic_messages/tool_use_response.sse")),
        sse_reply(recorded("anthropic_messages/incomplete_partial_json_response.sse")),
    )
    async with anthropic(server, retry) as provider:
        deltas, basic = await run(provider)
        _, tool = await run(provider)
        _, partial = await run(provider)
    assert deltas == ["Hello", " there", "!"]
    assert basic.usage == Usage(prompt_tokens=11, completion_tokens=6)
    assert tool.tool_calls == (
        ToolCall("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"}),
    )
    assert partial.tool_calls[0].arguments_error is not None
    seen = server.requests[0]
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == "sk-ant-test"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    cached = {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    assert seen.body["system"] == [cached]  # the prompt cache's first breakpoint, over HTTP


async def test_429_with_retry_after_then_success(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    server.add(
        json_reply(429, {"error": {"message": "Rate limit"}}, {"Retry-After": "2"}),
        sse_reply(TEXT),
    )
    _, response = await run(openai(server, retry))
    assert sleeps.waits == [2.0]
    assert response.text.startswith(TEXT_REPLY)
    assert [a.error_kind for a in response.attempts] == [ErrorKind.RATE_LIMIT, None]


async def test_500_then_success(server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps) -> None:
    server.add(json_reply(500, {"error": {"message": "internal"}}), sse_reply(TEXT))
    _, response = await run(openai(server, retry))
    assert len(sleeps.waits) == 1
    assert [a.error_kind for a in response.attempts] == [ErrorKind.SERVER, None]
    assert response.attempts[0].error == "internal"


async def test_chunked_body_cut_after_text_raises_partial(
    server: ReplayServer, retry: RetryPolicy
) -> None:
    server.add(Reply(body=TEXT, action="cut", cut_at=TEXT.index(b" real")), sse_reply(TEXT))
    shown: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in openai(server, retry).stream(ask()):
            if isinstance(event, TextDelta):
                shown.append(event.text)
    assert "".join(shown).startswith("I'm unable to provide")
    assert info.value.kind is ErrorKind.TRANSPORT
    assert info.value.partial is True
    assert len(server.requests) == 1  # not retried: the caller already showed the text


async def test_chunked_body_cut_before_text_is_retried(
    server: ReplayServer, retry: RetryPolicy
) -> None:
    tool = recorded("openai_chat/tool_call_single_strict.sse")
    server.add(Reply(body=tool, action="cut", cut_at=len(tool) // 2), sse_reply(tool))
    _, response = await run(openai(server, retry))
    assert response.tool_calls[0].arguments == {"city": "San Francisco", "state": "CA"}
    assert [a.error_kind for a in response.attempts] == [ErrorKind.TRANSPORT, None]


async def test_stream_closed_mid_event_is_malformed(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    tool = recorded("anthropic_messages/tool_use_response.sse")
    cut_at = tool.index(b"input_json_delta") + 30  # inside an event, no terminal event
    server.add(Reply(body=tool, action="eof", cut_at=cut_at))
    with pytest.raises(ProviderError) as info:
        await run(anthropic(server, retry))
    assert info.value.kind is ErrorKind.MALFORMED
    assert info.value.partial is True  # the opening text had been shown
    assert sleeps.waits == []


async def test_invalid_tool_arguments_over_the_wire(
    server: ReplayServer, retry: RetryPolicy
) -> None:
    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "call_x", "function": {"name": "edit_file", "arguments": "{'path"}}
    server.add(sse_reply(sse(chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), "[DONE]")))
    _, response = await run(openai(server, retry))
    [tool_call] = response.tool_calls
    assert tool_call.id == "call_x" and tool_call.name == "edit_file"
    assert tool_call.arguments == {}
    assert tool_call.arguments_error is not None and "{'path" in tool_call.arguments_error


async def test_hanging_server_times_out(server: ReplayServer, sleeps: Sleeps) -> None:
    server.add(Reply(action="hang"), Reply(action="hang"))
    policy = RetryPolicy(max_attempts=2, sleep=sleeps, jitter=lambda: 0.0)
    with pytest.raises(ProviderError) as info:
        await run(openai(server, policy, timeout=0.2))
    assert info.value.kind is ErrorKind.TIMEOUT
    assert [a.error_kind for a in info.value.attempts] == [ErrorKind.TIMEOUT] * 2
    assert len(server.requests) == 2 and len(sleeps.waits) == 1


async def test_dropped_keep_alive_is_retried_at_once(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    server.add(sse_reply(TEXT), Reply(action="drop"), sse_reply(TEXT))
    async with openai(server, retry) as provider:
        await run(provider)
        _, second = await run(provider)
    assert second.text.startswith(TEXT_REPLY)
    assert [a.error_kind for a in second.attempts] == [ErrorKind.TRANSPORT, None]
    assert sleeps.waits == []
    # the second request reused the first connection, which the server then dropped
    assert [r.connection for r in server.requests] == [1, 1, 2]


async def test_openai_overflow_is_not_retried(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    message = (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131000 tokens. Please reduce the length of the messages."
    )
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    server.add(json_reply(400, body), sse_reply(TEXT))
    with pytest.raises(ProviderError) as info:
        await run(openai(server, retry))
    assert info.value.kind is ErrorKind.CONTEXT_OVERFLOW
    assert info.value.status == 400 and not info.value.retryable
    assert "maximum context length" in info.value.message
    assert len(server.requests) == 1 and sleeps.waits == []


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 208310 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, "
        "decrease input length or `max_tokens` and try again",
    ],
)
async def test_anthropic_overflow_is_not_retried(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps, message: str
) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    server.add(json_reply(400, body))
    with pytest.raises(ProviderError) as info:
        await run(anthropic(server, retry))
    assert info.value.kind is ErrorKind.CONTEXT_OVERFLOW
    assert len(info.value.attempts) == 1 and sleeps.waits == []


async def test_anthropic_overloaded_event_then_success(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    overloaded = sse(
        {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 3}}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        named=True,
    )
    server.add(sse_reply(overloaded), sse_reply(recorded("anthropic_messages/basic_response.sse")))
    _, response = await run(anthropic(server, retry))
    assert response.text == "Hello there!"
    assert [a.error_kind for a in response.attempts] == [ErrorKind.SERVER, None]
    assert len(sleeps.waits) == 1


# -- stop reasons, output limits, partial output, retry events (issue 17 items 1, 2, 4) --


async def test_stop_reasons_normalized_from_recordings(
    server: ReplayServer, retry: RetryPolicy
) -> None:
    server.add(
        sse_reply(recorded("openai_chat/text_finish_length.sse")),
        sse_reply(TEXT),
        sse_reply(recorded("openai_chat/tool_calls_parallel_2calls.sse")),
    )
    async with openai(server, retry, max_output_tokens=321) as provider:
        _, cut = await run(provider)
        _, plain = await run(provider)
        _, tools = await run(provider, ask(max_output_tokens=50))
    assert (cut.finish_reason, cut.stop_reason, cut.truncated) == ("length", "length", True)
    assert (plain.stop_reason, plain.truncated) == ("stop", False)
    assert tools.stop_reason == "tool_calls"
    recorded_attempt = cut.attempts[-1].to_json()
    assert recorded_attempt["stop_reason"] == "length"
    assert recorded_attempt["raw_stop_reason"] == "length"
    assert recorded_attempt["max_output_tokens"] == 321
    # the provider's limit unless the request names its own
    assert [r.body["max_tokens"] for r in server.requests] == [321, 321, 50]
    assert "partial" not in recorded_attempt


async def test_anthropic_stop_reasons_keep_the_raw_value(
    server: ReplayServer, retry: RetryPolicy
) -> None:
    server.add(
        sse_reply(recorded("anthropic_messages/basic_response.sse")),
        sse_reply(recorded("anthropic_messages/tool_use_response.sse")),
        sse_reply(recorded("anthropic_messages/refusal_response.sse")),
    )
    async with anthropic(server, retry) as provider:
        results = [(await run(provider))[1] for _ in range(3)]
    assert [(r.finish_reason, r.stop_reason) for r in results] == [
        ("end_turn", "stop"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ]
    assert server.requests[0].body["max_tokens"] == 4_096  # an unconfigured provider's default


async def test_text_streamed_before_a_cut_is_kept_on_the_failed_attempt(
    server: ReplayServer, retry: RetryPolicy
) -> None:
    server.add(Reply(body=TEXT, action="cut", cut_at=TEXT.index(b" real")))
    shown: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in openai(server, retry).stream(ask()):
            if isinstance(event, TextDelta):
                shown.append(event.text)
    (attempt,) = info.value.attempts
    assert attempt.partial and attempt.partial_text == "".join(shown)
    assert attempt.to_json()["partial"] == {"text": "".join(shown), "tool_calls": []}


async def test_tool_call_fragments_before_a_cut_are_kept_and_the_retry_announced(
    server: ReplayServer, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    tool = recorded("openai_chat/tool_call_single_strict.sse")
    server.add(Reply(body=tool, action="cut", cut_at=len(tool) // 2), sse_reply(tool))
    events = [event async for event in openai(server, retry).stream(ask())]
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert len(retrying) == 1 and retrying[0].number == 1
    assert retrying[0].delay_s == sleeps.waits[0]
    (fragment,) = retrying[0].attempt.partial_tool_calls
    assert fragment["name"] == "get_weather" and fragment["id"]
    assert '{"city"' in fragment["arguments"] and fragment["arguments"].count("}") == 0
    done = events[-1]
    assert isinstance(done, Completed)
    assert done.response.attempts[0].partial and not done.response.attempts[1].partial


async def test_anthropic_partial_tool_input_kept(server: ReplayServer, retry: RetryPolicy) -> None:
    tool = recorded("anthropic_messages/tool_use_response.sse")
    server.add(Reply(body=tool, action="eof", cut_at=tool.index(b"input_json_delta") + 30))
    with pytest.raises(ProviderError) as info:
        await run(anthropic(server, retry))
    partial = info.value.attempts[-1].to_json()["partial"]
    assert partial["text"] == "I'll check the current weather in Paris for you."
    assert partial["tool_calls"][0]["name"] == "get_weather"
