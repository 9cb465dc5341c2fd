"""The session's lifecycle through the protocol package's own client and a real ``io-tui acp``:
``session/resume``, ``fork``, ``close`` (revoking the rules remembered for its runs only),
``delete``, a prompt cancelled by ``$/cancel_request``, the usage of every request and of the
turn, and a compaction as a timeline entry (a draft); the store checked after, as the cockpit
reads it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import RequestError, text_block
from acp_client import CAPABILITIES, EditorClient, io_tui_acp

from io_tui.core import Act, Store

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


def said(text: str, prompt: int, completion: int) -> dict[str, object]:
    return {"text": text, "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


async def test_resume_fork_close_and_delete(workspace, write_script, store_path):
    script = write_script([said("One.", 120, 7), said("Two.", 150, 5), said("Forked.", 160, 3)])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient()
    async with io_tui_acp(client, *args) as conn:
        hello = await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        offered = hello.agent_capabilities.session_capabilities
        assert offered.resume and offered.close and offered.delete and offered.fork
        session = (await conn.new_session(cwd=str(workspace))).session_id
        first = await conn.prompt(session_id=session, prompt=[text_block("count")])
        first_run = first.field_meta["io-tui"]["run_id"]
        # the turn's usage at its end (a draft of the protocol), and one usage_update per request
        assert (first.usage.input_tokens, first.usage.output_tokens) == (120, 7)
        assert first.usage.total_tokens == 127
        (usage,) = client.of_kind("usage_update")
        assert usage.used == 120 and usage.size >= 120
        assert usage.field_meta["io-tui"]["run_id"] == first_run

        # approvals only for the session: a rule remembered for its run (scope run) goes with
        # it on close; one for the workspace stays
        async with await Store.open(store_path) as store:
            for_run = await store.rules.add(
                act=Act.EXEC, pattern="make *", scope="run", workspace=None, run_id=first_run
            )
            for_workspace = await store.rules.add(
                act=Act.EXEC, pattern="ls", scope="workspace", workspace=str(workspace),
                run_id=first_run,
            )  # fmt: skip
        closed = await conn.close_session(session_id=session)
        assert closed.field_meta["io-tui"]["revoked_rules"] == [for_run]
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session, prompt=[text_block("more")])
        assert "unknown session" in refused.value.data["details"]

        # resumed: no replay (the client shows the history), and a prompt follows up its run
        before = len(client.updates)
        await conn.resume_session(session_id=session, cwd=str(workspace))
        assert len(client.updates) == before
        second = await conn.prompt(session_id=session, prompt=[text_block("again")])
        second_run = second.field_meta["io-tui"]["run_id"]

        # forked: a new session whose run is a fork of the last run at its last step (its
        # first request that step's, as recorded); the original's runs unchanged
        fork = (await conn.fork_session(session_id=session, cwd=str(workspace))).session_id
        assert fork != session
        forked = await conn.prompt(session_id=fork, prompt=[text_block("branch off")])
        forked_run = forked.field_meta["io-tui"]["run_id"]
        listed = {s.session_id for s in (await conn.list_sessions()).sessions}
        assert {session, fork} <= listed

        # deleted: no longer listed or loadable; its runs stay in the store, untied
        await conn._conn.send_request("session/delete", {"sessionId": session})
        listed = {s.session_id for s in (await conn.list_sessions()).sessions}
        assert session not in listed and fork in listed
        with pytest.raises(RequestError):
            await conn.load_session(session_id=session, cwd=str(workspace))
        with pytest.raises(RequestError):
            await conn._conn.send_request("session/delete", {"sessionId": "io-tui-nosuch"})

    async with await Store.open(store_path) as store:
        rows = {r.id: r for r in await store.runs.all()}
        assert rows[second_run].seed_run_id == first_run
        assert rows[forked_run].forked_from == second_run
        assert rows[forked_run].origin["session"] == fork
        assert rows[first_run].origin["session"] is None  # untied by the delete, still there
        rules = {r.id: r for r in await store.rules.list(include_revoked=True)}
        assert rules[for_run].revoked_at is not None
        assert rules[for_workspace].revoked_at is None


async def test_a_prompt_cancelled_by_cancel_request(workspace, write_script, store_path):
    """``$/cancel_request`` for the prompt's request defers its open ask, as
    ``session/cancel`` does; the answer's ``_meta`` says how the run stands."""
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed now."}])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient(answers=["hold"])
    sent: dict[str, object] = {}

    def watch(event) -> None:
        message = event.message
        if message.get("method") == "session/prompt" and "id" in message:
            sent["id"] = message["id"]

    async with io_tui_acp(client, *args) as conn:
        conn._conn.add_observer(watch)
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
        )
        await client.asked.wait()
        await conn._conn.send_notification("$/cancel_request", {"requestId": sent["id"]})
        async with asyncio.timeout(60):
            answer = await prompt
        assert client.release is not None
        client.release.set_result("cancel")

    assert answer.stop_reason == "cancelled"
    meta = answer.field_meta["io-tui"]
    assert (meta["status"], meta["outcome"], meta["error"]) == ("paused", "awaiting_approval", None)
    async with await Store.open(store_path) as store:
        (pending,) = await store.approvals.pending()
        assert pending.request.run_id == meta["run_id"]


def read(path: str, offset: int) -> dict[str, Any]:
    args = {"path": path, "offset": offset, "limit": 10}
    return {"tool_calls": [{"name": "read_file", "arguments": args}]}


async def test_a_compaction_is_a_timeline_entry_for_a_client_that_opted_in(
    workspace, write_script, store_path, monkeypatch
):
    """The session-compaction draft: a client that sent ``clientCapabilities.session
    .compaction`` (which the SDK's model does not carry yet, so it is sent raw here) gets a
    ``compaction_update`` per summary of the prompt's run, ``completed``, with the summary the
    store kept; one that did not gets none."""
    for i in range(12):
        body = "".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(120))
        (workspace / f"m{i}.py").write_text(body)
    turns = [read(f"m{i % 12}.py", 1 + 10 * (i // 12)) for i in range(60)]
    script = write_script([*turns, {"text": "done"}])
    monkeypatch.setenv("IO_TUI_CONTEXT_MAX_TOKENS", "8000")
    args = ("--provider", f"scripted:{script}", "--store", str(store_path), "--max-steps", "100")
    seen: dict[str, list[dict[str, Any]]] = {"opted": [], "not": []}

    for which in ("opted", "not"):

        def watch(event, into=seen[which]) -> None:
            params = event.message.get("params") or {}
            update = params.get("update") if isinstance(params, dict) else None
            if isinstance(update, dict) and update.get("sessionUpdate") == "compaction_update":
                into.append(update)

        async with io_tui_acp(EditorClient(), *args) as conn:
            conn._conn.add_observer(watch)
            if which == "opted":
                offered = {**CAPABILITIES.model_dump(by_alias=True, exclude_none=True),
                           "session": {"compaction": {}}}  # fmt: skip
                await conn._conn.send_request(
                    "initialize", {"protocolVersion": 1, "clientCapabilities": offered}
                )
            session = await conn.new_session(cwd=str(workspace))
            answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("look")])
            assert answer.stop_reason == "end_turn"
            run_id = answer.field_meta["io-tui"]["run_id"]

    async with await Store.open(store_path) as store:
        summaries = await store.runs.summaries(run_id)
    assert summaries, "the run compacted"
    assert not seen["not"]
    assert [u["status"] for u in seen["opted"]] == ["completed"] * len(seen["opted"])
    assert seen["opted"], "a compaction_update for the client that opted in"
    assert len(seen["opted"]) == len(summaries)  # one per summary (each run compacts alike)
    first = seen["opted"][0]
    through = first["_meta"]["io-tui"]["through_step"]
    assert first["compactionId"].endswith(f":{through}")
    assert first["summary"][0]["text"].strip()


async def test_closing_a_session_mid_prompt_hands_its_run_back(workspace, write_script, store_path):
    """``session/close`` while a prompt waits on an ask: the prompt answers ``cancelled``, the
    run is handed back (``interrupted``, the ask still pending), and a resume goes on with it."""
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed now."}])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient(answers=["hold", "approve"])
    async with io_tui_acp(client, *args) as conn:
        session = (await conn.new_session(cwd=str(workspace))).session_id
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session, prompt=[text_block("fix it")])
        )
        await client.asked.wait()
        await conn.close_session(session_id=session)
        async with asyncio.timeout(60):
            answer = await prompt
        assert client.release is not None
        client.release.set_result("cancel")
        assert answer.stop_reason == "cancelled"
        meta = answer.field_meta["io-tui"]
        assert (meta["status"], meta["error"]) == ("interrupted", None)
        async with await Store.open(store_path) as store:
            (pending,) = await store.approvals.pending()
            assert pending.request.run_id == meta["run_id"]

        await conn.resume_session(session_id=session, cwd=str(workspace))
        again = await conn.prompt(session_id=session, prompt=[text_block("go on")])
    assert again.field_meta["io-tui"]["run_id"] == meta["run_id"]  # the same run, resumed
    assert again.field_meta["io-tui"]["outcome"] == "finished"
    assert (workspace / "src" / "app.py").read_text().endswith("return x\n")
