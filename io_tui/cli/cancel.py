"""``io-tui cancel RUN``: abandon a run no process drives, a paused one (its request deferred)
or an interrupted one (its process died). It ends ``cancelled`` and its pending requests are
denied ("the run was cancelled"), so they leave every inbox; a sub-agent chain is cancelled
together (``core/steering/cancel.py``). A run that is live, has ended, or was resumed meanwhile is
refused, and nothing changes: exit 1 with the reason."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_store_option,
    error,
    open_store,
    print_json,
)
from io_tui.core import Cancelled, CancelRefused, cancel_run, operator


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "cancel", help="cancel a paused, interrupted or queued run: its pending requests are denied"
    )
    parser.add_argument("run", type=int, help="run id")
    parser.add_argument("--json", action="store_true", help="print what was cancelled as JSON")
    add_store_option(parser)
    parser.set_defaults(handler=cancel_command)


async def cancel_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        done = await cancel_run(store, args.run, by=operator("cli"))
    except CancelRefused as exc:
        if args.json:
            print_json({"run_id": args.run, "cancelled": False, "error": str(exc)})
        else:
            error(str(exc))
        return EXIT_FAILED
    finally:
        await store.close()
    for note in done.notes:
        sys.stderr.write(f"io-tui: {note}\n")
    if args.json:
        print_json({**done.to_json(), "cancelled": True})
    else:
        print(said(done))
    return EXIT_OK


def said(done: Cancelled) -> str:
    """``run 3 cancelled (it was paused); request 7 denied: the run was cancelled``, and the
    runs of its chain cancelled with it."""
    lines = []
    for run in done.runs:
        with_it = "" if run.id == done.run_id else f" with run {done.run_id}"
        line = f"run {run.id} cancelled{with_it} (it was {run.was})"
        if run.approvals:
            requests = ", ".join(str(a) for a in run.approvals)
            noun = "request" if len(run.approvals) == 1 else "requests"
            line += f"; {noun} {requests} denied: the run was cancelled"
        lines.append(line)
    return "\n".join(lines)
