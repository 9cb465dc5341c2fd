"""``io-tui worker``: a long-running process that drains the run queue; ``io-tui workers``: who
is serving it; ``io-tui run … --queue``: put a run on it (docs/SCALE-OUT.md).

A worker claims queued runs whose labels it serves (``--label``, all of a run's labels), up to
``--concurrency`` at a time, drives each under its lease and gives it back. SIGTERM (or
``io-tui worker --drain ID``) drains it: no new claims, asks deferred, runs in progress finish;
a second signal hands them back now (``interrupted``, for another worker to take over).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_store_option,
    counted,
    open_store,
    print_json,
    store_path,
)
from io_tui.paths import default_store_path

if TYPE_CHECKING:
    from io_tui.core import GitSource, Policy, Provider, RunOrigin, ServerSource, TaskContract

WORKER_BUSY_TIMEOUT_MS = 30_000


def register(sub: Any) -> None:
    worker = sub.add_parser("worker", help="drain the run queue: claim, drive, give back")
    worker.add_argument(
        "--concurrency", "-j", type=int, default=1, help="runs driven at once (default 1)"
    )
    worker.add_argument(
        "--label",
        "-l",
        action="append",
        default=[],
        metavar="L",
        help="a label this worker serves (repeat); a run is claimed when it serves all of its",
    )
    worker.add_argument(
        "--scratch",
        type=Path,
        help="where git runs are checked out (default: a 'scratch' dir beside the store)",
    )
    worker.add_argument(
        "--until-empty",
        action="store_true",
        help="stop once no run it serves is queued or being driven (batch jobs, benchmarks)",
    )
    worker.add_argument(
        "--drain",
        nargs="+",
        metavar="ID",
        help="ask running workers (ids from `io-tui workers`) to drain, then exit",
    )
    add_store_option(worker)
    worker.set_defaults(handler=worker_command)

    workers = sub.add_parser("workers", help="the workers serving the queue")
    workers.add_argument("--all", action="store_true", help="include stopped workers")
    workers.add_argument("--json", action="store_true")
    add_store_option(workers)
    workers.set_defaults(handler=workers_command)


def add_queue_options(run: Any) -> None:
    """``io-tui run``'s queue options."""
    run.add_argument(
        "--queue", action="store_true", help="put the run on the queue for a worker to drive"
    )
    run.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="L",
        help="with --queue: only a worker serving this label takes it (repeat)",
    )
    run.add_argument(
        "--git", metavar="REMOTE", help="with --queue: the worker checks REMOTE out (not -w)"
    )
    run.add_argument("--ref", help="with --git: the ref to check out (default HEAD)")
    run.add_argument(
        "--push-branch", metavar="NAME", help="with --git: push the result to branch NAME"
    )


def check_queue_options(args: argparse.Namespace) -> GitSource | None:
    """The git source ``args`` name (None for a path workspace); UsageError for options that
    only make sense with ``--queue`` or ``--git``."""
    if not args.queue:
        given = [f"--{n}" for n in ("label", "git", "ref") if getattr(args, n)]
        if args.push_branch:
            given.append("--push-branch")
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --queue")
        return None
    if args.approve:
        raise UsageError("a queued run's asks go to the inbox; --approve does not apply")
    if args.git is None:
        if args.ref or args.push_branch:
            raise UsageError("--ref and --push-branch apply with --git")
        return None
    from io_tui.core import GitSource

    return GitSource(args.git, args.ref or "HEAD", args.push_branch)


async def enqueue(
    args: argparse.Namespace,
    contract: TaskContract,
    provider: Provider,
    policy: Policy,
    git: GitSource | None,
    origin: RunOrigin,
) -> int:
    """The run on the queue with its ``origin`` (settings and MCP servers, secret-free): the
    worker that claims it starts the same servers."""
    from io_tui.core import enqueue_run

    store = await open_store(args, create=True)
    try:
        run_id = await enqueue_run(
            store, contract, provider, policy, labels=args.label, git=git, origin=origin
        )
    finally:
        await provider.aclose()
        await store.close()
    if args.json:
        print_json({"run_id": run_id, "status": "queued", "labels": sorted(set(args.label))})
    else:
        labels = f" for workers serving {', '.join(sorted(set(args.label)))}" if args.label else ""
        print(f"run {run_id}: queued{labels}; follow it with `io-tui trace {run_id}`")
    return EXIT_OK


async def requeue(args: argparse.Namespace) -> int:
    """``io-tui resume RUN --queue --reconcile rerun|done|skip``: the operator's word on a queue
    run a worker left interrupted; the next worker to claim it applies the choice."""
    if args.reconcile == "ask":
        raise UsageError("with --queue, give the choice: --reconcile rerun|done|skip")
    store = await open_store(args)
    try:
        run = await store.runs.get(args.run)
        entry = await store.queue.entry(args.run)
        if run is None or entry is None:
            print(f"io-tui: run {args.run} is not on the queue")
            return EXIT_FAILED
        if run.status != "interrupted":
            print(f"io-tui: run {args.run} is {run.status}; only an interrupted run is handed back")
            return EXIT_FAILED
        await store.queue.release(args.run, args.reconcile)
    finally:
        await store.close()
    held = f" (it was held: {entry.held})" if entry.held else ""
    print(f"run {args.run}: back on the queue, calls in flight: {args.reconcile}{held}")
    return EXIT_OK


async def worker_command(args: argparse.Namespace) -> int:
    if args.drain:
        return await drain_command(args)
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    from io_tui.core import QueueWorker, WorkerOptions

    where = store_path(args)  # a file's directory, or the data dir for a PostgreSQL store
    scratch = (
        args.scratch
        or (where if isinstance(where, Path) else default_store_path()).parent / "scratch"
    )
    options = WorkerOptions(
        scratch=scratch.expanduser().absolute(),
        labels=tuple(sorted(set(args.label))),
        concurrency=args.concurrency,
        until_empty=args.until_empty,
        servers=worker_servers(),
    )
    # a long-running service waits longer for a busy store than a command does (30 s, not 5)
    os.environ.setdefault("IO_TUI_BUSY_TIMEOUT_MS", str(WORKER_BUSY_TIMEOUT_MS))
    store = await open_store(args, create=True, check=True)
    worker = QueueWorker(store, options)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, worker.signal)
    labels = ", ".join(options.labels) or "none"
    sys.stderr.write(f"worker up: concurrency {options.concurrency}, labels {labels}\n")
    try:
        await worker.serve()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await store.close()
    sys.stderr.write(f"worker stopped after {counted(len(worker.results), 'run')}\n")
    return EXIT_OK


def worker_servers() -> dict[str, ServerSource]:
    """This worker's own MCP servers (its config's and the user's ``mcp.json``): never started
    for their own sake, only where a queued run's recorded server names a secret by a variable
    this process has not set, the same server's value here fills it."""
    from io_tui.cli.mcp_setup import mcp_servers
    from io_tui.config import ConfigError, load_settings

    try:
        return mcp_servers(load_settings(), None)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


async def drain_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        found = await store.queue.request_drain(args.drain)
    finally:
        await store.close()
    for worker_id in args.drain:
        if worker_id in found:
            print(f"worker {worker_id}: draining (it notices at its next heartbeat)")
        else:
            print(f"io-tui: no running worker {worker_id} (see `io-tui workers`)")
    return EXIT_OK if len(found) == len(args.drain) else EXIT_FAILED


async def workers_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        workers = await store.queue.workers(include_stopped=args.all)
        now = await store.leases.now()  # the store's clock: the workers' beats are on it
    finally:
        await store.close()
    if args.json:
        print_json([w.to_json(now) for w in workers])
        return EXIT_OK
    if not workers:
        print("no workers")
        return EXIT_OK
    print(f"{'id':<12}  {'host':<16} {'pid':>7}  {'state':<8} {'runs':<12} labels  heartbeat")
    for w in workers:
        runs = ",".join(map(str, w.runs)) or "-"
        print(
            f"{w.id:<12}  {w.host[:16]:<16} {w.pid:>7}  {w.state(now):<8} "
            f"{runs:<12} {','.join(w.labels) or '-':<7} {w.age(now):.0f}s ago"
        )
    return EXIT_OK
