"""The deterministic digest: a summary under the summary contract that no model wrote.

Without a summarizer (or when it fails), the digest stands in, so compaction never depends on a
provider being reachable. It is built from the notes' header lines, never from tool bodies
(except the first line of a failure or of a remembered note), so no tool output is promoted into
the agent's own voice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from io_tui.core.context.summary import BODY_PREFIX, Summary, one_line
from io_tui.core.providers.base import CompletionRequest
from io_tui.core.text.heads import summary_steps

DIGEST_MARK = "[deterministic digest"
REMEMBERED = "remembered: "
_RESULT = re.compile(r"^result (\S+) (\S+) \[([^\]]*)\] (.*)$")
_BUCKETS = {
    "read": "read",
    "write": "changed",
    "grep": "searched",
    "find": "searched",
    "exec": "ran",
}
_LISTS = ("read", "changed", "searched", "ran")
_SEP = " · "
_KEEP_SAID = 12  # the model's own lines a digest keeps: the newest distinct ones


@dataclass
class _Digest:
    """What a digest keeps: the things touched (newest last, each once), the notes the agent
    remembered, its newest distinct statements, failures and operator messages (as open
    questions: the operator's word outranks a guess)."""

    lists: dict[str, dict[str, None]]
    remembered: dict[str, None]
    said: dict[str, None]
    questions: dict[str, None]
    next_step: str = ""

    @classmethod
    def empty(cls) -> _Digest:
        return cls({name: {} for name in _LISTS}, {}, {}, {})


def _touch(items: dict[str, None], item: str) -> None:
    """Insert ``item`` as the newest, moving it if it was already there."""
    items.pop(item, None)
    items[item] = None


def _parse_notes(notes: str, into: _Digest) -> None:
    step = "?"
    pending: tuple[str, str, str, bool] | None = None  # kind, target, tool, error
    for line in notes.splitlines():
        if line.startswith(BODY_PREFIX):
            if pending is not None:  # the first body line of a result, for two kinds only
                kind, target, tool, error = pending
                first = _clip(line[len(BODY_PREFIX) :].strip(), 240)
                if error:
                    _touch(into.questions, f"step {step} {tool} {target} failed: {first}")
                elif kind == "memory":
                    _touch(into.remembered, first)
                pending = None
            continue
        pending = None
        if line.startswith("### step "):
            step = line[len("### step ") :]
        elif line.startswith("operator: "):
            _touch(into.questions, f"operator at step {step}: {line[len('operator: ') :]}")
        elif line.startswith("assistant: "):
            said = line[len("assistant: ") :]
            _touch(into.said, said)
            into.next_step = said
        elif match := _RESULT.match(line):
            tool, kind, state, target = match.groups()
            error = state.endswith(", error")
            bucket = _BUCKETS.get(kind)
            if bucket is not None and not error:
                _touch(into.lists[bucket], target)
            pending = (kind, target, tool, error)


def _parse_digest(text: str, into: _Digest) -> None:
    """Merge an earlier digest back in, so a second fold keeps what the first one knew."""
    section = ""
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith("- "):
            section = line[:-1]
            continue
        if not line.startswith("- ") or line == "- none recorded":
            continue
        item = line[2:]
        if section == "Files read or changed":
            name, _, rest = item.partition(": ")
            if name in into.lists:
                for entry in rest.split(_SEP):
                    if entry and not entry.startswith("(+"):
                        _touch(into.lists[name], entry)
        elif section == "Open questions":
            _touch(into.questions, item)
        elif section.startswith("Decisions") and item.startswith(REMEMBERED):
            _touch(into.remembered, item[len(REMEMBERED) :])
        elif section.startswith("Decisions"):
            _touch(into.said, item)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _newest(items: Sequence[str], limit: int, sep: str) -> str:
    """As many of the newest ``items`` as fit ``limit`` chars, oldest first, with a count of the
    ones left out."""
    kept: list[str] = []
    used = 0
    for item in reversed(items):
        item = _clip(item, 120)
        if kept and used + len(item) + len(sep) > limit - 20:
            break
        kept.append(item)
        used += len(item) + len(sep)
    kept.reverse()
    left = len(items) - len(kept)
    return (f"(+{left} earlier){sep}" if left else "") + sep.join(kept)


def digest(
    goal: str,
    previous: Summary | None,
    notes: str,
    first_step: int,
    through_step: int,
    max_chars: int,
) -> str:
    """A deterministic summary of the notes under the summary contract, at most ``max_chars``.

    Built from the notes' header lines (never from tool bodies, except the first line of a
    failure or of a remembered note), so no tool output is promoted into the agent's own voice.
    Touched files and searches are kept newest-last with a count of what no longer fits.
    """
    acc = _Digest.empty()
    earlier = ""
    if previous is not None:
        if previous.text.startswith(DIGEST_MARK):
            _parse_digest(previous.text, acc)
        else:
            earlier = previous.text
    _parse_notes(notes, acc)
    share = max(80, max_chars // 6)
    lines = [
        f"{DIGEST_MARK} of steps {first_step}–{through_step}; no model wrote it]",
        "Goal:",
        f"- {_clip(one_line(goal), share)}",
        "Files read or changed:",
    ]
    for name, touched in acc.lists.items():
        if touched:
            lines.append(f"- {name}: {_newest(list(touched), share, _SEP)}")
    if earlier:
        lines += ["Earlier summary:", f"- {_clip(one_line(earlier), share)}"]
    tail = ["Next step:", f"- {_clip(acc.next_step or 'not recorded', share)}"]
    budget = max_chars - sum(len(x) + 1 for x in lines + tail)
    # Remembered notes are the agent's explicit decisions: newest-first, they go before its lines.
    decisions = list(acc.said)[-_KEEP_SAID:] + [REMEMBERED + r for r in acc.remembered]
    for title, items in (
        ("Decisions taken and options rejected", decisions),
        ("Open questions", list(acc.questions)),
    ):
        lines.append(f"{title}:")
        budget -= len(title) + 2
        kept: list[str] = []
        for item in reversed(items):  # newest first, each section within half of what is left
            line = f"- {_clip(item, 240)}"
            if len(line) + 1 > budget or (kept and budget - len(line) - 1 < budget // 2):
                break
            kept.append(line)
            budget -= len(line) + 1
        lines += reversed(kept) if kept else ["- none recorded"]
    return _clip("\n".join(lines + tail), max_chars)


_FENCED = re.compile(r"^(`{3,})(summary|notes)\n(.*?)\n\1$", re.M | re.S)
_GOAL = re.compile(r"^Goal of the run: (.*)$", re.M)
_TASK_GOAL = re.compile(r"Goal: (.*?)\nSuccess criterion: ", re.S)  # the frame's task message
_RANGE = re.compile(r"summary of steps (\d+)–(\d+)")


def digest_request(request: CompletionRequest, max_chars: int = 4_000) -> str:
    """The deterministic digest of a summary request built by ``summary_request`` or
    ``shared_summary_request`` (whose previous summary is the one among the messages above).

    For providers that answer summary requests without a model (the scripted provider).
    """
    body = request.messages[-1].content if request.messages else ""
    above = [m.content for m in request.messages[:-1]]
    goal = _GOAL.search(body) or next(filter(None, map(_TASK_GOAL.match, above)), None)
    blocks = {m.group(2): m.group(3) for m in _FENCED.finditer(body)}
    span = _RANGE.search(body)
    first, through = (int(span.group(1)), int(span.group(2))) if span else (0, 0)
    earlier = blocks.get("summary")
    if earlier is None:  # a shared request: the summary so far is one of the messages above
        earlier = next((c.partition("\n")[2] for c in above if summary_steps(c)), None)
    previous = Summary(0, earlier) if earlier is not None else None
    return digest(
        goal.group(1) if goal else "", previous, blocks.get("notes", ""), first, through, max_chars
    )
