"""A tiny MCP server for tests, built on the SDK's MCPServer.

In process: ``build_server()``. As a stdio subprocess: ``python mcp_test_server.py [MODE]``, where
MODE is ``serve`` (default), ``exit-at-start`` (prints to stderr and exits 3 before speaking MCP)
``hang-at-start`` (never answers the handshake), ``gated`` (starts serving once the file named by
``IO_TUI_MCP_TEST_GATE`` exists; exits 3 at that point instead if the file says ``exit``) or
``offers`` (serves prompts and a resource too: ``with_offers``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from mcp import MCPError
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

HANGING_VAR = "IO_TUI_MCP_TEST_HANGING"  # a file ``hang`` creates once it is called
GATE_VAR = "IO_TUI_MCP_TEST_GATE"  # the file a ``gated`` server waits for before it serves

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def build_server() -> MCPServer:
    server = MCPServer("io-tui-test")

    @server.tool(description="Echo the message back.")
    def echo(message: str) -> str:
        return f"echo: {message}"

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Weather as structured content.")
    def weather(city: str) -> dict[str, object]:
        return {"city": city, "temperature": 21, "sky": "clear"}

    @server.tool(description="A text file, as server-filesystem sends one: text and structured.")
    def read_text(size: int) -> CallToolResult:
        text = "".join(f"line {n}\n" for n in range(size // 10))[:size]
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content={"content": text}
        )

    @server.tool(name="tiny.image", description="A one-pixel PNG and a caption.")
    def tiny_image():  # type: ignore[no-untyped-def]  # unannotated: content blocks as returned
        return ["a pixel:", Image(data=PNG_1PX, format="png")]

    @server.tool(description="Always fails with the given reason.")
    def fail(reason: str = "it broke") -> str:
        raise ToolError(reason)

    @server.tool(description="The server's process id and an environment variable.")
    def info(var: str = "IO_TUI_TEST_VAR") -> str:
        return f"pid={os.getpid()} {var}={os.environ.get(var, '')}"

    @server.tool(description="Answer with a JSON-RPC error: the code and message given.")
    def reject(message: str, code: int = -32050) -> str:
        raise MCPError(code, message)

    @server.tool(description="Exit the server process abruptly, mid-call.")
    def crash(last_words: str = "about to crash: simulated fault") -> str:
        sys.stderr.write(f"{last_words}\n")
        sys.stderr.flush()
        os._exit(7)

    @server.tool(description="Report progress 1/3, wait for the file ``gate``, then 3/3.")
    async def stepped(gate: str, ctx: Context) -> str:
        await ctx.report_progress(1, 3, "warming up")
        # another process (the test) makes the file: there is no event to wait on
        while not await asyncio.to_thread(Path(gate).exists):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        await ctx.report_progress(3, 3, "done")
        return "stepped"

    @server.tool(description="Never answer.")
    async def hang(seconds: float = 3600) -> str:
        if hanging := os.environ.get(HANGING_VAR):
            await asyncio.to_thread(Path(hanging).touch)  # the test's sign: the call is in flight
        await asyncio.sleep(seconds)
        return "woke up"

    return server


def with_offers(server: MCPServer) -> MCPServer:
    """``server`` with prompts (``greet``; ``review`` needs a file; ``stall`` never answers)
    and one resource (``test://note``), for the operator's browsing."""

    @server.prompt(description="Greet the operator.")
    def greet() -> str:
        return "Say hello to the operator, briefly."

    @server.prompt(description="Review one file.")
    def review(file: str) -> str:
        return f"Review {file} for bugs."

    @server.prompt(description="Never answer (a hung server).")
    async def stall(seconds: str) -> str:
        await asyncio.sleep(float(seconds))
        return "woke up"

    @server.resource("test://note", name="note", mime_type="text/plain", description="A note.")
    def note() -> str:
        return "a note from the test server"

    return server


def main(mode: str) -> None:
    if mode == "exit-at-start":
        sys.stderr.write("fatal: missing API token for the test service\n")
        sys.exit(3)
    if mode == "hang-at-start":
        time.sleep(3600)
    if mode == "gated":
        gate = Path(os.environ[GATE_VAR])
        while not gate.exists():
            time.sleep(0.02)
        if gate.read_text().strip() == "exit":
            sys.stderr.write("gate said exit\n")
            sys.exit(3)
    server = build_server()
    (with_offers(server) if mode == "offers" else server).run()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "serve")
