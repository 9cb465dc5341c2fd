"""The OpenAI Chat Completions wire, spoken by OpenAI and every compatible server.

Ollama, llama.cpp, vLLM, LM Studio and OpenRouter all accept this format, each with small
deviations this module tolerates: ids and names repeated in every tool-call fragment, fragments
without an ``index``, arguments sent as an object instead of a string, a stream that ends after
``finish_reason`` without usage or ``[DONE]``, an error object in the middle of a stream.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from io_tui.core.providers.base import CompletionRequest, ProviderError, ToolSpec, Usage
from io_tui.core.providers.errors import classify, error_detail
from io_tui.core.providers.http_provider import HttpProvider, extra_headers
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.providers.sse import ServerSentEvent
from io_tui.core.providers.wire import (
    Draft,
    Fragments,
    as_int,
    load_json,
    malformed,
    output_limit,
    parse_arguments,
)

PROPS_TIMEOUT_S = 5.0  # llama.cpp answers /props at once; a server that does not is not one


def encode_message(message: Message) -> dict[str, Any]:
    """One message in OpenAI's shape.

    An assistant turn that only calls tools carries ``content: ""`` rather than null: OpenAI
    accepts both, and some compatible servers reject null.
    """
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return out


def encode_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def decode_usage(raw: Any, timings: Any = None) -> Usage | None:
    """Usage from a chunk or body; cached tokens are a subset of ``prompt_tokens``.

    OpenAI (and vLLM, OpenRouter) report them as ``prompt_tokens_details.cached_tokens``.
    llama.cpp's server reports the prompt prefix its slot reused as ``timings.cache_n`` (beside
    ``prompt_n``, the tokens it evaluated); newer builds also fill ``cached_tokens``, which wins
    when present. A body with timings but no usage still yields the prompt's size.
    """
    timed = timings if isinstance(timings, dict) else {}
    reused = as_int(timed.get("cache_n"))
    if not isinstance(raw, dict):
        if "cache_n" not in timed and "prompt_n" not in timed:
            return None
        return Usage(
            prompt_tokens=reused + as_int(timed.get("prompt_n")),
            completion_tokens=as_int(timed.get("predicted_n")),
            cache_read_tokens=reused,
            cache_reported="cache_n" in timed,
        )
    details = raw.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        cached, reported = as_int(details["cached_tokens"]), True
    else:
        cached, reported = reused, "cache_n" in timed
    return Usage(
        prompt_tokens=as_int(raw.get("prompt_tokens")),
        completion_tokens=as_int(raw.get("completion_tokens")),
        cache_read_tokens=cached,
        cache_reported=reported,
    )


def _tool_call(call_id: str, name: str, raw_arguments: Any, position: int) -> ToolCall:
    if isinstance(raw_arguments, dict):  # some servers send the object itself
        arguments, error = raw_arguments, None
    else:
        arguments, error = parse_arguments(raw_arguments if isinstance(raw_arguments, str) else "")
    return ToolCall(
        id=call_id or f"call_{position}",
        name=name,
        arguments=arguments,
        arguments_error=error,
    )


def _raise_error_object(payload: dict[str, Any]) -> None:
    """A mid-stream ``{"error": ...}`` chunk (OpenRouter, vLLM) becomes a classified error."""
    tag, message = error_detail(payload)
    raise ProviderError(classify(None, tag, message), message or "error event in stream")


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    whole: dict[str, Any] | None = None


class ChatStreamDecoder:
    """Accumulates a Chat Completions stream: text in order, tool calls per ``index``."""

    def __init__(self) -> None:
        self.saw_output = False
        self.finished = False
        self._text: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self._usage: Usage | None = None
        self._finish: str | None = None
        self._model = ""

    def feed(self, event: ServerSentEvent) -> list[str]:
        data = event.data.strip()
        if self.finished or not data:
            return []
        if data == "[DONE]":
            self.finished = True
            return []
        chunk = load_json(data, "stream chunk")
        if not isinstance(chunk, dict):
            raise malformed(f"stream chunk is not an object: {data[:120]!r}")
        if chunk.get("error") is not None or event.event == "error":
            _raise_error_object(chunk)
        if isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        usage = decode_usage(chunk.get("usage"), chunk.get("timings"))
        if usage is not None:
            self._usage = usage
        out: list[str] = []
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise malformed("stream chunk has a non-list 'choices'")
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # we ask for one choice; ignore any others
            out.extend(self._feed_delta(choice.get("delta") or {}))
            if choice.get("finish_reason"):
                self._finish = str(choice["finish_reason"])
        self._text.extend(out)
        return out

    def _feed_delta(self, delta: Any) -> list[str]:
        if not isinstance(delta, dict):
            raise malformed("stream chunk has a non-object 'delta'")
        out: list[str] = []
        # A refusal is the model's answer in a separate field; it reads as text to the user.
        for key in ("content", "refusal"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                out.append(piece)
        for position, raw in enumerate(delta.get("tool_calls") or []):
            if isinstance(raw, dict):
                self._feed_tool_fragment(raw, position)
        if out or delta.get("tool_calls"):
            self.saw_output = True
        return out

    def _feed_tool_fragment(self, raw: dict[str, Any], position: int) -> None:
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else ""
        index = raw.get("index")
        if not isinstance(index, int):
            # No index: a fragment continues the call with its id, or the last one; else new.
            index = next((i for i, c in self._calls.items() if call_id and c.id == call_id), -1)
            if index < 0:
                index = len(self._calls) if call_id or not self._calls else max(self._calls)
        pending = self._calls.setdefault(index, _PendingCall())
        # Ids and names are set, never concatenated: some servers repeat them in every fragment.
        if call_id:
            pending.id = call_id
        function = raw.get("function") or {}
        if isinstance(function, dict):
            if isinstance(function.get("name"), str) and function["name"]:
                pending.name = function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                pending.arguments.append(arguments)
            elif isinstance(arguments, dict):
                pending.whole = arguments

    def partial(self) -> Fragments:
        return Fragments(
            text="".join(self._text),
            tool_calls=tuple(
                {
                    "id": p.id,
                    "name": p.name,
                    "arguments": json.dumps(p.whole) if p.whole else "".join(p.arguments),
                }
                for _, p in sorted(self._calls.items())
            ),
        )

    def close(self) -> Draft:
        if not self.finished and self._finish is None:
            raise malformed("stream ended before the response was complete (no finish_reason)")
        calls = [
            _tool_call(p.id, p.name, p.whole if p.whole is not None else "".join(p.arguments), i)
            for i, p in sorted(self._calls.items())
        ]
        return Draft(
            text="".join(self._text),
            tool_calls=calls,
            usage=self._usage,
            finish_reason=self._finish,
            model=self._model,
        )


@dataclass(frozen=True, slots=True)
class OpenAIChatWire:
    """Chat Completions at ``{base_url}/chat/completions``; ``base_url`` ends in ``/v1``."""

    max_tokens_field: str = "max_tokens"
    include_usage: bool = True
    extra_headers: tuple[tuple[str, str], ...] = ()
    name: str = "openai"
    send_cache_key: bool = False  # OpenAI's prompt_cache_key; other servers may refuse it

    def url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = dict(self.extra_headers)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        return headers

    def body(self, request: CompletionRequest, model: str, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": [encode_message(m) for m in request.messages],
            self.max_tokens_field: output_limit(request),
            "stream": stream,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = [encode_tool(t) for t in request.tools]
        if stream and self.include_usage:
            body["stream_options"] = {"include_usage": True}
        if self.send_cache_key and request.cache_key and request.cached:
            body["prompt_cache_key"] = request.cache_key
        return body

    def decoder(self) -> ChatStreamDecoder:
        return ChatStreamDecoder()

    def decode_body(self, payload: Any) -> Draft:
        if not isinstance(payload, dict):
            raise malformed("response body is not a JSON object")
        if payload.get("error") is not None:
            _raise_error_object(payload)
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed("response body has no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise malformed("response choice has no message")
        text = "".join(
            part
            for part in (message.get("content"), message.get("refusal"))
            if isinstance(part, str)
        )
        calls = []
        for position, raw in enumerate(message.get("tool_calls") or []):
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict):
                raise malformed("tool call without a function")
            calls.append(
                _tool_call(
                    str(raw.get("id") or ""),
                    str(function.get("name") or ""),
                    function.get("arguments"),
                    position,
                )
            )
        finish = choices[0].get("finish_reason")
        return Draft(
            text=text,
            tool_calls=calls,
            usage=decode_usage(payload.get("usage"), payload.get("timings")),
            finish_reason=str(finish) if finish else None,
            model=str(payload.get("model") or ""),
        )


class OpenAICompatProvider(HttpProvider):
    """Chat Completions over HTTP. ``base_url`` ends in ``/v1``; options as ``HttpProvider``."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        name: str = "openai-compatible",
        max_tokens_field: str = "max_tokens",
        include_usage: bool = True,
        send_cache_key: bool = False,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        wire = OpenAIChatWire(
            max_tokens_field=max_tokens_field,
            include_usage=include_usage,
            extra_headers=extra_headers(headers),
            send_cache_key=send_cache_key,
        )
        super().__init__(wire=wire, model=model, base_url=base_url, name=name, **options)
        # discover_window asks only a llama.cpp server or one on this machine: a hosted API has
        # no /props, and the request (with the key) is not sent to it for nothing
        self._props_asked = not (name == "llamacpp" or is_local(base_url))
        # whether the server's chat template renders tool schemas (llama.cpp's /props says);
        # None: not known
        self.tools_supported: bool | None = None

    async def discover_window(self) -> None:
        """What the server says of itself, once: llama.cpp's ``GET /props`` gives its ``n_ctx``
        (per slot), taken as the model's window when no setting or preset gave one, and whether
        its chat template renders tool schemas (``chat_template_caps.supports_tools``: a
        template without tools drops them, and the model never sees them). Asked only of the
        ``llamacpp`` preset's server or an endpoint on a loopback address; any failure leaves
        both unknown (other servers answer 404), and never fails the run."""
        if self._props_asked:
            return
        self._props_asked = True
        key = self._key.reveal() if self._key else None
        try:
            response = await self._http().get(
                props_url(self.base_url), headers=self.wire.headers(key), timeout=PROPS_TIMEOUT_S
            )
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return
        self.tools_supported = props_tools(data)
        if self.window_tokens is None:
            self.window_tokens = props_window(data)
            self.window_source = "server" if self.window_tokens is not None else None


def is_local(base_url: str) -> bool:
    """Whether ``base_url``'s host is this machine (``localhost``, ``127.x``, ``::1``)."""
    host = (httpx.URL(base_url).host or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def props_url(base_url: str) -> str:
    """llama.cpp's ``/props``, beside its ``/v1`` API."""
    root = base_url.rstrip("/")
    return (root[: -len("/v1")] if root.endswith("/v1") else root) + "/props"


def props_window(data: Any) -> int | None:
    """``n_ctx`` from a ``/props`` answer (``default_generation_settings.n_ctx`` in llama.cpp's
    server, or at the top level); None when it is not one."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    n_ctx = n_ctx if n_ctx is not None else data.get("n_ctx")
    return n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None


def props_tools(data: Any) -> bool | None:
    """Whether a ``/props`` answer's chat template renders tool schemas
    (``chat_template_caps.supports_tools``); None when it does not say."""
    caps = data.get("chat_template_caps") if isinstance(data, dict) else None
    supports = caps.get("supports_tools") if isinstance(caps, dict) else None
    return supports if isinstance(supports, bool) else None
