"""One ACP session: its id, its directory, its runs in the store, and the line of updates to the
client.

A session is a conversation; io-tui's runs are tasks. Each prompt is one run: the first a new
run in the session's directory, each later one a follow-up seeded with the one before (as the
TUI's follow-up prompt is), or, when the last run paused on an ask or was interrupted, that run
resumed with the prompt as an operator message. Every run records the session's id in its
origin (``RunOrigin.session``), so ``session/load`` in any process finds them in the store.

Updates are sent in the order they were made: the harness's sink is synchronous, so events are
queued (``Outbox.put``) and one task sends them; a permission request or the prompt's answer
waits until every update before it went out (``Outbox.flush``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp import Client
    from acp.schema import ClientCapabilities

    from io_tui.core import Store

log = logging.getLogger("io_tui.acp")

Update = Any  # one of the SDK's session update models (message chunk, tool call, …)
Job = Callable[[], Awaitable[Update | None]]  # an update made when its turn to be sent comes


def new_session_id() -> str:
    return f"io-tui-{uuid.uuid4().hex[:16]}"


class Outbox:
    """A session's updates, sent one after another by one task."""

    def __init__(self, client: Client, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self._queue: asyncio.Queue[Update | Job] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def put(self, update: Update | Job) -> None:
        """Queue an update, or a job that makes one from the store once those before it went."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send_all())
        self._queue.put_nowait(update)

    async def flush(self) -> None:
        """Return once every update queued so far has been sent (or failed to)."""
        if self._task is not None:
            await self._queue.join()

    async def close(self) -> None:
        if self._task is not None:
            await self.flush()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _send_all(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                update = await item() if callable(item) else item
                if isinstance(update, dict):  # an update the SDK has no model for, as JSON
                    await self.client._conn.send_notification(  # type: ignore[attr-defined]
                        "session/update", {"sessionId": self.session_id, "update": update}
                    )
                elif update is not None:
                    await self.client.session_update(session_id=self.session_id, update=update)
            except Exception as exc:  # a closed client or a bad update never stops the run
                log.warning("session %s: an update was not sent: %s", self.session_id, exc)
            finally:
                self._queue.task_done()


@dataclass
class Session:
    """A live session in this process (created by ``session/new`` or ``session/load``)."""

    id: str
    cwd: Path
    outbox: Outbox
    capabilities: ClientCapabilities | None = None
    run_id: int | None = None  # the run the current (or last) prompt drives
    turn: asyncio.Task[Any] | None = None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    asking: int = 0  # permission requests open now: a cancel defers them instead
    servers: dict[str, Any] = field(default_factory=dict)  # the client's MCP servers
    plan_revision: tuple[int, int] | None = None  # (run, ledger revision) last made a plan
    plan: list[Any] | None = None  # the plan's entries last sent
    compaction: bool = False  # the client takes compaction_update (the session-compaction RFD)
    usage: Any = None  # the last turn's usage (ACP ``Usage``), for the prompt's answer

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()


async def session_runs(store: Store, session_id: str | None = None) -> list[Any]:
    """The runs (``RunRow``) of ``session_id`` in the order they were started, its sub-agents'
    left out; every session's with None."""
    rows = await store.runs.of_session(session_id)  # a text match on the origin: checked here
    return [
        row
        for row in rows
        if (session := (row.origin or {}).get("session")) and session_id in (None, session)
    ]
