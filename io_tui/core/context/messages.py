"""The window as role-tagged messages, with a manifest entry for everything it stands for.

Order: the frame, the memory block, the summary, the collapse line, then each kept step as its
operator lines, its turn and one tool message per call. A call without a recorded result gets a
placeholder result; a result without a call in the transcript never becomes a tool message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from io_tui.core.context.manifest import Assembly, EntryState, ManifestEntry, Section
from io_tui.core.context.step import Entry, Step
from io_tui.core.context.stubs import what
from io_tui.core.context.turns import NO_RESULT, message_tokens
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import capped_chars
from io_tui.core.providers.base import Message

if TYPE_CHECKING:
    from io_tui.core.context.build import Build


def emit(b: Build) -> Assembly:
    """The assembled request of a build whose window, stubs and collapse are decided."""
    frame_messages, frame_sections = b.engine.frame_parts()
    messages = list(frame_messages)
    entries: list[ManifestEntry] = []
    turns_tokens = 0

    def add(msg: Message) -> int:
        messages.append(msg)
        return message_tokens(msg)

    est = 0
    if b.memory_msg is not None:
        est += add(b.memory_msg)
    summary_msg = b.summary_msg()
    if summary_msg is not None and b.summary is not None:
        entries += b.engine.stable_run(b.folded_records, EntryState.SUMMARY)
        tokens = add(summary_msg)
        est += tokens
        through = b.summary.through_step
        entries.append(
            ManifestEntry(
                through, f"summary:{through}", "summary", f"steps {b.first_step}–{through}",
                EntryState.SUMMARY,
                f"compaction summary ({b.summary.source}"
                f"{', written for this request' if b.folded else ', reused'})",
                None, len(summary_msg.content), tokens,
            )
        )  # fmt: skip
    records = b.live.records
    entries += b.engine.stable_run(records[: b.collapsed], EntryState.COLLAPSED)
    if b.collapse_msg is not None:
        tokens = add(b.collapse_msg)
        est += tokens
        first, last = records[0].step, records[b.collapsed - 1].step
        entries.append(
            ManifestEntry(
                last, "collapse", "collapse", f"steps {first}–{last}", EntryState.COLLAPSED,
                f"their stubs passed an eighth of the ceiling ({b.reserve:,} tokens)",
                None, len(b.collapse_msg.content), tokens,
            )
        )  # fmt: skip
    start, settled = b.collapsed, b.live.settled
    if start == 0 and settled.emitted:  # the settled steps, as the last request sent them
        messages += settled.msgs
        entries += settled.entries
        _, _, turns_tokens, spent = settled.ends[-1]
        est += turns_tokens + spent
        start = settled.emitted
    for index in range(start, len(records)):
        st = b.live[index]
        step_turns, step_entries = _emit_step(st, messages, entries)
        turns_tokens += step_turns
        est += step_turns + step_entries
        if b.collapsed == 0 and index == settled.emitted < settled.length:
            chunk = st.chunk
            settled.add_emitted(chunk.messages, chunk.entries, chunk.turns, chunk.spent)
    sections = [*frame_sections]
    if b.memory_msg:
        sections.append(Section("memory", "store", b.memory_tokens, fixed=False))
    sections.append(
        Section("turns", "assistant turns and operator messages", turns_tokens, fixed=False)
    )
    policy = b.engine.frame.contract.compaction
    return Assembly(
        messages=tuple(messages),
        sections=tuple(sections),
        entries=tuple(entries),
        ceiling_tokens=b.ceiling,
        est_tokens=est,
        frame_tokens=sum(s.est_tokens for s in frame_sections),
        memory_keys=b.memory.keys,
        compaction_due=policy.enabled and est > policy.threshold * b.ceiling,
        entry_cap_chars=b.cap,
        summary=b.summary,
        folded=b.folded,
    )


class Chunk(NamedTuple):
    """What one kept step emitted, and for what: reused while its key holds."""

    key: tuple[Any, ...]
    messages: tuple[Message, ...]
    entries: tuple[ManifestEntry, ...]
    turns: int
    spent: int


def _emit_step(st: Step, messages: list[Message], entries: list[ManifestEntry]) -> tuple[int, int]:
    """One kept step: operator lines, the turn, then one tool message per call, in order.

    Returns the tokens of its turn, operator lines and placeholder results (the step's rendered
    cost, priced when it was rendered), and of its results. What a step emits depends only on
    its classification (``version``), the rendering this build chose and each entry's decision,
    so the previous build's chunk is reused when those are the same objects.
    """
    key = (st.version, st.rendered, *[(e.state, e.content, e.reason) for e in st.entries])
    chunk: Chunk | None = st.chunk
    if chunk is None or chunk.key != key:
        chunk = st.chunk = _chunk(st, key)
    messages += chunk.messages
    entries += chunk.entries
    return chunk.turns, chunk.spent


def _chunk(st: Step, key: tuple[Any, ...]) -> Chunk:
    messages: list[Message] = [*st.ops]
    entries: list[ManifestEntry] = []
    if st.turn is not None:
        messages.append(st.turn)
    by_call: dict[str, Entry] = {}
    orphans: list[Entry] = []
    call_ids = {c.id for c in st.record.tool_calls}
    for e in st.entries:
        if e.obs.call_id in call_ids and e.obs.call_id not in by_call:
            by_call[e.obs.call_id] = e
        else:
            orphans.append(e)
    spent = 0
    for call in st.record.tool_calls:
        answer = by_call.get(call.id)
        if answer is None:  # priced in the rendered turn's cost
            messages.append(Message("tool", NO_RESULT, tool_call_id=call.id))
            continue
        messages.append(Message("tool", answer.content, tool_call_id=call.id))
        entries.append(_manifest_entry(answer, answer.tokens))
        spent += answer.tokens
    for e in orphans:  # a result whose call is not in the transcript: never a tool message
        obs = e.obs
        body = f"[result of step {obs.step} {obs.tool} {what(obs)}]\n{e.content}"
        messages.append(Message("user", body))
        tokens = estimate_tokens(body)
        entries.append(_manifest_entry(e, tokens, len(body)))
        spent += tokens
    return Chunk(key, tuple(messages), tuple(entries), st.cost, spent)


def _manifest_entry(e: Entry, tokens: int, chars: int | None = None) -> ManifestEntry:
    obs = e.obs
    by = next((b for b in (e.shown_by, e.by) if b is not None), e.invalidated_by)
    kept = total = None
    if e.state is EntryState.CAPPED and e.carried is not None:
        kept, total = capped_chars(obs, e.carried[0])
    return ManifestEntry(
        obs.step, obs.call_id, obs.kind.value, obs.target, e.state, e.reason, by,
        len(e.content) if chars is None else chars, tokens, kept, total,
    )  # fmt: skip
