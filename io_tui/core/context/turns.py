"""A step's turn as a request carries it: clipped to a limit, priced, and cached between builds.

A turn in the window keeps its text and arguments up to the entry cap; a turn out of the window
(whose results became stubs) keeps ``COMPACT_CHARS`` of each. A write whose file a later step
showed whole (``Step.written_over``) keeps none of what it wrote: each long argument of the
call is one line saying so (``superseded_argument``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from io_tui.core.ledger import StepRecord
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.text.heads import operator_line
from io_tui.core.tokens import estimate_tokens

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


def superseded_argument(chars: int, by: int) -> str:
    """What a written-over write's call keeps of a long argument (what it wrote)."""
    return f"[{chars:,} chars, superseded: step {by} showed the whole file; in the trace]"


def _clip_value(value: Any, limit: int, by: int | None = None) -> Any:
    """``value`` with every string held to ``limit`` (or, ``by`` given, every string longer
    than ``COMPACT_CHARS`` replaced by ``superseded_argument``); the same object when nothing
    was long."""
    if isinstance(value, str):
        if by is not None and len(value) > COMPACT_CHARS:
            return superseded_argument(len(value), by)
        return clip(value, limit)
    if isinstance(value, dict):
        copy: dict[Any, Any] | None = None  # made only when something was long: rarely
        for k, v in value.items():
            held = _clip_value(v, limit, by)
            if held is not v:
                copy = dict(value) if copy is None else copy
                copy[k] = held
        return value if copy is None else copy
    if isinstance(value, list):
        items = [_clip_value(v, limit, by) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _clip_call(call: ToolCall, limit: int, by: int | None = None) -> ToolCall:
    arguments = _clip_value(call.arguments, limit, by)
    if arguments is call.arguments:
        return call
    return ToolCall(call.id, call.name, arguments, call.arguments_error)


def _turn(record: StepRecord, limit: int, shown: Mapping[str, int]) -> Message | None:
    """The model's turn with its text and arguments held to ``limit`` chars each; the long
    arguments of the writes in ``shown`` (call id -> the later step that showed the file
    whole) superseded."""
    if not record.text and not record.tool_calls:
        return None
    calls = tuple(_clip_call(c, limit, shown.get(c.id)) for c in record.tool_calls)
    return Message("assistant", clip(record.text, limit), calls)


class RenderedTurn(NamedTuple):
    """A step's turn and operator lines at one limit, and what they cost.

    Kept by the engine between builds (history is append-only, so a step renders the same until
    the ceiling changes). One full and one compact rendering per step, and one with what it
    wrote superseded: a changing ceiling replaces them, it never piles them up.
    """

    record: StepRecord
    limit: int
    turn: Message | None
    ops: tuple[Message, ...]
    cost: int  # turn, operator lines, and a placeholder result for each call that has none


TurnCache = dict[tuple[int, bool, tuple[tuple[str, int], ...]], RenderedTurn]


def render_turn(
    record: StepRecord, limit: int, cache: TurnCache, shown: Mapping[str, int] | None = None
) -> RenderedTurn:
    """``record`` rendered at ``limit``, what the writes in ``shown`` wrote superseded (call id
    -> the later step that showed the file whole), from ``cache`` when it holds this
    rendering."""
    key = (record.step, limit == COMPACT_CHARS, tuple(sorted(shown.items())) if shown else ())
    hit = cache.get(key)
    if hit is not None and hit.record is record and hit.limit == limit:
        return hit
    turn = _turn(record, limit, shown or {})
    ops = tuple(Message("user", clip(operator_line(m), limit)) for m in record.operator_messages)
    answered = {o.call_id for o in record.observations}
    missing = sum(1 for c in record.tool_calls if c.id not in answered)
    cost = sum(message_tokens(m) for m in ops) + missing * _NO_RESULT_TOKENS
    rendered = RenderedTurn(record, limit, turn, ops, cost + (message_tokens(turn) if turn else 0))
    cache[key] = rendered
    return rendered
