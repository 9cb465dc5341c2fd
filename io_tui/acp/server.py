"""``io-tui acp``'s process: the agent on stdin/stdout until the client closes them.

stdout carries the protocol and nothing else (``transport.protocol_stdio``); the log goes to
stderr as one line per record, warnings and worse (``-v``: everything), and whole, tracebacks
included, to ``--log FILE`` when one is given.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

from acp.core import AgentSideConnection

from io_tui.acp.agent import IoAgent, Servers
from io_tui.acp.transport import LineTransport, protocol_stdio

if TYPE_CHECKING:
    from acp import Agent

    from io_tui.config import Settings
    from io_tui.core import Store

log = logging.getLogger("io_tui.acp")


class OneLine(logging.Formatter):
    """A record on one line: an exception is named by its type and message, never traced."""

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        record = copy.copy(record)
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        text = super().format(record).replace("\n", " ")
        return f"{text}: {type(exc).__name__}: {exc}" if exc is not None else text


def configure_logging(log_file: Path | None, verbose: bool) -> None:
    root = logging.getLogger()
    root.handlers.clear()
    root.setLevel(logging.DEBUG if log_file is not None or verbose else logging.WARNING)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.DEBUG if verbose else logging.WARNING)
    stderr.setFormatter(OneLine("io-tui acp: %(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    if log_file is not None:
        whole = logging.FileHandler(log_file, encoding="utf-8")
        whole.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(whole)
    logging.captureWarnings(True)


async def serve(store: Store, settings: Settings, servers: Servers | None = None) -> int:
    """Speak ACP on this process's stdin/stdout until the client closes them (or SIGTERM)."""
    reader, writer = await protocol_stdio()
    agent = IoAgent(store, settings, servers)
    transport = LineTransport(reader, writer)
    transport.on_cancel = agent.cancel_request
    transport.on_initialize = agent.saw_initialize
    # IoAgent answers the methods io-tui offers; the SDK answers the rest "method not found".
    # session/close, resume and fork are in the SDK's unstable set; session/delete it does
    # not route at all, so it is routed here.
    connection = AgentSideConnection(
        cast("Agent", agent), transport, listening=False, use_unstable_protocol=True
    )
    route_delete(connection, agent)
    listening = asyncio.ensure_future(connection.listen())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, listening.cancel)
    try:
        await listening
    except asyncio.CancelledError:
        log.info("stopped by a signal")
    finally:
        await agent.aclose()
        await connection.close()
    return 0


def route_delete(connection: AgentSideConnection, agent: IoAgent) -> None:
    """Route ``session/delete`` (in the protocol's schema, not yet in the SDK's router)."""
    from acp.meta import AGENT_METHODS
    from acp.router import MessageRouter
    from acp.schema import DeleteSessionRequest

    router = cast("MessageRouter", connection._conn._handler)  # no public way to add a route
    router.route_request(
        AGENT_METHODS["session_delete"], DeleteSessionRequest, agent, "delete_session"
    )
