"""The protocol's stdio: JSON-RPC messages, one per line, and nothing else on stdout.

``protocol_stdio`` takes the process's stdin and stdout for the protocol alone: their file
descriptors are duplicated for it, then descriptor 0 reads ``/dev/null`` and 1 writes to stderr,
so a stray ``print`` or a child process that inherits them can neither write into the stream nor
read from it. ``LineTransport`` answers what is not JSON-RPC itself, as JSON-RPC says: a line
that is not JSON gets a parse error (-32700), one that is not a request, notification or
response object an invalid-request error (-32600), each with ``id: null`` unless the message
had a usable one, and the stream goes on.

A client's ``$/cancel_request`` (the protocol's request cancellation) names a request it sent;
the transport knows which requests are open, so it hands the cancelled one (method and params)
to ``on_cancel`` and the agent stops that work as it would for ``session/cancel``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

log = logging.getLogger("io_tui.acp")

LINE_LIMIT = 50 * 1024 * 1024  # the SDK's own default: images and embedded files ride in prompts
CANCEL_REQUEST = "$/cancel_request"


class LineTransport:
    """An ``acp`` message transport over newline-delimited JSON: lines from ``reader``, each
    message written whole to ``output`` (a binary file, written off the event loop)."""

    def __init__(self, reader: asyncio.StreamReader, output: BinaryIO) -> None:
        self._reader = reader
        self._output = output
        self._lock = asyncio.Lock()
        self._closed = False
        self._open: dict[Any, str] = {}  # requests received and not yet answered: id → method
        self._params: dict[Any, Any] = {}  # their params, for a cancellation
        self._answered = asyncio.Event()
        # a request the client cancelled: its method and params
        self.on_cancel: Callable[[str, Any], None] | None = None
        self.on_initialize: Callable[[Any], None] | None = None  # its params, as sent

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the client's stream is closed")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            await asyncio.to_thread(_write, self._output, data.encode("utf-8"))
        if "method" not in message and self._open.pop(message.get("id"), None) is not None:
            self._params.pop(message.get("id"), None)
            self._answered.set()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message, or None at the end of the stream; what is not one is
        answered with its error here."""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
                if not line.strip():
                    await self._drained()
                    return None
            except asyncio.LimitOverrunError:
                await self._skip_long_line()
                continue
            if not line.strip():
                continue
            message = await self._checked(line)
            if message is None:
                continue
            if message.get("method") == CANCEL_REQUEST and "id" not in message:
                self._cancelled(message.get("params"))
                continue
            if "method" in message and "id" in message:
                self._open[message["id"]] = message["method"]
                self._params[message["id"]] = message.get("params")
                if message["method"] == "initialize" and self.on_initialize is not None:
                    self.on_initialize(message.get("params"))
            return message

    def _cancelled(self, params: Any) -> None:
        ident = params.get("requestId") if isinstance(params, dict) else None
        method = self._open.get(ident)
        if method is None:  # answered already, or never sent: nothing to stop
            log.info("%s for request %r, not open: ignored", CANCEL_REQUEST, ident)
            return
        log.info("%s: request %r (%s)", CANCEL_REQUEST, ident, method)
        if self.on_cancel is not None:
            self.on_cancel(method, self._params.get(ident))

    async def _drained(self) -> None:
        """At the end of input: wait until every request but a prompt was answered (a client
        may close its side after its last request and still read the answer; a prompt's turn
        is cancelled with the connection)."""
        while any(method != "session/prompt" for method in self._open.values()):
            self._answered.clear()
            await self._answered.wait()

    async def _checked(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            log.warning("not JSON, answered with a parse error: %s", exc)
            await self._error(None, -32700, "Parse error", f"the line is not JSON: {exc}")
            return None
        problem = _shape_problem(message)
        if problem is None:
            return message
        log.warning("not a JSON-RPC message, answered with an invalid request error: %s", problem)
        ident = message.get("id") if isinstance(message, dict) else None
        if not isinstance(ident, (str, int)) or isinstance(ident, bool):
            ident = None
        await self._error(ident, -32600, "Invalid request", problem)
        return None

    async def _skip_long_line(self) -> None:
        """Drop a line longer than the limit, answering it as unreadable."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                break
        await self._error(None, -32700, "Parse error", f"a line longer than {LINE_LIMIT:,} bytes")

    async def _error(self, ident: str | int | None, code: int, message: str, details: str) -> None:
        error = {"code": code, "message": message, "data": {"details": details}}
        await self.send({"jsonrpc": "2.0", "id": ident, "error": error})

    async def close(self) -> None:
        self._closed = True


def _write(output: BinaryIO, data: bytes) -> None:
    output.write(data)
    output.flush()


def _shape_problem(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response (None: it is)."""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'a message says "jsonrpc": "2.0"'
    ident = message.get("id")
    if "id" in message and (
        isinstance(ident, bool) or not isinstance(ident, (str, int, type(None)))
    ):
        return "an id is a string, a number or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "a method is a string"
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return "params are an object or an array"
        return None
    if "id" not in message or ("result" not in message and "error" not in message):
        return "a message is a request (method, id), a notification (method) or a response"
    return None


async def protocol_stdio() -> tuple[asyncio.StreamReader, BinaryIO]:
    """The process's own stdin as a stream of lines, and its stdout, which from now on carry
    the protocol only (descriptors 0 and 1 are pointed at ``/dev/null`` and stderr). Read by a
    thread, so a pipe, a file or a terminal all serve."""
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # print() and friends: the log, never the protocol
    reader = asyncio.StreamReader(limit=LINE_LIMIT)

    def feed() -> None:
        try:
            while chunk := protocol_in.read(65_536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=feed, name="io-tui acp stdin", daemon=True).start()
    return reader, protocol_out
