"""Read-only views the screens rebuild from. Every function here is async (aiosqlite).

The SQL lives in the store's repos (``TraceRepo.steps_after`` and friends); this module shapes
the rows for the transcript. Following a live run costs three small queries per repaint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from io_tui import core  # its names load on first use: the main screen opens without tools

if TYPE_CHECKING:
    from io_tui.core import Store


@dataclass(frozen=True, slots=True)
class ToolBlock:
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str | None = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class StepData:
    """One step as the transcript shows it."""

    run_id: int
    step: int
    text: str
    tokens: int
    tools: list[ToolBlock] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (style class, line)
    operator_messages: list[str] = field(default_factory=list)


# the line under a step whose answer a cancel cut short (kept as far as it had streamed)
INTERRUPTED = ("ended", "■ interrupted: the run was cancelled while this answer streamed")

NOTE_KINDS = (
    "tool_refused",
    "approval_requested",
    "approval_reviewed",
    "approval_decided",
    "verify",
    "memory",
    "compacted",
    "invalidated",
    "rewound",
    "forked",
    "warning",
)


async def load_steps(
    store: Store, run_id: int, *, since: int = 0, limit: int | None = None
) -> list[StepData]:
    """Steps of ``run_id`` numbered above ``since`` (the newest ``limit`` of them)."""
    trace = store.trace
    rows = await trace.steps_after(run_id, since, limit=limit)
    if not rows:
        return []
    first = rows[0].step
    obs = await trace.observations(run_id, first)
    events = await trace.events(run_id, first, NOTE_KINDS)
    results = {o.call_id: (o.full_text, o.is_error) for o in obs}
    notes: dict[int, list[tuple[str, str]]] = {}
    for e in events:
        if e.kind == "invalidated" and e.detail.get("effect") == "deferred":
            continue  # the run's own new note: its memory write line says so (the trace keeps it)
        notes.setdefault(e.step, []).append(describe_event(e.kind, e.detail))
    out = []
    for row in rows:
        if row.decision.get("interrupted"):  # its answer, as far as it had streamed
            notes.setdefault(row.step, []).append(INTERRUPTED)
        tools = []
        for call in row.tool_calls:
            result, is_error = results.get(call.id, (None, False))
            tools.append(ToolBlock(call.id, call.name, call.arguments, result, is_error))
        out.append(
            StepData(
                run_id=run_id,
                step=row.step,
                text=row.text,
                tokens=row.tokens,
                tools=tools,
                notes=notes.get(row.step, []),
                operator_messages=list(row.operator_messages),
            )
        )
    return out


def describe_event(kind: str, detail: dict[str, Any]) -> tuple[str, str]:
    """A one-line, human description of an event worth showing inline in the transcript."""
    if kind == "tool_refused":
        return (
            "refused",
            f"✗ refused: {detail.get('act')} {detail.get('target')} — rule "
            f"'{detail.get('rule')}' in layer '{detail.get('layer')}'",
        )
    if kind == "approval_requested":
        return (
            "asking",
            f"? asked: {detail.get('act')} {detail.get('target')} (request "
            f"{detail.get('approval_id')}, rule '{detail.get('rule')}', layer "
            f"'{detail.get('layer')}')",
        )
    if kind == "approval_reviewed":  # an escalation still asks a human
        return (
            "asking" if detail.get("verdict") == "escalate" else "decided",
            f"⚖ reviewer {detail.get('reviewer')} on request {detail.get('approval_id')}:"
            f" {detail.get('verdict')} — {detail.get('reason')}",
        )
    if kind == "approval_decided":
        reason = f" — {detail['reason']}" if detail.get("reason") else ""
        return (
            "decided",
            f"! decision on request {detail.get('approval_id')}: {detail.get('decision')}{reason}",
        )
    if kind == "verify":
        verdict = "passed" if detail.get("passed") else "failed"
        return ("verify", f"✓ verify {verdict} (exit {detail.get('exit_code')})")
    if kind == "memory":
        raw = detail.get("keys") or detail.get("key") or ""
        keys = ", ".join(map(str, raw)) if isinstance(raw, list) else str(raw)
        action = detail.get("action") or detail.get("op") or "write"
        return ("memory", f"◆ memory {action}: {keys}")
    if kind == "invalidated":
        return ("note", core.invalidation_line(detail))
    if kind == "rewound":
        return ("note", core.rewind_line(detail))
    if kind == "forked":
        return ("note", core.fork_line(detail))
    if kind == "warning":
        return ("warning", f"⚠ {detail.get('message')}")
    return ("note", f"· {kind}: {json.dumps(detail)[:120]}")


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    args = json.dumps(arguments, ensure_ascii=False)
    if len(args) > 90:
        args = args[:89] + "…"
    return f"→ {name} {args}"
