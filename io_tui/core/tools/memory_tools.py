"""remember / forget: the agent's durable notes (DESIGN §3.3, §3.7).

They write io-tui's own store, never the workspace, so they are not path acts and ``gate``
returns None. The run loop provides, in the ``ToolContext``:

- ``notes``: a ``NoteRepo``, the store's notes;
- ``memory_limits``: the run's ``MemoryLimits`` (defaults apply when absent);
- ``emit``: ``(kind: str, detail: dict) -> None``, which records a trace event. Every write,
  eviction, refusal and forget is emitted as kind ``"memory"`` with ``detail["op"]`` one of
  ``write``, ``evict``, ``refuse``, ``forget``; a note current again because the note that
  superseded it was forgotten or evicted is ``supersede`` with ``superseded_by`` None.

The model is told what happened in plain words: truncation, evictions, the run and step a replaced
note came from, a refusal because the operator pinned the key, and a warning when the new note
restates another, naming it, so two notes never disagree silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from io_tui.core.contract import MemoryLimits
from io_tui.core.events import EventKind
from io_tui.core.ledger import ObsKind
from io_tui.core.memory.notes import MAX_KEY_CHARS, MemoryNote, NoteKind, Scope, Section
from io_tui.core.store.notes import ForgetResult, NoteRepo, Provenance, WriteResult
from io_tui.core.tools.base import Emit, Tool, ToolArgs, ToolContext, ToolError, ToolOutcome

SCOPE_HELP = (
    "'workspace' (default): only runs in this workspace recall it. 'global': every workspace "
    "recalls it, unless a workspace note has the same key."
)


class RememberArgs(ToolArgs):
    key: str = Field(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="A short name for the note, e.g. 'test-command'. Writing a key again "
        "replaces its note.",
    )
    value: str = Field(description="What to remember, in a sentence or two.")
    scope: Scope = Field(default="workspace", description=SCOPE_HELP)
    type: NoteKind = Field(
        default="inference",
        description="'fact': checked (say how in source); 'preference': what the operator said "
        "they want; 'inference' (default): your own conclusion. The operator verifies notes; "
        "until then they are shown as unverified.",
    )
    section: Section = Field(
        default="project",
        description="'preferences', 'project' (project knowledge, default) or 'lessons' "
        "(what went wrong and how to avoid it).",
    )
    source: str = Field(
        default="",
        max_length=200,
        description="Where it comes from: a file path, a command and its exit code, a URL.",
    )


class ForgetArgs(ToolArgs):
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS, description="The note's key.")
    scope: Scope = Field(default="workspace", description="The scope the note is in.")


def _memory(ctx: ToolContext) -> tuple[NoteRepo, MemoryLimits, Emit]:
    if ctx.notes is None:
        raise ToolError("memory is not available in this run")
    emit: Emit = ctx.emit or (lambda kind, detail: None)
    return ctx.notes, ctx.memory_limits, emit


def _workspace(ctx: ToolContext, scope: Scope) -> str | None:
    return str(ctx.workspace.root) if scope == "workspace" else None


def _brief(note: MemoryNote) -> dict[str, Any]:
    """A note as an event records it; the value is kept so the trace shows what was lost."""
    return {
        "key": note.key,
        "scope": note.scope,
        "run_id": note.run_id,
        "step": note.step,
        "value": note.value,
        "type": note.kind,
        "section": note.section,
    }


class Remember(Tool):
    changes_files = False
    name = "remember"
    description = (
        "Save a short note for future runs (facts about this project you had to discover: how to "
        "run the tests, where things live, a decision and why). Notes are shown to you at the "
        "start of later runs. Each scope holds a limited number of notes; the oldest are dropped "
        "first, so keep notes short and update a key rather than adding near-duplicates."
    )
    Args = RememberArgs

    async def run(self, args: RememberArgs, ctx: ToolContext) -> ToolOutcome:
        repo, limits, emit = _memory(ctx)
        try:
            result = await repo.write(
                key=args.key,
                value=args.value,
                scope=args.scope,
                workspace=_workspace(ctx, args.scope),
                run_id=ctx.run_id,
                step=ctx.step,
                limits=limits,
                provenance=Provenance(section=args.section, kind=args.type, source=args.source),
            )
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        note = result.note
        if not result.written:
            emit(
                EventKind.MEMORY.value,
                {
                    "op": "refuse",
                    "reason": result.status,
                    "key": note.key,
                    "scope": args.scope,
                    "value": args.value,
                },
            )
            return ToolOutcome(
                _refusal(result, limits),
                ObsKind.MEMORY,
                note.key,
                is_error=True,
                data={"op": "refuse", "reason": result.status},
            )
        emit(
            EventKind.MEMORY.value,
            {
                "op": "write",
                **_brief(note),
                "chars": len(note.value),
                "truncated_from": result.original_chars if result.truncated else None,
                "replaced": _brief(result.replaced) if result.replaced else None,
                "restates": [other.key for other, _ in result.restates],
            },
        )
        for gone in result.evicted:
            emit(EventKind.MEMORY.value, {"op": "evict", **_brief(gone), "evicted_by": note.key})
        _emit_revived(emit, result.revived, "evict")
        return ToolOutcome(
            _written(result, limits),
            ObsKind.MEMORY,
            note.key,
            data={
                "op": "write",
                "scope": note.scope,
                "evicted": [g.key for g in result.evicted],
                "restates": [other.key for other, _ in result.restates],
            },
        )


def _written(result: WriteResult, limits: MemoryLimits) -> str:
    note = result.note
    lines = [
        f"Remembered {note.key!r} ({note.scope} scope, {note.section}: {note.label}). "
        f"The scope now holds {result.entries}/"
        f"{limits.max_entries} notes, {result.chars:,}/{limits.max_chars:,} chars."
    ]
    if result.replaced is not None:
        lines.append(f"It replaced the earlier note written by {result.replaced.origin}.")
    if result.truncated:
        lines.append(
            f"The value was {result.original_chars:,} chars, over the {limits.max_entry_chars:,}-"
            "char cap for one note, so it was stored cut short with a marker. Keep notes brief."
        )
    if result.evicted:
        keys = ", ".join(repr(g.key) for g in result.evicted)
        lines.append(f"To stay within the caps, the oldest notes were dropped: {keys}.")
    if result.revived:
        lines.append(_revived_text(result.revived).strip())
    for other, score in result.restates:
        lines.append(
            f"Warning: this note restates {other.key!r} ({other.scope}, written by "
            f"{other.origin}; {score:.0%} of words shared). If they say the same thing, forget "
            "one; if they disagree, correct or forget the stale one so your notes never "
            "contradict each other."
        )
    return "\n".join(lines)


def _refusal(result: WriteResult, limits: MemoryLimits) -> str:
    key = result.note.key
    if result.status == "pinned":
        return (
            f"Not remembered: the operator pinned {key!r}, so you cannot overwrite it. "
            "Remember under a different key if you must record something else."
        )
    return (
        f"Not remembered: {key!r} does not fit and the operator pinned the notes that would have "
        f"to make room (caps: {limits.max_entries} notes, {limits.max_chars:,} chars). Shorten "
        "the note or ask the operator to unpin some."
    )


class Forget(Tool):
    changes_files = False
    name = "forget"
    description = "Delete one of your remembered notes by key (for example, one that is wrong)."
    Args = ForgetArgs

    async def run(self, args: ForgetArgs, ctx: ToolContext) -> ToolOutcome:
        repo, _, emit = _memory(ctx)
        key = args.key.strip()
        result = await repo.forget(
            key=key, scope=args.scope, workspace=_workspace(ctx, args.scope), operator=False
        )
        if result.status == "forgotten" and result.note is not None:
            emit(EventKind.MEMORY.value, {"op": "forget", **_brief(result.note)})
            _emit_revived(emit, result.revived, "forget")
            return ToolOutcome(
                f"Forgot {key!r} ({args.scope} scope; it was written by {result.note.origin})."
                + _revived_text(result.revived),
                ObsKind.MEMORY,
                key,
                data={"op": "forget", "scope": args.scope},
            )
        if result.status == "pinned":
            emit(
                EventKind.MEMORY.value,
                {"op": "refuse", "reason": "pinned", "key": key, "scope": args.scope},
            )
        return ToolOutcome(
            _not_forgotten(key, args.scope, result),
            ObsKind.MEMORY,
            key,
            is_error=True,
            data={"op": "refuse" if result.status == "pinned" else "missing"},
        )


def _emit_revived(emit: Emit, revived: tuple[MemoryNote, ...], because: str) -> None:
    for note in revived:
        emit(
            EventKind.MEMORY.value,
            {"op": "supersede", **_brief(note), "superseded_by": None, "because": because},
        )


def _revived_text(revived: tuple[MemoryNote, ...]) -> str:
    """What the model is told of notes current again: the note that superseded them is gone."""
    if not revived:
        return ""
    keys = ", ".join(repr(n.key) for n in revived)
    verb = "is" if len(revived) == 1 else "are"
    return (
        f" It had superseded {keys}, which {verb} current again and recalled in later runs: "
        "forget what is out of date."
    )


def _not_forgotten(key: str, scope: Scope, result: ForgetResult) -> str:
    if result.status == "pinned":
        return f"Not forgotten: the operator pinned {key!r}, so you cannot remove it."
    hint = ""
    if result.elsewhere:
        other = result.elsewhere[0]
        hint = f" There is a {other} note with that key: pass scope={other!r}."
    return f"No {scope} note named {key!r}; nothing to forget.{hint}"


MEMORY_TOOLS: tuple[type[Tool], ...] = (Remember, Forget)
