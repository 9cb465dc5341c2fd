"""The Anthropic Messages wire (``POST {host}/v1/messages``).

Differences from Chat Completions that this module absorbs: the system prompt is a top-level
field; a tool call is a ``tool_use`` content block and its result a ``tool_result`` block inside
a *user* message, so consecutive results (and any user text after them) merge into one user
turn; usage arrives in two halves (``message_start`` and ``message_delta``) that are merged; and
``input_tokens`` excludes cached tokens, so ``Usage.prompt_tokens`` adds them back to mean the
whole prompt, as it does for OpenAI.

Prompt caching is explicit here: a working request carries ``cache_control`` breakpoints — after
the tools and system prompt (the prefix's first part, in the API's order tools → system →
messages), and on the messages ``CompletionRequest.cache_breakpoints`` names (by default the
last one, so the next request reads everything this one sent) — at most four in all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from io_tui.core.providers.base import CompletionRequest, ProviderError, Usage
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

API_VERSION = "2023-06-01"
EPHEMERAL = {"type": "ephemeral"}  # a 5-minute cache entry: write 1.25×, read 0.1×
MAX_BREAKPOINTS = 4  # the API refuses more cache_control blocks per request


def _blocks_of(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:  # the API refuses empty text blocks
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls if message.role == "assistant" else ():
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


def encode_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    """The top-level system prompt and the alternating user/assistant turns."""
    system, turns, _ = _encode(messages)
    return system, turns


def _encode(
    messages: tuple[Message, ...],
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any] | None]]:
    """As ``encode_messages``, plus each message's last content block (None for a message that
    became none: a system message, an empty one)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[dict[str, Any]] = []
    last_blocks: list[dict[str, Any] | None] = []
    for message in messages:
        blocks = [] if message.role == "system" else _blocks_of(message)
        last_blocks.append(blocks[-1] if blocks else None)
        if not blocks:
            continue
        role = "assistant" if message.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns, last_blocks


def mark_breakpoints(request: CompletionRequest, last_blocks: list[dict[str, Any] | None]) -> None:
    """``cache_control`` on the last block of each breakpoint message (the last three of them;
    the system prompt takes the fourth). A message with no block of its own marks the nearest
    earlier one that has."""
    wanted = request.cache_breakpoints or (len(last_blocks) - 1,)
    marked: list[dict[str, Any]] = []
    for index in sorted({i for i in wanted if 0 <= i < len(last_blocks)}):
        block = next((b for b in reversed(last_blocks[: index + 1]) if b is not None), None)
        if block is not None and all(block is not m for m in marked):
            marked.append(block)
    for block in marked[-(MAX_BREAKPOINTS - 1) :]:
        block["cache_control"] = EPHEMERAL


def _raise_error(payload: Any) -> None:
    tag, message = error_detail(payload)
    raise ProviderError(classify(None, tag, message), message or "error event in stream")


@dataclass(slots=True)
class _UsageParts:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    seen: bool = False
    cache_seen: bool = False

    def merge(self, raw: Any) -> None:
        """Later reports override earlier ones field by field (message_delta is cumulative)."""
        if not isinstance(raw, dict):
            return
        self.seen = True
        if "input_tokens" in raw and raw["input_tokens"] is not None:
            self.input = as_int(raw["input_tokens"])
        if "output_tokens" in raw and raw["output_tokens"] is not None:
            self.output = as_int(raw["output_tokens"])
        if raw.get("cache_read_input_tokens") is not None:
            self.cache_read = as_int(raw["cache_read_input_tokens"])
            self.cache_seen = True
        if raw.get("cache_creation_input_tokens") is not None:
            self.cache_write = as_int(raw["cache_creation_input_tokens"])
            self.cache_seen = True

    def freeze(self) -> Usage | None:
        if not self.seen:
            return None
        return Usage(
            prompt_tokens=self.input + self.cache_read + self.cache_write,
            completion_tokens=self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
            cache_reported=self.cache_seen,
        )


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)
    initial_input: Any = None


def _tool_call(block: _Block) -> ToolCall:
    raw = "".join(block.json_parts)
    if raw.strip():
        arguments, error = parse_arguments(raw)
    elif isinstance(block.initial_input, dict):
        arguments, error = block.initial_input, None
    elif block.initial_input is None:
        arguments, error = {}, None
    else:
        kind = type(block.initial_input).__name__
        arguments, error = {}, f"arguments must be a JSON object, not {kind}"
    return ToolCall(id=block.id, name=block.name, arguments=arguments, arguments_error=error)


class MessagesStreamDecoder:
    """Accumulates a Messages stream: text deltas in order, tool input JSON per content block."""

    def __init__(self) -> None:
        self.saw_output = False
        self.finished = False
        self._text: list[str] = []
        self._blocks: dict[int, _Block] = {}
        self._usage = _UsageParts()
        self._stop: str | None = None
        self._model = ""

    def feed(self, event: ServerSentEvent) -> list[str]:
        if self.finished or not event.data.strip():
            return []
        payload = load_json(event.data, f"{event.event} event")
        if not isinstance(payload, dict):
            raise malformed(f"{event.event} event is not an object")
        kind = payload.get("type") or event.event
        out: list[str] = []
        if kind == "error":
            _raise_error(payload)
        elif kind == "message_start":
            message = payload.get("message") or {}
            if isinstance(message, dict):
                self._model = str(message.get("model") or "")
                self._usage.merge(message.get("usage"))
        elif kind == "content_block_start":
            out = self._start_block(payload)
        elif kind == "content_block_delta":
            out = self._delta(payload)
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self._stop = str(delta["stop_reason"])
            self._usage.merge(payload.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        # ping, content_block_stop and types added later carry nothing we need.
        self._text.extend(out)
        return out

    def _start_block(self, payload: dict[str, Any]) -> list[str]:
        block = payload.get("content_block")
        index = payload.get("index")
        if not isinstance(block, dict) or not isinstance(index, int):
            raise malformed("content_block_start without a block or index")
        kind = str(block.get("type") or "")
        self._blocks[index] = _Block(
            kind=kind,
            id=str(block.get("id") or ""),
            name=str(block.get("name") or ""),
            initial_input=block.get("input"),
        )
        if kind == "tool_use":
            self.saw_output = True
        text = block.get("text") if kind == "text" else None
        if isinstance(text, str) and text:
            self.saw_output = True
            return [text]
        return []

    def _delta(self, payload: dict[str, Any]) -> list[str]:
        delta = payload.get("delta")
        index = payload.get("index")
        if not isinstance(delta, dict) or not isinstance(index, int):
            raise malformed("content_block_delta without a delta or index")
        block = self._blocks.get(index)
        if block is None:
            raise malformed(f"content_block_delta for unknown block {index}")
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
            self.saw_output = True
            return [delta["text"]]
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self.saw_output = True
            block.json_parts.append(delta["partial_json"])
        # thinking, signature and citation deltas are not part of the answer text.
        return []

    def partial(self) -> Fragments:
        return Fragments(
            text="".join(self._text),
            tool_calls=tuple(
                {"id": b.id, "name": b.name, "arguments": "".join(b.json_parts)}
                for _, b in sorted(self._blocks.items())
                if b.kind == "tool_use"
            ),
        )

    def close(self) -> Draft:
        if not self.finished and self._stop is None:
            raise malformed("stream ended before the response was complete (no stop_reason)")
        calls = [_tool_call(b) for _, b in sorted(self._blocks.items()) if b.kind == "tool_use"]
        return Draft(
            text="".join(self._text),
            tool_calls=calls,
            usage=self._usage.freeze(),
            finish_reason=self._stop,
            model=self._model,
        )


@dataclass(frozen=True, slots=True)
class AnthropicWire:
    """Messages at ``{base_url}/v1/messages``; ``base_url`` is the host root."""

    version: str = API_VERSION
    extra_headers: tuple[tuple[str, str], ...] = ()
    name: str = "anthropic"

    def url(self, base_url: str) -> str:
        # The base URL is the host root; forgive one that already ends in /v1.
        return base_url.rstrip("/").removesuffix("/v1") + "/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = dict(self.extra_headers)
        headers["anthropic-version"] = self.version
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def body(self, request: CompletionRequest, model: str, *, stream: bool) -> dict[str, Any]:
        system, messages, last_blocks = _encode(request.messages)
        cache = request.cached
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": output_limit(request),
            "messages": messages,
            "stream": stream,
        }
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            body["system"] = [block | {"cache_control": EPHEMERAL}] if cache else system
        elif cache and request.tools:  # the prefix is tools, then system: end it at the tools
            body["tools"][-1]["cache_control"] = EPHEMERAL
        if cache:
            mark_breakpoints(request, last_blocks)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def decoder(self) -> MessagesStreamDecoder:
        return MessagesStreamDecoder()

    def decode_body(self, payload: Any) -> Draft:
        if not isinstance(payload, dict):
            raise malformed("response body is not a JSON object")
        if payload.get("type") == "error":
            _raise_error(payload)
        content = payload.get("content")
        if not isinstance(content, list):
            raise malformed("response body has no content list")
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                text.append(block["text"])
            elif block.get("type") == "tool_use":
                calls.append(
                    _tool_call(
                        _Block(
                            kind="tool_use",
                            id=str(block.get("id") or ""),
                            name=str(block.get("name") or ""),
                            initial_input=block.get("input"),
                        )
                    )
                )
        usage = _UsageParts()
        usage.merge(payload.get("usage"))
        stop = payload.get("stop_reason")
        return Draft(
            text="".join(text),
            tool_calls=calls,
            usage=usage.freeze(),
            finish_reason=str(stop) if stop else None,
            model=str(payload.get("model") or ""),
        )


class AnthropicProvider(HttpProvider):
    """Messages over HTTP. ``base_url`` is the host root; options as ``HttpProvider``."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.anthropic.com",
        name: str = "anthropic",
        version: str = API_VERSION,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        wire = AnthropicWire(version=version, extra_headers=extra_headers(headers))
        super().__init__(wire=wire, model=model, base_url=base_url, name=name, **options)
