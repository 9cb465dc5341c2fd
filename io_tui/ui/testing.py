"""Helpers shared by the UI tests, the screenshot exporter and the benchmark."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input, TextArea
from textual.worker import WorkerCancelled

from io_tui import demo


def prepare_demo_workspace(path: Path) -> Path:
    """A fresh copy of the demo project at exactly ``path`` (deterministic screenshots)."""
    if path.exists():
        shutil.rmtree(path)
    shutil.copytree(demo.HERE / "workspace", path, ignore=shutil.ignore_patterns("__pycache__"))
    return path


async def wait_until_idle(pilot: Pilot[object], *, within_s: float = 30.0) -> None:
    """Wait for every run worker to finish and the views to settle (workers awaited)."""
    app = pilot.app
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while loop.time() < deadline:
        await pilot.pause(0.05)
        busy = [w for w in app.workers if w.is_running]
        if not busy:
            break
    await pilot.pause(0.3)
    for worker in list(app.workers):  # a newer exclusive worker may cancel one meanwhile
        with contextlib.suppress(WorkerCancelled):
            await worker.wait()
    await pilot.pause(0.1)


def freeze(app: object) -> None:
    """No blinking cursors, no toasts: what a snapshot needs to be deterministic."""
    from textual.app import App

    assert isinstance(app, App)
    app.clear_notifications()
    for widget in app.screen.query(Input):
        widget.cursor_blink = False
    for area in app.screen.query(TextArea):
        area.cursor_blink = False
