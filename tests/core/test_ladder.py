"""The degradation ladder through the run loop (``start_run``, a real SQLite store, real tools,
the default policy that asks before every write and command) over generated sessions: several
calls a step, long reads and command output, writes and commands the operator approves or
denies, under small ceilings, with the server refusing generated requests as too long (DESIGN
§3.2, issue 18 item 4).

Whatever the session: no request ever separates a tool call from its result, nor an asked call
from the result that carries the operator's decision; every manifest names the rung it reached,
and the rungs a step climbs go in ladder order; a run the ladder cannot save stops safely, with
``state_not_preserved``, before any call of that step runs.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.control import currently_in_test_context, event

from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.context.ladder import Rung
from io_tui.core.context.manifest import EntryState
from io_tui.core.contract import Compaction, ContextBudget, TaskContract
from io_tui.core.providers.base import CompletionRequest, ErrorKind, ProviderError, StreamEvent
from io_tui.core.providers.messages import Message
from io_tui.core.providers.scripted import Script, ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.store import Store

PY = sys.executable
FILES = ("a.py", "b.py", "src/c.py")
DENIED = "The operator denied"


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


@st.composite
def steps(draw: st.DrawFn, n: int) -> list[dict[str, Any]]:
    """One to four calls; a write or a command is asked, and denied when its id ends ``-deny``."""
    calls = []
    for i in range(draw(st.integers(1, 4))):
        asked = "-deny" if draw(st.booleans()) else "-ok"
        path = draw(st.sampled_from(FILES))
        match draw(st.sampled_from(["read", "read", "write", "command", "list"])):
            case "read":
                calls.append(call(f"c{n}.{i}", "read_file", path=path))
            case "write":
                lines = draw(st.sampled_from([1, 40, 400]))
                body = "".join(f"v{n} line {k}\n" for k in range(lines))
                calls.append(call(f"c{n}.{i}{asked}", "write_file", path=path, content=body))
            case "command":
                chars = draw(st.sampled_from([20, 3_000, 20_000]))
                argv = [PY, "-c", f"print('o{n} ' * {chars // 4})"]
                calls.append(call(f"c{n}.{i}{asked}", "run_command", argv=argv))
            case _:
                calls.append(call(f"c{n}.{i}", "list_dir", path="."))
    return calls


@st.composite
def sessions(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(10, 45))
    turns: list[dict[str, Any]] = [
        {
            "text": draw(st.sampled_from(["", f"step {n}", "weighing the options " * 40])),
            "tool_calls": draw(steps(n)),
        }
        for n in range(1, count + 1)
    ]
    turns.append({"text": "done"})
    # the working requests the server refuses as too long, once there is history to compact:
    # now and then, and at most once a run of two (the emergency compaction answered) or three
    # (one step's every rung)
    refused = set(draw(st.sets(st.integers(8, count + 10), max_size=4)))
    first, length = draw(st.integers(8, count)), draw(st.sampled_from([0, 2, 2, 3]))
    refused |= set(range(first, first + length))
    return {"script": {"model": "scripted", "turns": turns}, "refused": refused}


CONTRACTS = st.sampled_from(  # ceilings above the frame (~2,400 tokens): else an overflow
    [  # is refused as the frame's (context_overflow), which no rung shortens
        {"context": ContextBudget(max_tokens=3_000)},
        {"context": ContextBudget(max_tokens=4_000)},
        {"context": ContextBudget(max_tokens=8_000)},
        {"context": ContextBudget(max_tokens=3_500), "compaction": Compaction(enabled=False)},
    ]
)


class ByCallId:
    """Approves an asked call unless its id says ``-deny``."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.call_id.endswith("-deny"):
            return Decision.deny("not this one")
        return Decision.approve()


class Refusing(ScriptedProvider):
    """The scripted provider; the ``refused`` working requests (counted from 1) overflow. Keeps
    every working request as received."""

    def __init__(self, script: Script, refused: set[int]) -> None:
        super().__init__(script)
        self.refused = refused
        self.seen: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose == "work":
            self.seen.append(request)
            if len(self.seen) in self.refused:
                raise ProviderError(ErrorKind.CONTEXT_OVERFLOW, "prompt is too long", status=400)
        async for event_ in super().stream(request):
            yield event_


@dataclass
class Session:
    outcome: Outcome
    error: str | None
    seen: list[CompletionRequest]
    requests: list[Any]  # the stored working requests, in order
    history: list[Any]


async def drive(tmp: Path, session: dict[str, Any], contract_kw: dict[str, Any]) -> Session:
    root = tmp / "ws"
    (root / "src").mkdir(parents=True)
    for path in FILES:
        (root / path).write_text("".join(f"{path} line {k}\n" for k in range(120)))
    script = Script.model_validate(session["script"])
    provider = Refusing(script, session["refused"])
    async with await Store.open(tmp / "store.db") as store:
        harness = Harness(store=store, provider=provider, approver=ByCallId())
        turns = len(session["script"]["turns"])
        result = await start_run(
            harness, TaskContract("ladder", root, max_steps=turns + 1, **contract_kw)
        )
        rows = [r for r in await store.trace.requests(result.run_id) if r.purpose == "work"]
        history = await store.runs.history(result.run_id)
    return Session(result.outcome, result.error, provider.seen, rows, history)


def run_session(session: dict[str, Any], **contract_kw: Any) -> Session:
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(drive(Path(tmp), session, contract_kw))


def note(what: str) -> None:
    if currently_in_test_context():
        event(what)


# -- the properties ------------------------------------------------------------------------


def pairs_whole(messages: tuple[Message, ...]) -> None:
    """Every call is answered by its own tool message right after the turn that made it, in
    order; no tool message without its call; an asked and denied call's answer says so."""
    index = 0
    while index < len(messages):
        msg = messages[index]
        assert msg.role != "tool", f"message {index}: a tool result without its call: {msg}"
        index += 1
        if msg.role != "assistant" or not msg.tool_calls:
            continue
        answers = messages[index : index + len(msg.tool_calls)]
        assert [(a.role, a.tool_call_id) for a in answers] == [
            ("tool", c.id) for c in msg.tool_calls
        ], f"message {index - 1}: its calls are not each answered right after it"
        for c, answer in zip(msg.tool_calls, answers, strict=True):
            if c.id.endswith("-deny"):
                assert DENIED in answer.content, (c.id, answer.content)
        index += len(answers)


def rungs_in_order(s: Session) -> None:
    """Each stored manifest names a rung that its entries bear out, and a step's attempts
    climb the ladder: never back down."""
    by_step: dict[int, list[Rung]] = {}
    for row in s.requests:
        manifest = row.manifest
        rung = Rung(manifest["rung"])
        note(f"rung {rung.value}")
        states = {EntryState(e["state"]) for e in manifest["entries"]}
        if EntryState.COLLAPSED in states:
            assert rung.order >= Rung.DROPPED.order, (row.step, rung, states)
        if manifest["summary_through"] is not None:
            assert rung.order >= Rung.SUMMARY.order, (row.step, rung)
        if EntryState.CAPPED in states:
            assert rung.order >= Rung.CAPPED.order, (row.step, rung)
        if states <= {EntryState.FULL} and manifest["summary_through"] is None:
            assert rung in (Rung.WHOLE, Rung.EMERGENCY, Rung.STOPPED), (row.step, rung)
        by_step.setdefault(row.step, []).append(rung)
    for step, climbed in by_step.items():
        orders = [r.order for r in climbed]
        assert orders == sorted(orders), (step, climbed)
        assert (Rung.STOPPED in climbed) == (climbed[-1] is Rung.STOPPED), (step, climbed)


def stopped_safely(s: Session) -> None:
    if s.outcome is not Outcome.STATE_NOT_PRESERVED:
        assert s.outcome in (Outcome.FINISHED, Outcome.DENIED), (s.outcome, s.error)
        assert all(r.manifest["rung"] != "stopped" for r in s.requests)
        return
    note("stopped safely")
    assert s.error and "the required state could not be preserved" in s.error
    last = s.requests[-1]
    assert last.manifest["rung"] == "stopped" and last.attempt == 3
    assert [r.attempt for r in s.requests if r.step == last.step] == [1, 2, 3]
    final = s.history[-1]
    assert final.step == last.step and not final.tool_calls and not final.observations


SLOW = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=25)


@SLOW
@given(session=sessions(), contract=CONTRACTS)
def test_no_request_ever_splits_a_pair_and_the_ladder_is_climbed_in_order(
    session, contract
) -> None:
    s = run_session(session, **contract)
    assert len(s.seen) <= len(s.requests)  # a refusal unchanged by a rung is not sent
    for request in s.seen:
        pairs_whole(request.messages)
    rungs_in_order(s)
    stopped_safely(s)


# -- one session each, deterministic ---------------------------------------------------------


def test_one_session_climbs_to_the_last_rung() -> None:
    """A big command output (capped), a long history (summary), then the server refusing a
    step's first two requests (emergency) and later all three (stopped)."""
    turns: list[dict[str, Any]] = [{"tool_calls": [call("c1", "list_dir", path=".")]}]
    turns.append(
        {"tool_calls": [call("c2-ok", "run_command", argv=[PY, "-c", "print('o ' * 9000)"])]}
    )
    turns += [
        {"text": "again " * 30, "tool_calls": [call(f"c{n}", "read_file", path=FILES[n % 3])]}
        for n in range(3, 40)
    ]
    turns.append({"text": "done"})
    s = run_session(
        {"script": {"model": "scripted", "turns": turns}, "refused": {30, 31, 36, 37, 38}},
        context=ContextBudget(max_tokens=4_000),
    )
    reached = {Rung(row.manifest["rung"]) for row in s.requests}
    assert reached >= {Rung.WHOLE, Rung.CAPPED, Rung.SUMMARY, Rung.EMERGENCY, Rung.STOPPED}
    assert s.outcome is Outcome.STATE_NOT_PRESERVED
    rungs_in_order(s)
    stopped_safely(s)


def test_a_denied_call_keeps_its_decision_until_it_goes_with_it() -> None:
    """A denied write, then range reads (none covering another, so nothing supersedes and the
    window moves on), compaction off: the denial is sent whole, then as a stub that keeps the
    decision, then collapsed with its call."""
    write = call("c1-deny", "write_file", path="a.py", content="x\n")
    turns: list[dict[str, Any]] = [{"tool_calls": [write]}]
    turns += [
        {"tool_calls": [call(f"c{n}", "read_file", path=FILES[n % 3], offset=n, limit=40)]}
        for n in range(2, 60)
    ]
    turns.append({"text": "done"})
    s = run_session(
        {"script": {"model": "scripted", "turns": turns}, "refused": set()},
        context=ContextBudget(max_tokens=6_000),
        compaction=Compaction(enabled=False),
    )
    assert s.outcome is Outcome.FINISHED, s.error
    for request in s.seen:
        pairs_whole(request.messages)
    reached = {Rung(row.manifest["rung"]) for row in s.requests}
    assert reached >= {Rung.WHOLE, Rung.REFERENCED, Rung.DROPPED}
    answers = [m.content for r in s.seen for m in r.messages if m.tool_call_id == "c1-deny"]
    stubs = [a for a in answers if a.startswith("[step 1 write_file") and "elided" in a]
    assert answers[0].startswith(DENIED) and stubs  # sent whole, then as its stub
    assert all(f"{DENIED} write a.py: not this one." in a for a in answers)
    assert all(f"Kept: {DENIED}" in a for a in stubs)  # the decision, never "call it again"
    carried = [any(c.id == "c1-deny" for m in r.messages for c in m.tool_calls) for r in s.seen]
    assert carried[1] and not carried[-1]  # the call went with its answer (pairs_whole)
