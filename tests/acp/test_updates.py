"""Run events as ACP updates, for the events the end-to-end tests' scripted runs do not make: a
provider's retry, a sub-agent's text, a policy refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from io_tui.acp.session import Outbox, Session
from io_tui.acp.updates import UpdateSink
from io_tui.core import EventKind, RunEvent


class Collecting:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)


async def test_retries_sub_agents_and_refusals(tmp_path: Path) -> None:
    client = Collecting()
    session = Session("s", tmp_path, Outbox(client, "s"))  # type: ignore[arg-type]
    session.run_id = 1
    sink = UpdateSink(session, store=None)  # type: ignore[arg-type]
    sink.emit(RunEvent(1, 1, EventKind.REQUEST_RETRY, {"error": "HTTP 503", "delay_s": 1.5}))
    sink.emit(RunEvent(2, 1, EventKind.TEXT_DELTA, {"text": "child thinking"}))
    sink.emit(RunEvent(1, 1, EventKind.TEXT_DELTA, {"text": "parent says"}))
    refused = {"call_id": "c1", "act": "write", "target": ".env", "rule": ".env", "layer": "x"}
    sink.emit(RunEvent(1, 1, EventKind.TOOL_REFUSED, refused))  # its observation will say it
    await session.outbox.close()

    kinds = [
        (u.session_update, getattr(getattr(u, "content", None), "text", None))
        for u in client.updates
    ]
    assert kinds == [
        ("agent_thought_chunk", "[io-tui] HTTP 503; trying again in 1.5s\n"),
        ("agent_thought_chunk", "child thinking"),
        ("agent_message_chunk", "parent says"),
    ]
    assert len(client.updates) == 3  # a refusal is one update, sent with its observation


def test_prompt_blocks_name_files_by_their_workspace_path(tmp_path: Path) -> None:
    from acp import resource_link_block, text_block
    from acp.schema import EmbeddedResourceContentBlock, TextResourceContents

    from io_tui.acp.agent import prompt_text

    embedded = EmbeddedResourceContentBlock(
        type="resource",
        resource=TextResourceContents(uri=f"file://{tmp_path}/src/a%20b.py", text="x = 1"),
    )
    blocks = [
        text_block("look at"),
        resource_link_block("app.py", f"file://{tmp_path}/src/app.py"),
        resource_link_block("elsewhere", "file:///etc/hosts"),
        embedded,
    ]
    assert prompt_text(blocks, tmp_path) == (
        "look at\n[file: src/app.py]\n[file: /etc/hosts]\n[file: src/a b.py]\n```\nx = 1\n```"
    )
