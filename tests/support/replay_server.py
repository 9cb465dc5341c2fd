"""A real HTTP/1.1 server on 127.0.0.1 that answers each request with the next scripted reply.

It exists to exercise what a mock transport cannot: bytes arriving in small pieces over a real
socket, keep-alive reuse, connections cut mid-body, dropped before a response, or left hanging.
Replies are consumed in order across all connections; every request is recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["respond", "cut", "eof", "hang", "drop"]


@dataclass
class Reply:
    """One scripted answer.

    ``respond``: a full response (chunked when ``sse``), connection kept alive.
    ``cut``: a chunked body stopped after ``cut_at`` bytes, then the socket closed.
    ``eof``: a close-delimited body (no length, no chunking) stopped after ``cut_at`` bytes.
    ``hang``: read the request, never answer. ``drop``: read the request, close at once.
    """

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    sse: bool = True
    action: Action = "respond"
    cut_at: int = 0
    chunk_size: int = 48
    delay_s: float = 0.001


def sse_reply(body: bytes, **kw: Any) -> Reply:
    return Reply(body=body, **kw)


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(body=json.dumps(payload).encode(), status=status, headers=headers or {}, sse=False)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    connection: int
    raw: bytes = b""  # the body as it came, byte for byte


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error", 529: "Overloaded"}  # fmt: skip


class ReplayServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Seen] = []
        # llama.cpp's ``GET /props``, asked once by an openai-compatible provider whose window is
        # unknown: answered from ``props`` (404 when None), outside the scripted replies
        self.props: dict[str, Any] | None = None
        self.props_asked = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._connections = 0
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._connections += 1
        connection = self._connections
        try:
            while await self._one(reader, writer, connection):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _one(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: int
    ) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        if not head:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        if method == "GET" and path == "/props":
            self.props_asked += 1
            found = self.props is not None
            await self._answer(writer, json_reply(200 if found else 404, self.props or {}))
            return True
        self.requests.append(
            Seen(method, path, headers, json.loads(raw) if raw else None, connection, raw)
        )
        reply = self.replies.popleft()
        if reply.action == "hang":
            await asyncio.Event().wait()
        if reply.action == "drop":
            return False
        await self._answer(writer, reply)
        return reply.action == "respond"

    async def _answer(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        reason = _REASONS.get(reply.status, "Status")
        head = [f"HTTP/1.1 {reply.status} {reason}"]
        content_type = "text/event-stream" if reply.sse else "application/json"
        head.append(f"Content-Type: {content_type}")
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        body = reply.body
        if reply.action == "eof":
            head.append("Connection: close")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            for piece in _pieces(body[: reply.cut_at], reply.chunk_size):
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(reply.delay_s)
            return
        if not reply.sse:
            head.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            await writer.drain()
            return
        head.append("Transfer-Encoding: chunked")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        sent = body[: reply.cut_at] if reply.action == "cut" else body
        for piece in _pieces(sent, reply.chunk_size):
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
            await asyncio.sleep(reply.delay_s)
        if reply.action == "respond":
            writer.write(b"0\r\n\r\n")
            await writer.drain()


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
