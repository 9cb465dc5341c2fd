"""The provider contract: role-tagged messages in, a streamed response out (DESIGN §3.6)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from io_tui.core.providers.messages import Message, ToolCall


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolSpec:
        return cls(data["name"], data["description"], data["parameters"])


Purpose = Literal["work", "summary", "review"]


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One request. For prompt caching (``../shared/CONTEXT-COST.md``):

    ``cache_breakpoints`` are indices of messages that end a stretch the next request is
    expected to repeat unchanged (the frame's last message, the last stable one); the
    Anthropic wire marks the last three with ``cache_control``, beside the one after the system
    prompt and tools. Empty: the last message. Working requests are marked, and a summary
    request that repeats one to share its cache (``context/summary.py``: it has breakpoints);
    other one-off prompts are not. ``cache_key`` names the conversation (one per run), sent as
    OpenAI's ``prompt_cache_key`` by the requests that share it.
    ``max_output_tokens`` caps the answer; None leaves it to the provider (``HttpProvider``'s
    ``max_output_tokens``, from the preset's model table or the settings).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None  # None: the provider's own limit (its preset's, or set)
    temperature: float | None = None
    purpose: Purpose = "work"
    cache_breakpoints: tuple[int, ...] = ()
    cache_key: str | None = None

    @property
    def cached(self) -> bool:
        """Whether the request is marked for the provider's prompt cache: a working request,
        or one that repeats one (it has breakpoints)."""
        return self.purpose == "work" or bool(self.cache_breakpoints)


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider reported. ``prompt_tokens`` is the whole prompt, cached parts included;
    ``cache_reported`` says the provider reported cache figures at all (zero then means none of
    the prompt was cached, rather than unknown). Equality ignores it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_reported: bool = field(default=False, compare=False)

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int | bool]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_reported": self.cache_reported,
        }


class ErrorKind(StrEnum):
    TRANSPORT = "transport"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    AUTH = "auth"
    REQUEST = "request"
    MALFORMED = "malformed"
    CONTEXT_OVERFLOW = "context_overflow"
    INTERRUPTED = "interrupted"  # its caller stopped it (the run was cancelled mid-answer)


RETRYABLE = frozenset(
    {ErrorKind.TRANSPORT, ErrorKind.TIMEOUT, ErrorKind.RATE_LIMIT, ErrorKind.SERVER}
)

# Every vendor's stop reason, normalized: ``stop`` (the model ended its turn), ``length`` (cut by
# the output limit or the window), ``tool_calls``, ``content_filter`` (a refusal or a filter),
# ``pause`` (Anthropic's ``pause_turn``); anything else is ``other``. The raw value is kept too.
STOP_REASONS: dict[str, str] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "content_filter",
    "pause_turn": "pause",
}


def normalize_stop(raw: str | None) -> str | None:
    """The normalized stop reason of a vendor's ``finish_reason``/``stop_reason`` (None: none)."""
    if not raw:
        return None
    return STOP_REASONS.get(raw, "other")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at a request, as the trace records it."""

    provider: str
    model: str
    usage: Usage | None = None
    latency_s: float = 0.0
    ttft_s: float | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    stop_reason: str | None = None  # the vendor's own value (``finish_reason``/``stop_reason``)
    # what a failed attempt had streamed before it failed: text, and the tool calls as far as
    # they had come ({"id", "name", "arguments": the JSON text so far})
    partial_text: str = ""
    partial_tool_calls: tuple[dict[str, str], ...] = ()
    max_output_tokens: int | None = None  # the limit the request was sent with

    @property
    def partial(self) -> bool:
        return bool(self.partial_text or self.partial_tool_calls)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "usage": self.usage.to_json() if self.usage else None,
            "latency_s": round(self.latency_s, 4),
            "ttft_s": None if self.ttft_s is None else round(self.ttft_s, 4),
            "error": self.error,
            "error_kind": self.error_kind.value if self.error_kind else None,
            "stop_reason": normalize_stop(self.stop_reason),
            "raw_stop_reason": self.stop_reason,
            "max_output_tokens": self.max_output_tokens,
        }
        if self.partial:
            out["partial"] = {
                "text": self.partial_text,
                "tool_calls": [dict(c) for c in self.partial_tool_calls],
            }
        return out


class ProviderError(Exception):
    """A classified provider failure. ``attempts`` holds every try made before giving up.

    ``partial`` is true when text deltas of the failed request had already been yielded: the
    caller has shown output that no ``Completed`` will follow, so nothing may retry it silently.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        attempts: list[Attempt] | None = None,
        partial: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.attempts: list[Attempt] = attempts or []
        self.partial = partial

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status else ""
        return f"{self.kind.value}{status}: {self.message}"


class ProviderConfigError(ValueError):
    """A provider cannot be built from the given settings; the message says why."""


def check_window(window_tokens: int | None, max_output_tokens: int | None) -> None:
    """Raise ``ProviderConfigError`` when the window set leaves no room beside the output
    budget (both set: a request could never be sent)."""
    if window_tokens is None or max_output_tokens is None or window_tokens > max_output_tokens:
        return
    raise ProviderConfigError(
        f"the context window of {window_tokens:,} tokens (context_window, --context-window)"
        f" leaves no room beside the output budget of {max_output_tokens:,}"
        " (max_output_tokens): raise the window or lower --max-output-tokens"
    )


@dataclass(frozen=True, slots=True)
class Response:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str = ""
    provider: str = ""
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)

    @property
    def stop_reason(self) -> str | None:
        """``finish_reason`` normalized (``STOP_REASONS``)."""
        return normalize_stop(self.finish_reason)

    @property
    def truncated(self) -> bool:
        """The answer was cut by the output limit (or the window), not ended by the model."""
        return self.stop_reason == "length"


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """An attempt failed in a retryable way; the provider tries again after ``delay_s``."""

    attempt: Attempt
    number: int  # the failed attempt's number, from 1
    delay_s: float


@dataclass(frozen=True, slots=True)
class Completed:
    response: Response


StreamEvent = TextDelta | Retrying | Completed


class Provider(Protocol):
    """Anything that answers a CompletionRequest.

    ``stream`` yields text deltas in order (and a ``Retrying`` before each retry) and ends with
    exactly one ``Completed``; it raises
    ``ProviderError`` on failure (after its own retries). ``describe`` says how to recreate the
    provider in another process (never a key). ``aclose`` releases its connections.
    """

    name: str
    model: str

    def stream(self, request: CompletionRequest) -> AsyncGenerator[StreamEvent, None]: ...

    def describe(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...


async def discover_limits(provider: Provider) -> None:
    """Before a request: let a provider ask its server what it is, once (an openai-compatible
    llama.cpp says its ``n_ctx`` and whether its chat template renders tools at ``/props``);
    never raises."""
    discover = getattr(provider, "discover_window", None)
    if discover is not None:
        await discover()


def provider_limits(provider: Provider) -> tuple[int | None, int | None]:
    """A provider's output limit and its model's window, in tokens (None: it has none, or the
    window is unknown). HTTP providers have both attributes; a script has neither."""
    limit = getattr(provider, "max_output_tokens", None)
    window = getattr(provider, "window_tokens", None)
    return (limit if isinstance(limit, int) else None), (
        window if isinstance(window, int) else None
    )


# The fitted output limit: never below this (a window that leaves less beside the frame is
# refused with the figures), and half of what the window leaves beside the frame, so the run's
# observations get as much room as the answer.
MIN_FITTED_OUTPUT = 256
OUTPUT_SHARE = 0.5


def fitted_output(provider: Provider) -> bool:
    """Whether a provider's output limit is its preset's default (not set by the operator),
    which each request fits to the model's window (``fit_output_limit``)."""
    return getattr(provider, "output_set", True) is False


def fit_output_limit(default: int, window: int, frame: int) -> int:
    """The answer's limit a request is sent with when none was set: ``default`` (the preset's),
    lowered to a share (``OUTPUT_SHARE``) of what the model's ``window`` leaves beside the fixed
    ``frame`` (tokens), and at least ``MIN_FITTED_OUTPUT``."""
    share = int((window - frame) * OUTPUT_SHARE)
    return max(MIN_FITTED_OUTPUT, min(default, share))


def tools_ignored(provider: Provider) -> bool:
    """Whether the provider's server said its chat template drops tool schemas (llama.cpp's
    ``/props``): the model would never see the tools a request offers."""
    return getattr(provider, "tools_supported", None) is False


def window_source(provider: Provider) -> str | None:
    """Where a provider's window came from: ``config``, ``preset`` (the model table) or
    ``server`` (its own report); None while it is unknown."""
    source = getattr(provider, "window_source", None)
    return source if isinstance(source, str) else None


async def complete(provider: Provider, request: CompletionRequest) -> Response:
    """Consume a provider's stream and return its final response (the stream closed)."""
    async with aclosing(provider.stream(request)) as events:
        async for event in events:
            if isinstance(event, Completed):
                return event.response
    raise ProviderError(ErrorKind.MALFORMED, f"{provider.name}: stream ended without a response")
