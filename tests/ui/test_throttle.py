"""Throttle: at most one call per interval, with the latest state; ``now`` skips the wait once."""

from __future__ import annotations

from textual.app import App

from io_tui.ui.throttle import Throttle


async def test_requests_fold_wait_for_the_interval_and_now_runs_once() -> None:
    calls: list[int] = []
    app: App[None] = App()
    async with app.run_test() as pilot:
        state = {"value": 0}
        throttle = Throttle(app, 10.0, lambda: calls.append(state["value"]))
        for value in range(1, 6):  # one loop turn: one call, with the latest value
            state["value"] = value
            throttle()
        await pilot.pause()
        assert calls == [5]
        state["value"] = 6
        throttle()  # within the interval: waits (10 s here)
        await pilot.pause(0.1)
        assert calls == [5]
        state["value"] = 7
        throttle(now=True)  # the pending wait is dropped and the call runs now, once
        throttle(now=True)
        await pilot.pause(0.1)
        assert calls == [5, 7]
