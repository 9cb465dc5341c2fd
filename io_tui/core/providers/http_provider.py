"""One provider over HTTP for any wire: connections, retries, timing, and error classification.

A request is tried up to ``RetryPolicy.max_attempts`` times. Each try is recorded as an
``Attempt`` (latency, time to first token, usage or failure) and the whole list travels on the
final ``Response`` or on the ``ProviderError`` that ends the call.

Retry rules:

* Retryable kinds (transport, timeout, rate limit, server) back off exponentially with jitter;
  a server's Retry-After is honoured. Everything else, context overflow above all, is raised at
  once: resending the same prompt cannot fix it.
* A pooled keep-alive connection the server had already closed fails before any byte of a
  response arrives; that is retried at once, without backoff, and does not use up an attempt
  (once per call).
* Once a text delta has been yielded, a failure is never retried: the caller has already shown
  that text, and a second try would repeat it. The error is raised with ``partial=True``.
  Tool-call fragments are not yielded, so a stream that fails while only they have arrived is
  retried like any other. Either way the failed attempt keeps what it had streamed
  (``Attempt.partial_text`` / ``partial_tool_calls``).
* Before each retry a ``Retrying`` event says which attempt failed and how long the wait is.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from io_tui.core.providers.base import (
    Attempt,
    Completed,
    CompletionRequest,
    ErrorKind,
    ProviderError,
    Response,
    Retrying,
    StreamEvent,
    TextDelta,
)
from io_tui.core.providers.errors import (
    body_detail,
    classify,
    classify_exception,
    describe_exception,
)
from io_tui.core.providers.retry import RetryPolicy, parse_retry_after
from io_tui.core.providers.secret import Secret
from io_tui.core.providers.sse import aiter_events, is_event_stream
from io_tui.core.providers.wire import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    Draft,
    Fragments,
    StreamDecoder,
    Wire,
    load_json,
)

log = logging.getLogger(__name__)

# Reads are the gaps between streamed chunks: a model that thinks for a minute before its first
# token is normal, a connection silent for five minutes is not.
DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10.0)


@dataclass(slots=True)
class _Probe:
    """Timing of one attempt, measured from just before the request is sent."""

    clock: Callable[[], float]
    started: float = 0.0
    first_output: float | None = None
    responded: bool = False  # response headers arrived (so not a stale pooled connection)
    limit: int | None = None  # the output limit sent
    decoder: StreamDecoder | None = None  # the stream's, for what it had when it failed

    def start(self) -> None:
        self.started = self.clock()

    def output(self) -> None:
        if self.first_output is None:
            self.first_output = self.clock()

    def attempt(self, provider: str, model: str, draft: Draft | None = None,
                error: ProviderError | None = None) -> Attempt:  # fmt: skip
        now = self.clock()
        fragments = Fragments()
        if error is not None and self.decoder is not None:
            fragments = self.decoder.partial()
        return Attempt(
            provider=provider,
            model=model,
            usage=draft.usage if draft else None,
            latency_s=now - self.started,
            ttft_s=None if self.first_output is None else self.first_output - self.started,
            error=None if error is None else error.message,
            error_kind=None if error is None else error.kind,
            stop_reason=draft.finish_reason if draft else None,
            partial_text=fragments.text,
            partial_tool_calls=fragments.tool_calls,
            max_output_tokens=self.limit,
        )


def _stale_connection(error: ProviderError, probe: _Probe) -> bool:
    cause = error.__cause__
    return not probe.responded and isinstance(cause, httpx.RemoteProtocolError | httpx.ReadError)


class HttpProvider:
    """A ``Provider`` that speaks ``wire`` to ``base_url``.

    ``name`` is the preset it was built from (it labels attempts and traces); ``describe()``
    says how to build it again and never includes the key. ``max_output_tokens`` caps every
    answer whose request names no limit, and ``output_set`` says the operator set it (else it is
    the preset's default, which a run fits to the window: ``base.fitted_output``);
    ``window_tokens`` is the model's context window (prompt plus answer) when known, and
    ``window_source`` where it came from. Call ``aclose()`` (or use ``async with``) when done,
    to release pooled connections.
    """

    def __init__(
        self,
        *,
        wire: Wire,
        model: str,
        base_url: str,
        name: str | None = None,
        api_key: str | Secret | None = None,
        streaming: bool = True,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_output_tokens: int | None = None,
        output_set: bool = True,
        window_tokens: int | None = None,
        window_source: str | None = None,
    ) -> None:
        self.wire = wire
        self.name = name or wire.name
        self.model = model
        self.max_output_tokens = max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        self.output_set = output_set and max_output_tokens is not None
        self.window_tokens = window_tokens  # the model's context window, when known
        # where it came from: ``config`` (the run's setting), ``preset`` (the model table),
        # ``server`` (the server's own report); None while unknown
        self.window_source = window_source if window_tokens is not None else None
        self.base_url = base_url.rstrip("/")
        self.streaming = streaming
        self.retry = retry or RetryPolicy()
        self._key = api_key if isinstance(api_key, Secret) or api_key is None else Secret(api_key)
        self._timeout = DEFAULT_TIMEOUT if timeout is None else httpx.Timeout(timeout)
        self._transport = transport
        self._clock = clock
        self._client: httpx.AsyncClient | None = None

    # -- identity -------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "http",
            "preset": self.name,
            "wire": self.wire.name,
            "model": self.model,
            "base_url": self.base_url,
            "streaming": self.streaming,
            "max_output_tokens": self.max_output_tokens,
            # the operator's limit, or the preset's default (fitted to the window by each run)
            "max_output_set": self.output_set,
            # a configured window is the run's to keep: a resume in any process uses it again
            **({"window_tokens": self.window_tokens} if self.window_source == "config" else {}),
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, "
            f"base_url={self.base_url!r})"
        )

    # -- lifecycle ------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        if self._client is None or self._client.is_closed:
            self._client = httpx.AsyncClient(timeout=self._timeout, transport=self._transport)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> HttpProvider:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the call -------------------------------------------------------------------------

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[StreamEvent, None]:
        if request.max_output_tokens is None:
            request = dataclasses.replace(request, max_output_tokens=self.max_output_tokens)
        attempts: list[Attempt] = []
        retries = 0
        stale_retry_left = True
        while True:
            probe = _Probe(self._clock, limit=request.max_output_tokens)
            draft: Draft | None = None
            emitted = False
            try:
                async with aclosing(self._attempt(request, probe)) as pieces:
                    async for piece in pieces:
                        if isinstance(piece, Draft):
                            draft = piece
                        else:
                            emitted = True
                            yield TextDelta(piece)
                if draft is None:  # pragma: no cover - _attempt always ends with a draft
                    raise ProviderError(ErrorKind.MALFORMED, "no response was decoded")
            except ProviderError as error:
                attempts.append(probe.attempt(self.name, self.model, error=error))
                log.info("%s attempt %d failed: %s", self.name, len(attempts), error)
                if emitted:
                    raise self._final(error, attempts, partial=True) from error
                if error.retryable and stale_retry_left and _stale_connection(error, probe):
                    stale_retry_left = False
                    continue
                retries += 1
                wait = self.retry.delay(retries, error.retry_after) if error.retryable else None
                if wait is None:
                    raise self._final(error, attempts) from error
                yield Retrying(attempts[-1], len(attempts), wait)
                await self.retry.sleep(wait)
                continue
            attempts.append(probe.attempt(self.name, self.model, draft))
            yield Completed(
                Response(
                    text=draft.text,
                    tool_calls=tuple(draft.tool_calls),
                    usage=draft.usage,
                    finish_reason=draft.finish_reason,
                    model=draft.model or self.model,
                    provider=self.name,
                    attempts=tuple(attempts),
                )
            )
            return

    def _final(
        self, error: ProviderError, attempts: list[Attempt], *, partial: bool = False
    ) -> ProviderError:
        return ProviderError(
            error.kind,
            f"{self.name}: {error.message}",
            status=error.status,
            retry_after=error.retry_after,
            attempts=list(attempts),
            partial=partial,
        )

    async def _attempt(
        self, request: CompletionRequest, probe: _Probe
    ) -> AsyncGenerator[str | Draft, None]:
        """One try: yields text pieces as they arrive, then the finished ``Draft``.

        Every failure leaves as a ``ProviderError`` with its key-free message; the httpx
        exception, if any, is its ``__cause__``.
        """
        key = self._key.reveal() if self._key else None
        url = self.wire.url(self.base_url)
        headers = self.wire.headers(key)
        body = self.wire.body(request, self.model, stream=self.streaming)
        if self.streaming:
            headers["Accept"] = "text/event-stream"
        probe.start()
        finished = False
        try:
            async with self._http().stream("POST", url, json=body, headers=headers) as response:
                probe.responded = True
                if response.status_code >= 400:
                    await response.aread()
                    raise self._http_error(response)
                if is_event_stream(response):  # whatever we asked for, read what came
                    decoder = probe.decoder = self.wire.decoder()
                    try:
                        async for event in aiter_events(response):
                            pieces = decoder.feed(event)
                            if decoder.saw_output:
                                probe.output()
                            for piece in pieces:
                                yield piece
                    except httpx.HTTPError:
                        # A connection that fails after the terminal event lost nothing.
                        if not decoder.finished:
                            raise
                    finished = True
                    yield decoder.close()
                else:  # a non-streaming request, or a server that ignored ``stream: true``
                    raw = await response.aread()
                    draft = self.wire.decode_body(load_json(raw.decode(errors="replace"), "body"))
                    probe.output()
                    finished = True
                    if draft.text:
                        yield draft.text
                    yield draft
        except ProviderError as error:
            error.message = self._redact(error.message)
            error.args = (error.message,)
            raise
        except httpx.HTTPError as exc:
            if finished:  # closing the response after everything was decoded
                return
            kind = classify_exception(exc)
            raise ProviderError(kind, self._redact(describe_exception(exc))) from exc

    def _http_error(self, response: httpx.Response) -> ProviderError:
        tag, message = body_detail(response.text)
        kind = classify(response.status_code, tag, message)
        message = message or response.reason_phrase or "request failed"
        if response.status_code == 404:  # a wrong base URL or an unknown model, most often
            message += f" (POST {response.request.url}: check the base URL and the model name)"
        return ProviderError(
            kind,
            self._redact(message),
            status=response.status_code,
            retry_after=parse_retry_after(response.headers),
        )

    def _redact(self, text: str) -> str:
        return self._key.redact(text) if self._key else text


def extra_headers(headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """Headers in the hashable form the frozen wire dataclasses hold."""
    return tuple((headers or {}).items())
