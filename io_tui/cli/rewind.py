"""``io-tui rewind RUN --to STEP``: put a run's workspace back as it was before a step, from
the run's checkpoints; ``--undo`` undoes the last rewind; ``io-tui checkpoints`` lists a run's
checkpoints or prunes a workspace's (``core/checkpoints``).

A rewind first prints what will change (the diff summary, file by file). It refuses while the
workspace holds changes someone else made after the run's last checkpoint, unless each such
file is named with ``--keep`` (leave it as it is) or ``--overwrite`` (restore it too); on a
terminal it asks, file by file, and then whether to go on. Elsewhere ``--yes`` says go on;
without it nothing changes (exit 2). The run's history is never touched: the rewind is an
event in its trace, and itself a checkpoint, so ``--undo`` brings back what it replaced.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_store_option,
    open_store,
    print_json,
)
from io_tui.core import (
    FileChange,
    FileChoice,
    RewindError,
    RewindPlan,
    RewindResult,
    Store,
    apply_rewind,
    describe_change,
    plan_rewind,
    prune_checkpoints,
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "rewind", help="restore a run's workspace to before a step (or undo the last rewind)"
    )
    parser.add_argument("run", type=int, help="run id")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", type=int, metavar="STEP", help="the step to rewind to before")
    target.add_argument("--undo", action="store_true", help="undo the run's last rewind")
    add_choice_options(parser)
    parser.add_argument("--dry-run", action="store_true", help="show what would change, only")
    parser.add_argument("--json", action="store_true", help="print the plan or result as JSON")
    add_store_option(parser)
    parser.set_defaults(handler=rewind_command)

    listing = sub.add_parser(
        "checkpoints", help="a run's workspace checkpoints, or prune a workspace's"
    )
    listing.add_argument("run", type=int, nargs="?", help="run id")
    listing.add_argument(
        "--prune",
        action="store_true",
        help="apply the pruning policy to the workspace now and free what it drops",
    )
    listing.add_argument(
        "--workspace",
        "-w",
        type=Path,
        help="with --prune: the workspace (default: the run's, or .)",
    )
    listing.add_argument("--json", action="store_true")
    add_store_option(listing)
    listing.set_defaults(handler=checkpoints_command)


def add_choice_options(parser: argparse.ArgumentParser) -> None:
    """``--keep``/``--overwrite`` for the files someone else changed, and ``--yes``."""
    parser.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="PATH",
        help="a file someone else changed after the run's last checkpoint: leave it as it is",
    )
    parser.add_argument(
        "--overwrite",
        action="append",
        default=[],
        metavar="PATH",
        help="a file someone else changed after the run's last checkpoint: restore it too",
    )
    parser.add_argument("--yes", "-y", action="store_true", help="go on without asking")


async def rewind_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        try:
            plan = await plan_rewind(store, args.run, to_step=args.to, undo=args.undo)
        except RewindError as exc:
            return _failed(args, str(exc))
        if args.json and (args.dry_run or not plan.changes):
            print_json(plan.to_json())
        elif not args.json:
            print(plan_text(plan))
        if not plan.changes:
            if not args.json:
                print("nothing to do: the workspace is already as it was")
            return EXIT_OK
        if args.dry_run:
            return EXIT_OK
        choices = file_choices(plan.foreign, args.keep, args.overwrite, interactive=_tty(args))
        if not confirmed(args, "Rewind the workspace?"):
            return EXIT_USAGE
        try:
            result = await apply_rewind(store, plan, choices)
        except RewindError as exc:
            return _failed(args, str(exc))
    finally:
        await store.close()
    if args.json:
        print_json(result.to_json())
    else:
        print(result_text(result))
    return EXIT_OK


def plan_text(plan: RewindPlan) -> str:
    """What a rewind will do: which checkpoint, the summary, each file, the files someone else
    changed and what a rewind leaves alone."""
    target = plan.target
    where = (
        f"undo the last rewind of run {plan.run_id} (back to checkpoint {target.id})"
        if plan.undo
        else f"rewind run {plan.run_id} to before step {plan.to_step} (checkpoint {target.id},"
        f" {target.phase} step {target.step})"
    )
    lines = [f"{where}: {plan.summary()}"]
    lines += [f"  {c.status} {c.path}  {describe_change(c)}" for c in plan.changes]
    if plan.foreign:
        lines.append(
            f"changed after run {plan.run_id}'s last checkpoint, by someone else (or by the run"
            " in a step it did not finish):"
        )
        lines += [f"  {c.status} {c.path}" for c in _after(plan.foreign)]
    if plan.left_alone:
        lines.append("left alone (not in that checkpoint):")
        lines += [f"  {s['path']}  {s['reason']}" for s in plan.left_alone]
    return "\n".join(lines)


def _after(changes: Sequence[FileChange]) -> list[FileChange]:
    return sorted(changes, key=lambda c: c.path)


def file_choices(
    foreign: Sequence[FileChange],
    keep: Sequence[str],
    overwrite: Sequence[str],
    *,
    interactive: bool,
) -> dict[str, FileChoice]:
    """The operator's choice for each file someone else changed: from ``--keep`` and
    ``--overwrite``, else asked on the terminal; a file with none is left without (the rewind
    then refuses, naming it)."""
    both = set(keep) & set(overwrite)
    if both:
        raise UsageError(f"both --keep and --overwrite name {', '.join(sorted(both))}")
    choices = {p: FileChoice.KEEP for p in keep} | {p: FileChoice.OVERWRITE for p in overwrite}
    named = {c.path for c in foreign}
    stray = sorted(set(choices) - named)
    if stray:
        raise UsageError(
            f"{', '.join(stray)}: not among the files changed after the run's last checkpoint"
        )
    for change in _after(foreign):
        if change.path in choices or not interactive:
            continue
        answer = input(f"{change.path} changed after the run: [k]eep it or [o]verwrite it? ")
        if answer.strip().lower().startswith("k"):
            choices[change.path] = FileChoice.KEEP
        elif answer.strip().lower().startswith("o"):
            choices[change.path] = FileChoice.OVERWRITE
    return choices


def confirmed(args: argparse.Namespace, question: str) -> bool:
    """``--yes``, or yes on a terminal; elsewhere nothing is done, and it says how to go on."""
    if args.yes:
        return True
    if not _tty(args):
        sys.stderr.write("io-tui: nothing changed: pass --yes to go on\n")
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _tty(args: argparse.Namespace) -> bool:
    return not getattr(args, "json", False) and sys.stdin.isatty()


def result_text(result: RewindResult) -> str:
    plan = result.plan
    lines = [
        f"rewound run {plan.run_id}: {plan.summary()}"
        + (f"; kept as they were: {', '.join(result.kept)}" if result.kept else "")
    ]
    if result.mismatched:
        lines.append(f"not restored as planned: {', '.join(result.mismatched)}")
    lines.append(f"undo it with `io-tui rewind {plan.run_id} --undo`")
    return "\n".join(lines)


def _failed(args: argparse.Namespace, error: str) -> int:
    if args.json:
        print_json({"run_id": args.run, "error": error})
    else:
        print(f"io-tui: {error}")
    return EXIT_FAILED


async def checkpoints_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        if args.prune:
            return await _prune(store, args)
        if args.run is None:
            raise UsageError("name a run (io-tui checkpoints RUN), or --prune a workspace")
        if await store.runs.get(args.run) is None:
            return _failed(args, f"no run {args.run} in the store")
        rows = await store.checkpoints.for_run(args.run)
    finally:
        await store.close()
    if args.json:
        print_json({"run_id": args.run, "checkpoints": [r.to_json() for r in rows]})
        return EXIT_OK
    if not rows:
        print(f"run {args.run} took no checkpoint (it changed no files, or checkpoints were off)")
    for row in rows:
        skipped = f", {len(row.skipped)} left out" if row.skipped else ""
        pruned = "  (pruned)" if row.pruned_at is not None else ""
        print(
            f"#{row.id:<5} step {row.step:>3} {row.phase:<11} {row.git_commit[:10]}"
            f"  {row.changed} changed{skipped}{pruned}"
        )
    return EXIT_OK


async def _prune(store: Store, args: argparse.Namespace) -> int:
    workspace = args.workspace
    if workspace is None and args.run is not None:
        row = await store.runs.get(args.run)
        if row is None:
            return _failed(args, f"no run {args.run} in the store")
        workspace = Path(row.workspace)
    root = (workspace or Path(".")).resolve()
    pruned = await prune_checkpoints(store, str(root), collect_now=True)
    if args.json:
        print_json(
            {
                "workspace": pruned.workspace,
                "dropped": list(pruned.dropped),
                "kept": list(pruned.kept),
                "size_bytes": pruned.size_bytes,
            }
        )
    else:
        dropped = ", ".join(str(r) for r in pruned.dropped) or "none"
        size = f"; the store takes {pruned.size_bytes / 1e6:.1f} MB" if pruned.size_bytes else ""
        print(f"{root}: checkpoints of runs {dropped} pruned, {len(pruned.kept)} runs kept{size}")
    return EXIT_OK
