"""``io-tui approvals`` and ``io-tui decide REQUEST approve|deny``: answering asks from a shell."""

from __future__ import annotations

import argparse
import time
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_store_option,
    open_store,
    print_json,
    servers_for_run,
)
from io_tui.cli.mcp_setup import add_mcp_config_option, mcp_servers, opened_hub, tool_registry
from io_tui.cli.run import APPROVERS, approver_for, exit_code, report, settings_from
from io_tui.cli.sinks import HumanSink, JsonLinesSink
from io_tui.core import (
    ApprovalRecord,
    DecideError,
    Decision,
    audit_row,
    audit_stats,
    decide,
    operator,
)


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
    add_mcp_config_option(dec)
    add_store_option(dec)
    dec.set_defaults(handler=decide_command)


async def approvals_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        records = await (store.approvals.history() if args.history else store.approvals.pending())
    finally:
        await store.close()
    if args.history:
        return _print_history(records, as_json=args.json)
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


def _print_history(records: list[ApprovalRecord], *, as_json: bool) -> int:
    """Every request: when, which rule asked, proposed and performed; rate and median wait."""
    stats = audit_stats(records)
    rows = [audit_row(r) for r in records]
    if as_json:
        print_json({"stats": stats.to_json(), "approvals": [row.to_json() for row in rows]})
        return EXIT_OK
    if not rows:
        print("no approvals yet")
        return EXIT_OK
    for row in rows:
        decided = _when(row.decided_at) if row.decided_at else "—"
        reason = f": {row.reason}" if row.reason else ""
        print(
            f"#{row.id}  run {row.run_id} step {row.step}  {row.act} {row.target}"
            f"  [{row.decision}{reason}]"
        )
        print(f"      asked {_when(row.asked_at)} by '{row.rule}' in layer '{row.layer}'")
        print(f"      decided {decided}{' by ' + row.decided_by if row.decided_by else ''}")
        print(f"      proposed:  {row.proposed}")
        print(f"      performed: {row.performed}")
    print(stats.summary())
    return EXIT_OK


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


async def decide_command(args: argparse.Namespace) -> int:
    by = operator("cli")
    decision = (
        Decision.approve(decided_by=by)
        if args.decision == "approve"
        else Decision.deny(args.reason or "denied from the command line", decided_by=by)
    )
    settings = settings_from(args)
    current = mcp_servers(settings, args.mcp_config)
    store = await open_store(args, check=True)
    try:
        # the MCP tools the paused run may call again: the servers it started with (none when
        # the request is not pending: nothing resumes)
        record = await store.approvals.get(args.request)
        pending = record is not None and record.status == "pending"
        run_id = record.request.run_id if record is not None and pending else None
        servers = await servers_for_run(store, run_id, current)
        async with opened_hub(servers) as hub:
            decided = await decide(
                store,
                args.request,
                decision,
                approver=approver_for(args.approve, settings),
                sink=JsonLinesSink() if args.json else HumanSink(),
                registry=tool_registry(hub),
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
