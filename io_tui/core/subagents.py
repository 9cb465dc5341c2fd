"""Sub-agent spawning: the ``spawn`` service behind the ``spawn_agent`` tool runs a child run
under a narrowed policy, one level deeper, sharing the parent's token ledger."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from io_tui.core.ledger import ObsKind
from io_tui.core.model_turn import remaining_tokens
from io_tui.core.policy import Layer
from io_tui.core.tools.agent import SpawnAgentArgs
from io_tui.core.tools.base import ToolOutcome

if TYPE_CHECKING:
    from io_tui.core.run import Run

MAX_AGENT_DEPTH = 2
CHILD_DEFAULT_STEPS = 8
NARROWING_LAYER = "spawn-narrowing"


async def spawn(run: Run, args: SpawnAgentArgs) -> ToolOutcome:
    """Run a child to an outcome under a narrowed policy; its tokens count against ours."""
    # run.py imports this module, so the loop's own names are imported when a child starts
    from io_tui.core.run import Harness, start_run

    narrowing = Layer(NARROWING_LAYER, tuple(r.rule() for r in args.rules))
    child = Harness(
        store=run.store,
        provider=run.h.provider,
        approver=run.h.approver,
        sink=run.h.sink,
        registry=run.h.registry,
        policy=run.h.policy.with_layer(narrowing),
        system_prompt=run.h.system_prompt,
        depth=run.h.depth + 1,
    )
    contract = replace(
        run.contract,
        goal=args.goal,
        verify=None,
        max_steps=args.max_steps or CHILD_DEFAULT_STEPS,
        token_budget=remaining_tokens(run),
    )
    result = await start_run(child, contract, parent_run_id=run.run_id)
    run.tokens += result.tokens
    run.extra_tokens += result.tokens
    history = await run.store.runs.history(result.run_id)
    answer = next((r.text for r in reversed(history) if r.text), "(no answer)")
    text = (
        f"Sub-agent run {result.run_id} ended {result.outcome.value} after {result.steps} "
        f"steps ({result.tokens:,} tokens). Its final answer:\n{answer}"
    )
    failed = result.status != "finished"
    return ToolOutcome(text, ObsKind.AGENT, args.goal[:80], is_error=failed, data=result.to_json())
