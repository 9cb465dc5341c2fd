"""Why did it forget X? An entry's whole lifecycle across a run's requests, and the compaction
ledger of what each summary replaced (DESIGN §3.2).

Pure, over a trace's stored manifests (``build_trace``): every working request lists each
observation with the state that request gave it, so following one call id through the requests in
order reads back full → capped → superseded by step N → collapsed → folded into summary K, and the
run's ``recall_result`` calls naming it as a handle say when it was read back. The ledger is read
off the same manifests: each summary's entry names the steps it covers, and the observations that
first show as folded under it are what it replaced (with the earlier summary it rewrote).

No I/O, no engine: a trace from any schema whose manifests list call ids is enough.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from io_tui.core.text.heads import summary_steps, target_steps

RECALL_TOOL = "recall_result"  # core/tools/recall.py: reads a recorded result back by handle
NOT_LISTED = "not listed"  # a request after the observation whose manifest does not name it
_LEDGER_HANDLE = re.compile(r"r\d+\.s\d+\.(.+)")  # core/progress/model.py's handle()
_SOURCE = re.compile(r"compaction summary \((\w+)")
_AGED = re.compile(r"a command's output, aged out at step (\d+)")  # ``step.Entry.aged_reason``


@dataclass(frozen=True, slots=True)
class Phase:
    """A run of consecutive working requests that gave an entry the same state.

    ``first`` and ``last`` are the steps of those requests (the request that opened step N is
    the first to carry a result of step N - 1). ``summary`` is the summary the entry was folded
    into (its last step); ``est_tokens`` what the entry cost in the first of those requests;
    ``kept_chars`` / ``total_chars`` what a capped entry kept."""

    state: str
    first: int
    last: int
    requests: int
    reason: str = ""
    superseded_by: int | None = None
    summary: int | None = None
    est_tokens: int = 0
    kept_chars: int | None = None
    total_chars: int | None = None

    def label(self) -> str:
        aged = _AGED.search(self.reason)
        if aged is not None and self.state == "elided":
            return f"cleared (aged out at step {aged[1]})"
        if aged is not None:  # still sent, until the next rewrite
            return f"{self._label()}, aged out at step {aged[1]}: cleared at the next rewrite"
        return self._label()

    def _label(self) -> str:
        match self.state:
            case "capped" if self.kept_chars is not None and self.total_chars is not None:
                return f"capped ({self.kept_chars:,} of {self.total_chars:,} chars)"
            case "superseded" if self.superseded_by is not None:
                return f"superseded by step {self.superseded_by}"
            case "dropped" if self.superseded_by is not None:  # its whole step left out
                return f"dropped (superseded by step {self.superseded_by})"
            case "summary" if self.summary is not None:
                return f"folded into summary {self.summary}"
            case "corrected" if self.superseded_by is not None:
                return f"corrected at step {self.superseded_by}"
            case _:
                return self.state

    def span(self) -> str:
        return (
            f"step {self.first}" if self.first == self.last else f"steps {self.first}–{self.last}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "label": self.label(),
            "first_request": self.first,
            "last_request": self.last,
            "requests": self.requests,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
            "summary": self.summary,
            "est_tokens": self.est_tokens,
            "kept_chars": self.kept_chars,
            "total_chars": self.total_chars,
        }


@dataclass(frozen=True, slots=True)
class Recalled:
    """A ``recall_result`` call of step ``step`` that named the entry's call id as its handle."""

    step: int
    call_id: str
    offset: int | None = None
    limit: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "call_id": self.call_id,
            "offset": self.offset,
            "limit": self.limit,
        }


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """One observation's lifecycle: its call, every phase across the requests, its recalls.

    ``matched`` says how it answered the query (``call id``, ``target``, ``arguments``,
    ``result``); ``named_by`` the summaries whose text names its target (a folded entry whose
    summary does not name it is the usual answer to "why did it forget X")."""

    call_id: str
    step: int
    tool: str
    kind: str
    target: str
    phases: tuple[Phase, ...]
    recalls: tuple[Recalled, ...] = ()
    matched: str = "call id"
    named_by: tuple[int, ...] = ()

    @property
    def call(self) -> str:
        """The call, as a line names it: ``grep word_count``, ``read_file (read) a.py``."""
        kind = "" if self.kind == self.tool else f" ({self.kind})"
        return f"{self.tool}{kind} {self.target}"

    @property
    def now(self) -> str:
        """Its state in the run's last request (``never sent`` when no request came after it)."""
        return self.phases[-1].label() if self.phases else "never sent"

    def story(self) -> str:
        """``full → capped (…) → superseded by step N → … → recalled by handle at step M``, in
        the order they happened (a recall of step M comes after the request that opened M)."""
        events = sorted(
            [(p.first, 0, p.label()) for p in self.phases]
            + [(r.step, 1, f"recalled by handle at step {r.step}") for r in self.recalls]
        )
        labels = [label for _, _, label in events]  # a new reason alone is no new state
        parts = [b for a, b in zip(["", *labels], labels, strict=False) if a != b]
        if not self.phases:
            parts.insert(0, "never sent: no request came after it")
        return " → ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "step": self.step,
            "tool": self.tool,
            "kind": self.kind,
            "target": self.target,
            "matched": self.matched,
            "now": self.now,
            "story": self.story(),
            "phases": [p.to_json() for p in self.phases],
            "recalls": [r.to_json() for r in self.recalls],
            "named_by_summaries": list(self.named_by),
        }


@dataclass(frozen=True, slots=True)
class Fold:
    """One compaction summary as the ledger keeps it: the steps it covers (``first``–
    ``through``), the request that first carried it (``written_at``), who wrote it
    (``provider`` or ``digest``), the earlier summary it rewrote, and the observations it
    replaced (those first folded under it)."""

    through: int
    first: int
    written_at: int
    source: str
    rewrote: int | None
    replaced: tuple[tuple[int, str, str, str], ...]  # (step, call id, kind, target)
    carried_by: int  # how many requests carried it
    est_tokens: int
    text: str

    def replaced_text(self, limit: int = 20) -> str:
        """``step 1 exec cat big.txt, step 2 read a.py, …`` (the first ``limit``, then a count)."""
        shown = ", ".join(f"step {s} {k} {t}" for s, _, k, t in self.replaced[:limit])
        more = len(self.replaced) - limit
        return (shown or "no results") + (f" and {more} more" if more > 0 else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "through_step": self.through,
            "first_step": self.first,
            "written_at": self.written_at,
            "source": self.source,
            "rewrote": self.rewrote,
            "replaced": [
                {"step": s, "call_id": c, "kind": k, "target": t} for s, c, k, t in self.replaced
            ],
            "carried_by": self.carried_by,
            "est_tokens": self.est_tokens,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class LifecycleReport:
    """What ``io-tui trace RUN --lifecycle Q`` and the lifecycle screen show for one query."""

    query: str
    matches: tuple[Lifecycle, ...]
    ledger: tuple[Fold, ...]
    more: int = 0  # matches left out past the limit

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "matches": [m.to_json() for m in self.matches],
            "more_matches": self.more,
            "compaction_ledger": [f.to_json() for f in self.ledger],
        }


# -- reading the trace -----------------------------------------------------------------------


def work_requests(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's working requests (every attempt), in the order they were sent."""
    return [r for r in trace["requests"] if r.get("purpose", "work") == "work"]


def _observations(trace: dict[str, Any]) -> dict[str, tuple[int, dict[str, Any]]]:
    return {
        str(o.get("call_id")): (int(s["step"]), o)
        for s in trace["steps"]
        for o in s.get("observations", [])
    }


def _calls(trace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c.get("id")): c for s in trace["steps"] for c in s.get("tool_calls", [])}


Listed = dict[str, list[tuple[int, dict[str, Any]]]]  # call id → (request index, its entry)


def scan(
    requests: Sequence[dict[str, Any]], wanted: Iterable[str] = ()
) -> tuple[list[dict[str, Any] | None], Listed]:
    """One pass over every request's entries: each request's summary entry (kind ``summary``,
    call id ``summary:K``) if it carried one, and the entries of the ``wanted`` call ids."""
    want = set(wanted)
    summaries: list[dict[str, Any] | None] = []
    listed: Listed = {c: [] for c in want}
    for index, request in enumerate(requests):
        summary = None
        for entry in request.get("entries", ()):
            call_id = entry.get("call_id")
            if call_id in want:
                listed[call_id].append((index, entry))
            elif entry.get("kind") == "summary":
                summary = entry
        summaries.append(summary)
    return summaries, listed


def phases(
    steps: Sequence[int],
    listed: Sequence[tuple[int, dict[str, Any]]],
    step: int,
    summaries: Sequence[dict[str, Any] | None],
) -> tuple[Phase, ...]:
    """The phases of one entry of step ``step``: ``steps[i]`` is the step request ``i`` opened
    (in order), ``listed`` the entry's (request index, entry) pairs; every request after
    ``step`` that does not list it is ``not listed``. ``summaries[i]`` is the summary entry
    request ``i`` carried (``scan``)."""
    at = dict(listed)
    out: list[Phase] = []
    open_: dict[str, Any] | None = None
    start = min([bisect_right(steps, step), *at])  # before its result existed: nothing
    for index in range(start, len(steps)):
        entry = at.get(index)
        key: tuple[Any, ...]
        if entry is None:
            key = (NOT_LISTED, "", None, None)
        else:
            state = str(entry.get("state", ""))
            summary = summaries[index] if state == "summary" else None
            folded = int(summary.get("step") or 0) if summary is not None else None
            key = (state, str(entry.get("reason") or ""), entry.get("superseded_by"), folded)
        req_step = steps[index]
        if open_ is not None and open_["key"] == key:
            open_["last"] = req_step
            open_["requests"] += 1
            continue
        if open_ is not None:
            out.append(_phase(open_))
        open_ = {"key": key, "first": req_step, "last": req_step, "requests": 1, "entry": entry}
    if open_ is not None:
        out.append(_phase(open_))
    return tuple(out)


def _phase(run: dict[str, Any]) -> Phase:
    state, reason, by, summary = run["key"]
    entry = run["entry"] or {}
    return Phase(
        state,
        run["first"],
        run["last"],
        run["requests"],
        reason,
        by,
        summary,
        int(entry.get("est_tokens") or 0),
        entry.get("kept_chars"),
        entry.get("total_chars"),
    )


def recalls_of(trace: dict[str, Any]) -> dict[str, list[Recalled]]:
    """Every ``recall_result`` call of the run, by the call id its handle names (the call id
    itself, or the progress ledger's ``r<run>.s<step>.<call id>`` of this run)."""
    out: dict[str, list[Recalled]] = {}
    ours = f"r{trace['run']['id']}."
    for step in trace["steps"]:
        for call in step.get("tool_calls", []):
            args = call.get("arguments") or {}
            if call.get("name") != RECALL_TOOL or not isinstance(args, dict):
                continue
            handle = str(args.get("handle", "")).strip()
            found = _LEDGER_HANDLE.fullmatch(handle) if handle.startswith(ours) else None
            recall = Recalled(
                int(step["step"]),
                str(call.get("id")),
                _int(args.get("offset")),
                _int(args.get("limit")),
            )
            out.setdefault(found[1] if found else handle, []).append(recall)
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- the compaction ledger ---------------------------------------------------------------------


def compaction_ledger(
    requests: Sequence[dict[str, Any]], summaries: Sequence[dict[str, Any] | None]
) -> tuple[Fold, ...]:
    """Every summary the run's requests carried, oldest first, with what it replaced
    (``summaries``: each request's summary entry, from ``scan``)."""
    seen: set[str] = set()  # call ids already folded under an earlier summary
    by_through: dict[int, Fold] = {}
    carried: dict[int, int] = {}
    previous: int | None = None
    for request, summary in zip(requests, summaries, strict=True):
        if summary is None:
            continue
        through = int(summary.get("step") or 0)
        carried[through] = carried.get(through, 0) + 1
        if through in by_through:
            continue
        replaced = tuple(
            (
                int(e.get("step") or 0),
                str(e.get("call_id")),
                str(e.get("kind")),
                str(e.get("target")),
            )
            for e in request.get("entries", [])
            if e.get("state") == "summary"
            and e.get("kind") != "summary"
            and e.get("call_id") not in seen
        )
        seen.update(c for _, c, _, _ in replaced)
        target = str(summary.get("target", ""))
        steps = target_steps(target)
        source = _SOURCE.match(str(summary.get("reason") or ""))
        by_through[through] = Fold(
            through,
            steps[0] if steps else 1,
            int(request["step"]),
            source.group(1) if source else "",
            previous,
            replaced,
            0,  # counted below, once every request is seen
            int(summary.get("est_tokens") or 0),
            _summary_text(request, through),
        )
        previous = through
    return tuple(replace(f, carried_by=carried[k]) for k, f in by_through.items())


def _summary_text(request: dict[str, Any], through: int) -> str:
    """The summary as the request sent it (its opening line says which steps it covers)."""
    for message in request.get("messages", []):
        content = str(message.get("content", ""))
        steps = summary_steps(content)
        if message.get("role") == "user" and steps is not None and steps[1] == through:
            return content.split("\n", 1)[1] if "\n" in content else ""
    return ""


# -- finding entries -------------------------------------------------------------------------


def find(trace: dict[str, Any], query: str) -> list[tuple[str, str]]:
    """The call ids ``query`` names, with how: the call id itself; else (case-insensitively) the
    observations whose target, call arguments or recorded result contain it, in that order of
    preference and by step within each."""
    observations = _observations(trace)
    if query in observations:
        return [(query, "call id")]
    needle = query.casefold()
    if not needle.strip():
        return []
    calls = _calls(trace)
    found: dict[str, list[str]] = {"target": [], "arguments": [], "result": []}
    for call_id, (_, obs) in observations.items():
        call = calls.get(call_id, {})
        arguments = json.dumps(call.get("arguments") or {}, ensure_ascii=False)
        if needle in str(obs.get("target", "")).casefold():
            found["target"].append(call_id)
        elif needle in arguments.casefold():
            found["arguments"].append(call_id)
        elif needle in str(obs.get("full_text") or obs.get("text") or "").casefold():
            found["result"].append(call_id)
    return [(c, how) for how, ids in found.items() for c in ids]


def lifecycles(trace: dict[str, Any], query: str, limit: int = 50) -> LifecycleReport:
    """The lifecycle of every entry ``query`` names (at most ``limit``) and the run's
    compaction ledger."""
    requests = work_requests(trace)
    found = find(trace, query)
    summaries, index = scan(requests, (c for c, _ in found[:limit]))
    ledger = compaction_ledger(requests, summaries)
    steps = [int(r["step"]) for r in requests]
    observations = _observations(trace)
    recalls = recalls_of(trace)
    matches = []
    for call_id, how in found[:limit]:
        step, obs = observations[call_id]
        target = str(obs.get("target", ""))
        matches.append(
            Lifecycle(
                call_id,
                step,
                str(obs.get("tool", "")),
                str(obs.get("kind", "")),
                target,
                phases(steps, index.get(call_id, []), step, summaries),
                tuple(recalls.get(call_id, ())),
                how,
                _naming(ledger, target),
            )
        )
    return LifecycleReport(query, tuple(matches), ledger, max(0, len(found) - limit))


def _naming(ledger: Iterable[Fold], target: str) -> tuple[int, ...]:
    needle = target.casefold()
    return tuple(f.through for f in ledger if needle and needle in f.text.casefold())
