"""A step's turn as a request carries it: clipped to a limit, priced, and cached between builds.

A turn in the window keeps its text and arguments up to the entry cap; a turn out of the window
(whose results became stubs) keeps ``COMPACT_CHARS`` of each.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import StepRecord
from io_tui.core.providers.base import Message, ToolCall

COMPACT_CHARS = 160  # what an out-of-window turn keeps of its text and of each long argument
NO_RESULT = "[no result was recorded for this call]"
_NO_RESULT_TOKENS = estimate_tokens(NO_RESULT)
_encode_json = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps builds one per call


def _call_tokens(call: ToolCall) -> int:
    return estimate_tokens(call.name) + estimate_tokens(_encode_json(call.arguments))


def message_tokens(message: Message) -> int:
    """The estimate the ceiling is enforced with: content plus each call's name and arguments."""
    return estimate_tokens(message.content) + sum(_call_tokens(c) for c in message.tool_calls)


def clip(text: str, limit: int) -> str:
    """``text`` held to ``limit`` chars, saying how much more the trace holds."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more chars, in the trace]"


def _clip_value(value: Any, limit: int) -> Any:
    """``value`` with every string held to ``limit``; the same object when nothing was long."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, dict):
        copy: dict[Any, Any] | None = None  # made only when something was long: rarely
        for k, v in value.items():
            held = _clip_value(v, limit)
            if held is not v:
                copy = dict(value) if copy is None else copy
                copy[k] = held
        return value if copy is None else copy
    if isinstance(value, list):
        items = [_clip_value(v, limit) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _clip_call(call: ToolCall, limit: int) -> ToolCall:
    arguments = _clip_value(call.arguments, limit)
    if arguments is call.arguments:
        return call
    return ToolCall(call.id, call.name, arguments, call.arguments_error)


def _turn(record: StepRecord, limit: int) -> Message | None:
    """The model's turn with its text and arguments held to ``limit`` chars each."""
    if not record.text and not record.tool_calls:
        return None
    calls = tuple(_clip_call(c, limit) for c in record.tool_calls)
    return Message("assistant", clip(record.text, limit), calls)


class RenderedTurn(NamedTuple):
    """A step's turn and operator lines at one limit, and what they cost.

    Kept by the engine between builds (history is append-only, so a step renders the same until
    the ceiling changes). One full and one compact rendering per step: a changing ceiling
    replaces them, it never piles them up.
    """

    record: StepRecord
    limit: int
    turn: Message | None
    ops: tuple[Message, ...]
    cost: int  # turn, operator lines, and a placeholder result for each call that has none


TurnCache = dict[tuple[int, bool], RenderedTurn]


def render_turn(record: StepRecord, limit: int, cache: TurnCache) -> RenderedTurn:
    """``record`` rendered at ``limit``, from ``cache`` when it holds this rendering."""
    key = (record.step, limit == COMPACT_CHARS)
    hit = cache.get(key)
    if hit is not None and hit.record is record and hit.limit == limit:
        return hit
    turn = _turn(record, limit)
    ops = tuple(Message("user", clip(f"[operator] {m}", limit)) for m in record.operator_messages)
    answered = {o.call_id for o in record.observations}
    missing = sum(1 for c in record.tool_calls if c.id not in answered)
    cost = sum(message_tokens(m) for m in ops) + missing * _NO_RESULT_TOKENS
    rendered = RenderedTurn(record, limit, turn, ops, cost + (message_tokens(turn) if turn else 0))
    cache[key] = rendered
    return rendered
