"""Long runs through the run loop (``start_run``, a real SQLite store, real tools) over generated
sessions: reads and range reads, writes and edits, files changed by ``run_command``, long command
output, greps, listings, memory notes written and forgotten, under small and shrinking ceilings
that force elision, collapse, folds and compaction (DESIGN §3.2, issue 13 items 1 and 4).

Whatever the session: the run never fails, and every request's manifest tells the truth about the
request as the provider received it — each entry's content is in the messages as sent, ``full`` is
exactly the recorded result, ``capped`` is exactly its bounded form, stubs name their step.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis.control import currently_in_test_context, event

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.checks import shows_file_lines
from io_tui.core.context.labels import digest
from io_tui.core.context.live import AGE_MIN_TOKENS, AGE_STEPS
from io_tui.core.context.manifest import EntryState
from io_tui.core.context.stubs import apply_echo, cut, is_test_run, points_to_call, what
from io_tui.core.contract import CHARS_PER_TOKEN, Compaction, ContextBudget, TaskContract
from io_tui.core.ledger import Observation, ObsKind
from io_tui.core.providers.base import CompletionRequest, StreamEvent
from io_tui.core.providers.scripted import Script, ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.text.numbered import number_lines, range_trailer, span_lines

FILES = ("a.py", "b.py", "src/c.py", "notes.md")
PY = sys.executable
# own message each (a dropped result has none: its step is left out)
SENT = frozenset(EntryState) - {EntryState.COLLAPSED, EntryState.SUMMARY, EntryState.DROPPED}


def filler(n: int, size: int) -> str:
    """``size`` lines of a file's body at version ``n`` (unique marker on every line)."""
    return "".join(f"line {i} of version {n}: {'x' * (i % 37)}\n" for i in range(size))


def initial_files() -> dict[str, str]:
    sizes = {"a.py": 5, "b.py": 60, "src/c.py": 200, "notes.md": 1}
    return {path: f"VERSION-0 {path}\n" + filler(0, n) for path, n in sizes.items()}


# -- sessions ------------------------------------------------------------------------------


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


KINDS = ["read"] * 6 + ["range", "write", "edit", "cmd_out", "grep", "list"] + ["remember"] * 2
KINDS += ["forget"]


@st.composite
def actions(draw: st.DrawFn, n: int, disk_changes: bool) -> list[dict[str, Any]]:
    """The tool calls of step ``n``: one mutation alone, or one to three non-mutating calls.
    ``disk_changes``: also files rewritten by ``run_command``, which the engine is not told of."""
    path = draw(st.sampled_from(FILES))
    size = draw(st.sampled_from([0, 3, 40, 150, 400]))
    kind = draw(st.sampled_from(KINDS + ["cmd_write"] * 2 if disk_changes else KINDS))
    match kind:
        case "write":
            return [
                call("write_file", path=path, content=f"VERSION-{n} {path}\n" + filler(n, size))
            ]
        case "edit":
            return [call("edit_file", path=path, old="VERSION-", new=f"VERSION-e{n}-")]
        case "cmd_write":
            body = f"CMD-{n}\n" * size
            script = f"import pathlib; pathlib.Path({path!r}).write_text({body!r})"
            return [call("run_command", argv=[PY, "-c", script])]
        case "cmd_out":
            chars = draw(st.sampled_from([50, 3_000, 12_000, 40_000]))
            return [call("run_command", argv=[PY, "-c", f"print('o{n} ' * {chars // 4})"])]
        case "remember":
            key = f"k{draw(st.integers(0, 9))}"
            return [call("remember", key=key, value=f"note {n}: " + "fact " * draw(st.integers(1, 300)))]  # fmt: skip
        case "forget":
            return [call("forget", key=f"k{draw(st.integers(0, 9))}")]
    reads: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(FILES))
        choice = draw(st.sampled_from(["read", "read", "range", "grep", "list"]) if reads else st.just(kind))  # fmt: skip
        if choice == "read":
            reads.append(call("read_file", path=path))
        elif choice == "range":
            offset = draw(st.integers(1, 5))
            reads.append(
                call("read_file", path=path, offset=offset, limit=draw(st.integers(1, 30)))
            )
        elif choice == "grep":
            reads.append(call("grep", pattern=draw(st.sampled_from(["VERSION", "line 1", "CMD"]))))
        else:
            reads.append(call("list_dir", path=draw(st.sampled_from([".", "src"]))))
    return reads


@st.composite
def sessions(draw: st.DrawFn, disk_changes: bool = False) -> dict[str, Any]:
    turns = []
    for n in range(1, draw(st.integers(30, 110)) + 1):
        said = draw(st.sampled_from(["", f"step {n}", "thinking about it " * 60]))
        turns.append({"text": said, "tool_calls": draw(actions(n, disk_changes))})
    turns.append({"text": "done"})
    return {"model": "scripted", "turns": turns}


# -- the run, and what each request saw ----------------------------------------------------


def snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(errors="replace")
        for p in root.rglob("*")
        if p.is_file()
    }


class Recording(ScriptedProvider):
    """The scripted provider, keeping every working request as received and the workspace's
    files at that moment."""

    def __init__(self, script: Script, root: Path) -> None:
        super().__init__(script)
        self.root = root
        self.seen: list[tuple[CompletionRequest, dict[str, str]]] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose == "work":
            self.seen.append((request, snapshot(self.root)))
        async for event_ in super().stream(request):
            yield event_


@dataclass
class Session:
    outcome: Outcome
    error: str | None
    trace: dict[str, Any]
    manifests: list[dict[str, Any]]  # as stored, with entry_cap_chars
    observations: dict[str, Observation]  # by call id, as the engine sees them
    seen: list[tuple[CompletionRequest, dict[str, str]]]


async def drive(tmp: Path, script: dict[str, Any], contract_kw: dict[str, Any]) -> Session:
    root = tmp / "ws"
    for path, text in initial_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    provider = Recording(Script.model_validate(script), root)
    async with await Store.open(tmp / "store.db") as store:
        harness = Harness(store=store, provider=provider, approver=ApproveAll())
        contract = TaskContract("soak", root, max_steps=len(script["turns"]) + 1, **contract_kw)
        result = await start_run(harness, contract)
        run = await store.runs.get(result.run_id)
        assert run is not None
        trace = await build_trace(store, result.run_id)
        rows = await store.trace.requests(result.run_id)
        manifests = [r.manifest for r in rows if r.purpose == "work"]
        history = await store.runs.history(result.run_id)
    observations = {o.call_id: o for r in history for o in (*r.corrections, *r.observations)}
    return Session(result.outcome, run.error, trace, manifests, observations, provider.seen)


def run_session(script: dict[str, Any], **contract_kw: Any) -> Session:
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(drive(Path(tmp), script, contract_kw))


# -- what a manifest promises ---------------------------------------------------------------


def note(what_happened: str) -> None:
    """A statistic for ``--hypothesis-show-statistics`` (nothing outside a Hypothesis test)."""
    if currently_in_test_context():
        event(what_happened)


def read_lines(text: str, span: str) -> list[str]:
    """The lines of ``text`` a read with ``span`` (``"lines a-b"`` or whole) showed."""
    lines = text.splitlines()
    if not span:
        return lines
    first, last = (int(x) for x in span.removeprefix("lines ").split("-"))
    return lines[first - 1 : last]


def grep_hits(files: dict[str, str], pattern: str) -> list[tuple[str, int, str]]:
    regex = re.compile(pattern)
    return [
        (path, number, line)
        for path, text in sorted(files.items())
        for number, line in enumerate(text.splitlines(), 1)
        if regex.search(line)
    ]


def stale(obs: Observation, then: dict[str, str], now: dict[str, str]) -> bool:
    """Whether a read's lines or a workspace-wide grep's hits differ between the files as the
    call saw them (``then``) and as they are when a request carries it (``now``)."""
    if obs.kind is ObsKind.READ:
        path = obs.target
        return read_lines(then.get(path, ""), obs.span) != read_lines(now.get(path, ""), obs.span)
    if obs.kind is ObsKind.GREP:
        return grep_hits(then, obs.target) != grep_hits(now, obs.target)
    return False


def check_requests(s: Session) -> list[str]:
    """Every manifest against its request as sent (any lie fails here), and the lies about
    staleness, returned: a ``full`` / ``capped`` read or grep whose file or hits changed since
    the call, which the engine does not catch yet (issue 13 item 2)."""
    work = [r for r in s.trace["requests"] if r["purpose"] == "work"]
    assert len(work) == len(s.seen) == len(s.manifests)
    # step -> the files once its calls ran (as the next request saw them)
    read_at = {r["step"] - 1: files for r, (_, files) in zip(work, s.seen, strict=True)}
    lies = []
    shown_whole: set[str] = set()  # results an earlier request carried whole
    for stored, manifest, (sent, files) in zip(work, s.manifests, s.seen, strict=True):
        # the trace holds the request exactly as the provider received it
        assert stored["messages"] == [m.to_json() for m in sent.messages]
        by_call = {m.tool_call_id: m.content for m in sent.messages if m.tool_call_id}
        users = [m.content for m in sent.messages if m.role == "user"]
        by_digest = {digest(u): u for u in users}
        messages = sent.messages
        # where each result is sent: by its call where it has one (two results may read the
        # same, an empty file's), else where its text is first sent
        at: dict[str, int] = {}
        for i, m in enumerate(messages):
            at.setdefault(m.tool_call_id or m.content, i)
        called = {c.id for m in sent.messages for c in m.tool_calls}
        cap = manifest["entry_cap_chars"]
        entries = stored["entries"]
        assert entries == manifest["entries"]
        lines = {e["kind"] for e in entries if e["call_id"] == "collapse" or e["kind"] == "summary"}  # fmt: skip
        # nothing of a recorded result is sent that the manifest does not list as sent
        listed = {e["call_id"] for e in entries if EntryState(e["state"]) in SENT}
        assert {i for i in by_call if i in s.observations} <= listed
        for e in entries:
            state = EntryState(e["state"])
            note(f"state {state.value}")
            if e["call_id"] == "collapse" or e["call_id"].startswith("summary:"):  # the line itself
                steps = e["target"].removeprefix("steps ")
                head = (
                    f"[Summary of steps {steps}," if e["kind"] == "summary" else f"[Steps {steps} "
                )
                assert any(u.startswith(head) and len(u) == e["chars"] for u in users), e
                continue
            obs = s.observations[e["call_id"]]
            assert (e["step"], e["kind"], e["target"]) == (obs.step, obs.kind.value, obs.target)
            if state is EntryState.DROPPED:  # its step is left out: no turn, no result
                by = e["superseded_by"]
                # superseded by a later call, or its lines shown by an earlier read
                same = "the same, to the character" in e["reason"]  # a rerun's same result
                shown = same or "read shows these lines" in e["reason"]
                assert by is not None and (by <= obs.step if shown else by >= obs.step), e
                assert e["chars"] == e["est_tokens"] == 0, e
                assert obs.call_id not in by_call and obs.call_id not in called, e
                of_step = [d for d in entries if d["step"] == obs.step]
                assert all(d["state"] == "dropped" for d in of_step), e  # the whole step or none
                if not shown:
                    assert max(d["superseded_by"] for d in of_step) > obs.step, e  # a later step
                assert any(  # the call that superseded it is the same call (or the same read)
                    (o.step, o.kind, o.target) == (by, obs.kind, obs.target)
                    and o.call_id != obs.call_id
                    and (not shown or same or (o.seen and o.seen[0].digest == obs.seen[0].digest))
                    and (not same or o.text == obs.text)
                    for o in s.observations.values()
                ), e
                continue
            if state not in SENT:  # counted in the collapse line or the summary
                assert ("collapse" if state is EntryState.COLLAPSED else "summary") in lines, e
                continue
            content = by_call.get(obs.call_id)
            if obs.corrects:  # a correction: a user message at its step's boundary
                content = by_digest[e["digest"]]
                assert e["chars"] == len(content), e
            elif content is None:  # a result without its call in the transcript: a user message
                head = f"[result of step {obs.step} {obs.tool} {what(obs)}]\n"
                body = next(u for u in users if u.startswith(head))
                assert e["chars"] == len(body), e
                content = body.removeprefix(head)
            else:
                assert e["chars"] == len(content), e
            sent_at = at[obs.call_id] if obs.call_id in at else at[content]
            whole = max(obs.full_chars, len(obs.text))  # the tool's whole output, as recorded
            if state is EntryState.CAPPED:
                assert e["total_chars"] == whole and 0 < e["kept_chars"] < whole, e
            else:
                assert (e["kept_chars"], e["total_chars"]) == (None, None), e
            match state:
                case EntryState.FULL:  # the whole output: nothing cut, here or when recorded
                    assert content == obs.text and obs.full_chars <= len(obs.text), e
                    assert "carried whole" in e["reason"], e
                case EntryState.CAPPED if "the newest step's share" in e["reason"]:
                    # the newest results, cut to share what the ceiling leaves them
                    share = re.match(r"cut to ([\d,]+) chars", e["reason"])
                    assert share is not None, e
                    assert content == cut(obs, int(share[1].replace(",", ""))), e
                case EntryState.CAPPED:  # cut at this request's cap, or when it was recorded
                    assert len(obs.text) > cap or obs.full_chars > len(obs.text), e
                    sent = obs.text if len(obs.text) <= cap else cut(obs, cap)
                    assert content == sent, e
                case EntryState.SUPERSEDED if e["reason"].endswith("the file unchanged"):
                    # an earlier read of the same file content shows every line of it
                    by = e["superseded_by"]
                    assert by is not None and by <= obs.step, e
                    assert f"these lines are in step {by}'s read of {obs.target}" in content, e
                    assert any(
                        o.step == by
                        and o.call_id != obs.call_id
                        and o.kind is ObsKind.READ
                        and o.target == obs.target
                        and o.seen  # a correction pointing to a whole write saw nothing
                        and o.seen[0].digest == obs.seen[0].digest
                        for o in s.observations.values()
                    ), e
                case EntryState.SUPERSEDED if e["reason"].endswith("to the character"):
                    # an earlier run of the same call gave this result, and is carried
                    by = e["superseded_by"]
                    assert by is not None and by <= obs.step, e  # <: an earlier call
                    assert f"the same result as step {by}'s, to the character" in content, e
                    assert any(
                        (o.step, o.kind, o.target, o.span, o.text)
                        == (by, obs.kind, obs.target, obs.span, obs.text)
                        for o in s.observations.values()
                    ), e
                case EntryState.SUPERSEDED if obs.tool == "remember":
                    # shown whole by an earlier request; its call, sent with it, holds the note
                    assert e["reason"].startswith("a remember result shown once"), e
                    assert obs.call_id in called, e
                    assert f"remember {obs.target!r}: saved as its call says" in content, e
                    assert obs.call_id in shown_whole, e
                case EntryState.SUPERSEDED:
                    by = e["superseded_by"]
                    assert by is not None and by >= obs.step, e  # the same step: a later call
                    how = f"corrected at step {by}" if "corrected" in e["reason"] else "superseded"
                    assert how in content and f"step {by}" in content, (e, content)
                case EntryState.ELIDED if e["reason"].startswith("a command's output, aged"):
                    # a large command output, cleared once a later step had acted on it
                    aged = int(re.search(r"aged out at step (\d+)", e["reason"])[1])
                    assert obs.kind is ObsKind.EXEC and aged >= obs.step + AGE_STEPS, e
                    assert not is_test_run(obs) and not shows_file_lines(obs.target), e
                    assert len(obs.text) >= AGE_MIN_TOKENS * CHARS_PER_TOKEN, e
                    assert content.startswith(f"[step {obs.step} ") and (
                        f"cleared, aged out at step {aged}; " in content
                    ), (e, content)
                case EntryState.ELIDED:
                    assert content.startswith(f"[step {obs.step} ") and "elided" in content
                case EntryState.CORRECTED if content == cut(obs, cap):
                    # out of date, carried as the cached prefix holds it: corrected after it
                    assert corrected_after(obs, sent_at, messages, entries), same_call(e, entries)
                case EntryState.CORRECTED | EntryState.ECHOED:
                    # the difference from (a pointer into) a result above, carried whole
                    head = content.split("\n", 1)[0]
                    found = re.search(
                        r"; step (\d+)'s copy above (?:is out of date in|shows its lines)", head
                    )
                    found = found or re.search(r"correction at step (\d+)|step (\d+)'s", head)
                    assert found is not None, (e, head)
                    base = int(found[1] or found[2])
                    sent_whole = cut(obs, cap)
                    if state is EntryState.CORRECTED:
                        assert corrected_after(obs, sent_at, messages, entries), same_call(
                            e, entries
                        )
                    elif content.endswith("as they are now]"):  # a pointer
                        # into a read of the same file: the range as the file has it now
                        now = files[obs.target].splitlines()
                        first, last = span_lines(obs.span)
                        sent_whole = "\n".join([
                            obs.text.split("\n", 1)[0],
                            number_lines(now[first - 1 : last], first, len(now)),
                            range_trailer(first, last, len(now)),
                        ])  # fmt: skip
                    bases = []
                    for d in entries:
                        if (d["step"], d["kind"], d["target"]) == (base, e["kind"], e["target"]):
                            text = by_call.get(d["call_id"]) or by_digest.get(d["digest"], "")
                            if d["state"] in ("full", "capped", "corrected"):
                                bases.append(text)
                            base_obs = s.observations.get(d["call_id"])
                            if (
                                d["state"] in ("corrected", "echoed")
                                and obs.corrects
                                and base_obs is not None
                                and base_obs.corrects
                            ):  # a correction sent as the difference from the one before (a
                                # chain): what that one stands for, which this loop checks
                                bases.append(cut(base_obs, cap))
                    assert any(apply_echo(b, content) == sent_whole for b in bases), e
            current = (  # a failed correction, or one pointing to a write, shows no copy
                state in (EntryState.FULL, EntryState.CAPPED)
                and not obs.is_error
                and not points_to_call(obs.text)
            )
            then = read_at[obs.step - 1] if obs.corrects else read_at[obs.step]
            if current and stale(obs, then, files):
                lies.append(
                    f"request for step {stored['step']}: step {obs.step}'s {obs.tool} "
                    f"{what(obs)} is labelled {state.value} ({e['reason']!r}), but "
                    f"{'the file' if obs.kind is ObsKind.READ else 'its hits'} changed since"
                )
        shown_whole |= {e["call_id"] for e in entries if e["state"] in ("full", "capped")}
    return lies


def same_call(e: dict[str, Any], entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The entries of results of ``e``'s call, to say what a request carried of it."""
    return [
        (d["call_id"], d["state"], d["superseded_by"], d["reason"])
        for d in entries
        if (d["kind"], d["target"]) == (e["kind"], e["target"])
    ]


def corrected_after(
    obs: Observation, index: int, messages: Any, entries: list[dict[str, Any]]
) -> bool:
    """Whether a copy out of date, sent at ``messages[index]``, is followed in the same request
    by a correction of a result of that file (or of that call), or by a later result of it."""
    target = f"'s {obs.kind.value} of {obs.target}"
    later = messages[index + 1 :]
    if any(
        m.content.startswith("[correction of step ") and target in m.content[:200] for m in later
    ):
        return True
    after = {m.tool_call_id for m in later if m.tool_call_id}
    return any(
        e["call_id"] in after and (e["kind"], e["target"]) == (obs.kind.value, obs.target)
        and e["state"] in ("full", "capped", "echoed")
        for e in entries
    )  # fmt: skip


# -- the properties ------------------------------------------------------------------------

CONTRACTS = st.sampled_from(
    [
        {"context": ContextBudget(max_tokens=2_000)},
        {"context": ContextBudget(max_tokens=4_000)},
        {"context": ContextBudget(max_tokens=8_000)},
        {"context": ContextBudget(max_tokens=4_000), "compaction": Compaction(enabled=False)},
        {"context": ContextBudget(max_tokens=16_000), "token_budget": 400_000},  # shrinking
        {"context": ContextBudget(max_tokens=32_000, share=0.1), "token_budget": 300_000},
    ]
)


SLOW = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


class StaleCarried(Exception):
    """A result carried as current after what it shows changed (``check_requests``)."""


def finished(s: Session) -> None:
    assert s.error is None, s.error
    assert s.outcome in (Outcome.FINISHED, Outcome.TOKEN_BUDGET), s.outcome
    note(f"outcome {s.outcome.value}")
    if any(m["memory_keys"] for m in s.manifests):
        note("memory carried")


def no_stale(s: Session) -> None:
    lies = check_requests(s)
    if lies:
        raise StaleCarried(f"{len(lies)} stale entries carried as current, first: {lies[0]}")


@settings(SLOW, max_examples=10)
@given(script=st.booleans().flatmap(sessions), contract=CONTRACTS)
def test_long_runs_never_fail_and_every_manifest_tells_the_truth(script, contract) -> None:
    """Staleness from any cause is checked by the tests below."""
    s = run_session(script, **contract)
    finished(s)
    check_requests(s)


def test_one_long_session_takes_every_path_the_properties_check() -> None:
    """What the generated sessions go through, shown on one: memory carried, stubs collapsed,
    steps folded into a summary, results capped under a shrinking ceiling, reads out of date
    corrected, reruns sent as their difference, and a memory-block rebuilt every request (the
    encoder's KeyError)."""
    calls = [call("remember", key="k", value="the tests run with pytest")]
    for n in range(2, 120):
        match n % 6:
            case 0:
                calls.append(call("edit_file", path="a.py", old="VERSION-", new=f"VERSION-e{n}-"))
            case 1:  # the same command each time, its output changed by the edits between
                line = "print('same line\\n' * 150 + open('a.py').readline())"
                calls.append(call("run_command", argv=[PY, "-c", line]))
            case 2:
                calls.append(call("remember", key=f"k{n % 4}", value="fact " * 50))
            case _:
                calls.append(call("read_file", path=FILES[n % 4]))
    turns: list[dict[str, Any]] = [{"tool_calls": [c]} for c in calls]
    # a read whose turn says more than a stub keeps: its step stays when the read is superseded
    turns[8]["text"] = "Reading it again, to check what the last edit left in place. " * 3
    turns.append({"text": "done"})
    s = run_session(
        {"model": "scripted", "turns": turns},
        context=ContextBudget(max_tokens=16_000, share=0.01),  # shrinks from early on
        token_budget=900_000,
    )
    finished(s)
    assert s.outcome is Outcome.FINISHED and len(s.manifests) == 120
    states = {e["state"] for m in s.manifests for e in m["entries"]}
    every = {
        "full",
        "capped",
        "echoed",
        "superseded",
        "dropped",
        "corrected",
        "collapsed",
        "summary",
    }
    assert states >= every
    assert sum(bool(m["memory_keys"]) for m in s.manifests) > len(s.manifests) // 2
    assert len({m["entry_cap_chars"] for m in s.manifests}) > 1  # the ceiling shrank
    check_requests(s)


# -- staleness from any cause (issue 13 item 2) --------------------------------------------


def test_a_read_rewritten_by_a_command_is_not_carried_as_current() -> None:
    rewrite = "import pathlib; pathlib.Path('a.py').write_text('CMD-2\\n')"
    turns = [
        {"tool_calls": [call("read_file", path="a.py")]},
        {"tool_calls": [call("run_command", argv=[PY, "-c", rewrite])]},
        {"tool_calls": [call("list_dir")]},
        {"text": "done"},
    ]
    s = run_session({"model": "scripted", "turns": turns})
    finished(s)
    no_stale(s)


def test_a_grep_whose_hits_an_edit_changed_is_not_carried_as_current() -> None:
    turns = [
        {"tool_calls": [call("grep", pattern="VERSION")]},
        {"tool_calls": [call("edit_file", path="a.py", old="VERSION-", new="VERSION-e2-")]},
        {"tool_calls": [call("list_dir")]},
        {"text": "done"},
    ]
    s = run_session({"model": "scripted", "turns": turns})
    finished(s)
    no_stale(s)


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(SLOW, max_examples=5, derandomize=True, phases=[Phase.generate])
@given(script=sessions(disk_changes=True), contract=CONTRACTS)
def test_no_result_is_labelled_current_after_what_it_shows_changed(script, contract) -> None:
    """Reads, and greps cut to '… N more hits', whose files a command or the disk changed."""
    s = run_session(script, **contract)
    finished(s)
    no_stale(s)
