"""recall_result: a recorded tool result read back from the trace (DESIGN §3.2, §3.7).

A result that leaves the request (superseded, elided, collapsed, folded, capped) stays whole in
the trace; its stub names its **handle**, the call id, and this tool reads it back instead of
running the tool again: no command rerun, no approval asked twice. A handle is a call id of this
run, or a progress ledger's ``r<run>.s<step>.<call id>`` (any run of the same workspace, so a
run that continues another can read the artefacts its ledger cites).

The read policy applies as it does now: a recorded read (list, skill, MCP resource) is gated as
a read of its target, so a path denied or asked since is denied or asked again; the files any
other result was made from (``Observation.seen``) must be readable without asking. Long
results are paged in characters under the entry cap, each page saying where the next starts.
What it returns is the result as recorded: when a file it was made from changed since, it says
so. The recall is itself an observation (kind ``recall``) that the engine treats like a read:
an identical recall supersedes it, and it goes stale when the files it was made from change.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import Field

from io_tui.core.authority.policy import Act, Effect, Policy
from io_tui.core.errors import ToolError
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Recorded, Tool, ToolArgs, ToolContext, ToolOutcome

if TYPE_CHECKING:
    from io_tui.core.store.runs import RunRepo

NAME = "recall_result"
HEAD_ROOM = 400  # of the entry cap: the frame line and the page's own header
LEDGER_HANDLE = re.compile(r"r(\d+)\.s(\d+)\.(.+)")
_READ_GATED = frozenset({ObsKind.READ, ObsKind.LIST, ObsKind.SKILL})


class RecallArgs(ToolArgs):
    handle: str = Field(
        min_length=1,
        max_length=300,
        description="The handle a stub or marker names: the call id (or a progress ledger's "
        "r<run>.s<step>.<call id>).",
    )
    offset: int = Field(default=0, ge=0, description="First character to return (0-based).")
    limit: int | None = Field(
        default=None,
        ge=1,
        description="How many characters; omit for as many as one result may hold.",
    )


class RecallResult(Tool):
    changes_files = False
    only_reads = True
    name = NAME
    description = (
        "Read back a tool result recorded earlier, by the handle its stub or marker names, "
        "instead of running the tool again (no command rerun, no second approval). It is the "
        "result as it was then: for a file's current content read it again. Long results are "
        "paged: offset and limit in characters."
    )
    Args = RecallArgs

    async def gate(self, args: RecallArgs, ctx: ToolContext) -> Gate | None:
        obs = (await _recorded(args.handle, ctx)).observation
        if _read_gated(obs.kind, obs.target):
            return Gate(Act.READ, obs.target)
        return None

    async def run(self, args: RecallArgs, ctx: ToolContext) -> ToolOutcome:
        recorded = await _recorded(args.handle, ctx)
        obs, text = recorded.observation, recorded.full_text
        _check_sources(recorded, ctx.policy or Policy())
        total = len(text)
        if args.offset and args.offset >= total:
            raise ToolError(
                f"offset {args.offset:,} is past the end of {args.handle}'s recorded result "
                f"({total:,} chars)"
            )
        room = max(200, ctx.cap_chars - HEAD_ROOM)
        limit = min(args.limit or room, room)
        end = min(total, args.offset + limit)
        what = f"{obs.target} ({obs.span})" if obs.span else obs.target
        head = (
            f"[recorded result of run {recorded.run_id} step {obs.step} {obs.tool} {what}, "
            f"chars {args.offset:,}–{end:,} of {total:,}"
        )
        if args.limit is not None and args.limit > room:
            head += f" (limit cut to {room:,}, what one result may hold)"
        if end < total:
            head += f'; the rest: {NAME}("{args.handle}", offset={end})'
        head += "]"
        changed = await ctx.workspace.changed(obs.seen) if obs.seen else {}
        if changed:
            paths = ", ".join(sorted({s.path for s in changed}))
            head += (
                f"\n[{paths} changed since step {obs.step}: this is the result as recorded, "
                "not the current content]"
            )
        return ToolOutcome(
            f"{head}\n{text[args.offset : end]}",
            ObsKind.RECALL,
            args.handle,
            span=f"chars {args.offset}-{end}",
            seen=obs.seen,
        )


def _read_gated(kind: ObsKind, target: str) -> bool:
    """Whether the tool that made the result was checked as a read of its target."""
    return kind in _READ_GATED or (kind is ObsKind.MCP and target.startswith("mcp:"))


def _check_sources(recorded: Recorded, policy: Policy) -> None:
    """The files the result was made from must be readable without asking, as a grep's are."""
    obs = recorded.observation
    gated = obs.target if _read_gated(obs.kind, obs.target) else None
    for path in sorted({s.path for s in obs.seen} - {gated}):
        verdict = policy.explain(Act.READ, path)
        if verdict.effect is not Effect.ALLOW:
            raise ToolError(
                f"refused: the recorded result was made from {path}, which this run may not "
                f"read without asking ({verdict.effect.value} by rule '{verdict.rule_text}' in "
                f"layer '{verdict.layer}')"
            )


async def _recorded(handle: str, ctx: ToolContext) -> Recorded:
    if ctx.recall is None:
        raise ToolError("recorded results cannot be read back in this context")
    recorded = await ctx.recall(handle.strip())
    if recorded is None:
        raise ToolError(
            f"no recorded result has the handle {handle!r}: use the call id a stub or marker "
            "names (or a progress ledger's r<run>.s<step>.<call id>)"
        )
    return recorded


async def find_recorded(runs: RunRepo, run_id: int, workspace: str, handle: str) -> Recorded | None:
    """The result ``handle`` names: a call id of run ``run_id``, or ``r<run>.s<step>.<call
    id>`` of any run in ``workspace``. None when there is none (another workspace's run
    included: its results are not this run's to read)."""
    found = LEDGER_HANDLE.fullmatch(handle)
    owner, step, call_id = run_id, None, handle
    if found is not None:
        owner, step, call_id = int(found[1]), int(found[2]), found[3]
        if owner != run_id:
            row = await runs.get(owner)
            if row is None or row.workspace != workspace:
                return None
    hit = await runs.recorded(owner, call_id)
    if hit is None or (step is not None and hit[0].step != step):
        return None
    return Recorded(owner, *hit)
