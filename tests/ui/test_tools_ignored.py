"""A server whose chat template drops the tool schemas (issue 29 item 7): a run started from the
new-run dialog against a llama.cpp-like server on 127.0.0.1 whose ``/props`` says so, and the
transcript and the inspector say that the model did not receive the tools."""

from __future__ import annotations

from pathlib import Path

from replay_server import ReplayServer, json_reply, sse_reply
from textual.widgets import Input, Static

from io_tui.config import Settings
from io_tui.ui.app import create_app
from io_tui.ui.screens.inspector import InspectorScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.transcript import Transcript

from .test_new_run import local_only, open_dialog, until  # noqa: F401 (a fixture)

WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire" / "openai_chat"
NO_TOOLS = {
    "default_generation_settings": {"n_ctx": 4096},
    "chat_template_caps": {"supports_tools": False},
}


async def test_the_transcript_and_the_inspector_say_the_model_did_not_receive_the_tools(
    tmp_path,
    local_only,  # noqa: F811
) -> None:
    server = ReplayServer()
    server.props = NO_TOOLS
    await server.start()
    server.add(json_reply(200, {"object": "list", "data": [{"id": "smollm2"}]}))
    server.add(sse_reply((WIRE / "text_plain.sse").read_bytes(), chunk_size=64))
    settings = Settings(provider="llamacpp", base_url=server.base_url + "/v1")
    app = create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")
    try:
        async with app.run_test(size=(140, 44)) as pilot:
            dialog = await open_dialog(pilot)
            await until(pilot, lambda: dialog.model.value == "smollm2", "the model listed")
            dialog.query_one("#task", Input).value = "say hello"
            dialog.query_one("#workspace", Input).value = str(tmp_path)
            await pilot.press("ctrl+s")
            await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
            await wait_until_idle(pilot)
            transcript = app.screen.query_one(Transcript)
            await until(pilot, lambda: 1 in transcript.steps, "step 1 shown")
            shown = transcript.text_of(1)
            assert "⚠ the model did not receive the tools: the server's chat template" in shown
            assert isinstance(app.screen, MainScreen)
            app.screen.select_run(1, 1)
            await pilot.pause(0.1)
            await pilot.press("i")
            await until(pilot, lambda: isinstance(app.screen, InspectorScreen), "inspector")
            inspector = app.screen
            summary = inspector.query_one("#summary", Static)
            await until(pilot, lambda: "did not receive" in str(summary.render()), "its line")
            assert "the server's chat template drops the tool schemas" in str(summary.render())
    finally:
        await server.stop()
