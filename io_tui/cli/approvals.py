"""``io-tui approvals`` and ``io-tui decide REQUEST approve|deny``: answering asks from a shell."""

from __future__ import annotations

import argparse
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_store_option,
    open_store,
    print_json,
)
from io_tui.cli.run import APPROVERS, exit_code, report
from io_tui.cli.sinks import HumanSink, JsonLinesSink
from io_tui.core.approvals import Decision
from io_tui.core.decide import DecideError, decide


def register(sub: Any) -> None:
    approvals = sub.add_parser("approvals", help="pending approval requests across all runs")
    approvals.add_argument("--history", action="store_true", help="every request, decided too")
    approvals.add_argument("--json", action="store_true")
    add_store_option(approvals)
    approvals.set_defaults(handler=approvals_command)

    dec = sub.add_parser("decide", help="decide a pending request and resume its run")
    dec.add_argument("request", type=int, help="approval request id")
    dec.add_argument("decision", choices=["approve", "deny"])
    dec.add_argument("--reason", help="why (the model reads it)")
    dec.add_argument(
        "--approve",
        choices=sorted(APPROVERS),
        default="defer",
        help="how later asks of the resumed run are answered (default: defer)",
    )
    dec.add_argument("--json", action="store_true")
    add_store_option(dec)
    dec.set_defaults(handler=decide_command)


async def approvals_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        records = await (store.approvals.history() if args.history else store.approvals.pending())
    finally:
        await store.close()
    if args.json:
        print_json([r.to_json() for r in records])
        return EXIT_OK
    if not records:
        print("no pending approvals" if not args.history else "no approvals yet")
        return EXIT_OK
    for r in records:
        req = r.request
        state = r.decision.kind.value if r.decision else r.status
        print(
            f"#{req.id}  run {req.run_id} step {req.step}  {req.act.value} {req.target}  [{state}]"
        )
        print(f"      asked by '{req.rule}' in layer '{req.layer}'")
    return EXIT_OK


async def decide_command(args: argparse.Namespace) -> int:
    decision = (
        Decision.approve(decided_by="cli")
        if args.decision == "approve"
        else Decision.deny(args.reason or "denied from the command line", decided_by="cli")
    )
    store = await open_store(args)
    try:
        decided = await decide(
            store,
            args.request,
            decision,
            approver=APPROVERS[args.approve](),
            sink=JsonLinesSink() if args.json else HumanSink(),
        )
    except DecideError as exc:
        print(f"io-tui: {exc}")
        return EXIT_FAILED
    finally:
        await store.close()
    if decided.result is None:
        print(f"recorded {args.decision} for request {args.request} (run {decided.run_id})")
        return EXIT_OK
    report(args, decided.result)
    return exit_code(decided.result)
