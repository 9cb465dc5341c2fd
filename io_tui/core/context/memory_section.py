"""Why the memory block carries the notes it does, and which notes it leaves out (DESIGN §3.2).

A note is left out because it expired, was superseded by another (neither is recalled any more:
``MemoryNote.active``), did not fit the block's cap (a quarter of the ceiling, in chars:
``memory.render_notes``), or was written after the block this request reuses was rendered (it
joins at the next rewrite). The memory section names each with its reason, and says in one line
how many of the notes it carries.
"""

from __future__ import annotations

from collections.abc import Sequence

from io_tui.core.context.manifest import Omission
from io_tui.core.memory.notes import MemoryNote, RenderedMemory

# the first word of each reason, and how the section's line counts them (in this order)
_KINDS = {
    "expired": "expired",
    "superseded": "superseded",
    "over": "over the cap",
    "written": "written since the block was rendered",
}


def memory_omissions(
    notes: Sequence[MemoryNote],
    left_out: Sequence[MemoryNote],
    rendered: RenderedMemory,
    cap_chars: int,
) -> tuple[Omission, ...]:
    """Each note the block does not carry, and why: the ones not recalled (``left_out``), then
    the active ones it had no room for or that came after it was rendered."""
    out = [
        Omission(_ref(n), f"superseded by {n.superseded_by}" if n.superseded_by else "expired")
        for n in left_out
    ]
    carried, dropped = set(rendered.keys), set(rendered.dropped)
    for note in notes:
        if note.key in carried:
            continue
        if note.key in dropped:
            why = f"over the memory block's cap of {cap_chars:,} chars"
        else:
            why = "written after the block was rendered: it joins at the next rewrite"
        out.append(Omission(_ref(note), why))
    return tuple(out)


def memory_reason(kept: int, omitted: Sequence[Omission]) -> str:
    """``12 notes of 14 recalled: 2 expired``."""
    counts: dict[str, int] = {}
    for o in omitted:
        kind = _KINDS.get(o.reason.split(" ", 1)[0], "left out")
        counts[kind] = counts.get(kind, 0) + 1
    head = f"{kept} note{'' if kept == 1 else 's'} of {kept + len(omitted)} recalled"
    if not counts:
        return f"{head}: every active note fits"
    order = [*_KINDS.values(), "left out"]
    return f"{head}: " + ", ".join(f"{counts[k]} {k}" for k in order if k in counts)


def _ref(note: MemoryNote) -> str:
    """The note's key (a global note's says so)."""
    return note.key if note.scope == "workspace" else f"{note.key} (global)"
