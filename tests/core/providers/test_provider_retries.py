"""Retries through a mock transport: what is retried, how long it waits, what is recorded."""

from __future__ import annotations

import httpx
import pytest
from provider_helpers import Script, Sleeps, ask, recorded, run, sse, sse_response

from io_tui.core.providers.anthropic import AnthropicProvider
from io_tui.core.providers.base import ErrorKind, ProviderError, TextDelta
from io_tui.core.providers.openai_compat import OpenAICompatProvider
from io_tui.core.providers.retry import RetryPolicy

TEXT = recorded("openai_chat/text_finish_length.sse")


def openai(script: Script, retry: RetryPolicy) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        model="gpt-4o", base_url="http://llm.test/v1", transport=script.transport, retry=retry
    )


def error(status: int, message: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message}}, headers=headers)


async def test_rate_limit_honours_retry_after(retry: RetryPolicy, sleeps: Sleeps) -> None:
    script = Script([error(429, "slow down", {"Retry-After": "3"}), sse_response(TEXT)])
    _, response = await run(openai(script, retry))
    assert sleeps.waits == [3.0]
    assert [a.error_kind for a in response.attempts] == [ErrorKind.RATE_LIMIT, None]
    assert response.attempts[0].error == "slow down"
    assert response.attempts[1].usage is not None
    assert len(script.requests) == 2


async def test_server_errors_back_off_exponentially(retry: RetryPolicy, sleeps: Sleeps) -> None:
    script = Script([error(500, "a"), error(502, "b"), error(503, "c"), sse_response(TEXT)])
    _, response = await run(openai(script, retry))
    # base 1 s doubling, equal jitter fixed at 0.5 → 3/4 of each ceiling
    assert sleeps.waits == [0.75, 1.5, 3.0]
    assert [a.error_kind for a in response.attempts] == [ErrorKind.SERVER] * 3 + [None]


async def test_attempts_are_bounded(retry: RetryPolicy, sleeps: Sleeps) -> None:
    script = Script([error(500, "down")] * 4)
    with pytest.raises(ProviderError) as info:
        await run(openai(script, retry))
    assert info.value.kind is ErrorKind.SERVER
    assert info.value.status == 500
    assert len(info.value.attempts) == 4
    assert len(sleeps.waits) == 3
    assert "down" in str(info.value)


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            ErrorKind.CONTEXT_OVERFLOW,
        ),
        (401, {"error": {"message": "Incorrect API key provided"}}, ErrorKind.AUTH),
        (400, {"error": {"message": "Unknown parameter"}}, ErrorKind.REQUEST),
    ],
)
async def test_non_retryable_errors_raise_at_once(
    retry: RetryPolicy, sleeps: Sleeps, status: int, body: dict[str, object], kind: ErrorKind
) -> None:
    script = Script([httpx.Response(status, json=body), sse_response(TEXT)])
    with pytest.raises(ProviderError) as info:
        await run(openai(script, retry))
    assert info.value.kind is kind
    assert len(info.value.attempts) == 1 and len(script.requests) == 1
    assert sleeps.waits == []


async def test_retry_after_beyond_the_cap_gives_up(sleeps: Sleeps) -> None:
    policy = RetryPolicy(max_attempts=4, max_retry_after_s=30, sleep=sleeps)
    script = Script([error(429, "quota", {"Retry-After": "3600"}), sse_response(TEXT)])
    with pytest.raises(ProviderError) as info:
        await run(openai(script, policy))
    assert info.value.kind is ErrorKind.RATE_LIMIT
    assert info.value.retry_after == 3600.0
    assert sleeps.waits == []


async def test_transport_errors_are_retried(retry: RetryPolicy, sleeps: Sleeps) -> None:
    script = Script([httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), sse_response(TEXT)])
    _, response = await run(openai(script, retry))
    assert [a.error_kind for a in response.attempts] == [
        ErrorKind.TRANSPORT,
        ErrorKind.TIMEOUT,
        None,
    ]
    assert len(sleeps.waits) == 2


async def test_stale_keep_alive_is_retried_at_once(retry: RetryPolicy, sleeps: Sleeps) -> None:
    script = Script(
        [
            httpx.RemoteProtocolError("Server disconnected without sending a response."),
            sse_response(TEXT),
        ]
    )
    _, response = await run(openai(script, RetryPolicy(max_attempts=1, sleep=sleeps)))
    assert sleeps.waits == []  # no backoff, and it did not use up the only attempt
    assert [a.error_kind for a in response.attempts] == [ErrorKind.TRANSPORT, None]


async def test_failure_after_text_is_not_retried(retry: RetryPolicy, sleeps: Sleeps) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    overloaded = {"error": {"message": "server overloaded", "type": "server_error"}}
    script = Script([sse_response(sse(chunk, overloaded)), sse_response(TEXT)])
    shown: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in openai(script, retry).stream(ask()):
            if isinstance(event, TextDelta):
                shown.append(event.text)
    assert shown == ["Hel"]
    assert info.value.kind is ErrorKind.SERVER and info.value.retryable
    assert info.value.partial is True
    assert len(script.requests) == 1 and sleeps.waits == []


async def test_failure_during_tool_fragments_only_is_retried(
    retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fragment = {
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "x"}}]},
            }
        ]
    }
    script = Script(
        [
            sse_response(sse(fragment, {"error": {"message": "boom", "type": "server_error"}})),
            sse_response(recorded("openai_chat/tool_call_nonstrict.sse")),
        ]
    )
    _, response = await run(openai(script, retry))
    assert response.tool_calls[0].arguments == {"city": "New York City"}
    assert [a.error_kind for a in response.attempts] == [ErrorKind.SERVER, None]


async def test_anthropic_overloaded_event_is_retried(retry: RetryPolicy, sleeps: Sleeps) -> None:
    overloaded = sse(
        {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 3}}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        named=True,
    )
    script = Script(
        [
            httpx.Response(
                529,
                json={
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"},
                },
            ),
            sse_response(overloaded),
            sse_response(recorded("anthropic_messages/basic_response.sse")),
        ]
    )
    provider = AnthropicProvider(
        model="claude", base_url="http://a.test", transport=script.transport, retry=retry
    )
    _, response = await run(provider)
    assert response.text == "Hello there!"
    assert [a.error_kind for a in response.attempts] == [ErrorKind.SERVER, ErrorKind.SERVER, None]
    assert len(sleeps.waits) == 2


async def test_404_names_the_url_to_check(retry: RetryPolicy, sleeps: Sleeps) -> None:
    script = Script([error(404, 'model "llama9" not found, try pulling it first')])
    with pytest.raises(ProviderError) as info:
        await run(openai(script, retry))
    assert info.value.kind is ErrorKind.REQUEST
    assert info.value.message == (
        'openai-compatible: model "llama9" not found, try pulling it first '
        "(POST http://llm.test/v1/chat/completions: check the base URL and the model name)"
    )
    assert sleeps.waits == []
