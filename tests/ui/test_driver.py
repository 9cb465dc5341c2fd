"""The terminal driver survives its terminal hanging up: a write the dead terminal refuses is
dropped, so Textual's writer thread lives on and the app can still quit (rather than block for
ever in its shutdown, queueing into the bounded queue of a writer thread that had died)."""

from __future__ import annotations

import errno
import io
import threading
from collections.abc import Callable
from typing import IO, cast

from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread

from io_tui.ui.app import IoApp
from io_tui.ui.driver import HangupSafeDriver, TerminalOutput


class HungUpTerminal(io.StringIO):
    """A terminal after its window closed: every write and flush fails with EIO."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")


def test_a_writer_thread_on_a_hung_up_terminal_drains_and_stops() -> None:
    output = TerminalOutput(HungUpTerminal())
    writer = WriterThread(cast(IO[str], output))
    writer.start()
    stopped = threading.Event()

    def shut_down() -> None:  # as the app's shutdown does: frames, the restore codes, stop
        for n in range(MAX_QUEUED_WRITES * 4):
            writer.write(f"\x1b[{n}H frame {n}")
        writer.stop()
        stopped.set()

    threading.Thread(target=shut_down, daemon=True).start()
    assert stopped.wait(10), "the writer thread died, and the shutdown blocked on its full queue"
    assert output.lost and not writer.is_alive()


def test_a_live_terminal_gets_every_write() -> None:
    terminal = io.StringIO()
    output = TerminalOutput(terminal)
    output.write("\x1b[?1049h")
    output.write("hello")
    output.flush()
    assert terminal.getvalue() == "\x1b[?1049hhello" and not output.lost


async def test_the_app_draws_through_the_hangup_safe_driver(
    make_app: Callable[..., IoApp],
) -> None:
    app = make_app(demo=False)
    assert app.driver_class is HangupSafeDriver
    # Textual's driver hands its ``_file`` to the writer thread: if a Textual release renames
    # it, the wrapper would silently stop being used, and this fails
    assert isinstance(HangupSafeDriver(app)._file, TerminalOutput)
