"""``io-tui hooks list|trust|untrust``: the hooks a run in a workspace gets, and the operator's
approval of a workspace's ``.claude/settings.json`` (its hooks never run until approved, and
any change to them needs approving again)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_json


def register(sub: Any) -> None:
    hooks = sub.add_parser("hooks", help="Claude Code-style hooks: list, trust a workspace's")
    actions = hooks.add_subparsers(dest="hooks_action", metavar="ACTION", required=True)
    for name, help_text, handler in (
        ("list", "the hooks a run in the workspace gets, and whether its file is trusted", list_command),
        ("trust", "approve the workspace's .claude/settings.json hooks as they are now", trust_command),
        ("untrust", "withdraw the approval of the workspace's hooks", untrust_command),
    ):  # fmt: skip
        action = actions.add_parser(name, help=help_text)
        action.add_argument("--workspace", "-w", type=Path, default=Path("."))
        if name == "list":
            action.add_argument("--json", action="store_true")
        action.set_defaults(handler=handler)


def _workspace_file(root: Path) -> tuple[Any, str] | None:
    from io_tui.core import WorkspaceHooksError, workspace_hooks

    try:
        return workspace_hooks(root)
    except WorkspaceHooksError as exc:
        raise UsageError(str(exc)) from None


async def list_command(args: argparse.Namespace) -> int:
    from io_tui.config import ConfigError, load_settings
    from io_tui.core import WORKSPACE_HOOKS_FILE, workspace_hooks_trusted

    root = args.workspace.resolve()
    try:
        configured = load_settings().hooks
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    found = _workspace_file(root)
    rows: list[dict[str, Any]] = []
    for event, matchers in configured.items():
        rows += [_row(event, m, "config", True) for m in matchers]
    trusted = found is not None and workspace_hooks_trusted(root, found[1])
    if found is not None:
        for event, matchers in found[0].items():
            rows += [_row(event, m, str(WORKSPACE_HOOKS_FILE), trusted) for m in matchers]
    if args.json:
        print_json({"workspace": str(root), "hooks": rows,
                    "workspace_file": None if found is None else
                    {"digest": found[1], "trusted": trusted}})  # fmt: skip
        return EXIT_OK
    if not rows:
        print(f"no hooks for {root}")
        return EXIT_OK
    for row in rows:
        state = "" if row["runs"] else "  [not trusted: io-tui hooks trust]"
        matcher = f" [{row['matcher']}]" if row["matcher"] else ""
        for command in row["commands"]:
            print(f"{row['event']}{matcher}  {command}  ({row['source']}){state}")
    return EXIT_OK


def _row(event: str, matcher: Any, source: str, runs: bool) -> dict[str, Any]:
    return {"event": event, "matcher": matcher.matcher, "source": source, "runs": runs,
            "commands": [h.command for h in matcher.hooks]}  # fmt: skip


async def trust_command(args: argparse.Namespace) -> int:
    from io_tui.core import WORKSPACE_HOOKS_FILE, trust_workspace_hooks

    root = args.workspace.resolve()
    found = _workspace_file(root)
    if found is None:
        print(f"io-tui: {root / WORKSPACE_HOOKS_FILE} has no hooks to trust")
        return EXIT_FAILED
    hooks, digest = found
    trust_workspace_hooks(root, digest)
    count = sum(len(m.hooks) for matchers in hooks.values() for m in matchers)
    print(f"trusted {count} hook(s) of {root / WORKSPACE_HOOKS_FILE} (sha256 {digest[:12]})")
    return EXIT_OK


async def untrust_command(args: argparse.Namespace) -> int:
    from io_tui.core import trust_workspace_hooks

    root = args.workspace.resolve()
    trust_workspace_hooks(root, None)
    print(f"{root}: its workspace hooks no longer run")
    return EXIT_OK
