"""Classifying failures, reading Retry-After, and the backoff schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from io_tui.core.providers.base import ErrorKind
from io_tui.core.providers.errors import (
    body_detail,
    classify,
    classify_exception,
    is_context_overflow,
)
from io_tui.core.providers.retry import RetryPolicy, parse_retry_after

OVERFLOW_WORDINGS = [
    # OpenAI
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "130512 tokens. Please reduce the length of the messages.",
    # Anthropic
    "prompt is too long: 208310 tokens > 200000 maximum",
    "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease "
    "input length or `max_tokens` and try again",
    # OpenRouter
    "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 "
    "tokens (8000 of text input, 1000 in the output). Please reduce the length.",
    # llama.cpp
    "the request exceeds the available context size, try increasing it",
    # generic
    "Input is too long for requested model.",
]


@pytest.mark.parametrize("message", OVERFLOW_WORDINGS)
def test_overflow_wordings(message: str) -> None:
    assert is_context_overflow(message)
    assert classify(400, "invalid_request_error", message) is ErrorKind.CONTEXT_OVERFLOW
    assert classify(None, None, message) is ErrorKind.CONTEXT_OVERFLOW


@pytest.mark.parametrize(
    "message",
    ["Invalid model name", "Rate limit reached for gpt-4 in organization org-1 on tokens per min"],
)
def test_not_overflow(message: str) -> None:
    assert not is_context_overflow(message)


@pytest.mark.parametrize(
    ("status", "tag", "kind"),
    [
        (429, None, ErrorKind.RATE_LIMIT),
        (429, "rate_limit_error", ErrorKind.RATE_LIMIT),
        (429, "insufficient_quota", ErrorKind.REQUEST),
        (500, None, ErrorKind.SERVER),
        (503, None, ErrorKind.SERVER),
        (529, "overloaded_error", ErrorKind.SERVER),
        (500, "invalid_request_error", ErrorKind.SERVER),
        (401, "authentication_error", ErrorKind.AUTH),
        (403, None, ErrorKind.AUTH),
        (400, "invalid_request_error", ErrorKind.REQUEST),
        (404, None, ErrorKind.REQUEST),
        (408, None, ErrorKind.TIMEOUT),
        (413, "request_too_large", ErrorKind.CONTEXT_OVERFLOW),
        (400, "context_length_exceeded", ErrorKind.CONTEXT_OVERFLOW),
        (None, "overloaded_error", ErrorKind.SERVER),
        (None, "rate_limit_error", ErrorKind.RATE_LIMIT),
        (None, None, ErrorKind.SERVER),
    ],
)
def test_status_and_tag(status: int | None, tag: str | None, kind: ErrorKind) -> None:
    assert classify(status, tag, "something went wrong") is kind


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ReadTimeout("slow"), ErrorKind.TIMEOUT),
        (httpx.ConnectTimeout("slow"), ErrorKind.TIMEOUT),
        (httpx.ConnectError("refused"), ErrorKind.TRANSPORT),
        (httpx.RemoteProtocolError("closed"), ErrorKind.TRANSPORT),
        (httpx.ReadError("reset"), ErrorKind.TRANSPORT),
        (httpx.DecodingError("gzip"), ErrorKind.MALFORMED),
    ],
)
def test_exceptions(exc: httpx.HTTPError, kind: ErrorKind) -> None:
    assert classify_exception(exc) is kind


@pytest.mark.parametrize(
    ("body", "tag", "message"),
    [
        (
            '{"error": {"message": "m1", "type": "invalid_request_error", '
            '"code": "context_length_exceeded"}}',
            "context_length_exceeded",
            "m1",
        ),
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "overloaded_error",
            "Overloaded",
        ),
        ('{"error": "model \\"x\\" not found"}', None, 'model "x" not found'),
        ('{"error": {"message": "upstream", "code": 502}}', None, "upstream"),
        ("<html>Bad Gateway</html>", None, "<html>Bad Gateway</html>"),
    ],
)
def test_body_detail(body: str, tag: str | None, message: str) -> None:
    assert body_detail(body) == (tag, message)


def test_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == 30.0
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": past}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_schedule() -> None:
    policy = RetryPolicy(max_attempts=5, base_delay_s=1.0, max_delay_s=5.0, jitter=lambda: 1.0)
    assert [policy.delay(n, None) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, None]
    low = RetryPolicy(max_attempts=5, base_delay_s=1.0, jitter=lambda: 0.0)
    assert [low.delay(n, None) for n in range(1, 4)] == [0.5, 1.0, 2.0]  # never below half


def test_retry_after_wins_unless_too_long() -> None:
    policy = RetryPolicy(max_attempts=3, max_retry_after_s=60.0)
    assert policy.delay(1, 12.0) == 12.0
    assert policy.delay(1, 600.0) is None
    assert policy.delay(3, 1.0) is None
