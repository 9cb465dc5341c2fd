"""An operator's edited action (a rewrite decision), checked before it is submitted: validated
with the tool's own arguments model, gated, and re-checked against the run's policy, so the UI
can refuse an edit that crosses a deny (DESIGN §3.4). No Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.authority.policy import Effect, Policy, Verdict
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.store import Store
from io_tui.core.tools.base import Gate, ToolContext, ToolError
from io_tui.core.tools.registry import ToolRegistry, default_registry


@dataclass(frozen=True, slots=True)
class RewriteCheck:
    """The outcome of checking an edited action: ``problem`` is None when it may be submitted."""

    arguments: dict[str, Any]
    problem: str | None = None
    verdict: Verdict | None = None
    gate: Gate | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


async def run_policy(store: Store, request: ApprovalRequest) -> Policy:
    """The policy the request's run enforces now: its recorded policy plus remembered rules."""
    row = await store.runs.get(request.run_id)
    policy = Policy.from_json(row.policy, source=f"run {request.run_id}") if row else Policy()
    layer = await store.rules.layer_for(workspace=request.workspace, run_id=request.run_id)
    return policy.with_layer(layer)


async def check_rewrite(
    store: Store,
    request: ApprovalRequest,
    arguments: dict[str, Any],
    *,
    registry: ToolRegistry | None = None,
    policy: Policy | None = None,
) -> RewriteCheck:
    """Validate ``arguments`` with the tool's own model, gate them, and check the policy.

    An edit the policy denies is refused here (core refuses it again when it is performed, since no
    approval may cross a deny).
    """
    if not isinstance(arguments, dict):
        return RewriteCheck({}, "the arguments must be a JSON object")
    registry = registry or default_registry()
    try:
        tool = registry.get(request.tool)
    except ToolError:
        # Not a built-in (an MCP tool, say): nothing to validate here; core re-checks the target.
        return RewriteCheck(arguments)
    try:
        args = tool.parse(arguments)
        workspace = Workspace(Path(request.workspace))
        ctx = ToolContext(
            workspace=workspace, run_id=request.run_id, step=request.step, cap_chars=0
        )
        gate = await tool.gate(args, ctx)
    except ToolError as exc:
        return RewriteCheck(arguments, str(exc))
    if gate is None:
        return RewriteCheck(arguments, gate=None)
    policy = policy or await run_policy(store, request)
    verdict = policy.explain(gate.act, gate.target)
    if verdict.effect is Effect.DENY:
        return RewriteCheck(
            arguments,
            f"refused: {gate.act.value} {gate.target} is denied by rule '{verdict.rule_text}'"
            f" in layer '{verdict.layer}'; an edit can never cross a deny",
            verdict,
            gate,
        )
    return RewriteCheck(arguments, None, verdict, gate)
