"""The cockpit over an ACP session: while a real ``io-tui acp`` process asks its client, the TUI
on the same store shows the run asking and its ask in the inbox; a decision made there (as the
TUI's inbox or ``io-tui decide`` makes it) wins over the client's, the run finishes, and the
inspector shows its context manifest."""

from __future__ import annotations

import asyncio

from acp import text_block
from acp_client import EditorClient, io_tui_acp
from waits import until

from io_tui.core import Decision, Store, decide
from io_tui.ui.screens.inspector import InspectorScreen
from io_tui.ui.testing import wait_until_idle

from .conftest import SIZE

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


async def test_the_cockpit_watches_an_acp_session_and_decides_its_ask(
    make_app, workspace, write_script, tmp_path
) -> None:
    store_path = tmp_path / "store.db"
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed."}])
    client = EditorClient(answers=["hold"])  # the editor leaves its permission dialog open
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
        )
        await client.asked.wait()
        app = make_app(demo=False, store=store_path)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until_idle(pilot)
            assert app.runs[1].status == "asking"
            async with await Store.open(store_path) as store:
                (pending,) = await store.approvals.pending()  # what the inbox lists
                assert pending.request.target == "src/app.py"
                await decide(store, pending.request.id, Decision.approve(decided_by="cockpit"))
            answer = await prompt
            assert answer.stop_reason == "end_turn"
            assert client.release is not None
            client.release.set_result("cancel")  # the request the agent withdrew
            app.refresh_runs(None)
            await until(lambda: app.runs[1].status == "finished", "the app to see it finished")
            main = app.main_screen()
            assert main is not None
            main.select_run(1)
            await wait_until_idle(pilot)
            await pilot.press("i")
            await until(lambda: isinstance(app.screen, InspectorScreen), "the inspector")
            inspector = app.screen
            assert isinstance(inspector, InspectorScreen)
            await until(lambda: bool(inspector.rows), "the manifest's rows")
            assert "src/app.py" in {row.target for row in inspector.rows.values()}

    assert (workspace / "src" / "app.py").read_text() == "def parse(x):\n    return x\n"
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.for_run(1)
        assert record.decision is not None and record.decision.decided_by == "cockpit"
