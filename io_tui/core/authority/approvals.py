"""Approval requests, the five decisions, and the Approver protocol (DESIGN §3.4)."""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol

from io_tui.core.authority.acts import Act

RuleScope = Literal["run", "workspace", "global"]


def operator(via: str) -> str:
    """Who decides from this process, as a decision records it (``decided_by``) and every other
    cockpit shows it: ``alice@build-3 (io-tui)``."""
    import getpass  # (with termios) for who decides, not for reading decisions back

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (a bare container)
        user = "operator"
    return f"{user}@{socket.gethostname()} ({via})"


class DecisionKind(StrEnum):
    APPROVE = "approve"
    REWRITE = "rewrite"
    REMEMBER = "remember"
    DENY = "deny"
    DEFER = "defer"


OUTSIDE_SANDBOX = "outside_sandbox"  # marks a request to rerun a command without the sandbox


def is_outside_sandbox(request: ApprovalRequest) -> bool:
    """Whether ``request`` asks to rerun a command outside the sandbox (``run.escalate``)."""
    return bool(request.arguments.get(OUTSIDE_SANDBOX))


APPROVING = frozenset({DecisionKind.APPROVE, DecisionKind.REWRITE, DecisionKind.REMEMBER})
"""The decisions that let the act go ahead (a REWRITE with the operator's arguments)."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call the policy sent to a human. Persisted before any approver is consulted.

    ``content`` is exactly what would be performed: the new file bytes for a write, the argv as
    JSON for exec, the arguments as JSON for an MCP call.
    """

    id: int
    run_id: int
    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any]
    act: Act
    target: str
    content: str
    rule: str
    layer: str
    workspace: str
    created_at: float = 0.0
    parent_run_id: int | None = None

    def summary(self) -> str:
        return f"{self.act.value} {self.target} (asked by '{self.rule}' in layer '{self.layer}')"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "act": self.act.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ApprovalRequest:
        return cls(**{**data, "act": Act(data["act"])})


@dataclass(frozen=True, slots=True)
class RememberRule:
    pattern: str
    act: Act
    scope: RuleScope = "workspace"


@dataclass(frozen=True, slots=True)
class Decision:
    kind: DecisionKind
    reason: str | None = None
    arguments: dict[str, Any] | None = None  # the edited tool arguments, for REWRITE
    rule: RememberRule | None = None  # for REMEMBER (an allow rule) or DENY (a deny rule)
    decided_by: str = "human"

    @classmethod
    def approve(cls, decided_by: str = "human") -> Decision:
        return cls(DecisionKind.APPROVE, decided_by=decided_by)

    @classmethod
    def deny(
        cls, reason: str | None = None, decided_by: str = "human", rule: RememberRule | None = None
    ) -> Decision:
        """A denial; with ``rule``, also a rule denying such calls from now on ("always reject")."""
        return cls(DecisionKind.DENY, reason=reason, rule=rule, decided_by=decided_by)

    @classmethod
    def defer(cls, decided_by: str = "human") -> Decision:
        return cls(DecisionKind.DEFER, decided_by=decided_by)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "decided_by": self.decided_by}
        if self.reason:
            out["reason"] = self.reason
        if self.arguments is not None:
            out["arguments"] = self.arguments
        if self.rule is not None:
            out["rule"] = {
                "pattern": self.rule.pattern,
                "act": self.rule.act.value,
                "scope": self.rule.scope,
            }
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        rule = data.get("rule")
        return cls(
            DecisionKind(data["kind"]),
            reason=data.get("reason"),
            arguments=data.get("arguments"),
            rule=RememberRule(rule["pattern"], Act(rule["act"]), rule["scope"]) if rule else None,
            decided_by=data.get("decided_by", "human"),
        )


class Approver(Protocol):
    async def decide(self, request: ApprovalRequest) -> Decision: ...


class ApproveAll:
    async def decide(self, request: ApprovalRequest) -> Decision:
        return Decision.approve(decided_by="approve-all")


class DenyAll:
    def __init__(self, reason: str = "denied by the operator's --approve deny") -> None:
        self.reason = reason

    async def decide(self, request: ApprovalRequest) -> Decision:
        return Decision.deny(self.reason, decided_by="deny-all")


class DeferAll:
    async def decide(self, request: ApprovalRequest) -> Decision:
        return Decision.defer(decided_by="defer-all")


FIXED_APPROVERS: dict[str, type[ApproveAll | DenyAll | DeferAll]] = {
    "all": ApproveAll,
    "deny": DenyAll,
    "defer": DeferAll,
}
"""The approvers that answer without a human, by the name ``--approve`` and the app use."""
