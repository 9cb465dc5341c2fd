"""The approval modal and the inbox read the file a write would change through the workspace
(``read_current`` → ``Workspace.current_text``): a link out of it shows as a new file."""

from __future__ import annotations

from pathlib import Path

from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.authority.policy import Act
from io_tui.ui.screens.request_view import read_current


def _write(workspace: Path, target: str) -> ApprovalRequest:
    args = {"path": target, "content": "x\n"}
    return ApprovalRequest(
        1, 1, 1, "c", "write_file", args, Act.WRITE, target, "x\n", "r", "l", str(workspace)
    )


def test_the_ui_reads_through_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def f():\n    return 1\n")
    (tmp_path / "secret.txt").write_text("outside secret\n")
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    assert read_current(_write(root, "src/app.py")) == "def f():\n    return 1\n"
    assert read_current(_write(root, "link.txt")) is None  # the diff is shown as a new file
    assert read_current(_write(root / "gone", "src/app.py")) is None
