"""What the app loads before its first frame: the main screen and what it draws with, not the
screens opened later (the approval modal and its editors, the inbox, the new-run dialog, the
inspector with Pygments), which load when first opened."""

from __future__ import annotations

import subprocess
import sys

LATER = (
    "io_tui.ui.approver",
    "io_tui.ui.screens.approval",
    "io_tui.ui.screens.remember",
    "io_tui.ui.screens.inbox",
    "io_tui.ui.screens.new_run",
    "io_tui.ui.screens.inspector",
    "io_tui.ui.screens.help",
    "io_tui.core.steering.remember",
    "io_tui.core.steering.rewrite",
    "pygments",
)


def test_the_app_and_its_main_screen_load_no_later_screen() -> None:
    code = (
        "import sys\n"
        "from io_tui.config import Settings\n"
        "from io_tui.ui.app import create_app\n"
        "app = create_app(Settings(), __import__('pathlib').Path('unused.db'))\n"
        "app.get_default_screen()\n"
        f"print(sorted(m for m in {LATER!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
