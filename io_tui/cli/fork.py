"""``io-tui fork RUN --at STEP``: start a new run from any step of a run, its first request that
step's as recorded (the same bytes: a provider's prompt cache is reused), on the workspace as
it was before that step, optionally with a new instruction (``--task``) or another model.

Where it works: the run's own workspace, restored to the step like ``io-tui rewind`` (the same
diff summary first, the same refusal while someone else's changes are there, ``--keep`` and
``--overwrite`` per file, ``--yes``); or ``--worktree DIR`` (a new git worktree of the
workspace's repository) or ``--copy DIR`` (a copy of its files), made as they were before the
step, so both runs can go on. The fork then runs here like ``io-tui run`` (``--no-start``
leaves it for ``io-tui resume FORK``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_mcp_config_option,
    add_store_option,
    approver_names,
    open_store,
    servers_for_run,
)
from io_tui.cli.mcp_setup import mcp_servers, opened_hub, tool_registry
from io_tui.cli.resume import reconciler_for
from io_tui.cli.rewind import add_choice_options, confirmed, file_choices, plan_text
from io_tui.cli.run import approver_for, exit_code, report, settings_from
from io_tui.cli.sinks import HumanSink, JsonLinesSink
from io_tui.core import (
    DecideError,
    ForkError,
    ForkPlace,
    ForkPlan,
    Store,
    create_fork,
    plan_fork,
    provider_for,
    resume,
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "fork", help="start a new run from a step of a run, with the context that step had"
    )
    parser.add_argument("run", type=int, help="the run to fork")
    parser.add_argument("--at", type=int, required=True, metavar="STEP", help="the step")
    parser.add_argument(
        "--task", default="", help="a new instruction, sent after the step's recorded request"
    )
    place = parser.add_mutually_exclusive_group()
    place.add_argument("--worktree", type=Path, metavar="DIR", help="work in a new git worktree")
    place.add_argument("--copy", type=Path, metavar="DIR", help="work in a copy of the files")
    parser.add_argument("--provider", help="another preset for the fork (default: the run's)")
    parser.add_argument("--model", help="another model for the fork")
    parser.add_argument("--max-steps", type=int, help="the fork's step limit (default: the run's)")
    parser.add_argument(
        "--approve", choices=approver_names(), help="how the fork's asks are answered"
    )
    parser.add_argument(
        "--no-start", action="store_true", help="make the fork, leave it for io-tui resume"
    )
    add_choice_options(parser)
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    add_mcp_config_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=fork_command)


async def fork_command(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    place, directory = ForkPlace.HERE, None
    if args.worktree is not None:
        place, directory = ForkPlace.WORKTREE, args.worktree
    elif args.copy is not None:
        place, directory = ForkPlace.COPY, args.copy
    store = await open_store(args, check=True)
    try:
        try:
            plan = await plan_fork(store, args.run, args.at, place, directory)
        except ForkError as exc:
            print(f"io-tui: {exc}")
            return EXIT_FAILED
        sys.stderr.write(fork_text(plan) + "\n")
        choices = {}
        if plan.rewind is not None and plan.rewind.changes:
            choices = file_choices(
                plan.rewind.foreign, args.keep, args.overwrite, interactive=_tty(args)
            )
            if not confirmed(args, "Restore the workspace and fork?"):
                return EXIT_USAGE
        provider = await _provider(args, settings)
        try:
            fork_id = await create_fork(
                store, plan, task=args.task, choices=choices, provider=provider,
                max_steps=args.max_steps,
            )  # fmt: skip
        except ForkError as exc:
            print(f"io-tui: {exc}")
            return EXIT_FAILED
        sys.stderr.write(f"run {fork_id} forked from run {args.run} at step {args.at}\n")
        if args.no_start:
            print(f"fork: run {fork_id}; start it with `io-tui resume {fork_id}`")
            return EXIT_OK
        return await _drive(store, args, settings, fork_id)
    finally:
        await store.close()


def fork_text(plan: ForkPlan) -> str:
    head = (
        f"fork run {plan.parent.id} at step {plan.step}: its request {plan.request_id}"
        f" ({plan.messages} messages, ~{plan.est_tokens:,} tokens) is sent again as recorded"
    )
    if plan.place is not ForkPlace.HERE:
        return f"{head}\nworkspace: a new {plan.place.value} at {plan.directory}"
    if plan.rewind is None or not plan.rewind.changes:
        return f"{head}\nworkspace: {plan.directory}, already as it was before step {plan.step}"
    return f"{head}\nworkspace: {plan.directory}, restored first:\n{plan_text(plan.rewind)}"


async def _provider(args: argparse.Namespace, settings: Any) -> dict[str, Any] | None:
    """Another provider's description for the fork (``--provider``/``--model``); None: the
    run's own."""
    if args.provider is None and args.model is None:
        return None
    try:
        provider = provider_for(settings)
    except ValueError as exc:
        from io_tui.cli.common import UsageError

        raise UsageError(str(exc)) from None
    try:
        return provider.describe()
    finally:
        await provider.aclose()


async def _drive(store: Store, args: argparse.Namespace, settings: Any, fork_id: int) -> int:
    current = mcp_servers(settings, args.mcp_config)
    servers = await servers_for_run(store, fork_id, current)
    try:
        async with opened_hub(servers) as hub:
            result = await resume(
                store,
                fork_id,
                reconciler=reconciler_for("rerun"),
                approver=approver_for(settings.approve, settings, store),
                sink=JsonLinesSink() if args.json else HumanSink(),
                registry=tool_registry(hub),
            )
    except DecideError as exc:
        print(f"io-tui: {exc}")
        return EXIT_FAILED
    report(args, result)
    return exit_code(result)


def _tty(args: argparse.Namespace) -> bool:
    return not args.json and sys.stdin.isatty()
