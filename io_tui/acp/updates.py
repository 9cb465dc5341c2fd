"""Run events as ACP session updates, live (``UpdateSink``) and replayed from the store for
``session/load`` (``replay``).

| io-tui | ACP |
|---|---|
| the prompt of a run (its goal), an operator message | ``user_message_chunk`` |
| ``text_delta`` of the session's run | ``agent_message_chunk`` |
| ``text_delta`` of a sub-agent run, ``request_retry`` | ``agent_thought_chunk`` |
| ``tool_called`` | ``tool_call`` (kind, title, locations, raw input; a write's diff) |
| its observation (a refusal included) | ``tool_call_update``: completed / failed, with the result text |
| ``step_committed``, ``run_finished`` of the session's run | ``plan``, when its progress ledger has a new revision (``plan``) |
| ``compacted`` of the session's run, for a client that opted in (``session.compaction``) | ``compaction_update`` ``completed``, with the summary kept |
| ``request_finished`` of the session's run | ``usage_update``: the tokens it carried, the window; the run's tokens and cost in ``_meta`` |

A tool call's id is ``RUN:CALL`` (the run's id and the model's call id), unique in a session
whose runs and sub-agents may reuse a provider's call ids. An observation's text is in the store
only once its call is committed, so its update is made by a job that reads it there when the
outbox reaches it, after the run's next event (``UpdateSink``); the end of a turn sends the last.
"""

from __future__ import annotations

import asyncio
import shlex
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallLocation, ToolCallStatus as Status

from io_tui.acp.plan import send_plan
from io_tui.core import EventKind, RunEvent

if TYPE_CHECKING:
    from io_tui.acp.session import Session
    from io_tui.core import Store

# the events after which a run's progress ledger may have a new revision (stored before them)
PLANNED = (EventKind.STEP_COMMITTED, EventKind.RUN_FINISHED)
RESULT_CHARS = 20_000  # of a tool's result shown in the client (the store keeps it whole)
DIFF_MAX_CHARS = 512_000  # a file larger than this is shown as its new text alone

KINDS = {
    "read_file": "read",
    "list_dir": "read",
    "read_skill": "read",
    "recall_result": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "find": "search",
    "grep": "search",
    "run_command": "execute",
    "spawn_agent": "think",
}


def call_key(run_id: int, call_id: str) -> str:
    return f"{run_id}:{call_id}"


def tool_kind(name: str) -> Any:
    return KINDS.get(name, "fetch" if name.startswith("mcp__") else "other")


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    if name == "run_command" and isinstance(arguments.get("argv"), list):
        return f"$ {shlex.join(str(a) for a in arguments['argv'])}"
    target = arguments.get("path") or arguments.get("pattern") or arguments.get("goal")
    if isinstance(target, str):
        return f"{name} {target[:120]}"
    return name


def locations(root: Path, arguments: dict[str, Any]) -> list[ToolCallLocation] | None:
    path = arguments.get("path")
    if not isinstance(path, str):
        return None
    line = arguments.get("offset")
    return [ToolCallLocation(path=str(root / path), line=line if isinstance(line, int) else None)]


def file_diff(root: Path, name: str, arguments: dict[str, Any]) -> list[Any] | None:
    """A write's change as an ACP diff (the whole file before and after), or None."""
    path = arguments.get("path")
    if name not in ("write_file", "edit_file") or not isinstance(path, str):
        return None
    target = root / path
    try:
        before = target.read_text(encoding="utf-8") if target.is_file() else None
    except (OSError, UnicodeDecodeError):
        before = None
    if before is not None and len(before) > DIFF_MAX_CHARS:
        before = None
    if name == "write_file":
        after = arguments.get("content")
    else:
        old, new = arguments.get("old"), arguments.get("new")
        if before is None or not isinstance(old, str) or not isinstance(new, str):
            return None
        after = before.replace(old, new, 1)
    if not isinstance(after, str):
        return None
    return [tool_diff_content(str(target), after, before)]


def result_content(text: str) -> list[Any]:
    shown = (
        text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + "\n[… cut for the client …]"
    )
    return [tool_content(text_block(shown))]


COST_KEYS = ("cost", "naive_cost", "run_cost", "run_naive_cost", "ratio", "source")


async def compaction_update(store: Store, run_id: int, through_step: int) -> dict[str, Any]:
    """ACP's ``compaction_update`` (the session-compaction RFD; the SDK has no model for it, so
    it goes out as JSON): one ``completed`` entry in the session's timeline, with the summary
    the compaction kept, once it is stored."""
    kept = dict(await store.runs.summaries(run_id)).get(through_step, "")
    update: dict[str, Any] = {
        "sessionUpdate": "compaction_update",
        "compactionId": f"{run_id}:{through_step}",
        "status": "completed",
        "_meta": {"io-tui": {"run_id": run_id, "through_step": through_step}},
    }
    if kept:
        update["summary"] = [{"type": "text", "text": kept}]
    return update


class UpdateSink:
    """An ``EventSink`` turning one session's run events into updates in its outbox."""

    def __init__(self, session: Session, store: Store) -> None:
        self.session = session
        self.store = store
        self.unobserved: dict[str, tuple[int, int, str]] = {}  # key → (run, step, call id)
        self.windows: dict[int, int] = {}  # run → the window (else ceiling) of its request
        self.spent = 0  # the session's run's tokens so far, as its requests reported them
        self.turn: Counter[str] = Counter()  # the turn's usage, its sub-agents' included

    def emit(self, event: RunEvent) -> None:
        try:
            self._emit(event)
        except Exception:  # a sink never stops a run
            return

    def _emit(self, event: RunEvent) -> None:
        outbox = self.session.outbox
        if event.kind is not EventKind.OBSERVATION:
            self.send_observed()  # committed by now: the run moved on
        detail = event.detail
        if event.kind is EventKind.TEXT_DELTA:
            text = str(detail.get("text", ""))
            mine = event.run_id == self.session.run_id
            outbox.put(update_agent_message_text(text) if mine else update_agent_thought_text(text))
        elif event.kind is EventKind.TOOL_CALLED:
            outbox.put(self._started(event.run_id, detail))
        elif event.kind is EventKind.OBSERVATION:
            key = call_key(event.run_id, str(detail.get("call_id")))
            self.unobserved[key] = (event.run_id, event.step, str(detail.get("call_id")))
        elif event.kind in PLANNED and event.run_id == self.session.run_id:
            send_plan(self.session, self.store)  # its ledger's revision is stored by now
        elif event.kind is EventKind.REQUEST_STARTED:
            self.windows[event.run_id] = int(
                detail.get("window_tokens") or detail.get("ceiling_tokens") or 0
            )
        elif event.kind is EventKind.REQUEST_FINISHED:
            self._count(detail.get("usage"))
            if event.run_id == self.session.run_id:
                outbox.put(self._usage(event))
        elif event.kind is EventKind.COMPACTED and event.run_id == self.session.run_id:
            through = detail.get("through_step")  # a summary stored (not its request's end)
            if self.session.compaction and isinstance(through, int):  # the client opted in
                outbox.put(partial(compaction_update, self.store, event.run_id, through))
        elif event.kind is EventKind.REQUEST_RETRY:
            why = detail.get("error") or "the provider failed"
            delay = detail.get("delay_s", 0)
            outbox.put(update_agent_thought_text(f"[io-tui] {why}; trying again in {delay}s\n"))

    def _count(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for key in ("prompt_tokens", "completion_tokens", "cache_read_tokens",
                        "cache_write_tokens"):  # fmt: skip
                self.turn[key] += int(usage.get(key) or 0)

    def turn_usage(self) -> Any:
        """The turn's tokens as ACP's end-of-turn ``usage`` (None when no request reported
        any): input (cached parts included), output, the cache's reads and writes."""
        from acp.schema import Usage

        if not self.turn:
            return None
        given, said = self.turn["prompt_tokens"], self.turn["completion_tokens"]
        return Usage(
            input_tokens=given,
            output_tokens=said,
            total_tokens=given + said,
            cached_read_tokens=self.turn["cache_read_tokens"],
            cached_write_tokens=self.turn["cache_write_tokens"],
        )

    def _usage(self, event: RunEvent) -> Any:
        """ACP's ``usage_update`` after a request: the tokens the request carried against the
        model's window (the run's context ceiling when the window is unknown); in ``_meta`` the
        run's tokens so far and, where the context engine prices requests, the run's cost with
        caching beside re-sending everything (in uncached-token units, not money: ACP's
        ``cost`` is a currency amount, so it is left out)."""
        from acp.schema import UsageUpdate

        detail = event.detail
        used = int(detail.get("reported_tokens") or detail.get("est_tokens") or 0)
        self.spent += used
        size = max(self.windows.get(event.run_id, 0), used)
        data: dict[str, Any] = {
            "run_id": event.run_id,
            "step": event.step,
            "run_tokens": self.spent,
        }
        if isinstance(usage := detail.get("usage"), dict):
            data["usage"] = usage
        if isinstance(cost := detail.get("cost"), dict):
            data["cost"] = {k: cost.get(k) for k in COST_KEYS if k in cost}
        return UsageUpdate(
            session_update="usage_update", used=used, size=size, field_meta={"io-tui": data}
        )

    def _started(self, run_id: int, detail: dict[str, Any]) -> Any:
        name = str(detail.get("name", "?"))
        given = detail.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        root = self.session.cwd

        async def make() -> Any:
            diff = await asyncio.to_thread(file_diff, root, name, arguments)
            return start_tool_call(
                call_key(run_id, str(detail.get("call_id"))),
                tool_title(name, arguments),
                kind=tool_kind(name),
                status="in_progress",
                content=diff,
                locations=locations(root, arguments),
                raw_input=arguments,
            )

        return make

    def send_observed(self) -> None:
        """Queue the results of the calls observed so far (their step is committed by the time
        the next event comes). The set is taken now: a call observed later may not be stored
        when the job runs."""
        if self.unobserved:
            waiting, self.unobserved = self.unobserved, {}
            self.session.outbox.put(partial(self._observed, waiting))

    async def _observed(self, waiting: dict[str, tuple[int, int, str]]) -> None:
        """The results of the ``waiting`` calls, read from the store."""
        for run_id, step in {(run, step) for run, step, _ in waiting.values()}:
            rows = await self.store.trace.observations(run_id, first_step=step)
            for row in rows:
                key = call_key(run_id, row.call_id)
                if key in waiting:
                    status: Status = "failed" if row.is_error else "completed"
                    update = update_tool_call(
                        key, status=status, content=result_content(row.full_text)
                    )
                    await self.session.outbox.client.session_update(
                        session_id=self.session.id, update=update
                    )


async def replay(session: Session, store: Store, runs: list[Any]) -> None:
    """Send the history of ``runs`` (a session's, oldest first) as the updates it was made of:
    each prompt, the agent's text and its tool calls with their results."""
    outbox = session.outbox
    for run in runs:
        outbox.put(update_user_message_text(run.goal))
        observations = {o.call_id: o for o in await store.trace.observations(run.id)}
        for step in await store.trace.steps(run.id):
            for text in step.operator_messages:
                outbox.put(update_user_message_text(text))
            if step.text:
                outbox.put(update_agent_message_text(step.text))
            for call in step.tool_calls:
                key = call_key(run.id, call.id)
                seen = observations.get(call.id)
                status: Status = (
                    "pending" if seen is None else "failed" if seen.is_error else "completed"
                )
                outbox.put(
                    start_tool_call(
                        key,
                        tool_title(call.name, call.arguments),
                        kind=tool_kind(call.name),
                        status=status,
                        content=result_content(seen.full_text) if seen is not None else None,
                        locations=locations(session.cwd, call.arguments),
                        raw_input=call.arguments,
                    )
                )
        note = await run_note(store, run)
        if note:
            outbox.put(update_agent_message_text(note))
    send_plan(session, store)  # the last run's, as its ledger stands
    await outbox.flush()


async def run_note(store: Store, run: Any) -> str:
    """One line on how a run stopped, when it did not simply finish: what waits where."""
    if run.status == "paused":
        pending = [a for a in await store.approvals.for_run(run.id) if a.decision is None]
        asks = "; ".join(f"#{a.request.id} {a.request.summary()}" for a in pending)
        return (
            f"\n\n[io-tui] run {run.id} is paused"
            + (f", waiting for a decision: {asks}" if asks else "")
            + ". Decide it in io-tui's inbox (or `io-tui decide`), or send a prompt here to be"
            " asked again."
        )
    if run.status == "interrupted":
        return f"\n\n[io-tui] run {run.id} was interrupted; a prompt here resumes it."
    if run.status in ("failed", "cancelled") or run.outcome == "finished_truncated":
        why = f": {run.error}" if run.error else ""
        return f"\n\n[io-tui] run {run.id} ended {run.outcome or run.status}{why}."
    return ""
