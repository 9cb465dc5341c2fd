"""The collector is paused over a context build and given back as it was: enabled again when the
last of interleaved pauses ends, left off when it was off."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.gcpause import gc_paused
from io_tui.core.contract import TaskContract
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.providers.messages import ToolCall


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


async def test_interleaved_pauses_give_the_collector_back_when_the_last_ends() -> None:
    gc.enable()
    first_in, second_in, first_out = asyncio.Event(), asyncio.Event(), asyncio.Event()
    seen: list[bool] = []

    async def first() -> None:
        with gc_paused():
            first_in.set()
            await second_in.wait()
        first_out.set()

    async def second() -> None:
        await first_in.wait()
        with gc_paused():
            second_in.set()
            await first_out.wait()
            seen.append(gc.isenabled())  # the first pause ended, this one has not
        seen.append(gc.isenabled())

    await asyncio.gather(first(), second())
    assert seen == [False, True]


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with gc_paused(), gc_paused():
        pass
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a failing pass")
    assert gc.isenabled()


async def test_a_build_leaves_the_collector_enabled(tmp_path: Path) -> None:
    gc.enable()
    call = ToolCall("c1", "read_file", {"path": "a.py"})
    obs = Observation(1, "c1", "read_file", ObsKind.READ, "a.py", "x = 1\n")
    engine = ContextEngine(Frame("system", (), TaskContract("goal", tmp_path)))
    await engine.build([StepRecord(1, "", (call,), (obs,))], ceiling_tokens=8_000)
    assert gc.isenabled()
