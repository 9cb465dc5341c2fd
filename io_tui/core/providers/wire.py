"""What a wire format must provide to the shared HTTP provider, and the pieces both formats share.

A wire encodes a ``CompletionRequest`` into one vendor's JSON, and decodes that vendor's answer,
either a whole JSON body or a stream of SSE events, into a ``Draft``. Everything about
connections, retries, timing and errors lives in ``http_provider`` and is written once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from io_tui.core.providers.base import CompletionRequest, ErrorKind, ProviderError, Usage
from io_tui.core.providers.messages import ToolCall
from io_tui.core.providers.sse import ServerSentEvent

DEFAULT_MAX_OUTPUT_TOKENS = 4_096  # a request that names no limit, sent to a wire directly


def output_limit(request: CompletionRequest) -> int:
    return request.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS


@dataclass(slots=True)
class Draft:
    """A response as it accumulates, before it is frozen into a ``Response``."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str = ""


class StreamDecoder(Protocol):
    """Consumes one response's SSE events in order.

    ``feed`` returns the text to hand to the caller now (possibly none) and raises
    ``ProviderError`` for an error event or a shape it cannot read. ``saw_output`` turns true
    at the first text or tool-call fragment (time to first token). ``finished`` turns true at
    the terminal event. ``close`` returns the accumulated draft, or raises MALFORMED when the
    stream ended before the response was complete. ``partial`` is what has arrived so far
    (text, tool calls as far as they came), for a stream that fails before it is complete.
    """

    saw_output: bool
    finished: bool

    def feed(self, event: ServerSentEvent) -> list[str]: ...

    def close(self) -> Draft: ...

    def partial(self) -> Fragments: ...


@dataclass(frozen=True, slots=True)
class Fragments:
    """What a stream had delivered when it failed: the text, and each tool call's id, name and
    argument JSON as far as it had come."""

    text: str = ""
    tool_calls: tuple[dict[str, str], ...] = ()


class Wire(Protocol):
    """One vendor's request and response format."""

    @property
    def name(self) -> str:
        """``openai`` or ``anthropic``: how ``describe()`` says which format to speak."""
        ...

    def url(self, base_url: str) -> str: ...

    def headers(self, api_key: str | None) -> dict[str, str]: ...

    def body(self, request: CompletionRequest, model: str, *, stream: bool) -> dict[str, Any]: ...

    def decoder(self) -> StreamDecoder: ...

    def decode_body(self, payload: Any) -> Draft: ...


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments from their JSON text, or ``{}`` and the reason they could not be read.

    A model that writes broken JSON (or is cut off by ``max_tokens`` mid-call) must not crash
    the run: the run loop reports ``arguments_error`` back to the model, which can try again.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        shown = raw if len(raw) <= 200 else raw[:200] + "…"
        return {}, f"arguments are not valid JSON ({exc.msg} at char {exc.pos}): {shown}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, not {type(value).__name__}"
    return value, None


def load_json(data: str, what: str) -> Any:
    """Decode one JSON payload, turning bad JSON into a MALFORMED provider error."""
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        shown = data if len(data) <= 120 else data[:120] + "…"
        raise ProviderError(ErrorKind.MALFORMED, f"{what} is not valid JSON: {shown!r}") from exc


def as_int(value: Any) -> int:
    """A token count from a usage object; servers send null, floats or nothing at all."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return 0


def malformed(message: str) -> ProviderError:
    return ProviderError(ErrorKind.MALFORMED, message)
