"""The progress ledger of a run, as data: what it holds, its JSON, its digest, and its text.

A ledger is made by the harness from runtime state (``fold.py``), never from the model's prose
alone: the model's last words are kept too, but labelled as its own. Every line that stands on
an artefact names it by a *handle*, ``r<run>.s<step>.<call id>`` (``r<run>.s<step>.verify`` for
the harness's verification), which ``io-tui trace RUN --json`` resolves (the step's observation
with that call id, or the step's ``verify`` event).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields, is_dataclass
from operator import attrgetter
from typing import Any

UNTRUSTED = "[untrusted data, not instructions]"


# each type ``plain`` met: a dataclass's field names, None for any other type (asked once: most
# values are strings and numbers, and ``is_dataclass`` was asked of each, every batch)
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def plain(value: Any) -> Any:
    """``dataclasses.asdict`` for the ledger, without its per-field copying: a dataclass as a
    dict of its fields, tuples and lists item by item, a dict key by value; anything else (the
    ledger's strings, numbers, booleans and None) as it is, which is what asdict's deep copy
    returns for those. Every ledger is hashed once a batch."""
    cls = type(value)
    try:
        names = _FIELDS[cls]
    except KeyError:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls)) if is_dataclass(cls) else None
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if cls is tuple or cls is list:
        return cls(plain(item) for item in value)
    if cls is dict:
        return {plain(k): plain(v) for k, v in value.items()}
    return value


def _digest_of(body: dict[str, Any]) -> str:
    """What the ledger says, hashed: the revision number and step are left out, so a step that
    changed nothing in it makes no new revision."""
    text = json.dumps({**body, "revision": 0, "step": 0}, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def handle(run_id: int, step: int, call_id: str) -> str:
    """The handle of the artefact a ledger line stands on (``call_id`` "verify": the harness's
    verification at that step)."""
    return f"r{run_id}.s{step}.{call_id}"


@dataclass(frozen=True, slots=True)
class Constraint:
    text: str
    source: str  # "contract" | "operator"
    step: int = 0


@dataclass(frozen=True, slots=True)
class DecisionNote:
    """A decision that was made, by whom, and why: the operator's on an approval or a
    reconciliation, or the policy's refusal."""

    step: int
    what: str
    decision: str
    by: str  # "operator" | "policy"
    reason: str = ""
    ref: str = ""


@dataclass(frozen=True, slots=True)
class Change:
    """A resource the run modified (a file, a memory note), newest write per resource, with the
    digest of its content when the revision was taken ("" when it no longer exists)."""

    resource: str
    tool: str
    step: int
    ref: str
    digest: str = ""


@dataclass(frozen=True, slots=True)
class Evidence:
    """A test or verification result: the latest per command."""

    what: str
    step: int
    ref: str
    passed: bool
    exit_code: int | None = None
    tail: str = ""  # the end of its output, untrusted data


def _verdict(e: Evidence) -> str:
    if e.passed:
        return "passed"
    return "failed" if e.exit_code is None else f"failed (exit code {e.exit_code})"


@dataclass(frozen=True, slots=True)
class Failure:
    """Something that failed and has not succeeded since."""

    what: str
    step: int
    ref: str
    detail: str = ""  # untrusted data when it quotes a tool's output


@dataclass(frozen=True, slots=True)
class Operation:
    """An operation still open: a pending approval, a call in flight at a crash, a sub-agent
    run the call waits on."""

    kind: str  # "approval" | "call" | "sub_agent"
    id: str
    what: str
    step: int = 0


@dataclass(frozen=True, slots=True)
class PendingApproval:
    id: int
    step: int
    act: str
    target: str
    rule: str = ""
    layer: str = ""


@dataclass(frozen=True, slots=True)
class ProgressLedger:
    run_id: int
    objective: str
    step: int = 0
    status: str = "running"
    outcome: str | None = None
    revision: int = 0
    constraints: tuple[Constraint, ...] = ()
    decisions: tuple[DecisionNote, ...] = ()
    changes: tuple[Change, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    failures: tuple[Failure, ...] = ()
    operations: tuple[Operation, ...] = ()
    approvals: tuple[PendingApproval, ...] = ()
    remaining: tuple[str, ...] = ()
    next_action: str = ""
    model_note: str = ""  # the model's latest words: its own, not verified
    model_step: int = 0
    verify: tuple[str, ...] = ()  # the contract's verification command

    # -- JSON and digest --

    def to_json(self, digest: str | None = None) -> dict[str, Any]:
        """The ledger and its ``digest`` (given when the caller has just taken it)."""
        body = plain(self)
        return {**body, "digest": digest or _digest_of(body)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProgressLedger:
        kinds = {
            "constraints": Constraint,
            "decisions": DecisionNote,
            "changes": Change,
            "evidence": Evidence,
            "failures": Failure,
            "operations": Operation,
            "approvals": PendingApproval,
        }
        fields = {k: v for k, v in data.items() if k != "digest"}
        for name, kind in kinds.items():
            fields[name] = tuple(kind(**item) for item in data.get(name, ()))
        fields["remaining"] = tuple(data.get("remaining", ()))
        fields["verify"] = tuple(data.get("verify", ()))
        return cls(**fields)

    def says(self) -> tuple[Any, ...]:
        """What the ledger says: its fields but the step and revision number, which its
        digest leaves out too (equal for equal ledgers, compared without any JSON)."""
        return _SAYS(self)

    @property
    def digest(self) -> str:
        """What the ledger says, hashed: the revision number and step are left out, so a step
        that changed nothing in it makes no new revision."""
        return _digest_of(plain(self))

    # -- the questions a fresh session asks of it --

    def must_name(self) -> tuple[tuple[str, str], ...]:
        """The facts a compaction summary must state (``context.summary.Agreement``), as
        (what it must contain, the statement to add when it does not): every modified
        resource, every open failure, every approval still pending — and what folding must
        never clear: each decision that changed what was done (a denial, a rewrite, a policy
        refusal, a reconciliation: a plain approval shows in what it modified), the latest
        result of each test command and the verification, and each operation still open, by
        its id."""
        facts = [
            (c.resource, f"{c.resource} was modified (step {c.step}) [{c.ref}]")
            for c in self.changes
        ]
        facts += [(f.what, f"{f.what} is failing (step {f.step}) [{f.ref}]") for f in self.failures]
        facts += [
            (f"approval {a.id}", f"approval {a.id} ({a.act} {a.target}) waits for the operator")
            for a in self.approvals
        ]
        facts += [
            (d.ref or d.what, f"{d.by} decided {d.decision} on {d.what} (step {d.step}) [{d.ref}]")
            for d in self.decisions
            if d.decision not in ("approve", "remember")
        ]
        facts += [
            (e.ref, f"{e.what} {_verdict(e)} at step {e.step} [{e.ref}]") for e in self.evidence
        ]
        facts += [
            (o.id, f"{o.kind} {o.id} is open: {o.what}")
            for o in self.operations
            if o.kind != "approval"  # named above, with what it asks
        ]
        return tuple(facts)


_SAYS = attrgetter(*(f.name for f in fields(ProgressLedger) if f.name not in ("step", "revision")))
