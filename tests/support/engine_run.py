"""A run's requests built as the run loop builds them, for tests of the context engine alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.manifest import Assembly
from io_tui.core.ledger import StepRecord


async def ask(
    engine: ContextEngine, done: list[StepRecord], step: int, ceiling: int, **build: Any
) -> Assembly:
    """The request for ``step`` after the steps ``done``: the step asked for, no turn yet."""
    return await engine.build([*done, StepRecord(step, "")], ceiling_tokens=ceiling, **build)


def answered(record: StepRecord, assembly: Assembly) -> StepRecord:
    """``record`` as the run loop records it: with the corrections its request carried."""
    return replace(record, corrections=tuple(o for o, _ in assembly.corrections))


async def grow(
    engine: ContextEngine, records: list[StepRecord], ceiling: int, **build: Any
) -> list[Assembly]:
    """Build every request of a run whose steps are ``records``: each step asked for, then
    recorded with the corrections made at its boundary; then the request after the last."""
    built: list[Assembly] = []
    done: list[StepRecord] = []
    for record in records:
        assembly = await ask(engine, done, record.step, ceiling, **build)
        built.append(assembly)
        done.append(answered(record, assembly))
    after = done[-1].step + 1 if done else 1
    built.append(await ask(engine, done, after, ceiling, **build))
    return built
