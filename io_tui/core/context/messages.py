"""Each kept step as role-tagged messages, with a manifest entry for each of its results.

A step is its operator lines, its corrections (results that went out of date, as they are now:
``correct.py``), its turn and one tool message per call. A call without a recorded result gets a
placeholder result; a result without a call in the transcript never becomes a tool message.
The request around them (frame, memory, summary, collapse line) is ``Build.emit``'s.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from io_tui.core.context.labels import digest, observation_labels
from io_tui.core.context.manifest import EntryState, ManifestEntry
from io_tui.core.context.step import Entry, Step
from io_tui.core.context.stubs import what
from io_tui.core.context.turns import NO_RESULT
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import capped_chars
from io_tui.core.providers.messages import Message
from io_tui.core.text.heads import result_head


class Chunk(NamedTuple):
    """What one kept step emitted, and for what: reused while its key holds."""

    key: tuple[Any, ...]
    messages: tuple[Message, ...]
    entries: tuple[ManifestEntry, ...]
    turns: int
    spent: int


def emit_step(st: Step, messages: list[Message], entries: list[ManifestEntry]) -> tuple[int, int]:
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
    if st.dead:  # left out: no message, one ``dropped`` entry per result
        return Chunk(key, (), tuple(_manifest_entry(e, 0) for e in st.entries), 0, 0)
    messages: list[Message] = [*st.ops]
    entries: list[ManifestEntry] = []
    spent = 0
    by_call: dict[str, Entry] = {}
    orphans: list[Entry] = []
    call_ids = {c.id for c in st.record.tool_calls}
    for e in st.entries:
        if e.obs.corrects:  # delivered at the step's boundary, before its turn
            messages.append(Message("user", e.content))
            entries.append(_manifest_entry(e, e.tokens))
            spent += e.tokens
        elif e.obs.call_id in call_ids and e.obs.call_id not in by_call:
            by_call[e.obs.call_id] = e
        else:
            orphans.append(e)
    if st.turn is not None:
        messages.append(st.turn)
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
        body = f"{result_head(obs.step, obs.tool, what(obs))}\n{e.content}"
        messages.append(Message("user", body))
        tokens = estimate_tokens(body)
        entries.append(_manifest_entry(e, tokens, body))
        spent += tokens
    return Chunk(key, tuple(messages), tuple(entries), st.cost, spent)


def _manifest_entry(e: Entry, tokens: int, sent: str | None = None) -> ManifestEntry:
    """``sent``: what the request carried for it, when not its content (None: its content;
    "" with no tokens: nothing, its step left out)."""
    obs = e.obs
    by = next((b for b in (e.shown_by, e.by) if b is not None), e.invalidated_by)
    kept = total = None
    if e.state is EntryState.CAPPED and e.carried is not None:
        kept, total = capped_chars(obs, e.carried[0])
    text = e.content if sent is None else sent
    role, authority, ref, version = observation_labels(obs)
    return ManifestEntry(
        obs.step, obs.call_id, obs.kind.value, obs.target, e.state, e.reason, by,
        len(text), tokens, kept, total, role, authority, ref, version,
        digest(text) if tokens else "",
    )  # fmt: skip
