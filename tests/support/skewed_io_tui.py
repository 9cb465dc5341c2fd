"""``io-tui`` on a machine whose wall clock is off, or that calls itself by another name: an
injected clock for the lease tests (libfaketime, where installed, does the same from outside).

    python skewed_io_tui.py OFFSET_S HOSTNAME io-tui-args...

``time.time`` (and ``time_ns``) read ``OFFSET_S`` seconds ahead (negative: behind) of the real
wall clock, and ``socket.gethostname`` says ``HOSTNAME`` (``-``: the real one), for everything
io-tui does. The monotonic clocks are left alone: a host's monotonic clock is not its wall
clock, and skew between hosts is what is being tried.
"""

from __future__ import annotations

import socket
import sys
import time

offset, host, *argv = sys.argv[1:]
real_time, real_time_ns = time.time, time.time_ns
time.time = lambda: real_time() + float(offset)
time.time_ns = lambda: real_time_ns() + int(float(offset) * 1e9)
if host != "-":
    socket.gethostname = lambda: host

from io_tui.cli import main  # noqa: E402  (after the clock is in place)

sys.exit(main(argv))
