"""What a request's record says, as span attributes: its usage after the GenAI semantic
conventions, its context manifest's summary and its cost under ``io_tui.``, and (only when
content capture is on) its messages in the conventions' ``gen_ai.input.messages`` shape.

Why apart from the spans: these are plain data in, plain attributes out, with no OpenTelemetry
import, so they are tested alone; and every text they export goes through the same redaction
tool results get before the model or the trace sees them (``untrusted.redact``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from io_tui.core.boundary.untrusted import redact

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[int] | Sequence[float]
# the entry states that send no content of their own (``context.manifest.STUB_STATES``),
# named here as data: the manifest is read back as stored, whatever version wrote it
_STUBS = frozenset(
    {"superseded", "dropped", "refresh_failed", "elided", "collapsed", "stubbed", "summary"}
)
_COST_KEYS = ("cost", "naive_cost", "run_cost", "run_naive_cost", "ratio", "source")


def usage_attributes(usage: Mapping[str, Any] | None) -> dict[str, AttributeValue]:
    if not usage:
        return {}
    out: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
        "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0),
    }
    if usage.get("cache_reported") or usage.get("cache_read_tokens"):
        out["gen_ai.usage.cache_read.input_tokens"] = int(usage.get("cache_read_tokens") or 0)
    if usage.get("cache_reported") or usage.get("cache_write_tokens"):
        out["gen_ai.usage.cache_creation.input_tokens"] = int(usage.get("cache_write_tokens") or 0)
    return out


def manifest_head(manifest: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A stored manifest's head and entries (empty for none, or one that does not parse)."""
    if not manifest:
        return {}, []
    try:
        data = json.loads(manifest)
    except ValueError:
        return {}, []
    if not isinstance(data, dict):
        return {}, []
    entries = data.get("entries")
    return data, [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def manifest_cost(manifest: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The request's and run's cost with caching against naive re-sending, as the context
    engine records it in the manifest's ``cost`` (None where it records none)."""
    head = manifest if isinstance(manifest, Mapping) else manifest_head(manifest)[0]
    cost = head.get("cost")
    return cost if isinstance(cost, dict) else None


def manifest_attributes(manifest: str | None) -> dict[str, AttributeValue]:
    """The manifest in a few numbers: entries full, stubbed, corrected and dropped, tokens per
    state, the prefix rewrite and its cause, and the request's and run's cost with caching
    beside naive re-sending, where the manifest records them."""
    head, entries = manifest_head(manifest)
    if not head:
        return {}
    states = Counter(str(e.get("state", "")) for e in entries)
    tokens: Counter[str] = Counter()
    for entry in entries:
        tokens[str(entry.get("state", ""))] += int(entry.get("est_tokens") or 0)
    out: dict[str, AttributeValue] = {
        "io_tui.manifest.entries": len(entries),
        "io_tui.manifest.full": states["full"] + states["capped"] + states["echoed"],
        "io_tui.manifest.stubbed": sum(n for s, n in states.items() if s in _STUBS),
        "io_tui.manifest.corrected": states["corrected"],
        "io_tui.manifest.dropped": states["dropped"],
    }
    for state, count in sorted(tokens.items()):
        if state:
            out[f"io_tui.manifest.tokens.{state}"] = count
    rung = head.get("rung")
    if isinstance(rung, str | int):
        out["io_tui.manifest.rung"] = rung
    rewrite = head.get("rewrite")
    out["io_tui.prefix.rewritten"] = isinstance(rewrite, dict)
    if isinstance(rewrite, dict):
        out["io_tui.prefix.rewrite.cause"] = str(rewrite.get("cause", ""))
        for key in ("kept_messages", "rewritten_tokens", "saved_tokens", "horizon"):
            if isinstance(rewrite.get(key), int | float):
                out[f"io_tui.prefix.rewrite.{key}"] = rewrite[key]
    cost = head.get("cost")
    if isinstance(cost, dict):
        for key in _COST_KEYS:
            value = cost.get(key)
            if isinstance(value, int | float | str) and not isinstance(value, bool):
                out[f"io_tui.cost.{key}"] = value
    return out


def input_messages(messages_json: str | None) -> tuple[str, str]:
    """A request's messages as stored, redacted, in the conventions' shape: the system
    instructions (``gen_ai.system_instructions``) and the rest (``gen_ai.input.messages``),
    each as JSON text."""
    try:
        messages = json.loads(messages_json or "[]")
    except ValueError:
        messages = []
    system: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "system":
            system.append({"type": "text", "content": redact(str(message.get("content", "")))})
        else:
            rest.append(_message(message))
    return json.dumps(system), json.dumps(rest)


def output_messages(text: str, calls: Sequence[tuple[str, str, Any]], finish: str | None) -> str:
    """The model's answer (text and tool calls ``(id, name, arguments)``), redacted, as
    ``gen_ai.output.messages``."""
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "content": redact(text)})
    for call_id, name, arguments in calls:
        parts.append(
            {"type": "tool_call", "id": call_id, "name": name, "arguments": _redacted(arguments)}
        )
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": finish or "stop"}])


def redacted_json(value: Any) -> str:
    return json.dumps(_redacted(value))


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = str(message.get("role", "user"))
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if role == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": message.get("tool_call_id"),
                "response": redact(str(content or "")),
            }
        )
    elif content:
        parts.append({"type": "text", "content": redact(str(content))})
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": _redacted(call.get("arguments")),
                }
            )
    return {"role": role, "parts": parts}


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {str(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    return value
