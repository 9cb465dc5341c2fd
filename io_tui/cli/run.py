"""``io-tui run`` and ``io-tui demo --headless``: one run to an outcome, exit code per DESIGN §4."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path
from typing import Any

from io_tui.cli.ask import TerminalApprover
from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    UsageError,
    add_mcp_config_option,
    add_store_option,
    approver_names,
    open_store,
    print_json,
)
from io_tui.cli.mcp_setup import (
    admitted,
    found_servers,
    opened_hub,
    tool_registry,
)
from io_tui.cli.sinks import HumanSink, JsonLinesSink, UntilReaderGone
from io_tui.config import ConfigError, Settings, load_settings
from io_tui.core import (
    FIXED_APPROVERS,
    ApproveAll,
    Approver,
    ContextBudget,
    Harness,
    McpHub,
    Outcome,
    OutputDoesNotFit,
    Policy,
    Provider,
    ReviewerSpec,
    ReviewerSpecError,
    RunOrigin,
    RunResult,
    Store,
    TaskContract,
    Workspace,
    WorkspaceError,
    cache_prices_for,
    check_output_fit,
    check_reviewer,
    continue_contract,
    policy_for,
    provider_for,
    start_run,
)


def approver_for(name: str, settings: Settings, store: Store | None = None) -> Approver:
    """The approver ``--approve NAME`` names; ``ask`` shows each request on the terminal,
    telling it first as ``[ui] bell_on_ask`` and ``notify_on_ask`` say (with ``store``, how
    many earlier requests each remember choice would have allowed)."""
    if name == "ask":
        ui = settings.ui
        return TerminalApprover(store, notify=ui.notify_on_ask, bell=ui.bell_on_ask)
    return FIXED_APPROVERS[name]()


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run one task headless")
    run.add_argument("task", nargs="?", default="", help="what the agent should do")
    run.add_argument("--workspace", "-w", help="the directory the agent works in (default: .)")
    run.add_argument(
        "--continue",
        dest="continue_run",
        type=int,
        metavar="RUN",
        help="a fresh run in RUN's workspace whose first request carries RUN's progress ledger",
    )
    add_run_settings_options(run)
    run.add_argument(
        "--approve",
        choices=approver_names(),
        help="how asks are answered (default: ask; defer with --approver)",
    )
    add_approver_options(run)
    run.add_argument("--verify", help="verification command (exit 0 = done), e.g. 'pytest -q'")
    run.add_argument("--json", action="store_true", help="print events as JSON lines")
    add_mcp_config_option(run)
    add_store_option(run)
    from io_tui.cli.worker import add_queue_options

    add_queue_options(run)
    run.set_defaults(handler=run_command)


def add_run_settings_options(parser: argparse.ArgumentParser) -> None:
    """What a run is built from, over the config: ``io-tui run``'s and ``io-tui acp``'s."""
    parser.add_argument(
        "--provider", help="preset name (openai, anthropic, ollama, …) or scripted:FILE"
    )
    parser.add_argument("--model", help="model name for the provider")
    parser.add_argument("--base-url", help="override the preset's base URL")
    parser.add_argument("--policy", type=Path, help="policy TOML file")
    parser.add_argument("--max-steps", type=int)
    parser.add_argument("--token-budget", type=int)
    parser.add_argument("--context-max-tokens", type=int)
    parser.add_argument("--context-share", type=float)
    parser.add_argument(
        "--max-output-tokens", type=int, help="the longest answer a request asks for (tokens)"
    )
    parser.add_argument(
        "--context-window",
        type=int,
        metavar="N",
        help="the model's context window (tokens), over the model table's and the server's",
    )


def add_approver_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--approver",
        metavar="model:PRESET:MODEL",
        help="a reviewer model decides each ask first: approve, deny, or escalate to the inbox"
        " (e.g. model:llamacpp:smollm2, model:ollama:qwen2.5:7b); recorded with the run's policy",
    )
    parser.add_argument(
        "--approver-base-url", metavar="URL", help="the reviewer's server, over its preset's"
    )
    parser.add_argument(
        "--approver-timeout",
        type=float,
        metavar="S",
        help="seconds one review may take before it escalates (default 60)",
    )


async def with_approver(args: argparse.Namespace, policy: Policy, *, check: bool) -> Policy:
    """``policy`` with the reviewer ``--approver`` names (over a policy file's); with
    ``check``, refused here when it cannot be built (a key this process lacks, say)."""
    if args.approver is None:
        if args.approver_base_url is not None or args.approver_timeout is not None:
            raise UsageError("--approver-base-url and --approver-timeout need --approver")
        return policy
    try:
        spec = ReviewerSpec.from_option(
            args.approver, base_url=args.approver_base_url, timeout_s=args.approver_timeout
        )
        if check:
            await check_reviewer(spec)
    except (ReviewerSpecError, ValueError) as exc:
        raise UsageError(f"--approver: {exc}") from None
    return policy.with_reviewer(spec)


def approve_mode(args: argparse.Namespace, settings: Settings, policy: Policy) -> str:
    """How asks a reviewer escalates (or, without one, every ask) are answered: ``--approve``,
    else ``defer`` (the inbox) under ``--approver``, else the config's. Never ``all`` under a
    reviewer, which would approve its escalations unasked."""
    mode = settings.approve if args.approve is not None or args.approver is None else "defer"
    if mode == "all" and policy.reviewer is not None:
        source = "" if args.approve else ' (the config says approve = "all")'
        raise UsageError(
            f"--approve all approves every ask unasked, the reviewer's escalations too{source}:"
            " with a reviewer, use --approve defer (the inbox) or ask"
        )
    return mode


def settings_from(args: argparse.Namespace) -> Settings:
    try:
        return load_settings(
            provider=getattr(args, "provider", None),
            model=getattr(args, "model", None),
            base_url=getattr(args, "base_url", None),
            approve=getattr(args, "approve", None),
            max_steps=getattr(args, "max_steps", None),
            token_budget=getattr(args, "token_budget", None),
            context_max_tokens=getattr(args, "context_max_tokens", None),
            context_share=getattr(args, "context_share", None),
            max_output_tokens=getattr(args, "max_output_tokens", None),
            context_window=getattr(args, "context_window", None),
            policy=getattr(args, "policy", None),
        )
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def provider_from(settings: Settings) -> Provider:
    try:
        return provider_for(settings)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def policy_from(settings: Settings) -> Policy:
    try:
        return policy_for(settings)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


async def run_command(args: argparse.Namespace) -> int:
    from io_tui.cli.worker import check_queue_options, enqueue

    git = check_queue_options(args)
    settings = settings_from(args)
    continued = await continued_run(args)
    if not args.task.strip() and continued is None:
        raise UsageError("say what the agent should do (TASK), or --continue RUN")
    try:
        workspace = Workspace(Path(args.workspace or ".")) if git is None else None
    except WorkspaceError as exc:
        raise UsageError(str(exc)) from None
    try:
        verify = tuple(shlex.split(args.verify)) if args.verify else None
        contract = TaskContract(
            goal=args.task,
            workspace=workspace.root if workspace else Path(f"git:{args.git}@{args.ref}"),
            verify=verify,
            max_steps=settings.max_steps,
            token_budget=settings.token_budget,
            context=ContextBudget(settings.context_max_tokens, settings.context_share),
            cache=cache_prices_for(settings),
            env_allow=tuple(settings.run.env_allow),
            checkpoints=settings.checkpoints.limits(),
        )
        if continued is not None:
            contract = await continue_with(args, contract)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # a queued run's reviewer is built by the worker, with the worker's keys
    policy = await with_approver(args, policy_from(settings), check=not args.queue)
    found = found_servers(settings, args.mcp_config, workspace.root if workspace else None)
    servers = await admitted(args, found, policy)
    provider = provider_from(settings)
    if git is None:  # a queued run's worker asks its own server
        await check_fit(args, provider, contract)
    origin = RunOrigin.at_start(settings, servers)  # what a resume in any process rebuilds
    if args.queue:
        return await enqueue(args, contract, provider, policy, git, origin)
    approver = approver_for(approve_mode(args, settings, policy), settings)
    roots = (workspace.root,) if workspace else ()
    async with opened_hub(servers, ready_wait_s=settings.mcp.ready_wait_s, roots=roots) as hub:
        return await execute(args, contract, provider, policy, approver, hub=hub, origin=origin)


async def check_fit(args: argparse.Namespace, provider: Provider, contract: TaskContract) -> None:
    """A set output limit that cannot fit the model's window is refused before the run starts,
    with the limit that fits (``check_output_fit``); one left unset is fitted by the run."""
    try:
        await check_output_fit(provider, contract)
    except OutputDoesNotFit as exc:
        await provider.aclose()
        named = "--max-output-tokens" if args.max_output_tokens else "max_output_tokens (config)"
        raise UsageError(exc.say(named)) from None


async def continued_run(args: argparse.Namespace) -> str | None:
    """The workspace of the run ``--continue`` names (it is ``-w``); None without."""
    if args.continue_run is None:
        return None
    if args.workspace is not None or getattr(args, "git", None):
        raise UsageError("--continue runs in RUN's workspace: leave out -w and --git")
    store = await open_store(args)
    try:
        row = await store.runs.get(args.continue_run)
    finally:
        await store.close()
    if row is None:
        raise UsageError(f"no run {args.continue_run} to continue")
    args.workspace = row.workspace
    return row.workspace


async def continue_with(args: argparse.Namespace, contract: TaskContract) -> TaskContract:
    store = await open_store(args)
    try:
        return await continue_contract(store, args.continue_run, contract)
    finally:
        await store.close()


async def demo_headless(args: argparse.Namespace) -> int:
    """``io-tui demo --headless``: the demo run to its end, every request approved."""
    from io_tui import demo

    workspace = demo.make_workspace()
    provider = build_demo_provider()
    contract = demo.demo_contract(workspace)
    if not args.json:
        sys.stderr.write(f"demo workspace: {workspace}\n")
    return await execute(args, contract, provider, demo.demo_policy(), ApproveAll())


def build_demo_provider() -> Provider:
    from io_tui import demo
    from io_tui.core import ScriptedProvider

    return ScriptedProvider.from_file(demo.SCRIPT)


async def execute(
    args: argparse.Namespace,
    contract: TaskContract,
    provider: Provider,
    policy: Policy,
    approver: Approver,
    *,
    hub: McpHub | None = None,
    origin: RunOrigin | None = None,
) -> int:
    sink = UntilReaderGone(JsonLinesSink() if args.json else HumanSink())
    store = await open_store(args, create=True, check=True)
    if isinstance(approver, TerminalApprover):
        approver.store = store  # its remember choices count the earlier requests
    registry = tool_registry(hub)
    try:
        harness = Harness(
            store=store,
            provider=provider,
            approver=approver,
            sink=sink,
            policy=policy,
            registry=registry,
            origin=origin,
            late_tools=hub,
        )
        sink.run = run = asyncio.ensure_future(start_run(harness, contract))
        try:
            result = await run
        except asyncio.CancelledError:
            ours = asyncio.current_task()
            if not sink.gone or (ours is not None and ours.cancelling()):
                raise  # this command itself was cancelled (ctrl+c), not just the run
            result = None
    finally:
        await provider.aclose()
        await store.close()
    if result is None:  # its reader went away: said on stderr, then ended as SIGPIPE ends
        sys.stderr.write(
            f"io-tui: the output's reader went away: run {sink.run_id} stopped, interrupted;"
            f" go on with `io-tui resume {sink.run_id}`\n"
        )
        raise BrokenPipeError
    report(args, result)
    return exit_code(result)


def report(args: argparse.Namespace, result: RunResult) -> None:
    if args.json:
        print_json(result.to_json())
        return
    how = "" if result.outcome.value == result.status else f" ({result.outcome.value})"
    steps = "1 step" if result.steps == 1 else f"{result.steps} steps"
    print(f"run {result.run_id}: {result.status}{how} after {steps}, {result.tokens:,} tokens")
    if result.error:
        print(f"error: {result.error}")
    if result.outcome is Outcome.INTERRUPTED:
        print(f"interrupted: continue it with `io-tui resume {result.run_id} --reconcile …`")
    if result.outcome is Outcome.AWAITING_SUB_AGENT:
        print(
            f"waiting on its sub-agent run {result.waiting_on}, paused: see `io-tui approvals`,"
            f" then `io-tui decide ID approve|deny` (run {result.waiting_on} goes on first)"
        )
    if result.outcome is Outcome.AWAITING_APPROVAL:
        print(
            "waiting for a decision: see `io-tui approvals`, then `io-tui decide ID approve|deny`"
        )
    print(f"full trace: io-tui trace {result.run_id}")


def exit_code(result: RunResult) -> int:
    """0 finished, 3 paused awaiting approval or interrupted (resumable), 1 failed, cancelled or
    finished with its final answer cut by the output limit."""
    if result.status in ("paused", "interrupted"):
        return EXIT_PAUSED
    if result.outcome is Outcome.TRUNCATED:
        return EXIT_FAILED
    return EXIT_OK if result.status == "finished" else EXIT_FAILED
