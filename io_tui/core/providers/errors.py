"""Turning what a server or the network did into an ``ErrorKind``.

Classification is by HTTP status first, refined by the vendor's error type or code and by the
wording of the message, because context overflow arrives as a plain 400 from every vendor and
can only be told apart by what it says. The same rules apply to errors that arrive as an SSE
event in the middle of a stream (no status).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from io_tui.core.providers.base import ErrorKind

# Wordings seen from OpenAI, Anthropic, OpenRouter, vLLM, llama.cpp, Ollama and LM Studio.
_OVERFLOW = re.compile(
    r"context_length_exceeded"
    r"|maximum context length"
    r"|context length (?:is )?exceeded"
    r"|prompt is too long"
    r"|exceeds? (?:the )?(?:model'?s? |available )?(?:maximum )?context"
    r"|exceed_context_size_error"
    r"|context (?:window|size|limit) (?:has been |was |is )?exceeded"
    r"|input is too long",
    re.IGNORECASE,
)

# Vendor error ``type`` / ``code`` values whose meaning does not depend on the status.
_TYPE_KINDS: dict[str, ErrorKind] = {
    "context_length_exceeded": ErrorKind.CONTEXT_OVERFLOW,
    "request_too_large": ErrorKind.CONTEXT_OVERFLOW,
    "exceed_context_size_error": ErrorKind.CONTEXT_OVERFLOW,
    "overloaded_error": ErrorKind.SERVER,
    "api_error": ErrorKind.SERVER,
    "server_error": ErrorKind.SERVER,
    "timeout_error": ErrorKind.TIMEOUT,
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "rate_limit_exceeded": ErrorKind.RATE_LIMIT,
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "invalid_api_key": ErrorKind.AUTH,
    "insufficient_quota": ErrorKind.REQUEST,  # a 429 that no amount of waiting fixes
    "billing_error": ErrorKind.REQUEST,
    "invalid_request_error": ErrorKind.REQUEST,
    "not_found_error": ErrorKind.REQUEST,
}


def is_context_overflow(text: str) -> bool:
    """Whether an error message says the prompt did not fit the model's context."""
    return bool(_OVERFLOW.search(text))


def error_detail(payload: Any) -> tuple[str | None, str]:
    """The vendor's error type or code, and its message, from a decoded error body.

    Shapes handled: OpenAI ``{"error": {"message", "type", "code"}}``, Anthropic ``{"type":
    "error", "error": {"type", "message"}}``, Ollama ``{"error": "text"}``, and bare
    ``{"message"}`` / ``{"detail"}`` from other compatible servers.
    """
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, str):
            return None, err
        if isinstance(err, dict):
            code = err.get("code")
            etype = err.get("type")
            message = err.get("message") or err.get("detail") or ""
            if not isinstance(message, str):
                message = json.dumps(message)
            # ``code`` is the more specific of the two on OpenAI; ``type`` is all Anthropic has.
            tag = code if isinstance(code, str) and code else etype
            return (tag if isinstance(tag, str) and tag else None), message
    if isinstance(payload, str):
        return None, payload
    return None, json.dumps(payload)


def body_detail(text: str) -> tuple[str | None, str]:
    """``error_detail`` for a raw body that may or may not be JSON."""
    try:
        return error_detail(json.loads(text))
    except ValueError:
        return None, text.strip()[:500]


def classify(status: int | None, tag: str | None, message: str) -> ErrorKind:
    """The kind of a failure the server reported (``status`` is None for a mid-stream event)."""
    if (tag and _TYPE_KINDS.get(tag) is ErrorKind.CONTEXT_OVERFLOW) or is_context_overflow(message):
        return ErrorKind.CONTEXT_OVERFLOW
    if status == 413:
        return ErrorKind.CONTEXT_OVERFLOW
    if tag in _TYPE_KINDS and (status is None or status >= 400):
        kind = _TYPE_KINDS[tag]
        # A bare status beats a generic tag: ``invalid_request_error`` on a 500 is still a 500.
        if not (kind is ErrorKind.REQUEST and status is not None and status >= 500):
            return kind
    if status is None:
        return ErrorKind.SERVER
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 408:
        return ErrorKind.TIMEOUT
    if status >= 500:
        return ErrorKind.SERVER
    return ErrorKind.REQUEST


def classify_exception(exc: httpx.HTTPError) -> ErrorKind:
    """The kind of a failure httpx raised before or while reading a response."""
    if isinstance(exc, httpx.TimeoutException):
        return ErrorKind.TIMEOUT
    if isinstance(exc, httpx.TransportError):
        return ErrorKind.TRANSPORT
    if isinstance(exc, httpx.DecodingError):
        return ErrorKind.MALFORMED
    if isinstance(exc, httpx.TooManyRedirects):
        return ErrorKind.REQUEST
    return ErrorKind.TRANSPORT


def describe_exception(exc: BaseException) -> str:
    """A one-line account of a network failure (httpx messages are sometimes empty)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
