"""Calls in flight at a crash, put to the operator before a resumed run goes on.

An intent still ``started`` (``store/intents.py``) is a call whose effect may or may not have
happened. A call the policy says is safe to repeat is re-run automatically: a read (or a call no
policy checks: find, grep, remember), or a command or MCP call a rule marks ``idempotent``
(``Policy.safe_to_repeat``: ``pytest*``, ``ruff check*``); any other write, command or MCP call
goes to a ``Reconciler``: re-run it (through the approval gate
again), mark it done (the model is told it took effect, its output unknown), or skip it (the
model is told it may not have happened). What is known goes with it: the call, the approval
that allowed it, and for a file the workspace diff since the intent. A sub-agent's call is not
reconciled: its child run is resumed, its own calls in flight reconciled so (``sub_agents``).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from io_tui.core.authority.policy import Policy
from io_tui.core.boundary.workspace import Workspace, discard_unfinished_writes
from io_tui.core.errors import WorkspaceError
from io_tui.core.run.sub_agents import waiting_chain
from io_tui.core.store import Store
from io_tui.core.store.intents import IntentRow

DIFF_MAX_LINES = 80


class ReconcileChoice(StrEnum):
    RERUN = "rerun"
    DONE = "done"
    SKIP = "skip"


class ReconcileNeeded(Exception):
    """A call in flight needs the operator's word and none was given: the run stays
    ``interrupted`` (resume it with ``--reconcile rerun|skip``, or answer the prompt)."""


@dataclass(frozen=True, slots=True)
class InFlight:
    """A call that was started and never recorded, with what is known about it."""

    run_id: int
    intent: IntentRow
    known: str  # one paragraph: the call, its approval, the file's diff since the intent

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "intent": self.intent.to_json(), "known": self.known}


class Reconciler(Protocol):
    async def reconcile(self, call: InFlight) -> ReconcileChoice: ...


@dataclass(frozen=True, slots=True)
class FixedReconciler:
    """The same choice for every call (headless ``--reconcile rerun|skip``)."""

    choice: ReconcileChoice

    async def reconcile(self, call: InFlight) -> ReconcileChoice:
        return self.choice


class RefuseReconcile:
    """No operator at hand (``decide``): the run stays interrupted, with the reason."""

    async def reconcile(self, call: InFlight) -> ReconcileChoice:
        intent = call.intent
        raise ReconcileNeeded(
            f"run {call.run_id}: {intent.tool} (call {intent.call_id}, step {intent.step}) was in "
            f"flight when its process died; resume it with `io-tui resume {call.run_id} "
            "--reconcile ask|rerun|skip`"
        )


class TerminalReconciler:
    """Asks on the terminal: r(erun) / d(one) / s(kip); end of input leaves the run interrupted."""

    async def reconcile(self, call: InFlight) -> ReconcileChoice:
        prompt = (
            f"\n[io-tui] {call.known}\n  re-run it, mark it done, or skip it? "
            "[r]erun / [d]one / [s]kip: "
        )
        answer = (await asyncio.to_thread(_ask, prompt)).strip().lower()
        for choice in ReconcileChoice:
            if answer and choice.value.startswith(answer):
                return choice
        raise ReconcileNeeded(
            f"run {call.run_id}: no answer for {call.intent.tool} (call {call.intent.call_id});"
            " it stays interrupted"
        )


def _ask(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline()


def safe_to_repeat(intent: IntentRow, policy: Policy) -> str | None:
    """Why a call in flight may run again without the operator's word (``Policy.
    safe_to_repeat``; an MCP call only where a rule marks it idempotent, whatever its act);
    None: it may have changed something outside the run's own records."""
    if intent.tool.startswith("mcp__") and intent.act != "exec":
        return None
    return policy.safe_to_repeat(intent.act, intent.target)


def what_is_known(run_id: int, intent: IntentRow, workspace: Workspace) -> InFlight:
    lines = [
        f"run {run_id} step {intent.step}: {intent.tool} {json.dumps(intent.arguments)[:300]}"
        f" was started and its outcome is unknown (the process died)."
    ]
    if intent.approval_id is not None:
        lines.append(f"It was allowed by approval #{intent.approval_id}.")
    if intent.act:
        lines.append(f"Act: {intent.act} {intent.target}.")
    if intent.before is not None:
        lines.append(_file_diff(intent, workspace))
    elif intent.act == "exec":
        lines.append("A command: whether it ran, and how far, is not known.")
    return InFlight(run_id, intent, "\n".join(lines))


def discard_unfinished(intent: IntentRow, workspace: Workspace) -> list[str]:
    """The names of the temporary files a write in flight left beside its target (killed
    between writing one and the rename), removed: the driver does this before it reconciles
    the call, whatever the choice (a re-run writes a new one)."""
    if intent.before is None:  # not a file write
        return []
    try:
        target = workspace.resolve(intent.target)
    except WorkspaceError:
        return []
    return discard_unfinished_writes(target, intent.started_at - 1.0)  # a coarse mtime clock


def _file_diff(intent: IntentRow, workspace: Workspace) -> str:
    before = intent.before or {}
    now = workspace.current_text(intent.target, max_bytes=256_000)
    try:
        exists_now = workspace.resolve(intent.target).exists()
    except (WorkspaceError, OSError):
        exists_now = False
    if before.get("text") is None and before.get("exists"):
        return f"{intent.target} existed before (too large or not text to diff)."
    old = before.get("text") or ""
    if not exists_now and not before.get("exists"):
        return f"{intent.target} does not exist, as before: the write did not happen."
    if now is None:
        return f"{intent.target} is now too large or not text to diff."
    if now == old and exists_now == bool(before.get("exists")):
        return f"{intent.target} is unchanged since the intent: the write did not happen."
    diff = list(
        difflib.unified_diff(
            old.splitlines(),
            now.splitlines(),
            f"{intent.target} (before)",
            f"{intent.target} (now)",
            lineterm="",
        )
    )
    if len(diff) > DIFF_MAX_LINES:
        diff = [*diff[:DIFF_MAX_LINES], f"… {len(diff) - DIFF_MAX_LINES} more lines"]
    return "Workspace diff since the intent:\n" + "\n".join(diff)


async def in_flight_calls(store: Store, run_id: int, workspace: Workspace) -> list[InFlight]:
    """The calls in flight at a crash that need the operator's word before the run resumes,
    with what is known (what the TUI's reconcile modal shows): the run's, and those of the
    sub-agents and parents that resume with it."""
    run = await store.runs.get(run_id)
    found: list[InFlight] = []
    for member in await waiting_chain(store, run) if run is not None else []:
        policy = Policy.from_json(member.policy, source=f"run {member.id} policy")
        layer = await store.rules.layer_for(workspace=member.workspace, run_id=member.id)
        policy = policy.with_layer(layer)
        latest = {i.call_id: i for i in await store.intents.for_run(member.id)}
        waiting = [i for i in latest.values() if i.in_flight and safe_to_repeat(i, policy) is None]
        found += [await asyncio.to_thread(what_is_known, member.id, i, workspace) for i in waiting]
    return found
