"""``io-tui approvals`` and ``io-tui decide REQUEST [approve|deny]``: answering asks from a shell.

The inbox lists each pending request with what it would do (``proposal``: a write as a diff
against the file as it is now); ``decide REQUEST`` without a decision shows the same and asks,
as ``io-tui run --approve ask`` does. ``--json`` prints one shape for the pending requests and
for ``--history``: ``{"approvals": [entry…], "stats": {…}}``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import replace
from typing import Any

from io_tui.cli.ask import TerminalApprover, describe
from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_mcp_config_option,
    add_store_option,
    approver_names,
    error,
    open_store,
    print_json,
    servers_for_run,
)
from io_tui.cli.proposal import show, visible
from io_tui.cli.terminal import exact
from io_tui.core import (
    ApprovalRecord,
    Decision,
    DecisionKind,
    audit_row,
    audit_stats,
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
    dec.add_argument(
        "decision",
        nargs="?",
        choices=["approve", "deny"],
        help="without it: show the request (a write's diff) and ask",
    )
    dec.add_argument("--reason", help="why (the model reads it)")
    dec.add_argument(
        "--approve",
        choices=approver_names(),
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
    if args.json:
        print_json(
            {
                "approvals": [entry(r) for r in records],
                "stats": audit_stats(records).to_json(),
            }
        )
        return EXIT_OK
    if args.history:
        return _print_history(records)
    if not records:
        print("no pending approvals")
        return EXIT_OK
    texts = await asyncio.gather(*(asyncio.to_thread(_pending_text, r) for r in records))
    show("\n\n".join(texts), exact(sys.stdout))  # made safe by visible(): colours pass
    return EXIT_OK


def entry(record: ApprovalRecord) -> dict[str, Any]:
    """One request as ``approvals --json`` prints it, pending or decided: the stored record
    (``decision`` an object, or null while pending) with the audit's one-line ``proposed`` and
    ``outcome``."""
    row = audit_row(record)
    return {
        **record.to_json(),
        "workspace": record.request.workspace,
        "proposed": row.proposed,
        "outcome": row.performed,
    }


def _pending_text(record: ApprovalRecord) -> str:
    """A pending request and what it would do. Blocking (reads the file a write changes)."""
    req = record.request
    return (
        f"#{req.id}  run {req.run_id} step {req.step}  {req.act.value} {visible(req.target)}"
        f"  [{record.status}] · io-tui decide {req.id}\n"
        + describe(req, sys.stdout).split("\n", 1)[1]  # the rule, the summary, the action
        + "".join(f"\n      {visible(review.describe())}" for review in record.reviews)
    )


def _print_history(records: list[ApprovalRecord]) -> int:
    """Every request: when, which rule asked, proposed and performed; rate and median wait."""
    stats = audit_stats(records)
    rows = [audit_row(r) for r in records]
    if not rows:
        print("no approvals yet")
        return EXIT_OK
    for row in rows:
        decided = _when(row.decided_at) if row.decided_at else "—"
        reason = f": {row.reason}" if row.reason else ""
        print(
            f"#{row.id}  run {row.run_id} step {row.step}  {row.act} {visible(row.target)}"
            f"  [{row.decision}{reason}]"
        )
        print(f"      asked {_when(row.asked_at)} by '{row.rule}' in layer '{row.layer}'")
        for review in row.reviews:
            print(f"      {review.describe()}")
        print(f"      decided {decided}{' by ' + row.decided_by if row.decided_by else ''}")
        print(f"      proposed:  {visible(row.proposed)}")
        print(f"      performed: {visible(row.performed)}")
    print(stats.summary())
    return EXIT_OK


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


async def decide_command(args: argparse.Namespace) -> int:
    # what resuming the run takes (the settings, MCP, the run's reporting): here, so that
    # ``approvals`` lists the inbox without loading it
    from io_tui.cli.mcp_setup import mcp_servers, opened_hub, tool_registry
    from io_tui.cli.run import approver_for, exit_code, report, settings_from
    from io_tui.cli.sinks import HumanSink, JsonLinesSink
    from io_tui.core import DecideError, decide

    by = operator("cli")
    settings = settings_from(args)
    current = mcp_servers(settings, args.mcp_config)
    store = await open_store(args, check=True)
    try:
        # the MCP tools the paused run may call again: the servers it started with (none when
        # the request is not pending: nothing resumes)
        record = await store.approvals.get(args.request)
        pending = record is not None and record.status == "pending"
        if args.decision is None:
            # a defer changes nothing: it says why a request cannot be decided, before asking
            await decide(store, args.request, Decision.defer(decided_by=by), resume=False)
            assert record is not None
            ask = TerminalApprover(
                store, notify=settings.ui.notify_on_ask, bell=settings.ui.bell_on_ask
            )
            decision = await ask.decide(record.request)
            if decision.kind is DecisionKind.DEFER:
                sys.stderr.write(f"request {args.request} left pending\n")
                return EXIT_OK
            decision = replace(decision, decided_by=by)
        else:
            decision = (
                Decision.approve(decided_by=by)
                if args.decision == "approve"
                else Decision.deny(args.reason or "denied from the command line", decided_by=by)
            )
        run_id = record.request.run_id if record is not None and pending else None
        servers = await servers_for_run(store, run_id, current)
        async with opened_hub(servers) as hub:
            decided = await decide(
                store,
                args.request,
                decision,
                approver=approver_for(args.approve, settings, store),
                sink=JsonLinesSink() if args.json else HumanSink(),
                registry=tool_registry(hub),
            )
    except DecideError as exc:
        error(str(exc))
        return EXIT_FAILED
    finally:
        await store.close()
    verb = decision.kind.value
    if decided.result is None:
        print(f"recorded {verb} for request {args.request} (run {decided.run_id})")
        return EXIT_OK
    report(args, decided.result)
    return exit_code(decided.result)
