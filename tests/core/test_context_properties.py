"""Properties of every assembled request, over generated histories (DESIGN §3.2).

Whatever the history, ceiling, memory, refresh outcomes and summarizer: the request stays within
5% of its ceiling (the fixed frame counted apart), carries the contract, names only steps that
exist, never sends stale content, never lets one entry pass the cap, and never separates a tool
call from its result. Its manifest never lies about what was sent: what it lists as sent is in
the request, what it says is ``dropped`` is absent from it, turn and results, and nothing is
sent that it does not list.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import re
from itertools import pairwise
from pathlib import Path

from engine_run import answered, ask, grow
from hypothesis import HealthCheck, event, given, settings, strategies as st
from token_reference import reference_tokens

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.labels import digest
from io_tui.core.context.manifest import Assembly, EntryState
from io_tui.core.context.refresh import Fresh, RefreshFailed
from io_tui.core.context.stubs import apply_echo, cut, how_to_get_back
from io_tui.core.contract import Compaction, TaskContract, entry_cap_chars
from io_tui.core.ledger import Observation, ObsKind, StepRecord, bound_text
from io_tui.core.memory.notes import MemoryNote
from io_tui.core.providers.base import CompletionRequest
from io_tui.core.providers.messages import ToolCall
from io_tui.core.text.prefix import common_prefix

KINDS = [ObsKind.READ, ObsKind.READ, ObsKind.WRITE, ObsKind.GREP, ObsKind.EXEC, ObsKind.LIST]
TOOL = {
    ObsKind.READ: "read_file",
    ObsKind.WRITE: "edit_file",
    ObsKind.GREP: "grep",
    ObsKind.EXEC: "run_command",
    ObsKind.LIST: "list_dir",
}
COMMANDS = ["pytest", "ls -R"]  # a test command's output never ages (``live.AGE_STEPS``)
PATHS = ["a.py", "b.py", "src/c.py"]
STUB_STATES = {EntryState.SUPERSEDED, EntryState.ELIDED}
# what the request carries no message of its own for (the collapse line or the summary stands for
# the first two; a dropped step is left out)
UNSENT = {EntryState.COLLAPSED, EntryState.SUMMARY, EntryState.DROPPED}


@st.composite
def histories(draw: st.DrawFn) -> list[StepRecord]:
    records = []
    for number in range(1, draw(st.integers(1, 30)) + 1):
        observations = []
        calls = []
        for n in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(KINDS))
            target = draw(st.sampled_from(PATHS if kind != ObsKind.EXEC else COMMANDS))
            span = draw(st.sampled_from(["", "", "lines 1-20"])) if kind is ObsKind.READ else ""
            size = draw(st.sampled_from([0, 40, 40, 300, 900, 4_000, 30_000]))
            call_id = f"c{number}_{n}"
            text = f"<{call_id}>" + "x" * size
            calls.append(ToolCall(call_id, TOOL[kind], {"path": target, "blob": "q" * (size // 3)}))
            if draw(st.integers(0, 19)):  # now and then a call has no recorded result
                observations.append(
                    Observation(
                        number, call_id, TOOL[kind], kind, target, text, span=span,
                        is_error=draw(st.integers(0, 9)) == 0,
                    )
                )  # fmt: skip
        ops = ("please hurry " * draw(st.integers(0, 30)),) if draw(st.integers(0, 6)) == 0 else ()
        said = "thinking " * draw(st.sampled_from([0, 3, 400]))
        records.append(StepRecord(number, said, tuple(calls), tuple(observations), ops))
    return records


def run(coro):  # hypothesis drives plain functions; each example gets its own loop
    return asyncio.run(coro)


def frame(compaction: Compaction) -> Frame:
    contract = TaskContract("GOAL-MARKER fix the bug", Path("/ws"), compaction=compaction)
    return Frame("SYSTEM-MARKER", (), contract)


def body(assembly: Assembly) -> list:
    return list(assembly.messages[2:])  # frame here: system prompt and contract


def tokens(message) -> int:
    calls = sum(
        reference_tokens(c.name) + reference_tokens(json.dumps(c.arguments, ensure_ascii=False))
        for c in message.tool_calls
    )
    return reference_tokens(message.content) + calls


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip
@given(
    history=histories(),
    ceiling=st.sampled_from([800, 2_000, 3_000, 8_000, 24_000]),  # 800: the least a run takes
    note_count=st.integers(0, 30),
    refresh_mode=st.sampled_from(["ok", "ok", "fail", "huge", "none"]),
    summarizer=st.sampled_from(["none", "short", "huge"]),
    enabled=st.booleans(),
    force=st.booleans(),
)
def test_every_request_keeps_the_invariants(
    history, ceiling, note_count, refresh_mode, summarizer, enabled, force
) -> None:
    async def refresh(observation: Observation) -> Fresh:
        if refresh_mode == "fail":
            raise RefreshFailed("policy says ask")
        return Fresh("FRESH " * (5_000 if refresh_mode == "huge" else 20))

    async def summarize(request: CompletionRequest) -> str:
        assert request.purpose == "summary"
        return "summary " * (10 if summarizer == "short" else 50_000)

    engine = ContextEngine(
        frame(Compaction(enabled=enabled)),
        refresh=None if refresh_mode == "none" else refresh,
        summarize=None if summarizer == "none" else summarize,
    )
    notes = [MemoryNote(f"k{i}", "note " * 40, run_id=1, step=1) for i in range(note_count)]
    built = run(grow(engine, history, ceiling, notes=notes))
    # The last request again, folded if asked: what a step's request carries whatever it is
    done = [answered(r, a) for r, a in zip(history, built, strict=False)]
    assembly = run(ask(engine, done, len(history) + 1, ceiling, notes=notes, force_fold=force))
    # A second build reuses what the first bought: same invariants, nothing new folded.
    again = run(ask(engine, done, len(history) + 1, ceiling, notes=notes))
    assert not again.folded
    for n, a in enumerate(built):
        check(a, [*done[:n], answered(StepRecord(n + 1, ""), a)], ceiling)
    # Between rewrites a request starts with the previous request's bytes; a rewrite says what
    # of the previous request it kept.
    for a, b in pairwise(built):
        if b.rewrite is None:
            assert b.messages[: len(a.messages)] == a.messages, b.manifest_json()
        else:
            assert b.rewrite.kept_messages == common_prefix(a.messages, b.messages)
    for a in (assembly, again):
        check(a, [*done, answered(StepRecord(len(history) + 1, ""), a)], ceiling)
    for state in {e.state.value for a in built for e in a.entries}:
        event(state)  # `pytest --hypothesis-show-statistics` shows every state is reached


def check(assembly: Assembly, history: list[StepRecord], ceiling: int) -> None:
    steps = {r.step for r in history}
    messages = body(assembly)
    # The ceiling, frame apart, independently re-counted.
    assert assembly.messages[0].content == "SYSTEM-MARKER"
    assert "GOAL-MARKER" in assembly.messages[1].content
    assert sum(tokens(m) for m in messages) == assembly.est_tokens
    assert assembly.est_tokens <= ceiling * 1.05, assembly.manifest_json()
    # One entry never passes the cap.
    cap = entry_cap_chars(ceiling)
    assert all(len(m.content) <= cap for m in messages if m.role == "tool")
    # Stubs and manifest name only steps that exist.
    for e in assembly.entries:
        assert e.superseded_by is None or e.superseded_by in steps
        assert e.step in steps
    stub_ids = {e.call_id for e in assembly.entries if e.state in STUB_STATES}
    for m in messages:
        if m.tool_call_id in stub_ids or m.content.startswith(("[Steps", "[Summary")):
            for number in re.findall(r"steps? (\d+)", m.content):
                assert int(number) in steps, m.content
    # A copy out of date is sent only with its correction later in the request.
    check_corrected(messages, history)
    # Calls and results travel together, in order.
    check_pairing(messages)
    check_sent_as_listed(assembly, history)


def check_sent_as_listed(assembly: Assembly, history: list[StepRecord]) -> None:
    """Each result the manifest lists as sent is in the request, exactly once, with its size;
    each it says ``dropped`` is absent, its whole step with it (turn, calls, results), and only
    a step whose every result a later step's same call superseded; nothing else is sent."""
    records = {r.step: r for r in history}
    results = {o.call_id: o for r in history for o in (*r.corrections, *r.observations)}
    messages = body(assembly)
    tool_msgs = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    called = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    users = [m.content for m in messages if m.role == "user"]
    by_digest = {digest(u): u for u in users}
    entries = [e for e in assembly.entries if e.call_id in results]
    listed = {e.call_id for e in entries if e.state not in UNSENT}
    # nothing of a recorded result is sent that the manifest does not list as sent
    assert {i for i in tool_msgs if i in results} <= listed
    for e in entries:
        obs = results[e.call_id]
        if e.state is EntryState.DROPPED:
            assert (e.chars, e.est_tokens) == (0, 0), e
            record = records[e.step]
            ids = {c.id for c in record.tool_calls}
            assert not ids & (called | set(tool_msgs)), e  # its turn and results are left out
            assert not any(f"<{i}>" in m.content for i in ids for m in messages), e
            assert not any(u.startswith(f"[result of step {e.step} ") for u in users), e
            of_step = [d for d in assembly.entries if d.step == e.step and d.call_id in results]
            assert all(d.state is EntryState.DROPPED for d in of_step), e  # the whole step
            assert not record.operator_messages and ids <= {o.call_id for o in record.observations}
            # a later call made the same call (in a later step for one), or an earlier read of
            # the unchanged file shows its lines, or a correction of it was made
            by = e.superseded_by
            assert by is not None, e
            shown = "read shows these lines" in e.reason
            assert by < e.step if shown else by >= e.step, e
            assert shown or max(d.superseded_by or 0 for d in of_step) > e.step, e
            later = (*records[by].corrections, *records[by].observations)
            assert any(
                (o.kind, o.target) == (obs.kind, obs.target) and o.call_id != e.call_id
                for o in later
            ), e
            continue
        if e.state in UNSENT:
            continue
        content = tool_msgs.get(e.call_id)
        if obs.corrects:  # a user message at its step's boundary
            content = by_digest.get(e.digest)
            assert content is not None, e
        if content is None:  # its call is not in the transcript: a user message carries it
            head = f"[result of step {e.step} {obs.tool} "
            found = [u for u in users if u.startswith(head) and f"<{e.call_id}>" in u]
            assert len(found) <= 1, e
            content = found[0].split("\n", 1)[1] if found else None
            if content is None:  # a stub: it names its step
                found = [u for u in users if u.startswith(head)]
                assert found, e
                continue
        assert e.chars == len(content), e
        whole = bound_text(obs.text, assembly.entry_cap_chars, how_to_get_back(obs))
        if e.state is EntryState.FULL:
            assert content == obs.text, e
        carried = cut(obs, assembly.entry_cap_chars)  # whole, or cut to the entry cap
        referenced = e.state is EntryState.ECHOED or (
            e.state is EntryState.CORRECTED and content != carried
        )
        if referenced:  # the difference from (a pointer into) a result above, carried whole
            head = content.split("\n", 1)[0]
            assert re.search(r"step \d+", head), (e, content[:300], obs.text[:300])
            found = re.search(
                r"; step (\d+)'s copy above (?:is out of date in|shows its lines)", head
            )
            found = found or re.search(r"correction at step (\d+)|step (\d+)'s", head)
            base = int(found[1] or found[2])
            bases = []
            for d in assembly.entries:
                if (d.step, d.kind, d.target) == (base, e.kind, e.target) and d.state in (
                    EntryState.FULL,
                    EntryState.CAPPED,
                    EntryState.CORRECTED,
                ):
                    bases.append(tool_msgs.get(d.call_id) or by_digest.get(d.digest, ""))
                if (
                    (d.step, d.kind, d.target) == (base, e.kind, e.target)
                    and d.state in (EntryState.ECHOED, EntryState.CORRECTED)
                    and obs.corrects
                    and d.call_id in results
                    and results[d.call_id].corrects
                ):  # a correction sent as the difference from the one before (a chain): what
                    # that one stands for, which this loop checks
                    d_obs = results[d.call_id]
                    cap = assembly.entry_cap_chars
                    bases.append(bound_text(d_obs.text, cap, how_to_get_back(d_obs)))
            assert any(apply_echo(b, content) == whole for b in bases), e


def stale_reads(history: list[StepRecord]) -> dict[str, tuple[str, int]]:
    """The reads a later write to their file made out of date: call id -> (the file, the step
    of its last write)."""
    stale: dict[str, tuple[str, int]] = {}
    written: dict[str, int] = {}
    for record in reversed(history):
        for o in reversed(record.observations):
            path = posixpath.normpath(o.target)
            if o.kind is ObsKind.WRITE and not o.is_error:
                written.setdefault(path, record.step)
            elif o.kind is ObsKind.READ and path in written:
                stale[o.call_id] = (path, written[path])
    return stale


def check_corrected(messages: list, history: list[StepRecord]) -> None:
    """Every copy of a result out of date (a read of a file a later step wrote) that is sent
    is followed, in the same request, by a correction of a read of that file or by a read of
    it made after its last write."""
    stale = stale_reads(history)
    reads = {
        o.call_id: (posixpath.normpath(o.target), r.step)
        for r in history
        for o in r.observations
        if o.kind is ObsKind.READ and not o.is_error
    }
    for i, m in enumerate(messages):
        if m.content.startswith("[Summary of steps"):  # notes of what was true when written
            continue
        for call_id in re.findall(r"<(c\d+_\d+\w*)>", m.content):
            if call_id not in stale:
                continue
            path, written = stale[call_id]
            later = messages[i + 1 :]
            assert any(
                _corrects(x.content, path)
                or any(
                    reads.get(c, ("", 0)) >= (path, written) and reads[c][0] == path
                    for c in re.findall(r"<(c\d+_\d+\w*)>", x.content)
                )
                for x in later
            ), (call_id, m.content[:80])


def _corrects(content: str, path: str) -> bool:
    head = content.partition("\n")[0]
    found = re.match(r"\[correction of step \d+'s read of (.+?)(?: \(lines \d+-\d+\))?: ", head)
    return bool(found) and posixpath.normpath(found[1]) == path


def check_pairing(messages: list) -> None:
    pending: list[str] = []
    for m in messages:
        if m.role == "tool":
            assert pending and m.tool_call_id == pending.pop(0), "a result without its call"
            continue
        assert not pending, f"calls without results: {pending}"
        if m.role == "assistant":
            pending = [c.id for c in m.tool_calls]
    assert not pending, f"calls without results: {pending}"
