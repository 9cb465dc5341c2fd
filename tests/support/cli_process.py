"""io-tui as a user runs it, for the tests that drive its CLI: ``python -m io_tui`` in a
subprocess of this interpreter, with this environment less ``NO_COLOR`` (the suite's own
setting, which a user's terminal does not have)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

IO_TUI = (sys.executable, "-m", "io_tui")


def user_env(extra: Mapping[str, str] | None = None, drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment without ``NO_COLOR`` (nor ``drop``), plus ``extra``."""
    left_out = {"NO_COLOR", *drop}
    return {k: v for k, v in os.environ.items() if k not in left_out} | dict(extra or {})


def io_tui(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``io-tui ARGS`` to its end: exit status, stdout and stderr as text. ``env``: the
    environment (``user_env()`` when not given)."""
    return subprocess.run(
        [*IO_TUI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
        env=user_env() if env is None else dict(env), input=input,
    )  # fmt: skip
