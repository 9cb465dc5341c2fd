"""The full, unelided trace of a run, in the schema of DESIGN §4 (``io-tui trace RUN --json``).

Beside it, one working request read alone (``step_request``): the inspector shows one request
at a time, and a long run's trace rebuilds every request it ever sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from io_tui.core.events import EventKind
from io_tui.core.progress.keeper import ledger_of
from io_tui.core.run.sub_agents import waiting_on
from io_tui.core.store import Store
from io_tui.core.store.intents import IntentRow
from io_tui.core.store.requests import RequestRow
from io_tui.core.store.trace import ObservationRow


class TraceNotFound(LookupError):
    pass


async def build_trace(store: Store, run_id: int, *, cache: bool = True) -> dict[str, Any]:
    """The run's trace. ``cache``: each request with its prompt-cache annotation (``cache``:
    its cached prefix, where and why it broke, ``context/cache.py``); a reader that shows none
    of it (the readable trace, its ledger, a step's context) leaves it out, and with it the
    import of the context's estimates and message shapes."""
    run = await store.runs.get(run_id)
    if run is None:
        raise TraceNotFound(f"no run {run_id} in {store.path}")
    steps = await store.trace.steps(run_id)
    requests = await store.trace.requests(run_id)
    events = await store.trace.events(run_id)
    approvals = await store.approvals.for_run(run_id)
    observations = await store.trace.observations(run_id)
    intents = await store.intents.for_run(run_id)
    latest = {i.call_id: i for i in intents}  # a re-run call's newest intent
    sub_agents: dict[int, dict[str, int]] = {}  # step → call → the child run carrying it out
    for e in events:
        if e.kind == EventKind.SUB_AGENT.value:
            sub_agents.setdefault(e.step, {})[e.detail["call_id"]] = e.detail["run_id"]
    waits = await waiting_on(store, run)
    progress = await ledger_of(store, run_id)
    checkpoints = await store.checkpoints.for_run(run_id)
    forks = await store.forks.of(run_id)
    revisions = await store.progress.revisions(run_id)
    request_rows = [_request(r) for r in requests]
    if cache:
        from io_tui.core.context.cache import annotate

        annotate(request_rows)
    rewrites_saved(request_rows)
    obs_by_step: dict[int, list[dict[str, Any]]] = {}
    for o in observations:
        obs_by_step.setdefault(o.step, []).append(_observation(o))
    return {
        "run": {
            "id": run.id,
            "goal": run.goal,
            "workspace": run.workspace,
            "status": run.status,
            "outcome": run.outcome,
            "parent_run_id": run.parent_run_id,
            "steps": run.steps,
            "tokens": run.tokens,
            "provider": run.provider,
            # how it was started (``origin.RunOrigin``): settings, MCP servers; null before
            # schema 5
            "origin": run.origin,
            "error": run.error,
            # the earlier run whose progress ledger its first request carried (--continue)
            "continues": _continues(run.contract),
            # a fork: the run and step it left from (its first request is that step's, as
            # recorded; its steps before that one are that run's)
            "forked_from": (
                {"run_id": run.forked_from, "step": run.fork_step}
                if run.forked_from is not None
                else None
            ),
            # paused or interrupted with its sub-agent: the child run it resumes with
            "waiting_on": waits.id if waits is not None else None,
            "created_at": run.created_at,
            "finished_at": run.finished_at,
        },
        "steps": [
            {
                "step": s.step,
                "text": s.text,
                "tool_calls": [c.to_json() for c in s.tool_calls],
                "decision": s.decision,
                "result": s.result,
                "observations": obs_by_step.get(s.step, []),
                "operator_messages": list(s.operator_messages),
                "tokens": s.tokens,
                # each call without an observation: "started" (in flight at a crash, outcome
                # unknown) or "not_started"
                "unfinished_calls": {
                    c.id: _unfinished(latest.get(c.id))
                    for c in s.tool_calls
                    if c.id not in {o["call_id"] for o in obs_by_step.get(s.step, [])}
                },
                "sub_agents": sub_agents.get(s.step, {}),
            }
            for s in steps
        ],
        "intents": [i.to_json() for i in intents],
        # the workspace's checkpoints (``core/checkpoints``): before the steps that may change
        # files, at the run's end, around each rewind; and the runs forked from this one
        "checkpoints": [c.to_json() for c in checkpoints],
        "forks": [{"run_id": f, "step": s} for f, s in forks],
        # the progress ledger (``core/progress``): its newest revision, and each revision's
        # step and digest (a run from before schema 7 has none: its ledger is folded now)
        "progress": progress.to_json(),
        "progress_revisions": [
            {"revision": r.revision, "step": r.step, "digest": r.digest, "at": r.created_at}
            for r in revisions
        ],
        "requests": request_rows,
        "events": [
            {"step": e.step, "kind": e.kind, "detail": e.detail, "at": e.at} for e in events
        ],
        "approvals": [
            {
                "id": a.request.id,
                "step": a.request.step,
                "tool": a.request.tool,
                "act": a.request.act.value,
                "target": a.request.target,
                "content": a.request.content,
                "rule": a.request.rule,
                "layer": a.request.layer,
                "status": a.status,
                "decision": a.decision.to_json() if a.decision else None,
                "performed": a.performed,
            }
            for a in approvals
        ],
    }


@dataclass(frozen=True, slots=True)
class StepRequest:
    """One working request of a run and what is shown beside it, read without the trace.

    ``request`` and ``previous`` are as ``build_trace`` gives them in ``requests``: ``request``
    with its prompt-cache annotation (against the working request stored before it),
    ``previous`` (the previous step's, which a diff compares it with) without. ``steps`` are the
    steps its entries name, each with its ``result`` and ``observations`` as ``build_trace``
    gives them (the rest of a step left out)."""

    run_id: int
    step: int  # the step asked for, or the nearest one with a working request
    request_steps: tuple[int, ...]  # every step of the run that has a working request
    request: dict[str, Any] | None
    previous: dict[str, Any] | None
    steps: tuple[dict[str, Any], ...]


async def step_request(store: Store, run_id: int, step: int) -> StepRequest:
    """The last attempt of the working request that opened ``step`` (or the nearest step that
    has one), reading only it, the requests it is compared with, and the steps it names: a
    long run's inspector opens without rebuilding every request of the run."""
    if await store.runs.get(run_id) is None:
        raise TraceNotFound(f"no run {run_id} in {store.path}")
    work = [k for k in await store.trace.request_keys(run_id) if k.purpose == "work"]
    steps = sorted({k.step for k in work})
    if not steps:
        return StepRequest(run_id, step, (), None, None, ())
    if step not in steps:
        step = min(steps, key=lambda s: abs(s - step))
    at = max(i for i, k in enumerate(work) if k.step == step)  # its last attempt
    earlier = [s for s in steps if s < step]
    last = max(i for i, k in enumerate(work) if k.step == earlier[-1]) if earlier else None
    wanted = {work[at].id} | {work[i].id for i in (at - 1, last) if i is not None and i >= 0}
    rows = await store.trace.requests_by_id(sorted(wanted))
    request = _request(rows[work[at].id])
    from io_tui.core.context.cache import annotate

    annotate([request], _request(rows[work[at - 1].id]) if at else None)
    previous = _request(rows[work[last].id]) if last is not None else None
    named = sorted({int(e.get("step") or 0) for e in request["entries"]})
    observations: dict[int, list[dict[str, Any]]] = {}
    for o in await store.trace.observations_in(run_id, named):
        observations.setdefault(o.step, []).append(_observation(o))
    shown = tuple(
        {"step": s.step, "result": s.result, "observations": observations.get(s.step, [])}
        for s in await store.trace.steps_in(run_id, named)
    )
    return StepRequest(run_id, step, tuple(steps), request, previous, shown)


def _observation(o: ObservationRow) -> dict[str, Any]:
    return {
        "call_id": o.call_id,
        "tool": o.tool,
        "kind": o.kind,
        "target": o.target,
        "span": o.span,
        "is_error": o.is_error,
        "text": o.text,
        "full_text": o.full_text,
        "corrects": o.corrects,  # a correction made at the step's boundary: the call it corrects
    }


def _continues(contract: dict[str, Any]) -> dict[str, Any] | None:
    carried = contract.get("continues")
    if not carried:
        return None
    return {k: carried[k] for k in ("run_id", "revision", "digest")}


def _unfinished(intent: IntentRow | None) -> str:
    return intent.status if intent is not None and intent.in_flight else "not_started"


def _request(row: RequestRow) -> dict[str, Any]:
    manifest = row.manifest
    last = row.attempts[-1] if row.attempts else {}
    return {
        "step": row.step,
        "attempt": row.attempt,
        "purpose": row.purpose,
        "ceiling_tokens": row.ceiling_tokens,
        "est_tokens": row.est_tokens,
        "frame_tokens": row.frame_tokens,
        "reported_tokens": row.reported_tokens,
        "usage": row.usage,
        "provider": row.provider,
        "model": row.model,
        "attempts": row.attempts,
        "error": row.error,
        "rung": manifest.get("rung"),  # the degradation ladder's (``context/ladder.py``)
        # the answer's stop reason (normalized, and the vendor's), and what a failed request
        # had streamed before it failed (its last attempt's, marked partial)
        "stop_reason": last.get("stop_reason"),
        "raw_stop_reason": last.get("raw_stop_reason"),
        "partial": last.get("partial"),
        "messages": row.messages,
        "sections": manifest.get("sections", []),
        "entries": manifest.get("entries", []),
        "memory_keys": manifest.get("memory_keys", []),
        # the stable/dynamic boundary prompt caching uses, and the window and output budget
        # that bounded the request (older requests recorded neither: null)
        "boundary": manifest.get("boundary"),
        "limits": manifest.get("limits"),
        # how the engine's raw figures (sections, entries) became the request's calibrated ones
        "calibration": manifest.get("calibration"),
        # the version of each derived part it carried (skills, tools, instructions, memory)
        "derived": manifest.get("derived", {}),
        # the server was seen dropping the tool schemas: the model did not receive the tools
        "tools_ignored": bool(manifest.get("tools_ignored")),
        # what it changed of the request before it, why, and what that cost and saved
        # (``context/plan.py``: ``Rewrite``); null: it only appended
        "rewrite": manifest.get("rewrite"),
        # what it cost with prompt caching, beside re-sending everything (``run/meter.py``)
        "cost": manifest.get("cost"),
        # a summary request that repeated the working request before it, sharing its prompt
        # cache (``context/summary.py``)
        "shared": bool(manifest.get("shared")),
    }


WINDOW_SOURCES = {"config": "config", "preset": "model table", "server": "server's report"}


def limits_notes(request: dict[str, Any]) -> list[str]:
    """A request's window, output budget and which of them set its ceiling, and its stable
    prefix, as readable lines (none for a request recorded before they were kept)."""
    lines = []
    limits, boundary = request.get("limits"), request.get("boundary")
    if limits:
        window, output = limits["window_tokens"], limits["max_output_tokens"]
        by_window = limits["ceiling_bound"] == "window"
        source = limits.get("window_source")  # absent from requests recorded before it was kept
        lines.append(
            (f"window {window:,}" if window else "window unknown")
            + (f" (from the {WINDOW_SOURCES.get(source, source)})" if window and source else "")
            + (f" · output budget {output:,}" if output else " · no output budget")
            + " · ceiling set by "
            + ("the window, less the output budget and the frame" if by_window else "the contract")
        )
    if line := _calibration_note(request.get("calibration")):
        lines.append(line)
    if boundary:
        stable = request.get("frame_tokens") or boundary["stable_tokens"]  # calibrated, as sent
        lines.append(
            f"stable prefix: {boundary['stable_messages']} messages, ~{stable:,}"
            f" tok ({', '.join(boundary['stable_sections'])}: the prompt-cache breakpoint);"
            " the rest is dynamic"
        )
    return lines


def _calibration_note(calibration: dict[str, Any] | None) -> str:
    """What the figures by part (sections, entries) are, beside the request's calibrated totals,
    when they differ: the engine's estimate, before the drift factor."""
    if not calibration:
        return ""
    factor, counted = calibration.get("factor", 1.0), calibration.get("tools_counted", True)
    if factor == 1.0 and counted:
        return ""
    return f"figures by part are the engine's estimate: × {factor:.2f} in the provider's tokens" + (
        "" if counted else "; the tool schemas are not counted (the server drops them)"
    )


def decision_text(decision: dict[str, Any]) -> str:
    """What a step's stored decision says, in words: ``final answer; approval #3 decided``."""
    said: list[str] = []
    for key, value in decision.items():
        if value in (None, [], {}, False):
            continue
        if key == "final":
            said.append("final answer")
        elif key == "awaiting_approval":
            said.append(f"waits on approval #{value}")
        elif key == "resolved_approval":
            said.append(f"approval #{value} decided")
        elif key == "awaiting_sub_agent":
            said.append(f"waits on sub-agent run {value}")
        elif key == "pending_calls":
            said.append("calls not made yet: " + ", ".join(map(str, value)))
        else:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            said.append(f"{key.replace('_', ' ')}: {shown}")
    return "; ".join(said)


def rewind_line(detail: dict[str, Any]) -> str:
    """``↶ files rewound to before step 3: 2 files restored, 1 removed (…)``, or undone."""
    what = (
        "the last rewind undone"
        if detail.get("undo")
        else (f"files rewound to before step {detail.get('to_step')}")
    )
    kept = detail.get("kept") or []
    also = f"; kept as they were: {', '.join(kept)}" if kept else ""
    return f"↶ {what}: {detail.get('summary', '')}{also}"


def fork_line(detail: dict[str, Any]) -> str:
    """``⑂ forked at step 3 into run 12 (a worktree at …): "use awk"``."""
    place = {"worktree": " (a git worktree at {d})", "copy": " (a copy at {d})"}.get(
        str(detail.get("place")), ""
    ).format(d=detail.get("directory"))
    task = f': "{detail["task"]}"' if detail.get("task") else ""
    return f"⑂ forked at step {detail.get('step')} into run {detail.get('run_id')}{place}{task}"


def history_notes(trace: dict[str, Any]) -> dict[int, list[str]]:
    """The rewinds and forks of a run (``trace["events"]``), each a line under the step the
    run was at when it happened."""
    after: dict[int, list[str]] = {}
    for event in trace.get("events", []):
        if event["kind"] == "rewound":
            after.setdefault(event["step"], []).append(rewind_line(event["detail"]))
        elif event["kind"] == "forked":
            after.setdefault(event["step"], []).append(fork_line(event["detail"]))
    return after


def lineage_lines(run: dict[str, Any], forks: list[dict[str, Any]]) -> list[str]:
    """Where a fork left from, and the runs forked from this one (``trace["run"]``,
    ``trace["forks"]``)."""
    lines = []
    forked = run.get("forked_from")
    if forked:
        lines.append(
            f"⑂ forked from run {forked['run_id']} at step {forked['step']}: its steps before"
            f" {forked['step']} are that run's, and its first request is that step's, as recorded"
        )
    lines += [f"⑂ run {f['run_id']} forked from step {f['step']}" for f in forks]
    return lines


NOTABLE_STOPS = (None, "stop", "tool_calls")  # a request's ordinary ends: nothing to say


def request_notes(requests: list[dict[str, Any]]) -> list[str]:
    """Readable lines about a step's requests (``trace["requests"]`` of one step) where there
    is something to say: a retried attempt, a failure, an unusual stop reason (``length``: the
    answer was cut), and what a failed request had streamed, marked partial."""
    lines: list[str] = []
    for request in requests:
        label = (
            f"request {request['attempt']}" if request.get("purpose") != "summary" else "summary"
        )
        attempts = request.get("attempts") or []
        last = attempts[-1] if attempts else {}
        if last.get("error_kind") == "interrupted":  # its partial text is the step's own
            shown = len(((request.get("partial") or {}).get("text")) or "")
            lines.append(
                f"{label} interrupted: {last.get('error')}; the {shown:,} chars it had streamed"
                " are the step's text, kept"
            )
            continue
        for number, attempt in enumerate(attempts[:-1], 1):
            lines.append(
                f"{label}: attempt {number} failed ({attempt.get('error_kind')}:"
                f" {attempt.get('error')}), retried"
            )
        if request.get("error"):
            lines.append(f"{label} failed: {request['error']}")
        stop = request.get("stop_reason")
        if stop not in NOTABLE_STOPS:
            limit = (attempts[-1] if attempts else {}).get("max_output_tokens")
            cut = f": the answer was cut at {limit:,} tokens" if stop == "length" and limit else ""
            lines.append(
                f"{label}: stop reason {stop} (raw {request.get('raw_stop_reason')!r}){cut}"
            )
        rewrite = request.get("rewrite")
        if rewrite:
            lines.append(f"{label}: {rewrite_line(rewrite)}")
        cost = request.get("cost")
        if request.get("purpose") == "summary" and cost:
            lines.append(f"{label}: {summary_cost_line(cost, request.get('shared', False))}")
        partial = request.get("partial")
        if partial:
            lines.append("partial output (streamed before it failed):")
            lines += ["  │ " + line for line in (partial.get("text") or "").splitlines()]
            lines += [
                f"  │ → {call.get('name') or '?'} {call.get('arguments') or ''} (incomplete)"
                for call in partial.get("tool_calls") or []
            ]
    return lines


REWRITE_CAUSES = {
    "planned": "planned: what it drops repays the rewrite",
    "window": "the ceiling cut the window",
    "fold": "old steps were folded into a summary",
    "frame": "a part of the frame was rebuilt",
    "memory": "the memory block was rendered again",
    "other": "an earlier message changed",
}


def rewrite_line(rewrite: dict[str, Any]) -> str:
    """A stored rewrite (``plan.Rewrite.to_json``, with ``saved`` once read off the trace) in
    words: why, what it cost, what it was expected to save and what it saved."""
    cause = REWRITE_CAUSES.get(rewrite["cause"], rewrite["cause"])
    line = (
        f"rewrote the prefix ({cause}) from message {rewrite['kept_messages']}: "
        f"{rewrite['rewritten_tokens']:,} tokens written again, price {rewrite['price']:,.0f}"
    )
    if rewrite["saved_tokens"]:
        line += (
            f"; {rewrite['saved_tokens']:,} tokens fewer on each later request, expected to save"
            f" {rewrite['expected']:,.0f} over {rewrite['horizon']} requests"
        )
        if "saved" in rewrite:
            after = rewrite["requests_after"]
            line += f", saved {rewrite['saved']:,.0f} over {after} {plural(after, 'request')}"
    dropped = rewrite.get("dropped") or []
    if dropped:
        line += (
            f"; dropped {len(dropped)}: {', '.join(dropped[:6])}{' …' if len(dropped) > 6 else ''}"
        )
    return line


def summary_cost_line(cost: dict[str, Any], shared: bool) -> str:
    """What a compaction summary's request cost (``run/meter.py``): one that repeated the working
    request before it read that prefix from the provider's cache (``context/summary.py``)."""
    price = f"cost {cost['cost']:,.0f} ({cost['source']}; in uncached-token units)"
    if shared:
        return (
            "asked after the working request before it, sharing its prompt cache:"
            f" {cost['read']:,} tokens read from the cache, {cost['written']:,} written; {price}"
        )
    return f"asked in a request of its own, not cached: {cost['uncached']:,} tokens; {price}"


def cost_line(requests: list[dict[str, Any]]) -> str | None:
    """The run's prompt cost so far with caching against re-sending everything, from its last
    answered working request (``run/meter.py``), or None when none says."""
    costs = [r["cost"] for r in requests if r.get("purpose") == "work" and r.get("cost")]
    if not costs or costs[-1].get("ratio") is None:
        return None
    last = costs[-1]
    return (
        f"cost with prompt caching: {last['run_cost']:,.0f} against {last['run_naive_cost']:,.0f}"
        f" re-sending everything, {last['ratio']:.2f}× ({last['source']}; in uncached-token"
        " units)"
    )


def plural(n: int, noun: str) -> str:
    return noun if n == 1 else f"{noun}s"


def rewrites_saved(requests: list[dict[str, Any]]) -> None:
    """Add to each working request's rewrite what it saved in fact: what each later request
    carried less, at the read price, over the requests that came after it before the next
    rewrite (or the run's end, so far)."""
    work = [r for r in requests if r["purpose"] == "work" and r.get("error") is None]
    for index, request in enumerate(work):
        rewrite = request.get("rewrite")
        if not rewrite:
            continue
        from io_tui.core.context.plan import saved_by  # a run that rewrote its prefix only

        after = 0
        for later in work[index + 1 :]:
            if later.get("rewrite"):
                break
            after += 1
        rewrite["requests_after"] = after
        rewrite["saved"] = round(saved_by(rewrite, after), 1)
