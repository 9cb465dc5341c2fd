"""A small file system of its own for a test, to fill: a tmpfs of a few megabytes.

Mounting needs root (CAP_SYS_ADMIN); elsewhere the test that asks for one is skipped, saying
why. ``small_disk(path, size)`` mounts it at ``path`` and unmounts it after (lazily: a process
the test left behind cannot keep it busy).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CANNOT = "mounting a small tmpfs needs root (CAP_SYS_ADMIN); the full-disk cases need one"


@contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount -o size=``: ``2m``) at ``path``, made if missing."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip(CANNOT)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"{CANNOT}: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` with one file until only ``leave`` bytes are free; the file."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("ab") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler
