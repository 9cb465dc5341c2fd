"""spawn_agent: hand a focused sub-task to a child run that shares the parent's token ledger.

The child works in the same workspace under the parent's policy plus any narrowing rules the
parent asks for (deny or ask only: a child can never be given more than its parent has). Its
final answer comes back as this call's result; its steps live in the store as a run of their own
with ``parent_run_id`` set, so the run tree shows it under its parent. A child that pauses or is
interrupted stops its parent with it, on this call; both resume together (``core.run.sub_agents``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from io_tui.core.authority.policy import Act, Effect, Rule
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import SubTask, Tool, ToolArgs, ToolContext, ToolError, ToolOutcome


class NarrowingRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    act: Act
    effect: Literal["deny", "ask"]
    pattern: str = Field(min_length=1)

    def rule(self) -> Rule:
        return Rule(self.act, Effect(self.effect), self.pattern)


class SpawnAgentArgs(ToolArgs):
    goal: str = Field(min_length=1, description="The sub-task, stated so it can be done alone.")
    max_steps: int | None = Field(
        default=None, ge=1, le=50, description="Step cap for the child (default 8)."
    )
    rules: list[NarrowingRule] = Field(
        default_factory=list,
        description="Extra deny/ask rules for the child, e.g. "
        '[{"act": "write", "effect": "deny", "pattern": "*"}] for a read-only helper.',
    )


class SpawnAgent(Tool):
    name = "spawn_agent"
    description = (
        "Start a sub-agent on a focused sub-task (e.g. 'find every caller of parse() and report "
        "their files'). It shares your token budget and workspace and returns its final answer. "
        "Use it to keep your own context small; narrow its rights with rules."
    )
    Args = SpawnAgentArgs

    async def run(self, args: SpawnAgentArgs, ctx: ToolContext) -> ToolOutcome:
        if ctx.spawn is None:
            raise ToolError("sub-agents are not available here (nesting limit reached)")
        task = SubTask(
            args.goal, args.max_steps, tuple(r.rule() for r in args.rules), call_id=ctx.call_id
        )
        outcome = await ctx.spawn(task)
        return ToolOutcome(
            text=outcome.text,
            kind=ObsKind.AGENT,
            target=args.goal[:80],
            span=outcome.span,  # ``run N``: the child run that answered
            is_error=outcome.is_error,
            data=outcome.data,
        )
