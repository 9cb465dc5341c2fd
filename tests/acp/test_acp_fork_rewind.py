"""``session/fork`` and ``_io-tui/rewind`` end to end: the protocol package's own client over a
real ``io-tui acp`` process, the scripted provider, real files and the store checked after."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp_client import EditorClient, io_tui_acp

from io_tui.core import Store

TURNS = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "n\n"}}]},
    {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["rm", "README.md"]}}]},
    {"text": "Done."},
]
APPROVE = ["approve"] * 4


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


async def test_fork_a_session_from_a_step_into_another_directory(
    workspace, write_script, store_path, tmp_path
):
    script = write_script(TURNS)
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    before_step_2 = None
    client = EditorClient(answers=APPROVE)
    async with io_tui_acp(client, *args) as conn:
        offered = await conn.initialize(protocol_version=1)
        assert offered.agent_capabilities.session_capabilities.fork is not None
        session = await conn.new_session(cwd=str(workspace))
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        assert answer.field_meta["io-tui"]["outcome"] == "finished"
        parent = answer.field_meta["io-tui"]["run_id"]
        assert not (workspace / "README.md").exists()

        elsewhere = tmp_path / "fork"
        forked = await conn.fork_session(
            session_id=session.session_id,
            cwd=str(elsewhere),
            **{"io-tui": {"step": 2}},  # the client sends its keywords as _meta
        )
        meta = forked.field_meta["io-tui"]
        assert (meta["forked_from"], meta["step"], meta["cwd"]) == (parent, 2, str(elsewhere))
        before_step_2 = await asyncio.to_thread(files, elsewhere)
        answer = await conn.prompt(
            session_id=forked.session_id, prompt=[text_block("keep the README this time")]
        )
        assert answer.field_meta["io-tui"]["run_id"] == meta["run_id"]

    assert before_step_2 is not None
    assert "notes.txt" in before_step_2 and "README.md" in before_step_2  # as before step 2
    assert (workspace / "notes.txt").exists() and not (workspace / "README.md").exists()
    async with await Store.open(store_path) as store:
        row = await store.runs.get(meta["run_id"])
        assert row is not None and row.forked_from == parent and row.fork_step == 2
        assert row.origin["session"] == forked.session_id
        sent = await store.trace.answered_request(meta["run_id"], 2)
        recorded = await store.trace.answered_request(parent, 2)
    assert sent is not None and recorded is not None
    assert sent.messages[: len(recorded.messages)] == recorded.messages  # the recorded bytes
    assert sent.messages[-1]["content"].endswith("keep the README this time")


async def test_rewind_a_sessions_files_refuse_a_hand_edit_then_undo(
    workspace, write_script, store_path
):
    script = write_script(TURNS)
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient(answers=APPROVE)
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        sid = session.session_id

        planned = await conn.ext_method(
            "io-tui/rewind", {"sessionId": sid, "step": 1, "dryRun": True}
        )
        assert {c["path"] for c in planned["plan"]["changes"]} == {"notes.txt", "README.md"}
        assert (workspace / "notes.txt").exists()  # a dry run changes nothing

        await asyncio.to_thread((workspace / "notes.txt").write_text, "by hand\n")
        with pytest.raises(RequestError) as refused:
            await conn.ext_method("io-tui/rewind", {"sessionId": sid, "step": 1})
        assert "changed after run 1's last checkpoint" in refused.value.data["details"]
        assert refused.value.data["files"] == ["notes.txt"]
        assert (workspace / "notes.txt").read_text() == "by hand\n"

        done = await conn.ext_method(
            "io-tui/rewind", {"sessionId": sid, "step": 1, "overwrite": ["notes.txt"]}
        )
        assert done["result"]["deleted"] == ["notes.txt"]
        assert (workspace / "README.md").read_text() == "# demo\n"
        assert not (workspace / "notes.txt").exists()

        await conn.ext_method("io-tui/rewind", {"sessionId": sid, "undo": True})
        assert (workspace / "notes.txt").read_text() == "by hand\n"
        assert not (workspace / "README.md").exists()

        with pytest.raises(RequestError) as bad:
            await conn.ext_method("io-tui/rewind", {"sessionId": sid})
        assert "say the step" in bad.value.data["details"]
    async with await Store.open(store_path) as store:
        kinds = [e.kind for e in await store.trace.events(1)]
    assert kinds.count("rewound") == 2
