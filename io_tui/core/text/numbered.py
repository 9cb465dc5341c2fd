"""The read tool's numbered lines: written by ``tools/files.py``, taken apart by the context engine.

A read's result is its untrusted-data frame line, then the file's lines, each behind a gutter
that holds its number (``  12│text``: as wide as the file's largest line number), and, for a
range, a last line saying which lines of how many (``(lines 37-70 of 161)``). The engine sends
a range whose lines an earlier read in the same request already shows as a pointer to them
(``context/stubs.py``, ``quote_stub``); ``range_from`` gives the range back from that read's
text, so the engine can check, to the character, that the pointer stands for what the range
would have sent.
"""

from __future__ import annotations

import re

GUTTER = "│"
_NUMBERED = re.compile(r" *(\d+)" + GUTTER)
_TRAILER = re.compile(r"\(lines (\d+)-(\d+) of (\d+)\)")
_SPAN = re.compile(r"lines (\d+)-(\d+)")
WHOLE = (1, 1 << 62)  # the lines of a whole read (``span_lines``)


def number_lines(lines: list[str], first: int, last_in_file: int) -> str:
    """``  12│text`` lines; the gutter is as wide as the file's largest line number."""
    width = max(4, len(str(last_in_file)))
    return "\n".join(f"{n:>{width}}{GUTTER}{line}" for n, line in enumerate(lines, start=first))


def range_span(first: int, last: int) -> str:
    """A range read's ``Observation.span``."""
    return f"lines {first}-{last}"


def span_lines(span: str) -> tuple[int, int] | None:
    """The lines a read's span covers: all of them (``WHOLE``) for a whole read; None for a
    span that is not a line range."""
    if not span:
        return WHOLE
    match = _SPAN.fullmatch(span)
    return (int(match[1]), int(match[2])) if match else None


def range_trailer(first: int, last: int, total: int) -> str:
    """The line under a range read: which lines it holds, of how many."""
    return f"(lines {first}-{last} of {total})"


def range_from(text: str, first: int, last: int) -> str | None:
    """What a read of lines ``first``-``last`` gives, taken from ``text``: the result of a read
    of the same file (whole, or a range holding those lines) with its frame line on top. None
    when ``text`` is not such a result or does not hold every one of those lines."""
    frame, _, body = text.partition("\n")
    if not frame.startswith("[") or not body:
        return None
    lines = body.split("\n")
    total = None
    trailer = _TRAILER.fullmatch(lines[-1])
    if trailer:
        total = int(trailer[3])
        lines.pop()
    numbers = [int(m[1]) for line in lines if (m := _NUMBERED.match(line))]
    if not numbers or len(numbers) != len(lines):
        return None  # a line without its number (a cut marker): not one read's whole output
    top = numbers[0]
    if total is None:  # a whole read: its last line is the file's
        total = top + len(lines) - 1
    if not (top <= first <= last < top + len(lines)) or last > total:
        return None
    if (numbers[first - top], numbers[last - top]) != (first, last):
        return None  # not numbered one by one: not one read's result
    kept = lines[first - top : last - top + 1]
    tail = "" if (first, last) == (1, total) else "\n" + range_trailer(first, last, total)
    return f"{frame}\n" + "\n".join(kept) + tail
