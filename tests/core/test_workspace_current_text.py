"""``Workspace.current_text``: the file a proposed write would change, read through containment
(the approval modal's and the inbox's diff); None for anything it must not or cannot show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from io_tui.core.boundary.workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def f():\n    return 1\n")
    (tmp_path / "secret.txt").write_text("outside secret\n")
    return root


def test_a_file_inside_is_read_as_text(root: Path) -> None:
    assert Workspace(root).current_text("src/app.py", max_bytes=1000) == "def f():\n    return 1\n"


def test_nothing_outside_the_root_is_read(root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    workspace = Workspace(root)
    assert workspace.current_text("../secret.txt", max_bytes=1000) is None
    assert workspace.current_text("link.txt", max_bytes=1000) is None
    assert workspace.current_text(str(root.parent / "secret.txt"), max_bytes=1000) is None


def test_missing_large_binary_and_special_files_are_none(root: Path) -> None:
    workspace = Workspace(root)
    assert workspace.current_text("src/new.py", max_bytes=1000) is None
    assert workspace.current_text("src/app.py", max_bytes=5) is None
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    assert workspace.current_text("blob.bin", max_bytes=1000) is None
    assert workspace.current_text("src", max_bytes=1000) is None
    os.mkfifo(root / "pipe")
    assert workspace.current_text("pipe", max_bytes=1000) is None  # never opened: it would block
