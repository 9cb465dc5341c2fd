"""Fixtures for provider tests: a recording sleep, a fast retry policy, a replay server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from provider_helpers import Sleeps
from replay_server import ReplayServer

from io_tui.core.providers.retry import RetryPolicy


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def retry(sleeps: Sleeps) -> RetryPolicy:
    """Four attempts, waits recorded not slept, jitter fixed at its midpoint."""
    return RetryPolicy(max_attempts=4, base_delay_s=1.0, sleep=sleeps, jitter=lambda: 0.5)


@pytest.fixture
async def server() -> AsyncIterator[ReplayServer]:
    srv = ReplayServer()
    await srv.start()
    yield srv
    await srv.stop()
