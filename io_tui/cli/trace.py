"""``io-tui trace RUN [--json] [--context STEP] [--lifecycle CALL_ID|TEXT]``: the full,
unelided trace of a run."""

from __future__ import annotations

import argparse
import json
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_store_option,
    counted,
    ended_as,
    error,
    open_store,
    print_json,
)
from io_tui.core import (
    TraceNotFound,
    build_trace,
    cost_line,
    decision_text,
    history_notes,
    limits_notes,
    lineage_lines,
    request_notes,
    rewrite_line,
)


def register(sub: Any) -> None:
    parser = sub.add_parser("trace", help="the full trace of a run")
    parser.add_argument("run", type=int, help="run id")
    parser.add_argument("--json", action="store_true", help="the documented JSON schema")
    parser.add_argument("--context", type=int, metavar="STEP", help="what request STEP carried")
    parser.add_argument(
        "--ledger", action="store_true", help="only the run's progress ledger, as text"
    )
    parser.add_argument(
        "--lifecycle",
        metavar="CALL_ID|TEXT",
        help="why did it forget X: an entry's lifecycle across the requests, and the compaction"
        " ledger (plain, or --json)",
    )
    add_store_option(parser)
    parser.set_defaults(handler=trace_command)


async def trace_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    whole = args.json and args.lifecycle is None  # the schema's document: prompt caching too
    try:
        trace = await build_trace(store, args.run, cache=whole)
    except TraceNotFound as exc:
        error(str(exc))
        return EXIT_FAILED
    finally:
        await store.close()
    if args.lifecycle is not None:
        from io_tui.cli.lifecycle import print_lifecycle

        return print_lifecycle(trace, args.lifecycle, args.json)
    if args.json:
        print_json(trace)
    elif args.ledger:
        print(ledger_text(trace["progress"]))
    elif args.context is not None:
        return print_context(trace, args.context)
    else:
        print_readable(trace)
    return EXIT_OK


def print_readable(trace: dict[str, Any]) -> None:
    run = trace["run"]
    ended, steps = ended_as(run["status"], run["outcome"]), counted(run["steps"], "step")
    print(f"run {run['id']} · {ended} · {steps} · {run['tokens']:,} tokens")
    print(f"goal: {run['goal']}")
    print(f"workspace: {run['workspace']}")
    cost = cost_line(trace["requests"])
    if cost:
        print(cost)
    if run["error"]:
        print(f"error: {run['error']}")
    if run["continues"]:
        carried = run["continues"]
        print(
            f"continues run {carried['run_id']} from its progress ledger (revision"
            f" {carried['revision']}, digest {carried['digest']})"
        )
    for line in lineage_lines(run, trace.get("forks", [])):
        print(line)
    after = history_notes(trace)  # rewinds and forks, under the step the run was at
    child = run["waiting_on"]
    if run["status"] == "paused" and child is not None:
        print(
            f"paused: waits on its sub-agent run {child} (`io-tui trace {child}`); decide that"
            " run's request and both go on, the sub-agent first"
        )
    if run["status"] == "interrupted":
        first = f" (its sub-agent run {child} first)" if child is not None else ""
        print(f"interrupted: its process died; continue it with `io-tui resume {run['id']}`{first}")
    for step in trace["steps"]:
        print(f"\n── step {step['step']} " + "─" * 60)
        for message in step["operator_messages"]:
            print(f"[operator] {message}")
        for fix in (o for o in step["observations"] if o.get("corrects")):
            print(f"↻ {fix['full_text']}")  # a correction, sent before the step's turn
        if step["text"]:
            print(step["text"])
        for line in request_notes([r for r in trace["requests"] if r["step"] == step["step"]]):
            print(line)
        for call, obs in _pairs(step):
            print(f"→ {call['name']} {json.dumps(call['arguments'], ensure_ascii=False)}")
            child = step["sub_agents"].get(call["id"])
            if obs is not None:
                print(obs["full_text"])
            elif child is not None:
                print(f"(handed to sub-agent run {child}; no answer yet: this run resumes with it)")
            elif step["unfinished_calls"].get(call["id"]) == "started":
                print("(started, outcome unknown: in flight when its process died)")
            else:
                print("(not started)")
        decision = decision_text(step["decision"])
        if decision:
            print(f"decision: {decision}")
        for line in after.get(step["step"], []):
            print(line)
    print("\n── progress ledger " + "─" * 58)
    print(ledger_text(trace["progress"]))


def ledger_text(progress: dict[str, Any]) -> str:
    """The trace's progress ledger (``trace["progress"]``) as text: what ``--json`` leaves as
    it is, so it loads the ledger's text only here (with text endings)."""
    from io_tui.core import ProgressLedger, render_ledger

    return render_ledger(ProgressLedger.from_json(progress))


def _pairs(step: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    by_call = {o["call_id"]: o for o in step["observations"]}
    return [(c, by_call.get(c["id"])) for c in step["tool_calls"]]


def print_context(trace: dict[str, Any], step: int) -> int:
    requests = [r for r in trace["requests"] if r["step"] == step and r["purpose"] == "work"]
    if not requests:
        error(f"run {trace['run']['id']} has no request for step {step}")
        return EXIT_FAILED
    for req in requests:
        reported = req["reported_tokens"]
        print(
            f"request for step {step}, attempt {req['attempt']}: ceiling {req['ceiling_tokens']:,} ·"
            f" estimate {req['est_tokens']:,} · reported {f'{reported:,}' if reported is not None else '—'}"
            f" · rung {req.get('rung') or '—'}"
        )
        for line in limits_notes(req):
            print(line)
        if req.get("cost"):
            c = req["cost"]
            print(
                f"cost with caching: {c['cost']:,.0f} ({c['read']:,} read, {c['written']:,}"
                f" written, {c['uncached']:,} uncached; {c['source']}) · re-sending everything"
                f" {c['naive_cost']:,.0f} · the run so far {c['ratio']:.2f}×"
            )
        if req.get("rewrite"):
            print(rewrite_line(req["rewrite"]))
        print("\nsections:")
        print(f"  {'name':<14} {'tokens':>6}      {'prefix':<7} {'role':<16} authority · source")
        for s in req["sections"]:
            prefix = "stable" if s.get("fixed", True) else "dynamic"
            if s.get("withheld"):  # an instruction file the read policy denies: not sent
                prefix = "withheld"
            print(
                f"  {s['name']:<14} {s['est_tokens']:>6,} tok  {prefix:<7} {s.get('role', ''):<16}"
                f" {_labels(s, s['source'])}"
            )
            if s.get("reason"):  # absent from requests recorded before reasons were kept
                print(f"  {'':<14} why: {s['reason']}")
            for item in s.get("omitted") or ():
                print(f"  {'':<14} left out: {item.get('ref', '')} — {item.get('reason', '')}")
        print("\nentries:")
        print(
            f"  {'step':>4}  {'state':<15} {'kind':<7} {'tokens':>6}  {'role':<16}"
            " target · reason · authority · source"
        )
        for e in req["entries"]:
            by = f" (by step {e['superseded_by']})" if e.get("superseded_by") else ""
            print(
                f"  {e['step']:>4}  {e['state']:<15} {e['kind']:<7} {e['est_tokens']:>6}  "
                f"{e.get('role', ''):<16} {e['target']} · {e['reason']}{by}"
                f" · {_labels(e, e.get('source_ref', ''))}"
            )
        if req["memory_keys"]:
            print(f"\nmemory carried: {', '.join(req['memory_keys'])}")
    return EXIT_OK


def _labels(item: dict[str, Any], source: str) -> str:
    """Authority · source @ version, as far as the item names them."""
    version = item.get("source_version")
    where = f"{source} @ {version}" if version else source
    return " · ".join(p for p in (item.get("authority", ""), where) if p)
