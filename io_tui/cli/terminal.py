"""stdout and stderr as the commands write them: untrusted text never acts on the terminal.

Every printer (``trace``, ``approvals``, ``decide``, ``memory``, the run's progress, the
terminal's approval prompt) writes text that a workspace or a model chose: file contents,
command output, file names. ``guarded`` puts both streams behind ``TerminalText`` for the
length of a command: on a terminal every escape sequence and control character is dropped; piped,
or with ``--show-escapes``, each is written visibly (``\\x1b[2J``), so a log shows what was
there. JSON goes to the stream behind it (``exact``): it escapes controls itself and stays the
exact value.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import TextIO

from io_tui.core import strip_escapes, visible_escapes


class TerminalText(io.TextIOBase):
    """A text stream that writes ``raw`` with its escapes dropped (``show`` False) or shown."""

    def __init__(self, raw: TextIO, *, show: bool) -> None:
        super().__init__()
        self.raw = raw
        self.show = show

    def write(self, text: str) -> int:
        self.raw.write(visible_escapes(text) if self.show else strip_escapes(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def fileno(self) -> int:
        return self.raw.fileno()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.raw.encoding

    @property
    def buffer(self) -> object:
        return self.raw.buffer


def exact(stream: TextIO) -> TextIO:
    """The stream behind a ``TerminalText``: for output whose every character is meant (JSON)."""
    return stream.raw if isinstance(stream, TerminalText) else stream


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False


@contextlib.contextmanager
def guarded(*, show: bool = False) -> Iterator[None]:
    """stdout and stderr as ``TerminalText`` until the block ends: escapes dropped on a
    terminal, shown when piped or when ``show`` asks."""
    saved = sys.stdout, sys.stderr
    sys.stdout = TerminalText(saved[0], show=show or not _is_terminal(saved[0]))
    sys.stderr = TerminalText(saved[1], show=show or not _is_terminal(saved[1]))
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        sys.stdout, sys.stderr = saved
