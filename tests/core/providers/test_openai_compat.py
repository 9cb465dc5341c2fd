"""The Chat Completions wire: recorded OpenAI streams decoded, requests encoded for servers."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import pytest
from provider_helpers import WEATHER, Script, ask, jsonl_as_sse, recorded, run, sse, sse_response

from io_tui.core.providers.base import CompletionRequest, ErrorKind, ProviderError, Usage
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.providers.openai_compat import OpenAICompatProvider
from io_tui.core.providers.retry import RetryPolicy


def provider(script: Script, **kw: object) -> OpenAICompatProvider:
    options: dict[str, object] = {"retry": RetryPolicy(max_attempts=1)}
    options.update(kw)
    return OpenAICompatProvider(
        model="gpt-4o",
        base_url="https://api.example.test/v1",
        transport=script.transport,
        **options,  # type: ignore[arg-type]
    )


def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_plain_text_streams_in_order_with_usage() -> None:
    script = Script([sse_response(recorded("openai_chat/text_plain.sse"))])
    deltas, response = await run(provider(script))
    assert deltas[:3] == ["I'm", " unable", " to"]
    assert "".join(deltas) == response.text
    assert response.text.startswith("I'm unable to provide real-time weather updates.")
    assert response.text.endswith("weather app.")
    assert response.finish_reason == "stop"
    assert response.usage == Usage(prompt_tokens=14, completion_tokens=30)
    assert response.model == "gpt-4o-2024-08-06"
    assert response.provider == "openai-compatible"
    assert response.tool_calls == ()
    [attempt] = response.attempts
    assert attempt.error is None and attempt.usage == response.usage
    assert attempt.ttft_s is not None and attempt.ttft_s <= attempt.latency_s


async def test_finish_length_is_recorded() -> None:
    script = Script([sse_response(recorded("openai_chat/text_finish_length.sse"))])
    deltas, response = await run(provider(script))
    assert deltas == ['{"']
    assert response.finish_reason == "length"
    assert response.usage == Usage(prompt_tokens=79, completion_tokens=1)


@pytest.mark.parametrize(
    ("name", "call_id", "tool", "arguments", "prompt"),
    [
        (
            "tool_call_single_strict.sse",
            "call_CTf1nWJLqSeRgDqaCG27xZ74",
            "get_weather",
            {"city": "San Francisco", "state": "CA"},
            48,
        ),
        (
            "tool_call_nonstrict.sse",
            "call_4XzlGBLtUe9dy3GVNV4jhq7h",
            "get_weather",
            {"city": "New York City"},
            44,
        ),
        (
            "tool_call_single_pydantic.sse",
            "call_c91SqDXlYFuETYv8mUHzz6pp",
            "GetWeatherArgs",
            {"city": "Edinburgh", "country": "UK", "units": "c"},
            76,
        ),
    ],
)
async def test_single_tool_call_strict_and_not(
    name: str, call_id: str, tool: str, arguments: dict[str, str], prompt: int
) -> None:
    script = Script([sse_response(recorded(f"openai_chat/{name}"))])
    deltas, response = await run(provider(script))
    assert deltas == []
    assert response.text == ""
    assert response.tool_calls == (ToolCall(call_id, tool, arguments),)
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.prompt_tokens == prompt
    assert response.attempts[0].ttft_s is not None  # tool fragments count as first output


async def test_parallel_tool_calls_accumulate_per_index() -> None:
    script = Script([sse_response(recorded("openai_chat/tool_calls_parallel_2calls.sse"))])
    _, response = await run(provider(script))
    assert [c.id for c in response.tool_calls] == [
        "call_JMW1whyEaYG438VE1OIflxA2",
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    ]
    first, second = response.tool_calls
    assert first.name == "GetWeatherArgs"
    assert first.arguments == {"city": "Edinburgh", "country": "GB", "units": "c"}
    assert second.name == "get_stock_price"
    assert second.arguments == {"ticker": "AAPL", "exchange": "NASDAQ"}
    assert response.usage == Usage(prompt_tokens=149, completion_tokens=60)


async def test_refusal_surfaces_as_text() -> None:
    script = Script([sse_response(recorded("openai_chat/refusal_with_logprobs.sse"))])
    deltas, response = await run(provider(script))
    assert response.text == "I'm very sorry, but I can't assist with that."
    assert deltas[0] == "I'm"
    assert response.finish_reason == "stop"


async def test_cached_tokens_come_from_prompt_tokens_details() -> None:
    body = jsonl_as_sse("openai_chat/vercel_openai-text.chunks.jsonl").replace(
        b'"cached_tokens":0', b'"cached_tokens":12'
    )
    script = Script([sse_response(body)])
    deltas, response = await run(provider(script))
    assert len(deltas) == 300  # one per content chunk; the empty first content is not one
    assert response.text.startswith("**Holiday Name")
    assert response.usage == Usage(prompt_tokens=16, completion_tokens=300, cache_read_tokens=12)
    assert response.model == "gpt-4.1-nano-2025-04-14"


async def test_stream_without_usage_or_done_after_finish_is_complete() -> None:
    body = sse(chunk({"content": "hi"}), chunk({}, finish="stop"))
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.text == "hi"
    assert response.usage is None
    assert response.finish_reason == "stop"


async def test_repeated_id_and_name_are_not_concatenated() -> None:
    """Some servers (vLLM, some proxies) repeat id and name in every fragment."""
    frag = {"index": 0, "id": "call_1", "type": "function"}
    body = sse(
        chunk({"tool_calls": [{**frag, "function": {"name": "read_file", "arguments": ""}}]}),
        chunk({"tool_calls": [{**frag, "function": {"name": "read_file", "arguments": '{"pa'}}]}),
        chunk({"tool_calls": [{**frag, "function": {"name": "read_file", "arguments": 'th": '}}]}),
        chunk(
            {"tool_calls": [{**frag, "function": {"name": "read_file", "arguments": '"a.py"}'}}]}
        ),
        chunk({}, finish="tool_calls"),
        "[DONE]",
    )
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.tool_calls == (ToolCall("call_1", "read_file", {"path": "a.py"}),)


async def test_calls_without_index_and_arguments_as_object() -> None:
    """Older Ollama sends whole calls without ``index``, arguments as an object."""
    body = sse(
        chunk(
            {
                "tool_calls": [
                    {"id": "a", "function": {"name": "list_dir", "arguments": {}}},
                    {"id": "b", "function": {"name": "find", "arguments": {"pattern": "*.py"}}},
                ]
            }
        ),
        chunk({}, finish="tool_calls"),
        "[DONE]",
    )
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.tool_calls == (
        ToolCall("a", "list_dir", {}),
        ToolCall("b", "find", {"pattern": "*.py"}),
    )


async def test_invalid_tool_arguments_are_reported_not_raised() -> None:
    body = sse(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c",
                        "function": {"name": "grep", "arguments": '{"pattern": '},
                    }
                ]
            }
        ),
        chunk({}, finish="tool_calls"),
        "[DONE]",
    )
    _, response = await run(provider(Script([sse_response(body)])))
    [call] = response.tool_calls
    assert call.arguments == {}
    assert call.arguments_error is not None
    assert "not valid JSON" in call.arguments_error and '{"pattern": ' in call.arguments_error


async def test_missing_call_id_gets_a_stable_one() -> None:
    body = sse(
        chunk({"tool_calls": [{"index": 0, "function": {"name": "list_dir", "arguments": "{}"}}]}),
        chunk({}, finish="tool_calls"),
    )
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.tool_calls == (ToolCall("call_0", "list_dir", {}),)


async def test_stream_cut_before_finish_is_malformed() -> None:
    body = sse(chunk({"content": "par"})) + b'data: {"choices": [{"index": 0, "del'
    with pytest.raises(ProviderError) as info:
        await run(provider(Script([sse_response(body)])))
    assert info.value.kind is ErrorKind.MALFORMED
    assert info.value.partial is True  # "par" had been shown


async def test_stream_ended_cleanly_but_early_is_malformed() -> None:
    with pytest.raises(ProviderError) as info:
        await run(provider(Script([sse_response(sse(chunk({"role": "assistant"})))])))
    assert info.value.kind is ErrorKind.MALFORMED
    assert info.value.partial is False
    assert "finish_reason" in info.value.message


async def test_error_object_mid_stream_is_classified() -> None:
    body = sse(
        chunk({"role": "assistant"}),
        {
            "error": {
                "message": "This endpoint's maximum context length is 8192 tokens.",
                "code": 400,
            }
        },
    )
    with pytest.raises(ProviderError) as info:
        await run(provider(Script([sse_response(body)])))
    assert info.value.kind is ErrorKind.CONTEXT_OVERFLOW


def test_request_encoding() -> None:
    wire = OpenAICompatProvider(model="m", base_url="http://x/v1").wire
    call = ToolCall("call_9", "read_file", {"path": "a.py"})
    request = CompletionRequest(
        messages=(
            Message("system", "sys"),
            Message("user", "go"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", "contents", tool_call_id="call_9"),
            Message("assistant", "done"),
        ),
        tools=(WEATHER,),
        max_output_tokens=99,
        temperature=0.2,
    )
    body = wire.body(request, "m", stream=True)
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "contents"},
        {"role": "assistant", "content": "done"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather in a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 99 and body["temperature"] == 0.2 and body["model"] == "m"
    assert "stream_options" not in wire.body(request, "m", stream=False)


async def test_headers_and_url() -> None:
    script = Script([sse_response(recorded("openai_chat/text_finish_length.sse"))])
    await run(provider(script, api_key="sk-abc"))
    [request] = script.requests
    assert str(request.url) == "https://api.example.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-abc"
    assert request.headers["accept"] == "text/event-stream"


async def test_no_key_sends_no_authorization() -> None:
    script = Script([sse_response(recorded("openai_chat/text_finish_length.sse"))])
    await run(provider(script))
    assert "authorization" not in script.requests[0].headers


async def test_non_streaming_body() -> None:
    payload = {
        "id": "x",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Checking.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 32},
        },
    }
    script = Script([httpx.Response(200, json=payload)])
    deltas, response = await run(provider(script, streaming=False))
    assert json.loads(script.requests[0].content)["stream"] is False
    assert deltas == ["Checking."]
    assert response.text == "Checking."
    assert response.tool_calls == (ToolCall("call_1", "get_weather", {"city": "Paris"}),)
    assert response.usage == Usage(prompt_tokens=50, completion_tokens=9, cache_read_tokens=32)
    assert response.finish_reason == "tool_calls"


async def test_server_ignoring_stream_true_is_read_as_a_body() -> None:
    payload = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
    deltas, response = await run(provider(Script([httpx.Response(200, json=payload)])))
    assert deltas == ["ok"] and response.finish_reason == "stop"


async def test_bad_json_body_is_malformed() -> None:
    script = Script([httpx.Response(200, content=b"<html>oops</html>")])
    with pytest.raises(ProviderError) as info:
        await run(provider(script, streaming=False))
    assert info.value.kind is ErrorKind.MALFORMED
    assert len(info.value.attempts) == 1


async def test_complete_helper_returns_the_response() -> None:
    from io_tui.core.providers.base import complete

    script = Script([sse_response(recorded("openai_chat/tool_call_nonstrict.sse"))])
    response = await complete(provider(script), ask())
    assert response.tool_calls[0].arguments == {"city": "New York City"}


async def test_stream_answer_to_a_non_streaming_request_is_decoded() -> None:
    script = Script([sse_response(recorded("openai_chat/tool_call_nonstrict.sse"))])
    _, response = await run(provider(script, streaming=False))
    assert response.tool_calls == (
        ToolCall("call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather", {"city": "New York City"}),
    )


async def test_llamacpp_reports_the_reused_prompt_prefix() -> None:
    script = Script(
        [
            sse_response(recorded("llamacpp_chat/first_request.sse")),
            sse_response(recorded("llamacpp_chat/prefix_reused.sse")),
        ]
    )
    client = provider(script)
    _, first = await run(client)
    _, second = await run(client)
    assert first.usage == Usage(prompt_tokens=24, completion_tokens=3, cache_read_tokens=0)
    assert second.usage == Usage(prompt_tokens=40, completion_tokens=3, cache_read_tokens=24)


async def test_llamacpp_timings_alone_still_give_the_cached_prefix() -> None:
    """Builds before ``prompt_tokens_details``: ``timings.cache_n`` is the reused prefix."""
    body = recorded("llamacpp_chat/prefix_reused.sse").replace(
        b',"prompt_tokens_details":{"cached_tokens":24}', b""
    )
    assert b"cached_tokens" not in body
    _, response = await run(provider(Script([sse_response(body)])))
    assert response.usage == Usage(prompt_tokens=40, completion_tokens=3, cache_read_tokens=24)
    without_usage = body.replace(
        b'"usage":{"completion_tokens":3,"prompt_tokens":40,"total_tokens":43},', b""
    )
    assert b'"usage"' not in without_usage
    _, response = await run(provider(Script([sse_response(without_usage)])))
    assert response.usage == Usage(prompt_tokens=40, completion_tokens=3, cache_read_tokens=24)


def test_prompt_cache_key_is_sent_only_where_the_server_takes_it() -> None:
    request = CompletionRequest((Message("user", "hi"),), cache_key="io-tui-abc")
    plain = OpenAICompatProvider(model="m", base_url="http://x/v1").wire
    keyed = OpenAICompatProvider(model="m", base_url="http://x/v1", send_cache_key=True).wire
    assert "prompt_cache_key" not in plain.body(request, "m", stream=True)
    assert keyed.body(request, "m", stream=True)["prompt_cache_key"] == "io-tui-abc"
    summary = CompletionRequest((Message("user", "hi"),), cache_key="k", purpose="summary")
    assert "prompt_cache_key" not in keyed.body(summary, "m", stream=True)
    # a summary that repeats the working request (``context/summary.py``) shares its key
    shared = replace(summary, cache_breakpoints=(0,))
    assert keyed.body(shared, "m", stream=True)["prompt_cache_key"] == "k"
