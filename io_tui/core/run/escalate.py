"""A rerun outside the sandbox: asked of the operator as its own decision, never of the policy.

When the sandbox refused an approved command (a write outside the workspace, a hidden secret,
the network; ``core.sandbox.denials``), ``run_command`` asks through ``ToolContext.escalate``
whether it may run again without the sandbox. That is an ask (``ask.ask``) of its own: ``exec``
on the same command line, its request marked ``outside_sandbox`` with what was refused, so the
approval modal, the inbox and the CLI say what approving it means. No rule allows it (a deny
rule still refuses it), and an approver that answers without a human (``--approve all``,
``deny``, ``defer``, the queue's) is not asked: an unattended run keeps the sandbox.
"""

from __future__ import annotations

import json
from typing import Any

from io_tui.core.authority.approvals import (
    APPROVING,
    OUTSIDE_SANDBOX,
    ApproveAll,
    DeferAll,
    DenyAll,
)
from io_tui.core.authority.policy import Act
from io_tui.core.boundary.sandbox import Denial
from io_tui.core.run.ask import AskingRun, Question, ask
from io_tui.core.tools.command import command_line

UNATTENDED = (ApproveAll, DenyAll, DeferAll)


async def ask_outside_sandbox(
    run: AskingRun, step: int, call_id: str, argv: list[str], refused: list[Denial]
) -> bool:
    """Whether the operator approves running ``argv`` again outside the sandbox."""
    if isinstance(run.harness.approver, UNATTENDED):
        return False
    line = command_line(argv, run.workspace)
    arguments: dict[str, Any] = {
        "argv": argv,
        OUTSIDE_SANDBOX: True,
        "denied": [d.to_json() for d in refused],
    }
    question = Question(
        step, f"{call_id}:{OUTSIDE_SANDBOX}", "run_command", arguments, Act.EXEC, line,
        json.dumps(argv),
    )  # fmt: skip
    asked = await ask(run, question, policy_may_allow=False, can_wait=False)
    approved = asked.decision.kind in APPROVING
    if asked.approval_id is not None:
        await run.store.approvals.record_performed(asked.approval_id, {"performed": approved})
    return approved
