"""Pure helpers over a trace's requests: manifest rows, entry text, and request-to-request diffs.

A manifest entry is the core's ``ManifestEntry`` (read back with ``from_json``), the one schema the
harness writes and the inspector shows; this adds what only a view needs: row keys and filters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from io_tui.core import (
    ROLES,
    ManifestEntry,
    collapse_steps,
    is_result_of,
    summary_steps,
    target_steps,
)

CARRIED_STATES = frozenset({"full", "capped", "echoed", "corrected", "summary"})
FILTERS = ("all", "carried", "stubs", "full", "capped", "echoed", "corrected", "superseded", "dropped", "elided", "collapsed", "summary")  # fmt: skip
_LINE_NO = re.compile(r"^\s*(\d+)│", re.MULTILINE)
# the engine's own lines, each standing for a run of steps: how each one's head is read back
_LINES = {"summary": summary_steps, "collapse": collapse_steps}


def keyed_entries(request: dict[str, Any] | None) -> dict[str, ManifestEntry]:
    """The request's manifest entries, each under a key that stays the same from one request to
    the next (``STEP:KIND:TARGET#N``, the Nth such entry): the table's row keys, and what the
    diff matches entries by."""
    if request is None:
        return {}
    rows: dict[str, ManifestEntry] = {}
    seen: dict[str, int] = {}
    for data in request.get("entries", []):
        base = f"{data.get('step')}:{data.get('kind')}:{data.get('target')}"
        seen[base] = seen.get(base, 0) + 1
        rows[f"{base}#{seen[base]}"] = ManifestEntry.from_json(data)
    return rows


def matches(row: ManifestEntry, state_filter: str) -> bool:
    if state_filter == "all":
        return True
    if state_filter == "stubs":
        return row.is_stub
    if state_filter == "carried":
        return row.state in CARRIED_STATES and not row.is_stub
    return row.state == state_filter


def label_filters(rows: Iterable[ManifestEntry]) -> list[str]:
    """The label filters the rows offer: ``all``, then each role, then each authority present
    (roles in the vocabulary's order, authorities by name)."""
    rows = list(rows)
    roles = {r.role for r in rows if r.role}
    authorities = sorted({r.authority for r in rows if r.authority})
    return [
        "all",
        *(f"role: {r}" for r in ROLES if r in roles),
        *(f"authority: {a}" for a in authorities),
    ]


def label_matches(row: ManifestEntry, label_filter: str) -> bool:
    """Whether ``row`` passes a filter of ``label_filters``."""
    what, _, value = label_filter.partition(": ")
    if what == "role":
        return row.role == value
    if what == "authority":
        return row.authority == value
    return True


def entry_text(steps: Iterable[dict[str, Any]], row: ManifestEntry) -> str | None:
    """The entry's full, unelided text, from ``steps`` as the trace gives them: the observation
    of its call (of that step, kind and target in a trace whose entries name no call). None for
    the summary and collapse lines."""
    if row.kind in _LINES:
        return None
    for step in steps:
        if step["step"] != row.step:
            continue
        for obs in step.get("observations", []):
            if obs.get("call_id") == row.call_id if row.call_id else _same_result(obs, row):
                return str(obs.get("full_text") or obs.get("text") or "")
        return str(step.get("result") or "") or None
    return None


def _same_result(obs: dict[str, Any], row: ManifestEntry) -> bool:
    return obs.get("kind") == row.kind and obs.get("target") == row.target


def sent_text(request: dict[str, Any] | None, row: ManifestEntry) -> str | None:
    """What the request sent for the entry, as the provider received it: its call's tool
    message, the summary or collapse line, or the user message that carries a result whose call
    is not in the transcript. None when nothing of its own was sent (folded, collapsed)."""
    messages = (request or {}).get("messages", [])
    for message in messages:
        if row.call_id and message.get("tool_call_id") == row.call_id:
            return str(message.get("content", ""))
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    if row.kind in _LINES:
        steps, read = target_steps(row.target), _LINES[row.kind]
        return next((u for u in users if steps is not None and read(u) == steps), None)
    if row.state in ("collapsed", "summary"):
        return None  # the line stands for it
    return next((u for u in users if is_result_of(u, row.step, row.target)), None)


def section_text(request: dict[str, Any], section: dict[str, Any]) -> str:
    """The text a fixed section contributed, found among the messages as sent."""
    messages = request.get("messages", [])
    name = str(section.get("name", ""))
    if name == "system":
        for message in messages:
            if message.get("role") == "system":
                return str(message.get("content", ""))
    source = str(section.get("source", ""))
    for message in messages:
        content = str(message.get("content", ""))
        if message.get("role") != "system" and (name in content or source in content):
            return content
    return f"({name} from {source}: sent as part of the request, not a separate message)"


def strip_line_numbers(text: str) -> tuple[str, int]:
    """read_file results carry ``   12│`` prefixes; return bare code and the first line number."""
    lines = text.splitlines()
    numbered = [_LINE_NO.match(line) for line in lines]
    if not lines or not all(numbered[: min(len(lines), 5)]):
        return text, 1
    first = int(numbered[0].group(1)) if numbered[0] else 1
    bare = [line[m.end() :] if m else line for line, m in zip(lines, numbered, strict=True)]
    return "\n".join(bare), first


@dataclass(frozen=True, slots=True)
class RequestDiff:
    added: list[ManifestEntry]
    stubbed: list[ManifestEntry]  # became a stub sent in the request
    dropped: list[ManifestEntry]  # became ``dropped``: left out with its step, nothing sent
    corrected: list[ManifestEntry]
    removed: list[ManifestEntry]  # no longer in the manifest at all
    recalled: list[str]
    newly_recalled: list[str]
    tokens_before: int | None
    tokens_after: int | None


def diff_requests(before: dict[str, Any] | None, after: dict[str, Any] | None) -> RequestDiff:
    """What changed from the previous request: entries added, stubbed, left out with their
    step (``dropped``: a stub earlier, or carried), newly out of date and corrected after (its
    copy still carried), no longer listed, and the memory notes recalled. A step new since the
    previous request that is already left out (superseded before any request sent it) counts
    as dropped, never added: nothing of it was sent."""
    old, new = keyed_entries(before), keyed_entries(after)
    added = [r for k, r in new.items() if k not in old and r.state != "dropped"]
    changed = [(old[k], r) for k, r in new.items() if k in old]
    stubbed = [r for o, r in changed if r.is_stub and not o.is_stub and r.state != "dropped"]
    dropped = [
        r
        for k, r in new.items()
        if r.state == "dropped" and (k not in old or old[k].state != "dropped")
    ]
    recalled = list((after or {}).get("memory_keys", []))
    earlier = set((before or {}).get("memory_keys", []))
    return RequestDiff(
        added=added,
        stubbed=stubbed,
        dropped=dropped,
        corrected=[r for o, r in changed if r.state == "corrected" != o.state],
        removed=[r for k, r in old.items() if k not in new],
        recalled=recalled,
        newly_recalled=[k for k in recalled if k not in earlier],
        tokens_before=before.get("est_tokens") if before else None,
        tokens_after=after.get("est_tokens") if after else None,
    )
