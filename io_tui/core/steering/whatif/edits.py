"""What a "what if" changes in one recorded request: entries restored, dropped or edited, the
memory block replaced. Pure: recorded messages in, changed messages out.

The request is read as it was recorded (its messages as sent, its manifest saying what state
each call's result was in), never rebuilt by the context engine. Restoring a call's result
puts back what a ``full`` entry carries, the tool's output as it entered the run: in place of
its stub when the request has its message, else as the step's turn with that call and its
result, where that step falls among the request's messages (a dropped, collapsed or folded
step). Dropping takes a call and its result out (a call never travels without its result).
Editing replaces a result's text. The memory block is replaced whole, or added after the frame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.text.heads import MEMORY_HEADER


class EditError(ValueError):
    """An edit that does not apply to this request: one line saying why."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """One call of the run as recorded: its step, the call, the step's text, its result as it
    entered the run (what a ``full`` entry carries)."""

    step: int
    call: ToolCall
    step_text: str
    result: str


@dataclass(frozen=True, slots=True)
class Variant:
    """One set of changes to a recorded request; ``name`` labels it beside the others."""

    name: str = "edited"
    restore: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    edit: Mapping[str, str] = field(default_factory=dict)
    memory: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.restore or self.drop or self.edit or self.memory is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "restore": list(self.restore),
            "drop": list(self.drop),
            "edit": dict(self.edit),
            "memory": self.memory,
        }


AS_RECORDED = Variant("as recorded")


def apply_variant(
    messages: Sequence[Message],
    entries: Sequence[Mapping[str, Any]],
    variant: Variant,
    recorded: Mapping[str, Recorded],
    stable_messages: int,
) -> tuple[tuple[Message, ...], list[dict[str, Any]]]:
    """``messages`` with ``variant``'s changes, and each change as it was made (what it was
    before, what it is now), for the probe's record. ``entries``: the request's manifest
    entries (each call's state and step); ``recorded``: the calls ``variant`` names."""
    out = list(messages)
    changes: list[dict[str, Any]] = []
    states = {str(e["call_id"]): str(e.get("state")) for e in entries if e.get("call_id")}
    steps = {str(e["call_id"]): int(e.get("step") or 0) for e in entries if e.get("call_id")}
    steps |= {call_id: r.step for call_id, r in recorded.items()}
    for call_id in variant.drop:
        changes.append(_drop(out, call_id, states))
    edits = dict(variant.edit)
    for call_id in dict.fromkeys([*variant.restore, *edits]):
        if call_id in variant.drop:
            raise EditError(f"call {call_id} is both dropped and restored or edited")
        if call_id not in recorded:
            raise EditError(f"call {call_id} is not a call of this run")
        text = edits.get(call_id)
        changes.append(_restore(out, recorded[call_id], text, states.get(call_id), steps))
    if variant.memory is not None:
        changes.append(_memory(out, variant.memory, stable_messages))
    return tuple(out), changes


def _tool_index(messages: Sequence[Message], call_id: str) -> int | None:
    return next(
        (i for i, m in enumerate(messages) if m.role == "tool" and m.tool_call_id == call_id),
        None,
    )


def _drop(out: list[Message], call_id: str, states: Mapping[str, str]) -> dict[str, Any]:
    index = _tool_index(out, call_id)
    if index is None:
        state = states.get(call_id)
        why = f"its result is {state} there" if state else "it has no such call"
        raise EditError(f"call {call_id} is not in this request to drop: {why}")
    before = out.pop(index).content
    for i, message in enumerate(out):
        if message.role == "assistant" and any(c.id == call_id for c in message.tool_calls):
            calls = tuple(c for c in message.tool_calls if c.id != call_id)
            if calls or message.content.strip():
                out[i] = Message("assistant", message.content, calls)
            else:
                del out[i]
            break
    return {"op": "drop", "call_id": call_id, "was": states.get(call_id), "chars": len(before)}


def _restore(
    out: list[Message],
    call: Recorded,
    text: str | None,
    state: str | None,
    steps: Mapping[str, int],
) -> dict[str, Any]:
    content = call.result if text is None else text
    change: dict[str, Any] = {
        "op": "restore" if text is None else "edit",
        "call_id": call.call.id,
        "was": state or "not in the request",
        "chars": len(content),
    }
    index = _tool_index(out, call.call.id)
    if index is not None:
        change["chars_before"] = len(out[index].content)
        out[index] = Message("tool", content, tool_call_id=call.call.id)
        return change
    result = Message("tool", content, tool_call_id=call.call.id)
    at = _place_of(out, call.step, steps)
    turn = _turn_before(out, at, call.step, steps)
    if turn is None:  # the step's turn, with this call, then its result
        out[at:at] = [Message("assistant", call.step_text, (call.call,)), result]
    else:  # a call of the same step restored just before: one turn, its results after it
        previous = out[turn]
        out[turn] = Message("assistant", previous.content, (*previous.tool_calls, call.call))
        out.insert(at, result)
    change["chars_before"], change["inserted_at"] = 0, at
    return change


def _step_of(message: Message, steps: Mapping[str, int]) -> int | None:
    if message.role == "tool":
        return steps.get(message.tool_call_id or "")
    if message.role == "assistant":
        found = [steps[c.id] for c in message.tool_calls if c.id in steps]
        return found[0] if found else None
    return None


def _place_of(out: Sequence[Message], step: int, steps: Mapping[str, int]) -> int:
    """Where step ``step``'s turn goes: before the first message of a later step (the frame,
    memory, summary and collapse line come before every step), else at the end."""
    for i, message in enumerate(out):
        found = _step_of(message, steps)
        if found is not None and found > step:
            return i
    return len(out)


def _turn_before(
    out: Sequence[Message], at: int, step: int, steps: Mapping[str, int]
) -> int | None:
    """The index of step ``step``'s turn right before ``at`` (only its results between), if
    one is there."""
    i = at - 1
    while i >= 0 and out[i].role == "tool":
        i -= 1
    if i >= 0 and out[i].role == "assistant" and _step_of(out[i], steps) == step:
        return i
    return None


def memory_block(messages: Sequence[Message]) -> str | None:
    """The memory block a request carries (None: none)."""
    index = _memory_index(messages)
    return None if index is None else messages[index].content


def _memory_index(messages: Sequence[Message]) -> int | None:
    return next(
        (
            i
            for i, m in enumerate(messages)
            if m.role == "user" and m.content.startswith(MEMORY_HEADER)
        ),
        None,
    )


def _memory(out: list[Message], text: str, stable_messages: int) -> dict[str, Any]:
    """The memory block replaced by ``text`` (added after the frame when there is none)."""
    index = _memory_index(out)
    if index is None:
        out.insert(stable_messages, Message("user", text))
        return {"op": "memory", "was": "no memory block", "chars": len(text)}
    before = out[index].content
    out[index] = Message("user", text)
    return {"op": "memory", "was": "the recorded block", "chars_before": len(before),
            "chars": len(text)}  # fmt: skip
