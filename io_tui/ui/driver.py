"""Textual's terminal driver, made safe for a terminal that hangs up under the app.

When the terminal goes (its window closed, the SSH link dropped), every write to it fails with
EIO. Textual's writer thread dies on the first such error, and its queue is bounded: the writes
after it fill the queue, and the next one blocks the app for ever, in its own shutdown at the
latest (``WriterThread.stop`` waits to queue its end marker), and the app never quits after its
tmux pane is killed. Here a write the terminal refuses is dropped instead, so the
writer thread lives on and the app quits as it should (``IoApp._check_terminal`` sees the
terminal gone within a second).

Textual offers no way to give a driver another stream, so the driver replaces its private
``_file`` before the writer thread is built from it (``tests/ui/test_textual_private.py``).
"""

from __future__ import annotations

import io
from typing import Any, TextIO, cast

from textual.app import App
from textual.drivers.linux_driver import LinuxDriver


class TerminalOutput(io.TextIOBase):
    """The terminal's output stream as the driver's writer thread uses it: once a write or a
    flush fails, the terminal is taken as gone and nothing more is sent to it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self._stream.write(text)
            except OSError:
                self.lost = True
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self._stream.flush()
            except OSError:
                self.lost = True

    def fileno(self) -> int:
        return self._stream.fileno()


class HangupSafeDriver(LinuxDriver):
    """Textual's own driver for POSIX terminals, writing through a :class:`TerminalOutput`."""

    def __init__(self, app: App[Any], **options: Any) -> None:
        super().__init__(app, **options)
        if self._file is not None:  # Textual types it as the stream it defaults to (stderr); its
            # writer thread needs only write, flush and fileno
            self._file = cast(io.TextIOWrapper, TerminalOutput(self._file))
