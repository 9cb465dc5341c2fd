"""``io-tui resume RUN``: continue an interrupted run (its process died) or a paused one whose
request was decided, under the same id, with the provider, contract, policy, settings and MCP
servers it recorded (``--mcp-config`` and the config file serve only a run from before that
record, and the values of the variables its servers name).

Calls that were in flight at the crash are reconciled first (``--reconcile``): reads re-run
on their own; a write, command or MCP call is put to the operator (``ask``, the default: a
prompt on the terminal), re-run through the approval gate (``rerun``) or skipped (``skip``).

A sub-agent resumes with the runs waiting on it: ``resume`` of a parent continues its child
first, then the parent; ``resume`` of the child does the same (it is resumed through its
outermost waiting parent, whose result is reported).
"""

from __future__ import annotations

import argparse
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    add_mcp_config_option,
    add_store_option,
    approver_names,
    error,
    open_store,
    servers_for_run,
)
from io_tui.cli.mcp_setup import mcp_servers, opened_hub, tool_registry
from io_tui.cli.run import approver_for, exit_code, report, settings_from
from io_tui.cli.sinks import HumanSink, JsonLinesSink
from io_tui.core import (
    DecideError,
    FixedReconciler,
    ReconcileChoice,
    Reconciler,
    TerminalReconciler,
    resume,
)

RECONCILE = ("ask", "rerun", "done", "skip")


def register(sub: Any) -> None:
    parser = sub.add_parser("resume", help="continue an interrupted run under the same id")
    parser.add_argument("run", type=int, help="run id")
    parser.add_argument(
        "--reconcile",
        choices=RECONCILE,
        default="ask",
        help="calls in flight at the crash: ask on the terminal (default), rerun, done, skip",
    )
    parser.add_argument(
        "--approve",
        choices=approver_names(),
        help="how the resumed run's asks are answered (default: the config's, else ask)",
    )
    parser.add_argument(
        "--queue",
        action="store_true",
        help="a queue run: hand it back to the workers with the --reconcile choice",
    )
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    add_mcp_config_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=resume_command)


def reconciler_for(name: str) -> Reconciler:
    if name == "ask":
        return TerminalReconciler()
    return FixedReconciler(ReconcileChoice(name))


async def resume_command(args: argparse.Namespace) -> int:
    if args.queue:
        from io_tui.cli.worker import requeue

        return await requeue(args)
    settings = settings_from(args)
    current = mcp_servers(settings, args.mcp_config)
    store = await open_store(args, check=True)
    try:
        servers = await servers_for_run(store, args.run, current)
        async with opened_hub(servers) as hub:
            result = await resume(
                store,
                args.run,
                reconciler=reconciler_for(args.reconcile),
                approver=approver_for(settings.approve, settings, store),
                sink=JsonLinesSink() if args.json else HumanSink(),
                registry=tool_registry(hub),
            )
    except DecideError as exc:
        error(str(exc))
        return EXIT_FAILED
    finally:
        await store.close()
    if result.run_id != args.run and not args.json:
        print(f"run {args.run} is a sub-agent of run {result.run_id}: both resumed, it first")
    report(args, result)
    return exit_code(result)
