"""File tools: read_file, write_file, edit_file, list_dir (DESIGN §3.7).

Reads are never silently cut: a file (or range) larger than one observation may hold is refused
with its size, so the model asks for a range instead of reasoning over a truncated file. One line
too long for an observation (a minified bundle, a one-line JSON dump) is shown cut, with a mark
saying where it was cut and the byte range that reads on; ``byte_offset``/``byte_limit`` read
any part of any file, however long its lines or large the file. Writes gate on the exact bytes
that would land on disk, which is what a human approves.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from io_tui.core.authority.policy import Act
from io_tui.core.boundary.workspace import is_binary
from io_tui.core.ledger import ObsKind, Seen
from io_tui.core.text.numbered import number_lines, range_span, range_trailer
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolError, ToolOutcome

MAX_LIST_ENTRIES = 500


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the workspace root.")
    offset: int | None = Field(
        default=None, ge=1, description="First line to read (1-based). Omit to start at line 1."
    )
    limit: int | None = Field(
        default=None, ge=1, description="How many lines to read. Omit to read to the end."
    )
    byte_offset: int | None = Field(
        default=None,
        ge=0,
        description="Read bytes instead of lines, from this 0-based byte (for very long lines "
        "or very large files). Not with offset/limit.",
    )
    byte_limit: int | None = Field(
        default=None, ge=1, description="How many bytes to read from byte_offset."
    )

    @model_validator(mode="after")
    def _lines_or_bytes(self) -> ReadFileArgs:
        if self.byte_limit is not None and self.byte_offset is None:
            raise ValueError("byte_limit needs byte_offset")
        if self.byte_offset is not None and (self.offset is not None or self.limit is not None):
            raise ValueError(
                "read lines (offset, limit) or bytes (byte_offset, byte_limit), not both"
            )
        return self


class ReadFile(Tool):
    changes_files = False
    only_reads = True
    name = "read_file"
    description = (
        "Read a text file from the workspace, with line numbers. Read the whole file, or a range "
        "with offset (1-based first line) and limit (line count). Files too large for one "
        "observation are refused with their size: then read them in ranges. A single line too "
        "long to show is cut and marked; byte_offset and byte_limit read any byte range."
    )
    Args = ReadFileArgs

    async def gate(self, args: ReadFileArgs, ctx: ToolContext) -> Gate:
        return Gate(Act.READ, ctx.workspace.relative(args.path))

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutcome:
        if args.byte_offset is not None:
            return await _read_bytes(args, ctx, args.byte_offset)
        rel = ctx.workspace.relative(args.path)
        text, seen = await ctx.workspace.read_text_seen(args.path)
        lines = text.splitlines()
        total = len(lines)
        if total == 0:
            return ToolOutcome(f"({rel} is empty)", ObsKind.READ, rel, seen=(seen,))
        first = args.offset or 1
        if first > total:
            raise ToolError(f"{rel} has {total} lines; offset {first} is past the end")
        last = total if args.limit is None else min(total, first + args.limit - 1)
        whole = first == 1 and last == total
        body = number_lines(lines[first - 1 : last], first, total)
        if len(body) > ctx.cap_chars and first == last:
            return _cut_line(rel, lines, first, total, seen, ctx.cap_chars)
        if len(body) > ctx.cap_chars:
            raise ToolError(_too_large(rel, total, len(text), first, last, body, ctx.cap_chars))
        span = "" if whole else range_span(first, last)
        if not whole:
            body += "\n" + range_trailer(first, last, total)
        return ToolOutcome(body, ObsKind.READ, rel, span=span, data={"lines": total}, seen=(seen,))


def _too_large(rel: str, total: int, chars: int, first: int, last: int, body: str, cap: int) -> str:
    """The refusal for an oversized read, with a range size that would fit."""
    per_line = max(1, len(body) // max(1, last - first + 1))
    fits = max(1, (cap * 9 // 10) // per_line)
    scope = "the file" if (first, last) == (1, total) else f"lines {first}-{last}"
    return (
        f"{rel} is {total:,} lines ({chars:,} chars); {scope} would take {len(body):,} chars, "
        f"more than one observation holds ({cap:,}). Read a range instead, "
        f"e.g. offset={first}, limit={fits}, or grep for what you need; a line too long "
        "alone is shown cut, and byte_offset/byte_limit read any byte range."
    )


def _cut_line(
    rel: str, lines: list[str], number: int, total: int, seen: Seen, cap: int
) -> ToolOutcome:
    """Line ``number``, too long for one observation, cut to fit and marked with the byte
    range that reads on."""
    line = lines[number - 1]
    keep = max(1, cap * 8 // 10)
    start = sum(len(x.encode("utf-8")) + 1 for x in lines[: number - 1])  # newline-ended lines
    shown = line[:keep]
    cut_at = start + len(shown.encode("utf-8"))
    size = len(line.encode("utf-8"))
    mark = (
        f"[line {number} cut: its first {len(shown):,} of {len(line):,} chars ({size:,} bytes) "
        f"shown; read on with byte_offset={cut_at}, byte_limit={keep}]"
    )
    body = number_lines([shown + " …"], number, total) + "\n" + mark
    return ToolOutcome(
        body,
        ObsKind.READ,
        rel,
        span=range_span(number, number),
        data={"lines": total, "cut": True},
        seen=(seen,),
    )


async def _read_bytes(args: ReadFileArgs, ctx: ToolContext, offset: int) -> ToolOutcome:
    """A byte range of the file, as text, headed by where it lies and what reads on."""
    fits = max(1, ctx.cap_chars * 8 // 10)
    wanted = min(args.byte_limit or fits, fits)
    got = await ctx.workspace.read_range(args.path, offset, wanted)
    rel = got.path
    if offset >= got.size and got.size:
        raise ToolError(f"{rel} is {got.size:,} bytes; byte_offset {offset:,} is past the end")
    if is_binary(got.data):
        raise ToolError(f"{rel} is a binary file ({got.size:,} bytes); not shown")
    end = offset + len(got.data)
    text = got.data.decode("utf-8", errors="replace")
    cut = (
        ""
        if (args.byte_limit or fits) <= fits
        else f" (cut to {fits:,}, what one observation holds)"
    )
    after = (
        f"; {got.size - end:,} bytes follow: byte_offset={end} reads on"
        if end < got.size
        else "; the end of the file"
    )
    head = (
        f"[bytes {offset:,}-{end:,} of {rel} ({got.size:,} bytes){cut}, from line {got.line:,}"
        f"{after}]"
    )
    return ToolOutcome(
        f"{head}\n{text}",
        ObsKind.READ,
        rel,
        span=f"bytes {offset}-{end}",
        data={"bytes": [offset, end], "size": got.size},
        seen=(got.seen,),
    )


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the workspace root; parents are created.")
    content: str = Field(description="The complete new file content, written exactly as given.")


class WriteFile(Tool):
    name = "write_file"
    description = (
        "Create a file or replace its whole content. Parent directories are created. To change "
        "part of an existing file, prefer edit_file."
    )
    Args = WriteFileArgs

    async def gate(self, args: WriteFileArgs, ctx: ToolContext) -> Gate:
        return Gate(Act.WRITE, ctx.workspace.relative(args.path), args.content)

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutcome:
        rel = ctx.workspace.relative(args.path)
        existed = await ctx.workspace.write_text(args.path, args.content)
        verb = "overwrote" if existed else "created"
        lines = len(args.content.splitlines())
        text = f"{verb} {rel} ({lines} lines, {len(args.content):,} chars)"
        return ToolOutcome(text, ObsKind.WRITE, rel, data={"created": not existed})


class EditFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the workspace root.")
    old: str = Field(
        min_length=1,
        description="Exact text to replace, including whitespace and indentation. It must occur "
        "exactly once in the file; include surrounding lines to make it unique.",
    )
    new: str = Field(description="The replacement text.")


class EditFile(Tool):
    name = "edit_file"
    description = (
        "Replace one exact, unique occurrence of `old` with `new` in a file. Fails if `old` is "
        "missing or occurs more than once (widen it with surrounding lines)."
    )
    Args = EditFileArgs

    async def gate(self, args: EditFileArgs, ctx: ToolContext) -> Gate:
        rel = ctx.workspace.relative(args.path)
        new_text, _ = await self._apply(args, ctx, rel)
        return Gate(Act.WRITE, rel, new_text)

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutcome:
        rel = ctx.workspace.relative(args.path)
        new_text, line = await self._apply(args, ctx, rel)
        await ctx.workspace.write_text(args.path, new_text)
        end = line + args.new.rstrip("\n").count("\n")
        where = f"line {line}" if end == line else f"lines {line}-{end}"
        return ToolOutcome(f"edited {rel}: replaced 1 occurrence at {where}", ObsKind.WRITE, rel)

    async def _apply(self, args: EditFileArgs, ctx: ToolContext, rel: str) -> tuple[str, int]:
        """The whole new file text and the 1-based line where the replacement starts."""
        if args.old == args.new:
            raise ToolError("old and new are identical; nothing to change")
        text = await ctx.workspace.read_text(args.path)
        count = text.count(args.old)
        if count == 0:
            raise ToolError(
                f"old text not found in {rel}; read the file and copy the exact text "
                "(whitespace and indentation must match)"
            )
        if count > 1:
            raise ToolError(
                f"old text occurs {count} times in {rel}; include surrounding lines so it "
                "matches exactly once"
            )
        at = text.index(args.old)
        return text.replace(args.old, args.new, 1), text.count("\n", 0, at) + 1


class ListDirArgs(ToolArgs):
    path: str = Field(
        default=".", description="Directory relative to the workspace root; the root if omitted."
    )


class ListDir(Tool):
    changes_files = False
    only_reads = True
    name = "list_dir"
    description = "List a directory's entries, sorted; directories end with '/'."
    Args = ListDirArgs

    async def gate(self, args: ListDirArgs, ctx: ToolContext) -> Gate:
        return Gate(Act.READ, ctx.workspace.relative(args.path))

    async def run(self, args: ListDirArgs, ctx: ToolContext) -> ToolOutcome:
        rel, entries = await ctx.workspace.listing(args.path)
        shown = [name + "/" if is_dir else name for name, is_dir in entries[:MAX_LIST_ENTRIES]]
        more = len(entries) - len(shown)
        if more:
            shown.append(f"… {more:,} more entries not shown; use find with a pattern to narrow")
        text = "\n".join(shown) if shown else f"({rel} is empty)"
        data: dict[str, Any] = {"entries": len(entries)}
        return ToolOutcome(text, ObsKind.LIST, rel, data=data)
