"""``io-tui memory``: the operator's view of what agents remember (DESIGN §3.3, §4).

    io-tui memory list|get|set|delete|clear|pin|unpin [--workspace DIR | --global] [--json]
    io-tui memory verify|expire|supersede KEY …   (provenance: approve, end, replace a note)
    io-tui memory merge KEY INTO [--value TEXT]   (INTO absorbs KEY, which it supersedes)
    io-tui memory log [--day YYYY-MM-DD] | promote LINE KEY [--replace]   (the daily log)
    io-tui memory export [--to DIR] [--force] | import [--from DIR] [--replace] [--dry-run]

The scope is the workspace (default: the current directory, resolved to an absolute path, which is
the key runs use) or ``--global``. Every change is audited as a ``memory`` event with run id 0.
``set`` is an upsert: it writes KEY's note, replacing the one there (what the command does not say
of it, its type, section, source and expiry, stays); ``promote`` replaces one only with
``--replace``.
Exit codes: 0 ok, 1 not found, refused, or an import that left conflicts, 2 bad usage or a
malformed file.
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
    counted,
    open_store,
    print_json,
)
from io_tui.core import (
    KINDS,
    SECTIONS,
    DailyLogRepo,
    ExportRefused,
    LogLine,
    MarkdownError,
    MemoryLimits,
    MemoryNote,
    NoteRepo,
    Provenance,
    Scope,
    Store,
    export_memory,
    import_memory,
    merge_draft,
    parse_when,
)

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
    setter = actions.add_parser(
        "set", parents=[shared], help="write a note as the operator (replaces KEY's note, if any)"
    )
    setter.add_argument("key")
    setter.add_argument("value", help="the note's text; '-' reads it from stdin")
    kept = "; a note rewritten keeps its own unless given"
    setter.add_argument("--type", choices=KINDS, help=f"what it is (default fact{kept})")
    setter.add_argument(
        "--section", choices=SECTIONS, help=f"MEMORY.md section (default project{kept})"
    )
    setter.add_argument("--source", help="where it comes from (a file, a command)")
    setter.add_argument("--unverified", action="store_true", help="not checked yet")
    setter.add_argument("--expires", metavar="DATE", help="stop recalling it then (YYYY-MM-DD)")
    verify = actions.add_parser(
        "verify", parents=[shared], help="mark a note verified (a fact) or confirmed (a preference)"
    )
    verify.add_argument("key")
    verify.add_argument("--undo", action="store_true", help="mark it unverified again")
    expire = actions.add_parser("expire", parents=[shared], help="stop recalling a note")
    expire.add_argument("key")
    expire.add_argument(
        "--at", metavar="DATE", help="from DATE (YYYY-MM-DD, UTC; default now); 'never' undoes it"
    )
    supersede = actions.add_parser(
        "supersede", parents=[shared], help="mark a note replaced by another of the same scope"
    )
    supersede.add_argument("key")
    supersede.add_argument("by", nargs="?", help="the note that replaces it")
    supersede.add_argument("--undo", action="store_true", help="make it current again")
    merge = actions.add_parser(
        "merge", parents=[shared], help="merge a note into another, which supersedes it"
    )
    merge.add_argument("key", help="the note merged (superseded by INTO)")
    merge.add_argument("into", help="the note that absorbs it (same scope)")
    merge.add_argument(
        "--value",
        help="INTO's new text ('-' reads stdin; default: INTO's value, then KEY's, one per line)",
    )
    log = actions.add_parser("log", parents=[shared], help="the workspace's daily log")
    log.add_argument("--day", metavar="YYYY-MM-DD", help="one day only (UTC)")
    promote = actions.add_parser(
        "promote", parents=[shared], help="make a long-term note of one log line"
    )
    promote.add_argument("line", type=int, help="the log line's id (`memory log` shows it)")
    promote.add_argument("key")
    promote.add_argument("--type", choices=KINDS, default="fact")
    promote.add_argument("--section", choices=SECTIONS, default="project")
    promote.add_argument("--value", help="the note's text (default: the line's)")
    promote.add_argument(
        "--replace", action="store_true", help="replace the note KEY holds (refused without it)"
    )
    export = actions.add_parser(
        "export", parents=[shared], help="write MEMORY.md and .io-tui/memory/YYYY-MM-DD.md"
    )
    export.add_argument("--to", metavar="DIR", help="where (default: the workspace)")
    export.add_argument(
        "--force", action="store_true", help="overwrite files holding what the store lacks"
    )
    importer = actions.add_parser(
        "import", parents=[shared], help="merge MEMORY.md and the daily logs into the store"
    )
    importer.add_argument("--from", dest="source_dir", metavar="DIR", help="default: the workspace")
    importer.add_argument(
        "--replace", action="store_true", help="let the file win where a note differs"
    )
    importer.add_argument("--dry-run", action="store_true", help="report, change nothing")
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
        store = await open_store(args, create=args.action in ("set", "import"))
    except UsageError as exc:
        sys.stderr.write(f"io-tui: {exc}\n")
        return EXIT_USAGE
    async with store:
        try:
            return await _dispatch(store, args)
        except ExportRefused as exc:
            sys.stderr.write(f"io-tui: {exc}\n")
            return EXIT_FAILED
        except BrokenPipeError:
            raise  # stdout's reader gone, not a file of the export's: ``cli.main`` ends quietly
        except (UsageError, ValueError, OSError) as exc:
            sys.stderr.write(f"io-tui: {exc}\n")
            return EXIT_USAGE


async def _dispatch(store: Store, args: argparse.Namespace) -> int:
    scope, workspace = _scope(args)
    repo = store.notes
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
    if action in PROVENANCE_ACTIONS:
        return await _provenance(repo, args, scope, workspace)
    if action == "merge":
        return await _merge(repo, args, scope, workspace)
    if action == "log":
        return await _log(store.daily_log, args, workspace)
    if action == "promote":
        return await _promote(store.daily_log, args, scope, workspace)
    if action == "export":
        return await _export(store, args, scope, workspace)
    if action == "import":
        return await _import(store, args, scope, workspace)
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
    if action == "delete":
        return await _delete(repo, args, scope, workspace)
    done = {
        "pin": repo.pin,
        "unpin": repo.unpin,
    }[action]
    if not await done(args.key, scope, workspace):
        return _missing(args.key, scope, workspace)
    if args.json:
        print_json({"ok": True, "action": action, "key": args.key, "scope": scope})
    else:
        past = {"pin": "pinned", "unpin": "unpinned"}[action]
        sys.stdout.write(f"{past} {args.key!r} in {_where(scope, workspace)}\n")
    return EXIT_OK


async def _delete(
    repo: NoteRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    """Delete one note; the notes it superseded are current again, and this says which."""
    result = await repo.forget(key=args.key, scope=scope, workspace=workspace, operator=True)
    if result.status != "forgotten":
        return _missing(args.key, scope, workspace)
    revived = [n.key for n in result.revived]
    if args.json:
        print_json(
            {"ok": True, "action": "delete", "key": args.key, "scope": scope, "revived": revived}
        )
        return EXIT_OK
    lines = [f"deleted {args.key!r} in {_where(scope, workspace)}"]
    if revived:
        keys = ", ".join(map(repr, revived))
        lines.append(f"  {keys} (superseded by it) {_is(revived)} current again: recalled")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _is(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


async def _list(
    repo: NoteRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
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
    repo: NoteRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    value = sys.stdin.read() if args.value == "-" else args.value
    limits = MemoryLimits()
    # the operator's write is verified unless said otherwise; what it does not say of a note
    # that exists (its type, section, source, expiry) stays as it was
    existing = await repo.get(args.key, scope, workspace)
    was = Provenance.of(existing) if existing is not None else Provenance(kind="fact")
    provenance = Provenance(
        section=args.section or was.section,
        kind=args.type or was.kind,
        status="unverified" if args.unverified else "verified",
        source=was.source if args.source is None else args.source,
        expires_at=parse_when(args.expires) if args.expires else was.expires_at,
    )
    result = await repo.set(args.key, value, scope, workspace, limits, provenance)
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


PROVENANCE_ACTIONS = ("verify", "expire", "supersede")


async def _provenance(
    repo: NoteRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    action = args.action
    if action == "verify":
        note = await repo.verify(args.key, scope, workspace, verified=not args.undo)
    elif action == "expire":
        at = None if args.at == "never" else parse_when(args.at) if args.at else time.time()
        note = await repo.expire(args.key, scope, workspace, at)
    else:
        if (args.by is None) != args.undo:
            raise UsageError("supersede KEY BY, or supersede KEY --undo")
        note = await repo.supersede(args.key, args.by, scope, workspace)
    if note is None:
        return _missing(args.key, scope, workspace)
    if args.json:
        print_json(note.to_json())
        return EXIT_OK
    if action == "verify":
        said = f"is now {note.a_label}"
    elif action == "expire":
        said = f"expires {_when(note.expires_at)}" if note.expires_at else "never expires"
        if not note.active(time.time()):
            said += " (no longer recalled)"
    elif note.superseded_by:
        said = f"is superseded by {note.superseded_by!r} (no longer recalled)"
    else:
        said = "is current again"
    sys.stdout.write(f"{note.key!r} in {_where(scope, workspace)} {said}\n")
    return EXIT_OK


async def _merge(
    repo: NoteRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    """What the memory editor's merge (``m``) does: INTO gets the merged value as the operator's
    verified write, and KEY is superseded by it (``NoteRepo.merge``)."""
    note = await repo.get(args.key, scope, workspace)
    into = await repo.get(args.into, scope, workspace)
    if note is None or into is None:
        return _missing(args.key if note is None else args.into, scope, workspace)
    value = sys.stdin.read() if args.value == "-" else args.value
    if value is None:
        value = merge_draft(note, into)
    result = await repo.merge(note.key, into.key, value, scope, workspace, MemoryLimits())
    if not result.written:
        sys.stderr.write(f"io-tui: not merged: {result.status}\n")
        return EXIT_FAILED
    if args.json:
        print_json({"note": result.note.to_json(), "superseded": note.key})
        return EXIT_OK
    sys.stdout.write(
        f"merged {note.key!r} into {into.key!r} in {_where(scope, workspace)}"
        f" ({note.key!r} is superseded, no longer recalled)\n"
    )
    return EXIT_OK


def _needs_workspace(workspace: str | None, what: str) -> str:
    if workspace is None:
        raise UsageError(f"the daily log belongs to a workspace: {what} takes --workspace DIR")
    return workspace


async def _log(log: DailyLogRepo, args: argparse.Namespace, workspace: str | None) -> int:
    workspace = _needs_workspace(workspace, "log")
    if args.day:
        parse_when(args.day)  # a clear error for a bad date
    lines = await log.lines(workspace, args.day)
    if args.json:
        print_json([line.to_json() for line in lines])
        return EXIT_OK
    if not lines:
        sys.stdout.write(f"no log lines for workspace {workspace}\n")
        return EXIT_OK
    sys.stdout.write(_log_table(lines) + "\n")
    return EXIT_OK


def _log_table(lines: list[LogLine]) -> str:
    rows = [("ID", "DAY", "RUN", "FIELD", "TEXT")]
    rows += [
        (
            str(line.id),
            line.day,
            str(line.run_id) if line.run_id is not None else "-",
            line.field,
            _clip(line.text, VALUE_COLUMN) + (f"  → {line.promoted}" if line.promoted else ""),
        )
        for line in lines
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])), row[4]]).rstrip()
        for row in rows
    )


async def _promote(
    log: DailyLogRepo, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    provenance = Provenance(section=args.section, kind=args.type, status="verified")
    result = await log.promote(
        args.line,
        args.key,
        scope,
        workspace,
        provenance,
        args.value,
        replace_existing=args.replace,
    )
    if result.status == "exists":
        sys.stderr.write(
            f"io-tui: not promoted: {_where(scope, workspace)} already has a note "
            f"{result.note.key!r} ({_clip(result.note.value, 40)}): --replace replaces it, or "
            "promote to another key\n"
        )
        return EXIT_FAILED
    if not result.written:
        sys.stderr.write(f"io-tui: not promoted: {result.status}\n")
        return EXIT_FAILED
    if args.json:
        print_json(result.note.to_json())
    else:
        note = result.note
        sys.stdout.write(
            f"promoted log line {args.line} to {note.key!r} in {_where(scope, workspace)} "
            f"({note.section}, {note.label}, source: {note.source})\n"
        )
    return EXIT_OK


def _directory(given: str | None, workspace: str | None, flag: str) -> Path:
    if given:
        return Path(given).expanduser().resolve()
    if workspace is None:
        raise UsageError(f"the global notes have no workspace to live in: give {flag} DIR")
    return Path(workspace)


async def _export(
    store: Store, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    root = _directory(args.to, workspace, "--to")
    report = await export_memory(store, root, scope, workspace, force=args.force)
    if args.json:
        print_json(
            {"written": report.written, "notes": report.notes, "log_lines": report.log_lines}
        )
        return EXIT_OK
    lines = [
        f"exported {counted(report.notes, 'note')} and {counted(report.log_lines, 'log line')}"
        f" of {_where(scope, workspace)} to {root}: {counted(len(report.written), 'file')} changed"
    ]
    lines += [f"  wrote {path}" for path in report.written]
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


async def _import(
    store: Store, args: argparse.Namespace, scope: Scope, workspace: str | None
) -> int:
    root = _directory(args.source_dir, workspace, "--from")
    try:
        report = await import_memory(
            store, root, scope, workspace, replace=args.replace, dry_run=args.dry_run
        )
    except MarkdownError as exc:
        sys.stderr.write(f"io-tui: malformed memory file, nothing imported: {exc}\n")
        return EXIT_USAGE
    if args.json:
        print_json(report.to_json())
        return EXIT_FAILED if report.unresolved else EXIT_OK
    merge = report.notes
    assert merge is not None
    verb = "would import" if args.dry_run else "imported"
    out = [
        f"{verb} into {_where(scope, workspace)} from {root}: {counted(len(merge.added), 'note')} added, "
        f"{len(merge.unchanged)} unchanged, {len(merge.conflicts)} differing, "
        f"{len(merge.only_in_store)} only in the store (kept); "
        f"{counted(report.log_added, 'log line')} added, {report.log_unchanged} already there"
    ]
    out += [f"  added {n.key!r} ({n.section}, {n.kind}, {n.status})" for n in merge.added]
    for file_note, stored in merge.conflicts:
        kept = "replaced by the file's" if file_note.key in report.replaced else "kept the store's"
        if args.dry_run and args.replace:
            kept = "would take the file's"
        out.append(f"  differs {file_note.key!r} (line {file_note.line}): {kept}")
        out.append(f"    store: {_clip(stored.value, VALUE_COLUMN)}")
        out.append(f"    file:  {_clip(file_note.value, VALUE_COLUMN)}")
    if report.unresolved and not args.dry_run:
        out.append(
            f"{counted(report.unresolved, 'differing note')} left as the store has them: the store is the "
            "authority; --replace takes the file's"
        )
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_FAILED if report.unresolved and not args.dry_run else EXIT_OK


def _missing(key: str, scope: Scope, workspace: str | None) -> int:
    sys.stderr.write(f"io-tui: no note {key!r} in {_where(scope, workspace)}\n")
    return EXIT_FAILED


def _where(scope: str, workspace: str | None) -> str:
    return "the global scope" if scope == "global" else f"workspace {workspace}"


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def _describe(note: MemoryNote) -> str:
    bits = [
        note.scope,
        note.section,
        note.label,
        f"written by {note.origin} at {_when(note.written_at)}",
    ]
    if note.source:
        bits.append(f"source: {note.source}")
    state = note.state(time.time())
    if state == "superseded":
        bits.append(f"superseded by {note.superseded_by!r}, not recalled")
    elif note.expires_at is not None:
        bits.append(f"expire{'d' if state == 'expired' else 's'} {_when(note.expires_at)}")
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
    now = time.time()
    rows = [("KEY", "TYPE", "STATE", "WRITTEN BY", "WRITTEN AT", "PIN", "RECALLS", "VALUE")]
    rows += [
        (
            n.key,
            n.label,
            n.state(now),
            n.origin,
            _when(n.written_at),
            "yes" if n.pinned else "",
            str(n.recalls),
            _clip(n.value, VALUE_COLUMN),
        )
        for n in notes
    ]
    last = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    lines = [head]
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:last])]
        lines.append("  ".join([*cells, row[last]]).rstrip())
    return "\n".join(lines)
