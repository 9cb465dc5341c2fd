"""The progress ledger folded from what the store holds of a run: its contract, its events in
order, its observations' texts and the model's latest words.

One fold serves the live run (``keeper.py`` feeds it each batch of events as it is stored) and
any run read back from the store (every event, from the first): the same events give the same
ledger. No I/O: the digests of modified files are the keeper's.

What comes from where:
- objective, constraints: the contract; the operator's messages (``operator_message``);
- decisions: ``approval_decided`` (with its ``approval_requested``), ``tool_refused`` (the
  policy's), ``reconciled`` (the operator's choice for a call in flight at a crash);
- modified resources: a write's ``observation`` that did not fail; a ``memory`` write or forget;
- tests and evidence: an ``exec`` result whose command runs tests (``TEST_COMMAND``) or is the
  contract's verification, and the harness's own ``verify``: the latest per command;
- open failures: a failed result with no later success of the same call (tool and target); a
  failed test or verification until a later run of it passes (a passing verification clears
  every test failure); the run's own error when it ended failed;
- active operations: approvals asked and not decided, calls started with no result (in flight
  at a crash), the sub-agent run a call waits on;
- remaining work and the next safe action: derived from all of the above and the run's status.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from io_tui.core.checks import is_test_command
from io_tui.core.contract import TaskContract
from io_tui.core.events import EventKind
from io_tui.core.ledger import content_digest
from io_tui.core.progress.model import (
    Change,
    Constraint,
    DecisionNote,
    Evidence,
    Failure,
    Operation,
    PendingApproval,
    ProgressLedger,
    handle,
)
from io_tui.core.text.endings import ended_line, ending_of
from io_tui.core.text.heads import untrusted_body

_EXIT = re.compile(r"^exit code (-?\d+)$", re.M)
TAIL_CHARS = 400
NOTE_CHARS = 600


def _tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The end of a tool's output, at most ``limit``: its untrusted-data header left off, and a
    command's own first lines (``$ argv``, its exit status), which the ledger says already."""
    body = untrusted_body(text)
    if body.startswith("$ "):
        body = body.split("\n", 2)[-1] if body.count("\n") >= 2 else ""
        if body.startswith(("[sandboxed", "[not sandboxed")):  # whether it ran sandboxed
            body = body.partition("\n")[2]
    body = body.strip()
    return body if len(body) <= limit else "…" + body[-limit:]


def _first_line(text: str, limit: int = 200) -> str:
    body = untrusted_body(text)
    line = next((x.strip() for x in body.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class _Call:
    step: int
    name: str
    arguments: dict[str, Any]
    approval: int | None = None


@dataclass
class Fold:
    """The ledger of one run, folded event by event (``apply``); ``ledger()`` reads it."""

    run_id: int
    contract: TaskContract
    texts: dict[str, str] = field(default_factory=dict)  # call id → its observation's text
    step: int = 0
    status: str = "running"
    outcome: str | None = None
    error: str | None = None
    operator: list[Constraint] = field(default_factory=list)
    decisions: list[DecisionNote] = field(default_factory=list)
    changes: dict[str, Change] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    failures: dict[tuple[str, str], Failure] = field(default_factory=dict)
    calls: dict[str, _Call] = field(default_factory=dict)  # started, no result yet
    asked: dict[int, PendingApproval] = field(default_factory=dict)
    sub_agents: dict[str, int] = field(default_factory=dict)  # call id → child run
    refused: set[str] = field(default_factory=set)  # calls the policy or operator refused
    model_note: str = ""
    model_step: int = 0
    _current: str | None = None  # the call whose events are coming
    # whether what ``ledger()`` says (``ProgressLedger.says``: all but its step) may have
    # changed since the keeper last cleared it: set by every event but the two a step brings
    # each time (a call started, its result), which set it only when they change the ledger
    moved: bool = True

    def note_model(self, step: int, text: str) -> None:
        """The model's latest words (a step's text), kept as its own."""
        note = text.strip()[:NOTE_CHARS]
        if note and (step, note) != (self.model_step, self.model_note):
            self.model_step, self.model_note = step, note
            self.moved = True

    def apply(self, kind: str, step: int, detail: Mapping[str, Any]) -> None:
        self.step = max(self.step, step)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            if handler not in _SAY_IF_MOVED:
                self.moved = True
            handler(self, step, detail)

    def _live(self) -> bool:
        """A live run's calls without a result are just running: not in the ledger."""
        return self.status in ("running", "asking")

    # -- the handlers, one per event kind --

    def _started(self, step: int, detail: Mapping[str, Any]) -> None:
        self.status, self.outcome, self.error = "running", None, None
        self.failures.pop(("run", ""), None)

    def _finished(self, step: int, detail: Mapping[str, Any]) -> None:
        """The run's end. Only a failure is one to fix: a cancel is the operator's word, an
        interruption a process that stopped, a pause a wait (``plan`` says each its own way)."""
        self.status = str(detail.get("status") or self.status)
        self.outcome = detail.get("outcome")
        self.error = detail.get("error")
        if self.error and self.status == "failed":
            found = ending_of(self.outcome)
            self.failures[("run", "")] = Failure(
                f"run {self.run_id} ({found.word if found else self.outcome})",
                step,
                f"run {self.run_id}",
                str(self.error)[:TAIL_CHARS],
            )

    def _operator(self, step: int, detail: Mapping[str, Any]) -> None:
        text = str(detail.get("text", "")).strip()
        if text:
            self.operator.append(Constraint(text, "operator", step))

    def _called(self, step: int, detail: Mapping[str, Any]) -> None:
        call_id = str(detail.get("call_id"))
        self.calls[call_id] = _Call(
            step, str(detail.get("name")), dict(detail.get("arguments") or {})
        )
        self._current = call_id
        if not self._live() or call_id in self.sub_agents:  # an operation the ledger names
            self.moved = True

    def _asked(self, step: int, detail: Mapping[str, Any]) -> None:
        approval = int(detail["approval_id"])
        self.asked[approval] = PendingApproval(
            approval,
            step,
            str(detail.get("act", "")),
            str(detail.get("target", "")),
            str(detail.get("rule", "")),
            str(detail.get("layer", "")),
        )
        if self._current in self.calls:
            self.calls[self._current].approval = approval

    def _decided(self, step: int, detail: Mapping[str, Any]) -> None:
        approval = int(detail["approval_id"])
        decision = str(detail.get("decision"))
        if decision == "defer":
            return  # still pending: the run pauses on it
        asked = self.asked.pop(approval, None)
        what = f"approval {approval}"
        if asked is not None:
            what += f": {asked.act} {asked.target}"
        call = next((c for c, v in self.calls.items() if v.approval == approval), "")
        if decision == "deny" and call:
            self.refused.add(call)
        ref = handle(self.run_id, asked.step if asked else step, call) if call else what
        self.decisions.append(
            DecisionNote(step, what, decision, "operator", str(detail.get("reason") or ""), ref)
        )

    def _refused(self, step: int, detail: Mapping[str, Any]) -> None:
        call_id = str(detail.get("call_id", ""))
        self.refused.add(call_id)
        rule = f"rule '{detail.get('rule')}' in layer '{detail.get('layer')}'"
        self.decisions.append(
            DecisionNote(
                step,
                f"{detail.get('act')} {detail.get('target')}",
                "deny",
                "policy",
                rule,
                handle(self.run_id, step, call_id),
            )
        )

    def _reconciled(self, step: int, detail: Mapping[str, Any]) -> None:
        call_id = str(detail.get("call_id", ""))
        self.decisions.append(
            DecisionNote(
                step,
                f"{detail.get('tool')} call {call_id}, in flight at a crash",
                str(detail.get("choice")),
                "operator",
                "reconciled on resume",
                handle(self.run_id, step, call_id),
            )
        )

    def _sub_agent(self, step: int, detail: Mapping[str, Any]) -> None:
        self.sub_agents[str(detail.get("call_id"))] = int(detail["run_id"])

    def _memory(self, step: int, detail: Mapping[str, Any]) -> None:
        op = detail.get("op")
        if op not in ("write", "forget"):
            return
        resource = f"memory note {detail.get('key')} ({detail.get('scope', 'workspace')})"
        value = str(detail.get("value", "")) if op == "write" else ""
        digest = content_digest(value.encode()) if op == "write" else ""
        self.changes.pop(resource, None)
        ref = handle(self.run_id, step, self._current or "")
        self.changes[resource] = Change(
            resource, "remember" if op == "write" else "forget", step, ref, digest
        )

    def _observed(self, step: int, detail: Mapping[str, Any]) -> None:
        call_id = str(detail.get("call_id"))
        call = self.calls.pop(call_id, None)
        if call_id in self.sub_agents or (call is not None and not self._live()):
            self.moved = True  # an operation the ledger named has ended
        self.sub_agents.pop(call_id, None)
        name = str(detail.get("name"))
        kind = str(detail.get("kind"))
        target = str(detail.get("target"))
        failed = bool(detail.get("is_error"))
        ref = handle(self.run_id, call.step if call else step, call_id)
        text = self.texts.get(call_id, "")
        if kind == "exec" and (is_test_command(target) or self._is_verify(call)):
            self.moved = True
            code = _EXIT.search(text)
            self.evidence.pop(target, None)
            self.evidence[target] = Evidence(
                f"`{target}`",
                step,
                ref,
                not failed,
                int(code.group(1)) if code else None,
                _tail(text) if failed else "",
            )
        key = (name, target)
        if not failed:
            if self.failures.pop(key, None) is not None:
                self.moved = True
            if kind == "write":
                self.changes.pop(target, None)
                self.changes[target] = Change(target, name, step, ref)
                self.moved = True
            return
        if call_id in self.refused:
            return  # a decision, not a failure: it is under decisions
        self.moved = True
        detail_text = _tail(text) if kind == "exec" else _first_line(text)
        what = f"`{target}`" if kind == "exec" else f"{name} {target}"
        self.failures.pop(key, None)
        self.failures[key] = Failure(what, step, ref, detail_text)

    def _verified(self, step: int, detail: Mapping[str, Any]) -> None:
        argv = shlex.join(str(a) for a in detail.get("argv") or ())
        passed = bool(detail.get("passed"))
        ref = handle(self.run_id, step, "verify")
        tail = "" if passed else _tail(str(detail.get("output_tail", "")))
        self.evidence.pop(f"verify:{argv}", None)
        self.evidence[f"verify:{argv}"] = Evidence(
            f"verification `{argv}`", step, ref, passed, detail.get("exit_code"), tail
        )
        if passed:  # the contract's check passes: the test failures before it are behind the run
            line = shlex.join(self.contract.verify or ())
            for key in [
                k
                for k in self.failures
                if k[0] == "verify" or k[1] == line or is_test_command(k[1])
            ]:
                del self.failures[key]
        else:
            self.failures[("verify", argv)] = Failure(f"verification `{argv}`", step, ref, tail)

    def _is_verify(self, call: _Call | None) -> bool:
        verify = self.contract.verify
        return (
            bool(verify)
            and call is not None
            and list(call.arguments.get("argv") or ()) == list(verify or ())
        )

    # -- reading --

    def ledger(self) -> ProgressLedger:
        contract = self.contract
        constraints = tuple(Constraint(c, "contract") for c in contract.constraints)
        operations = [
            Operation("approval", str(a.id), f"{a.act} {a.target}", a.step)
            for a in self.asked.values()
        ]
        waiting = {c: r for c, r in self.sub_agents.items() if c in self.calls}
        operations += [
            Operation(
                "sub_agent", str(run), f"run {run} carries call {call}", self.calls[call].step
            )
            for call, run in waiting.items()
        ]
        in_flight = [  # started, its approval (if any) decided, no result
            (call_id, c)
            for call_id, c in self.calls.items()
            if c.approval not in self.asked and call_id not in waiting
        ]
        if self.status not in ("running", "asking"):  # a live run's calls are just running
            operations += [
                Operation(
                    "call", handle(self.run_id, c.step, call_id), f"{c.name} with no result", c.step
                )
                for call_id, c in in_flight
            ]
        base = ProgressLedger(
            run_id=self.run_id,
            objective=contract.goal,
            step=self.step,
            status=self.status,
            outcome=self.outcome,
            constraints=constraints + tuple(self.operator),
            decisions=tuple(self.decisions),
            changes=tuple(self.changes.values()),
            evidence=tuple(self.evidence.values()),
            failures=tuple(self.failures.values()),
            operations=tuple(operations),
            approvals=tuple(self.asked.values()),
            model_note=self.model_note,
            model_step=self.model_step,
            verify=tuple(contract.verify or ()),
        )
        remaining, action = plan(base, self.error)
        return replace(base, remaining=remaining, next_action=action)


def plan(ledger: ProgressLedger, error: str | None = None) -> tuple[tuple[str, ...], str]:
    """What is left to do, and the next action that is safe to take, from the ledger's facts:
    what waits on the operator first (the run is blocked on it), then a call whose effect is
    unknown, then what is broken, then the contract's check; last, what the run's ending
    leaves (``endings``: a verified run none, a cancel its own words; ``error`` the run's)."""
    run = ledger.run_id
    remaining: list[str] = []
    actions: list[str] = []
    for a in ledger.approvals:
        remaining.append(f"approval {a.id} ({a.act} {a.target}) waits for the operator")
        actions.append(
            f"the operator decides approval {a.id} ({a.act} {a.target}) with"
            f" `io-tui decide {a.id} approve|deny`; do not attempt that action again until then"
        )
    for op in ledger.operations:
        if op.kind == "call":
            remaining.append(f"{op.id}: {op.what}, in flight when its process died")
            actions.append(
                f"reconcile {op.id} (`io-tui resume {run} --reconcile rerun|done|skip`): check"
                " whether it took effect before relying on it"
            )
        elif op.kind == "sub_agent":
            remaining.append(f"sub-agent run {op.id} has not ended")
            actions.append(f"resume sub-agent run {op.id} (`io-tui resume {op.id}`)")
    for f in ledger.failures:
        remaining.append(f"fix: {f.what} failed at step {f.step} [{f.ref}]")
    if ledger.failures:
        newest = ledger.failures[-1]
        actions.append(f"read why {newest.what} failed [{newest.ref}], fix it, then run it again")
    checks = [e for e in ledger.evidence if e.what.startswith("verification")]
    if ledger.verify and not (checks and checks[-1].passed):
        check = " ".join(ledger.verify)
        remaining.append(f"verification `{check}` has not passed yet")
        actions.append(f"run `{check}` and make it pass")
    if remaining:
        return tuple(remaining), actions[0]
    if ledger.status in ("running", "asking"):
        return (), "go on with the objective"
    ending = ending_of(ledger.outcome)
    if ending is not None and ending.met:
        return (), "none needed: the objective is met; review the modified resources"
    if ledger.outcome == "finished":  # the model's word, with no check to stand behind it
        return (
            (f"unverified: run {run} {ending.says if ending else 'finished'}",),
            "review the modified resources: no verification checked the objective",
        )
    says = ended_line(ledger.status, ledger.outcome, error).split(" ", 1)[-1]
    if ending is None:
        unknown = ledger.outcome and ledger.outcome != ledger.status
        says = f"ended {ledger.status}" + (f" ({ledger.outcome})" if unknown else "")
    return (
        (f"the objective is not met: run {run} {says}",),
        "go on with the objective from the modified resources and the evidence above",
    )


def _bind() -> dict[str, Any]:
    return {
        EventKind.RUN_STARTED.value: Fold._started,
        EventKind.RUN_RESUMED.value: Fold._started,
        EventKind.RUN_FINISHED.value: Fold._finished,
        EventKind.OPERATOR_MESSAGE.value: Fold._operator,
        EventKind.TOOL_CALLED.value: Fold._called,
        EventKind.APPROVAL_REQUESTED.value: Fold._asked,
        EventKind.APPROVAL_DECIDED.value: Fold._decided,
        EventKind.TOOL_REFUSED.value: Fold._refused,
        EventKind.RECONCILED.value: Fold._reconciled,
        EventKind.SUB_AGENT.value: Fold._sub_agent,
        EventKind.MEMORY.value: Fold._memory,
        EventKind.OBSERVATION.value: Fold._observed,
        EventKind.VERIFY.value: Fold._verified,
    }


_HANDLERS = _bind()
# the handlers that set ``moved`` themselves, only when what the ledger says changes
_SAY_IF_MOVED = frozenset({Fold._called, Fold._observed})
