"""The one line that stands for every collapsed step (DESIGN §3.2, step 5).

It says what those steps asked, newest first, and what the operator said then. In a long run
the collapsed steps grow by a few each request, so the aggregate behind the line (``Asked``) is
kept and extended with the newly collapsed steps rather than rebuilt from all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from io_tui.core.context.stubs import RECALL, receipt, receipt_rank, what
from io_tui.core.context.turns import clip
from io_tui.core.contract import CHARS_PER_TOKEN, estimate_tokens
from io_tui.core.ledger import Observation, StepRecord
from io_tui.core.providers.messages import Message
from io_tui.core.text.heads import collapse_head

MAX_KEPT = 40  # receipts of each rank the line names, newest first (the ledger keeps all)


@dataclass(slots=True)
class Asked:
    """What a run of steps asked, newest first: for each tool (newest first) its newest 200
    distinct targets, each with the handle (call id) of its newest result, the receipts that
    are never cleared (``stubs.receipt``: the newest ``MAX_KEPT`` of each ``receipt_rank``),
    the operator's messages, and how many results there were. ``last`` keeps the aggregate
    of the steps collapsed last time, which the next collapse (the same steps and a few
    newer) extends instead of walking them all again."""

    tools: dict[str, dict[str, str]] = field(default_factory=dict)  # tool → target → handle
    said: list[str] = field(default_factory=list)
    kept: tuple[list[str], ...] = field(default_factory=lambda: ([], [], []))  # by rank
    count: int = 0
    last: tuple[list[StepRecord], Asked] | None = None


def asked(records: Sequence[StepRecord], cache: Asked) -> Asked:
    """The aggregate of ``records``, extending the one ``cache`` remembers when it can."""
    if cache.last is not None:
        before, older = cache.last
        n = len(before)
        if len(records) >= n and records[:n] == before:
            made = _merge(_walk(records[n:]), older)
            cache.last = (list(records), made)
            return made
    made = _walk(records)
    cache.last = (list(records), made)
    return made


def _walk(records: Sequence[StepRecord]) -> Asked:
    made = Asked()
    for rec in reversed(records):
        if rec.operator_messages:
            made.said += (f"step {rec.step}: {clip(m, 200)}" for m in rec.operator_messages)
        for obs in rec.observations:
            rank = made.kept[receipt_rank(obs)]
            if len(rank) < MAX_KEPT and (kept := receipt(obs)):  # a full rank takes no more
                rank.append(f"step {rec.step} {obs.tool} {what(obs)}: {kept}")
            targets = made.tools.get(obs.tool)
            if targets is None:
                targets = made.tools[obs.tool] = {}
            if len(targets) < 200:
                targets.setdefault(what(obs), obs.call_id)
        made.count += len(rec.observations)
    return made


def _merge(newer: Asked, older: Asked) -> Asked:
    """The aggregate of ``newer``'s steps, then ``older``'s (older ones), as one walk."""
    tools = dict(newer.tools)
    for tool, targets in older.tools.items():
        merged = dict(tools.get(tool, {}))
        for target, handle in targets.items():
            if len(merged) >= 200:
                break
            merged.setdefault(target, handle)
        tools[tool] = merged
    kept = tuple((n + o)[:MAX_KEPT] for n, o in zip(newer.kept, older.kept, strict=True))
    return Asked(tools, newer.said + older.said, kept, newer.count + older.count)


def collapse_line(
    records: Sequence[StepRecord], reserve: int, cache: Asked, tested: Observation | None = None
) -> Message:
    """One line for every out-of-window step: the receipts never cleared, what the operator
    said then and what they asked (newest first, as many as the line holds, each target with
    its handle), so nothing is dropped without a trace or a way back. ``tested``: the run's
    latest test command's result; when it is one of these steps, its exit status and its
    output's end come first, where the clip reaches last.

    Works on the records alone: a collapsed step needs no classification, and its manifest
    entries are the engine's stable ones."""
    first, last = records[0].step, records[-1].step
    made = asked(records, cache)
    line = (
        f"{collapse_head(first, last)} {made.count} older tool results and the turns that "
        f'asked for them are not shown. {RECALL}("<handle>") reads one back as recorded (the '
        "handle follows each target); call a tool again for its current result.]"
    )
    kept = [k for rank in made.kept for k in rank]
    if tested is not None and first <= tested.step <= last:
        head = f"step {tested.step} {tested.tool} {what(tested)}: "
        line += f" The latest test run, {head}{receipt(tested, latest=True)}."
        kept = [k for k in kept if not k.startswith(head)]  # its exit status, said above
    if kept:  # decisions, then side effects, then exit codes: what the clip reaches last first
        line += " Kept, newest first: " + " | ".join(kept) + "."
    if made.said:
        line += " Operator messages then: " + " | ".join(made.said) + "."
    parts = [
        f"{tool}: {', '.join(f'{t} {h}' for t, h in targets.items())}"
        for tool, targets in made.tools.items()
    ]
    line += " Asked, newest first: " + "; ".join(parts)
    text = " ".join(line.split())
    limit = max(120, min(reserve * CHARS_PER_TOKEN, 2_000)) - 40
    clipped = clip(text, limit)
    while (tokens := estimate_tokens(clipped)) > reserve and limit > 80:  # dense text: digits
        limit = max(80, limit * reserve // tokens - 1)
        clipped = clip(text, limit)
    return Message("user", clipped)
