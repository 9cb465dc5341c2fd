"""``io-tui memory``: the operator's view of what agents remember (DESIGN §3.3, §4).

    io-tui memory list|get|set|delete|clear|pin|unpin [--workspace DIR | --global] [--json]

The scope is the workspace (default: the current directory, resolved to an absolute path, which is
the key runs use) or ``--global``. Every change is audited as a ``memory`` event with run id 0.
Exit codes: 0 ok, 1 not found (or refused), 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    STORE_HELP,
    UsageError,
    open_store,
    print_json,
)
from io_tui.core import MemoryLimits, MemoryNote, MemoryRepo, Scope

ACTIONS_WITH_KEY = ("get", "delete", "pin", "unpin")
VALUE_COLUMN = 60


def register(subparsers: Any) -> None:
    shared = argparse.ArgumentParser(add_help=False)
    where = shared.add_mutually_exclusive_group()
    where.add_argument(
        "--workspace", metavar="DIR", help="workspace whose notes to use (default: current dir)"
    )
    where.add_argument("--global", dest="global_", action="store_true", help="the global scope")
    shared.add_argument("--json", action="store_true", help="print JSON")
    # SUPPRESS keeps a top-level `io-tui --store DB memory ...` from being reset by this default.
    shared.add_argument(
        "--store",
        metavar="DB",
        default=argparse.SUPPRESS,
        help=STORE_HELP,
    )

    parser = subparsers.add_parser(
        "memory", help="list and edit what agents remember", description=__doc__.split("\n")[0]
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[shared], help="list notes with provenance")
    listing.add_argument("--all", action="store_true", help="every scope of every workspace")
    for name in ACTIONS_WITH_KEY:
        sub = actions.add_parser(name, parents=[shared], help=f"{name} one note")
        sub.add_argument("key")
    setter = actions.add_parser("set", parents=[shared], help="write a note as the operator")
    setter.add_argument("key")
    setter.add_argument("value", help="the note's text; '-' reads it from stdin")
    clear = actions.add_parser("clear", parents=[shared], help="delete a scope's notes")
    clear.add_argument(
        "--include-pinned", action="store_true", help="also delete pinned notes (kept by default)"
    )
    parser.set_defaults(handler=_handler)


def _scope(args: argparse.Namespace) -> tuple[Scope, str | None]:
    if getattr(args, "global_", False):
        return "global", None
    given = Path(args.workspace).expanduser() if args.workspace else Path.cwd()
    return "workspace", str(given.resolve())


async def _handler(args: argparse.Namespace) -> int:
    try:
        store = await open_store(args, create=args.action == "set")
    except UsageError as exc:
        sys.stderr.write(f"io-tui: {exc}\n")
        return EXIT_USAGE
    async with store:
        try:
            return await _dispatch(store.memory, args)
        except (UsageError, ValueError) as exc:
            sys.stderr.write(f"io-tui: {exc}\n")
            return EXIT_USAGE


async def _dispatch(repo: MemoryRepo, args: argparse.Namespace) -> int:
    scope, workspace = _scope(args)
    action = args.action
    if action == "list":
        return await _list(repo, args, scope, workspace)
    if action == "get":
        note = await repo.get(args.key, scope, workspace)
        if note is None:
            return _missing(args.key, scope, workspace)
        if args.json:
            print_json(note.to_json())
        else:
            sys.stdout.write(f"{_describe(note)}\n\n{note.value}\n")
        return EXIT_OK
    if action == "set":
        return await _set(repo, args, scope, workspace)
    if action == "clear":
        count = await repo.clear(scope, workspace, include_pinned=args.include_pinned)
        kept = sum(1 for n in await repo.list(scope, workspace) if n.pinned)
        if args.json:
            print_json({"cleared": count, "kept_pinned": kept})
        else:
            tail = f"; kept {kept} pinned (--include-pinned clears them)" if kept else ""
            noun = "note" if count == 1 else "notes"
            sys.stdout.write(f"cleared {count} {noun} from {_where(scope, workspace)}{tail}\n")
        return EXIT_OK
    done = {
        "delete": repo.delete,
        "pin": repo.pin,
        "unpin": repo.unpin,
    }[action]
    if not await done(args.key, scope, workspace):
        return _missing(args.key, scope, workspace)
    if args.json:
        print_json({"ok": True, "action": action, "key": args.key, "scope": scope})
    else:
        past = {"delete": "deleted", "pin": "pinned", "unpin": "unpinned"}[action]
        sys.stdout.write(f"{past} {args.key!r} in {_where(scope, workspace)}\n")
    return EXIT_OK


async def _list(
    repo: MemoryRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    notes = await repo.list(None if args.all else scope, workspace)
    if args.json:
        print_json([n.to_json() for n in notes])
        return EXIT_OK
    if args.all:
        groups: dict[tuple[str, str], list[MemoryNote]] = {}
        for note in notes:
            groups.setdefault((note.scope, note.workspace), []).append(note)
        if not groups:
            sys.stdout.write("no notes in this store\n")
        for (group_scope, ws), members in groups.items():
            sys.stdout.write(_table(members, _where(group_scope, ws or None)) + "\n")
        return EXIT_OK
    sys.stdout.write(_table(notes, _where(scope, workspace)) + "\n")
    return EXIT_OK


async def _set(
    repo: MemoryRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    value = sys.stdin.read() if args.value == "-" else args.value
    limits = MemoryLimits()
    result = await repo.set(args.key, value, scope, workspace, limits)
    if not result.written:
        sys.stderr.write(
            f"io-tui: {args.key!r} does not fit {_where(scope, workspace)}: pinned notes fill it "
            f"(caps {limits.max_entries} notes, {limits.max_chars:,} chars); unpin some\n"
        )
        return EXIT_FAILED
    evicted = [n.key for n in result.evicted]
    if args.json:
        print_json(
            {
                "note": result.note.to_json(),
                "truncated_from": result.original_chars if result.truncated else None,
                "evicted": evicted,
                "restates": [other.key for other, _ in result.restates],
            }
        )
        return EXIT_OK
    lines = [f"set {result.note.key!r} in {_where(scope, workspace)}"]
    if result.truncated:
        lines.append(
            f"  cut from {result.original_chars:,} to {limits.max_entry_chars:,} chars (the cap)"
        )
    if evicted:
        lines.append(f"  evicted (oldest first): {', '.join(evicted)}")
    for other, score in result.restates:
        lines.append(f"  note: restates {other.key!r} ({score:.0%} of words shared)")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _missing(key: str, scope: Scope, workspace: str | None) -> int:
    sys.stderr.write(f"io-tui: no note {key!r} in {_where(scope, workspace)}\n")
    return EXIT_FAILED


def _where(scope: str, workspace: str | None) -> str:
    return "the global scope" if scope == "global" else f"workspace {workspace}"


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def _describe(note: MemoryNote) -> str:
    bits = [note.scope, f"written by {note.origin} at {_when(note.written_at)}"]
    if note.pinned:
        bits.append("pinned")
    bits.append(f"recalled {note.recalls}x (last {_when(note.last_recalled)})")
    return f"{note.key} ({', '.join(bits)})"


def _clip(text: str, width: int) -> str:
    first = text.splitlines()[0] if text else ""
    if len(first) > width or first != text:
        return first[: width - 1] + "…"
    return first


def _table(notes: list[MemoryNote], title: str) -> str:
    """A plain table (no rich): key, provenance, pin, recalls, the value's first line."""
    chars = sum(len(n.value) for n in notes)
    head = f"{title}: {len(notes)} note{'' if len(notes) == 1 else 's'}, {chars:,} chars"
    if not notes:
        return head
    rows = [("KEY", "WRITTEN BY", "WRITTEN AT", "PIN", "RECALLS", "VALUE")]
    rows += [
        (
            n.key,
            n.origin,
            _when(n.written_at),
            "yes" if n.pinned else "",
            str(n.recalls),
            _clip(n.value, VALUE_COLUMN),
        )
        for n in notes
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [head]
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:5])]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    return "\n".join(lines)
