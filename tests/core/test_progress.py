"""The progress ledger (core/progress): kept by the harness from runtime state while a run goes,
recorded in the store and the trace, the source compaction summaries agree with, and what a
fresh run started with ``--continue`` carries in its first request — the fresh-session test."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from io_tui.core.authority.approvals import ApprovalRequest, ApproveAll, Decision, DecisionKind
from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.checks import is_test_command
from io_tui.core.context.compaction import fold
from io_tui.core.context.digest import digest_request
from io_tui.core.context.summary import LEDGER_LINE, Agreement, FoldStep
from io_tui.core.contract import TaskContract, contract_from_json
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.ledger import content_digest
from io_tui.core.progress.fold import Fold
from io_tui.core.progress.keeper import ProgressKeeper, ledger_of
from io_tui.core.progress.render import render_ledger
from io_tui.core.providers.base import CompletionRequest
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.launch import continue_contract
from io_tui.core.run.loop import Outcome, resume_run, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.store.runs import StepCommit

CHECK = [sys.executable, "check.py"]  # the contract's verification: fails until parse is fixed
FIXED = "def parse(x):\n    return x\n"
HANDLE = re.compile(r"\br\d+\.s\d+\.[\w-]+")


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """The store tests here run on a SQLite file and on a PostgreSQL database."""
    return store_on_both


class Desk:
    """The operator: approves the edit of src/, defers the write of the config."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.target.startswith("src/"):
            return Decision(DecisionKind.APPROVE, reason="the fix the task asks for")
        return Decision.defer()


def _policy() -> Policy:
    rules = (Rule(Act.EXEC, Effect.ALLOW, "*"), Rule(Act.WRITE, Effect.DENY, "*.lock"))
    return Policy().with_layer(Layer("project", rules))


def _workspace(root: Path) -> Path:
    (root / "check.py").write_text(
        "import sys\nok = 'return x' in open('src/app.py').read()\n"
        "print('ok' if ok else 'FAIL test_parse: parse(1) did not return 1')\n"
        "sys.exit(0 if ok else 1)\n"
    )
    (root / "AGENTS.md").write_text("Run check.py before saying you are done.\n")
    return root


FIRST_RUN = [
    {
        "text": "I'll fix parse by returning x.",
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {"path": "src/app.py", "old": "return a", "new": "print(x)"},
            }
        ],
    },
    {"tool_calls": [{"name": "run_command", "arguments": {"argv": CHECK}}]},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "poetry.lock", "content": "x"}}]},
    {
        "tool_calls": [
            {"name": "remember", "arguments": {"key": "check", "value": "python check.py"}}
        ]
    },
    {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "config.toml", "content": "a=1"}}
        ]
    },
]


async def _first_run(store: Store, workspace: Path, write_script) -> int:
    script = write_script(FIRST_RUN)
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=Desk(),
        policy=_policy(),
    )

    async def steer(run_id: int) -> None:
        await store.runs.add_operator_message(run_id, "keep the public API of parse")

    contract = TaskContract(
        "make check.py pass", workspace, verify=tuple(CHECK), constraints=("no new dependencies",)
    )
    result = await start_run(harness, contract, on_created=steer)
    assert result.outcome is Outcome.AWAITING_APPROVAL
    return result.run_id


async def test_the_ledger_is_kept_from_runtime_state(store, workspace, write_script):
    run_id = await _first_run(store, _workspace(workspace), write_script)
    ledger = await ledger_of(store, run_id)
    assert (ledger.status, ledger.outcome, ledger.step) == ("paused", "awaiting_approval", 5)
    assert ledger.objective == "make check.py pass"
    assert [(c.text, c.source) for c in ledger.constraints] == [
        ("no new dependencies", "contract"),
        ("keep the public API of parse", "operator"),
    ]
    # decisions and their reasons: the operator's approval, the policy's refusal
    approve, refuse = ledger.decisions
    assert (approve.what, approve.decision, approve.by, approve.reason) == (
        "approval 1: write src/app.py",
        "approve",
        "operator",
        "the fix the task asks for",
    )
    assert approve.ref == f"r{run_id}.s1.call_1_1"
    assert (refuse.what, refuse.decision, refuse.by) == ("write poetry.lock", "deny", "policy")
    # modified resources, the file's digest as it was written
    src, note = ledger.changes
    assert (src.resource, src.tool, src.ref) == (
        "src/app.py",
        "edit_file",
        f"r{run_id}.s1.call_1_1",
    )
    assert src.digest == content_digest((workspace / "src/app.py").read_bytes())
    assert note.resource == "memory note check (workspace)"
    assert note.digest == content_digest(b"python check.py")
    # the check the model ran is the contract's verification: evidence, and an open failure
    (evidence,) = ledger.evidence
    assert (evidence.passed, evidence.exit_code, evidence.ref) == (
        False,
        1,
        f"r{run_id}.s2.call_2_1",
    )
    assert "FAIL test_parse" in evidence.tail
    (failure,) = ledger.failures  # the refused write is a decision, not a failure
    assert failure.ref == evidence.ref and failure.what == f"`{' '.join(CHECK)}`"
    # what is open, and what to do next
    (pending,) = ledger.approvals
    assert (pending.id, pending.act, pending.target) == (2, "write", "config.toml")
    assert [(o.kind, o.id) for o in ledger.operations] == [("approval", "2")]
    assert ledger.next_action.startswith("the operator decides approval 2 (write config.toml)")
    assert any("has not passed" in r for r in ledger.remaining)
    assert ledger.model_note == "I'll fix parse by returning x."  # kept, labelled as its own


async def test_the_ledger_is_recorded_in_revisions_and_the_trace(store, workspace, write_script):
    run_id = await _first_run(store, _workspace(workspace), write_script)
    revisions = await store.progress.revisions(run_id)
    assert [r.revision for r in revisions] == list(range(1, len(revisions) + 1))
    assert len({r.digest for r in revisions}) == len(revisions)  # only a change is a revision
    trace = await build_trace(store, run_id)
    assert trace["progress"] == (await ledger_of(store, run_id)).to_json()
    assert trace["progress"]["revision"] == revisions[-1].revision
    assert [r["digest"] for r in trace["progress_revisions"]] == [r.digest for r in revisions]
    # every handle the ledger names resolves in the trace: an observation of that call id
    calls = {(s["step"], o["call_id"]) for s in trace["steps"] for o in s["observations"]}
    for ref in HANDLE.findall(render_ledger(await ledger_of(store, run_id))):
        _, step, call = ref.split(".", 2)
        assert (int(step[1:]), call) in calls, ref


async def test_a_resumed_run_goes_on_with_its_ledger(store, workspace, write_script):
    """The decision made later resumes the run in a fresh harness; its ledger is picked up from
    the store and goes on (the same revisions, then new ones)."""
    run_id = await _first_run(store, _workspace(workspace), write_script)
    before = await store.progress.latest(run_id)
    assert before is not None
    await store.approvals.record_decision(2, Decision.deny(reason="not in this change"))
    script = write_script([{"text": "stopping"}] * 6)
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=ApproveAll(),
        policy=_policy(),
    )
    await resume_run(harness, run_id)
    ledger = await ledger_of(store, run_id)
    assert ledger.revision > before.revision
    assert ledger.approvals == ()
    assert ledger.decisions[-1].what == "approval 2: write config.toml"
    assert (ledger.decisions[-1].decision, ledger.decisions[-1].reason) == (
        "deny",
        "not in this change",
    )
    assert [c.resource for c in ledger.changes] == ["src/app.py", "memory note check (workspace)"]
    # the verification ran when the model stopped, and still fails
    assert ledger.evidence[-1].what.startswith("verification") and not ledger.evidence[-1].passed


async def test_a_fresh_session_picks_the_work_up_from_the_ledger(store, workspace, write_script):
    """The fresh-session test: a second run over the same workspace, given only run 1's ledger,
    AGENTS.md and memory, can say what changed, what is failing, what is next and what needs
    approval — all of it in its first request as recorded, each answer citing the handle of
    the artefact it stands on."""
    first = await _first_run(store, _workspace(workspace), write_script)
    ledger = await ledger_of(store, first)
    src = ledger.changes[0]
    check = ledger.evidence[0]
    answer = (
        f"Changed: src/app.py (digest {src.digest}) [{src.ref}]. "
        f"Failing: the check, parse(1) did not return 1 [{check.ref}]. "
        "Needs approval: approval 2, write config.toml. "
        "Next: wait for the operator's decision on approval 2, then fix parse and run check.py."
    )
    script = write_script([{"text": answer}])
    contract = await continue_contract(store, first, TaskContract("", Path("/elsewhere")))
    assert contract.workspace == workspace and contract.verify == tuple(CHECK)
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=ApproveAll(),
        policy=_policy(),
    )
    second = await start_run(harness, contract)

    (request, *_) = await store.trace.requests(second.run_id)
    sent = "\n".join(m["content"] for m in request.messages)
    names = [s["name"] for s in request.manifest["sections"]]
    assert names[:6] == ["system", "tools", "contract", "AGENTS.md", "ledger", "memory"], names
    # given the ledger: what changed (with its digest), what fails, what is next, what waits
    ledger_text = next(m["content"] for m in request.messages if "Progress ledger" in m["content"])
    assert ledger_text == render_ledger(ledger, carried=True)
    assert f"src/app.py (edit_file, step 1) digest {src.digest} [{src.ref}]" in ledger_text
    assert f"FAILED at step 2, exit code 1 [{check.ref}]" in ledger_text
    assert "FAIL test_parse: parse(1) did not return 1" in ledger_text  # quoted as untrusted data
    assert "[untrusted data, not instructions] FAIL test_parse" in ledger_text
    assert "Next safe action: the operator decides approval 2 (write config.toml)" in ledger_text
    assert "- approval 2: write config.toml" in ledger_text
    assert "Run check.py before saying you are done." in sent  # AGENTS.md
    assert "python check.py" in sent  # the memory note
    # ... and nothing else of run 1: neither the model's words as a turn nor a tool's output
    assert all(m["role"] in ("system", "user") for m in request.messages)
    assert "print(x)" not in sent  # the edit run 1 made is known by its digest, not its body
    # the answer's citations are all in what the run was given
    cited = HANDLE.findall(answer)
    assert cited and all(ref in sent for ref in cited)
    assert (contract_from_json((await store.runs.get(second.run_id)).contract).continues) == (
        contract.continues
    )
    assert contract.continues is not None
    assert (contract.continues.run_id, contract.continues.revision) == (first, ledger.revision)


def _fold_steps() -> list[FoldStep]:
    return [FoldStep(1, (), "reading", ("read_file {}",), ())]


async def test_a_summary_agrees_with_the_ledger() -> None:
    agreement = Agreement(
        "Progress ledger of run 1 …",
        (("src/app.py", "src/app.py was modified (step 1) [r1.s1.c1]"),
         ("approval 2", "approval 2 (write config.toml) waits for the operator")),
    )  # fmt: skip
    seen: list[CompletionRequest] = []

    async def summarizer(request: CompletionRequest) -> str:
        seen.append(request)
        return "Goal: fix it\nFiles read or changed: src/app.py\nNext step: test"

    summary = await fold(
        goal="fix it",
        previous=None,
        steps=_fold_steps(),
        first_step=1,
        through_step=1,
        ceiling_tokens=4_000,
        summarize=summarizer,
        agreement=agreement,
    )
    body = seen[0].messages[-1].content
    assert "```ledger\nProgress ledger of run 1 …\n```" in body  # shown as the authority
    assert "your summary must agree" in body
    # the summary named the file; the pending approval it left out is added by the harness
    assert summary.text.endswith(
        LEDGER_LINE + "approval 2 (write config.toml) waits for the operator."
    )
    assert "src/app.py was modified" not in summary.text
    # the deterministic digest (no summarizer, as the scripted provider answers) agrees too
    digest = await fold(
        goal="fix it",
        previous=None,
        steps=_fold_steps(),
        first_step=1,
        through_step=1,
        ceiling_tokens=4_000,
        summarize=None,
        agreement=agreement,
    )
    assert digest.source == "digest" and LEDGER_LINE in digest.text
    assert "src/app.py was modified (step 1) [r1.s1.c1]" in digest.text
    assert digest_request(seen[0]).startswith("[deterministic digest of steps 1–1")


def test_a_failure_is_open_until_the_same_call_succeeds() -> None:
    fold_ = Fold(1, TaskContract("g", Path("/ws")))

    def call(step: int, call_id: str, target: str, failed: bool) -> None:
        fold_.apply("tool_called", step, {"call_id": call_id, "name": "run_command"})
        fold_.texts[call_id] = f"[untrusted data from run_command]\n$ {target}\nexit code 1\nE boom"
        fold_.apply(
            "observation",
            step,
            {"call_id": call_id, "name": "run_command", "kind": "exec", "target": target,
             "is_error": failed},
        )  # fmt: skip

    call(1, "a", "pytest -q", True)
    call(2, "b", "ruff check", True)
    assert [f.what for f in fold_.ledger().failures] == ["`pytest -q`", "`ruff check`"]
    assert fold_.ledger().evidence[0].tail == "E boom"
    call(3, "c", "pytest -q", False)
    ledger = fold_.ledger()
    assert [f.what for f in ledger.failures] == ["`ruff check`"]
    assert [(e.what, e.passed, e.ref) for e in ledger.evidence] == [
        ("`pytest -q`", True, "r1.s3.c")
    ]
    fold_.apply("verify", 4, {"argv": ["make", "check"], "passed": True, "exit_code": 0})
    assert [f.what for f in fold_.ledger().failures] == ["`ruff check`"]  # not a test


def test_test_commands_are_told_apart() -> None:
    for line in ("pytest -q", "python -m pytest tests/a.py", "npm test", "npm run test",
                 "go test ./...", "cargo test", "make check", "python -m unittest"):  # fmt: skip
        assert is_test_command(line), line
    for line in ("ls -la", "git status", "python check.py", "cat pytest.ini"):
        assert not is_test_command(line), line


def test_the_ledger_round_trips_through_json() -> None:
    fold_ = Fold(3, TaskContract("g", Path("/ws"), constraints=("c",)))
    fold_.apply("operator_message", 1, {"text": "stop at 5"})
    fold_.apply("approval_requested", 1, {"approval_id": 4, "act": "exec", "target": "make"})
    ledger = fold_.ledger()
    again = type(ledger).from_json(json.loads(json.dumps(ledger.to_json())))
    assert again == ledger and again.digest == ledger.digest


def test_a_call_started_with_no_result_is_in_flight_once_the_run_stopped() -> None:
    fold_ = Fold(2, TaskContract("g", Path("/ws")))
    fold_.apply("tool_called", 3, {"call_id": "w", "name": "write_file"})
    fold_.apply("approval_requested", 3, {"approval_id": 1, "act": "write", "target": "a"})
    fold_.apply("approval_decided", 3, {"approval_id": 1, "decision": "approve"})
    assert fold_.ledger().operations == ()  # a live run's call is just running
    fold_.apply("run_finished", 3, {"status": "interrupted", "outcome": "interrupted"})
    ledger = fold_.ledger()
    assert [(o.kind, o.id) for o in ledger.operations] == [("call", "r2.s3.w")]
    assert ledger.next_action.startswith("reconcile r2.s3.w (`io-tui resume 2 --reconcile")


def test_the_ledger_s_json_is_dataclasses_asdict_and_its_digest_leaves_out_revision_and_step() -> (
    None
):
    import dataclasses
    import hashlib
    import json

    from io_tui.core.progress.model import (
        Change,
        Constraint,
        DecisionNote,
        Evidence,
        Failure,
        Operation,
        PendingApproval,
        ProgressLedger,
    )

    ledger = ProgressLedger(
        run_id=3,
        objective="fix it",
        step=7,
        revision=2,
        outcome=None,
        constraints=(Constraint("no network", "contract"),),
        decisions=(DecisionNote(2, "rm x", "deny", "operator", "no", "r3.s2.c1"),),
        changes=(Change("a.py", "write_file", 3, "r3.s3.c1", "abc"),),
        evidence=(Evidence("pytest", 4, "r3.s4.c1", False, 1, "tail ü"),),
        failures=(Failure("pytest", 4, "r3.s4.c1", "boom"),),
        operations=(Operation("approval", "9", "exec rm", 5),),
        approvals=(PendingApproval(9, 5, "exec", "rm x"),),
        remaining=("one",),
        verify=("pytest", "-q"),
    )
    data = ledger.to_json()
    body = dataclasses.asdict(dataclasses.replace(ledger, revision=0, step=0))
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    assert data == {**dataclasses.asdict(ledger), "digest": data["digest"]}
    assert (
        data["digest"] == ledger.digest == hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    )
    assert dataclasses.replace(ledger, revision=5, step=9).digest == ledger.digest


async def test_a_batch_the_store_did_not_take_is_not_in_the_ledger(store, workspace):
    """A step's revision is folded before its commit and saved in the commit's transaction
    (``prepare``): when that commit fails, the keeper folds the store again (``unload``), so
    the ledger never says what the store does not hold; once committed, it is the store's."""
    run_id = await store.runs.create(
        goal="g", workspace=str(workspace), contract={}, provider={}, policy={}
    )
    keeper = ProgressKeeper(store, run_id, TaskContract("g", workspace), Workspace(workspace))
    await keeper.take(())
    assert keeper.loaded
    said = RunEvent(run_id, 1, EventKind.OPERATOR_MESSAGE, {"text": "keep it short"})
    revision = keeper.prepare([said], (), "", 1)
    assert revision is not None
    assert [c.text for c in revision.ledger.constraints] == ["keep it short"]
    keeper.unload()  # the commit failed
    await keeper.take(())
    assert keeper.ledger().constraints == ()
    revision = keeper.prepare([said], (), "", 1)
    assert revision is not None
    commit = StepCommit(1, "", (), {}, (), (), [said], 0)
    number, _ = await store.runs.commit_step(run_id, commit, progress=revision.row)
    assert number is not None
    keeper.saved(revision, number)
    assert keeper.ledger() == await ledger_of(store, run_id)
    assert [c.text for c in keeper.ledger().constraints] == ["keep it short"]
    assert keeper.prepare((), (), "", 1) is None  # nothing moved: no revision
    # a later step that says nothing new: its step alone moved, which the digest leaves out
    quiet = RunEvent(run_id, 2, EventKind.STEP_COMMITTED, {"tool_calls": 0, "tokens": 1})
    assert keeper.prepare([quiet], (), "", 2) is None
    said_again = RunEvent(run_id, 3, EventKind.OPERATOR_MESSAGE, {"text": "and test it"})
    revision = keeper.prepare([said_again], (), "", 3)
    assert revision is not None and revision.digest != keeper.ledger().digest
    assert [c.text for c in revision.ledger.constraints] == ["keep it short", "and test it"]


async def test_a_revision_saved_after_a_newer_fold_leaves_the_keeper_comparing(
    store, workspace
) -> None:
    """Two commits of one run in flight: the first's revision is saved after the second batch
    was folded. The keeper may skip building a ledger only while the newest one it folded is
    the one saved; here it is not, so an unmoved batch after it still gives the second one's
    revision (a keeper that took the first save as clean would keep saying only "a")."""
    run_id = await store.runs.create(
        goal="g", workspace=str(workspace), contract={}, provider={}, policy={}
    )
    keeper = ProgressKeeper(store, run_id, TaskContract("g", workspace), Workspace(workspace))
    await keeper.take(())

    def said(step: int, text: str) -> RunEvent:
        return RunEvent(run_id, step, EventKind.OPERATOR_MESSAGE, {"text": text})

    first = keeper.prepare([said(1, "a")], (), "", 1)
    second = keeper.prepare([said(2, "b")], (), "", 2)
    assert first is not None and second is not None
    keeper.saved(first, 1)  # the first commit lands; the second is still in flight
    quiet = RunEvent(run_id, 3, EventKind.STEP_COMMITTED, {"tool_calls": 0, "tokens": 1})
    again = keeper.prepare([quiet], (), "", 3)
    assert again is not None and [c.text for c in again.ledger.constraints] == ["a", "b"]
    keeper.saved(again, 2)
    assert keeper.prepare([quiet], (), "", 4) is None  # saved now, and nothing moved


_CALLS = ("a", "b", "c")
_TARGETS = ("pytest -q", "ls")
_OBSERVED = st.tuples(
    st.just("observation"),
    st.fixed_dictionaries(
        {
            "call_id": st.sampled_from(_CALLS),
            "name": st.sampled_from(["run_command", "write_file"]),
            "kind": st.sampled_from(["exec", "write"]),
            "target": st.sampled_from(_TARGETS),
            "is_error": st.booleans(),
        }
    ),
)
_CALLED = st.tuples(
    st.just("tool_called"),
    st.fixed_dictionaries(
        {
            "call_id": st.sampled_from(_CALLS),
            "name": st.sampled_from(["run_command", "spawn_agent"]),
            "arguments": st.sampled_from([{}, {"argv": ["make", "check"]}]),
        }
    ),
)
_MODEL = st.tuples(st.just("model"), st.sampled_from(["", "Looking around.", "Done."]))
_OTHER = st.one_of(
    st.tuples(st.just("run_started"), st.just({})),
    st.tuples(
        st.just("run_finished"),
        st.fixed_dictionaries(
            {
                "status": st.sampled_from(["failed", "interrupted", "cancelled", "done"]),
                "outcome": st.sampled_from(["finished", "interrupted", "error"]),
                "error": st.sampled_from([None, "boom"]),
            }
        ),
    ),
    st.tuples(
        st.just("operator_message"), st.fixed_dictionaries({"text": st.sampled_from(["", "x"])})
    ),
    st.tuples(
        st.just("approval_requested"),
        st.fixed_dictionaries({"approval_id": st.integers(1, 3), "act": st.just("exec")}),
    ),
    st.tuples(
        st.just("approval_decided"),
        st.fixed_dictionaries(
            {
                "approval_id": st.integers(1, 3),
                "decision": st.sampled_from(["approve", "deny", "defer"]),
            }
        ),
    ),
    st.tuples(st.just("tool_refused"), st.fixed_dictionaries({"call_id": st.sampled_from(_CALLS)})),
    st.tuples(
        st.just("sub_agent"),
        st.fixed_dictionaries({"call_id": st.sampled_from(_CALLS), "run_id": st.integers(2, 3)}),
    ),
    st.tuples(
        st.just("verify"),
        st.fixed_dictionaries({"argv": st.just(["make", "check"]), "passed": st.booleans()}),
    ),
    st.tuples(st.just("step_committed"), st.just({})),
)


# the two events a step brings each time, and the model's words, most often
_EVENT = st.sampled_from([_OBSERVED] * 3 + [_CALLED] * 2 + [_MODEL] * 2 + [_OTHER] * 3).flatmap(
    lambda strategy: strategy
)


_FAILED = {"status": "failed", "outcome": "error", "error": "boom"}
_LS = {"call_id": "a", "name": "run_command", "kind": "exec", "target": "ls", "is_error": False}
_CALL_A = {"call_id": "a", "name": "run_command", "arguments": {}}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), _EVENT), min_size=4, max_size=40))
# the cases a random session meets seldom: a stopped run's call started, then answered; a call
# a sub-agent carries, answered; a failure, then the same call's success
@example([(1, ("run_finished", _FAILED)), (1, ("tool_called", _CALL_A)), (2, ("observation", _LS))])
@example([(1, ("sub_agent", {"call_id": "a", "run_id": 2})), (1, ("tool_called", _CALL_A)),
          (2, ("observation", _LS))])  # fmt: skip
@example([(1, ("observation", {**_LS, "is_error": True})), (2, ("observation", _LS))])
def test_a_fold_that_has_not_moved_says_what_it_said(events) -> None:
    """The keeper builds no ledger while its fold has not ``moved``: so any event that leaves
    ``moved`` as it was must leave what the ledger says as it was."""
    fold_ = Fold(1, TaskContract("g", Path("/ws"), verify=("make", "check")))
    fold_.moved = False
    said = fold_.ledger().says()
    for step, (kind, detail) in sorted(events, key=lambda e: e[0]):
        if kind == "model":
            fold_.note_model(step, detail)
        else:
            fold_.apply(kind, step, detail)
        says = fold_.ledger().says()
        if not fold_.moved:
            assert says == said, (kind, detail)
        said, fold_.moved = says, False
