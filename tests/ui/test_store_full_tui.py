"""The TUI whose store fills up under a run (a SQLite store on a small tmpfs that the run's own
command fills; root only, skipped elsewhere): the notice says which store is full and what it
needs, the app goes on, and the run waits to be resumed once there is room."""

from __future__ import annotations

import json
from pathlib import Path

from small_disk import small_disk
from textual.notifications import Notify
from waits import until

from io_tui.config import Settings
from io_tui.core import ApproveAll, NewRunRequest
from io_tui.ui.app import create_app
from io_tui.ui.hosts import ProcessHost
from io_tui.ui.testing import wait_until_idle

from .conftest import SIZE

# the run's own command fills the store's disk, outside the workspace: unsandboxed, as the
# sandbox rightly keeps a command from writing there
POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n[sandbox]\nenabled = false\n'


async def test_a_full_store_is_a_notice_naming_it_and_the_app_goes_on(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "12m") as disk:
        store, filler = disk / "store.db", disk / "filler"
        ws = tmp_path / "ws"
        ws.mkdir()
        fill = f"head -c 100000000 /dev/zero > {filler}; echo filled"
        call = {"id": "x1", "name": "run_command", "arguments": {"argv": ["sh", "-c", fill]}}
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"turns": [{"tool_calls": [call]}, {"text": "done"}]}))
        (tmp_path / "policy.toml").write_text(POLICY)
        settings = Settings(policy=tmp_path / "policy.toml")
        app = create_app(settings, store, poll_interval=None, approver=ApproveAll())
        assert isinstance(app.host, ProcessHost)  # the runs in the harness worker, as a user's
        notes: list[tuple[str, str]] = []

        def hook(message: object) -> None:
            if isinstance(message, Notify):
                notes.append((message.notification.title, message.notification.message))

        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            app.start_request(NewRunRequest("t", ws, f"scripted:{script}"))
            await until(lambda: any(t == "Store full" for t, _ in notes), "the notice", 90)
            (said,) = [m for t, m in notes if t == "Store full"]
            assert said.startswith(f"run 1: store {store} is full: ")
            assert "io-tui needs at least 8 MB there" in said
            assert "`io-tui resume 1` once there is room" in said
            assert not any("worker failed" in t for t, _ in notes), notes
            app.refresh_runs(None)  # the app reads its store as before
            await wait_until_idle(pilot)
            assert app.return_code is None and 1 in app.runs
