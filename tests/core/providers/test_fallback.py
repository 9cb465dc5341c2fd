"""FallbackProvider: moves on for retryable failures only, and only before any text is shown."""

from __future__ import annotations

import httpx
import pytest
from provider_helpers import Script, ask, recorded, run, sse, sse_response

from io_tui.core.providers.anthropic import AnthropicProvider
from io_tui.core.providers.base import ErrorKind, ProviderError, TextDelta
from io_tui.core.providers.fallback import FallbackProvider
from io_tui.core.providers.openai_compat import OpenAICompatProvider
from io_tui.core.providers.retry import RetryPolicy

ONCE = RetryPolicy(max_attempts=1)


def primary(*items: httpx.Response) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        name="openrouter",
        model="gpt-4o",
        base_url="http://router.test/v1",
        transport=Script(list(items)).transport,
        retry=ONCE,
    )


def secondary() -> tuple[AnthropicProvider, Script]:
    script = Script([sse_response(recorded("anthropic_messages/basic_response.sse"))])
    provider = AnthropicProvider(
        model="claude-x", base_url="http://a.test", transport=script.transport, retry=ONCE
    )
    return provider, script


async def test_retryable_failure_moves_to_the_next() -> None:
    backup, _ = secondary()
    chain = FallbackProvider(primary(httpx.Response(503, json={"error": "down"})), backup)
    deltas, response = await run(chain)
    assert deltas == ["Hello", " there", "!"]
    assert response.provider == "anthropic"
    assert [(a.provider, a.error_kind) for a in response.attempts] == [
        ("openrouter", ErrorKind.SERVER),
        ("anthropic", None),
    ]


async def test_primary_success_never_touches_the_secondary() -> None:
    backup, script = secondary()
    ok = sse_response(recorded("openai_chat/text_finish_length.sse"))
    _, response = await run(FallbackProvider(primary(ok), backup))
    assert response.provider == "openrouter"
    assert script.requests == []


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (400, {"error": {"message": "maximum context length is 10"}}, ErrorKind.CONTEXT_OVERFLOW),
        (401, {"error": {"message": "bad key"}}, ErrorKind.AUTH),
    ],
)
async def test_non_retryable_failure_is_raised(
    status: int, body: dict[str, object], kind: ErrorKind
) -> None:
    backup, script = secondary()
    chain = FallbackProvider(primary(httpx.Response(status, json=body)), backup)
    with pytest.raises(ProviderError) as info:
        await run(chain)
    assert info.value.kind is kind
    assert script.requests == []
    assert len(info.value.attempts) == 1


async def test_failure_after_text_is_not_handed_on() -> None:
    backup, script = secondary()
    broken = sse(
        {"choices": [{"index": 0, "delta": {"content": "Par"}}]}, {"error": {"message": "x"}}
    )
    chain = FallbackProvider(primary(sse_response(broken)), backup)
    shown: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for event in chain.stream(ask()):
            if isinstance(event, TextDelta):
                shown.append(event.text)
    assert shown == ["Par"]
    assert info.value.partial is True
    assert script.requests == []


async def test_all_fail_raises_with_every_attempt() -> None:
    backup = AnthropicProvider(
        model="c",
        base_url="http://a.test",
        transport=Script([httpx.Response(529, json={"type": "error"})]).transport,
        retry=ONCE,
    )
    chain = FallbackProvider(primary(httpx.Response(500, json={})), backup)
    with pytest.raises(ProviderError) as info:
        await run(chain)
    assert [a.provider for a in info.value.attempts] == ["openrouter", "anthropic"]
    assert info.value.kind is ErrorKind.SERVER


def test_describe_lists_the_chain() -> None:
    backup, _ = secondary()
    chain = FallbackProvider(primary(), backup)
    assert chain.describe() == {
        "kind": "fallback",
        "chain": [primary().describe(), backup.describe()],
    }
    assert chain.name == "openrouter>anthropic" and chain.model == "gpt-4o"
