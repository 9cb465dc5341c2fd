"""MCP in the TUI, through the harness worker process (the app's default) and the settings' real
stdio servers: a call's progress notifications drawn live on it in the transcript; the resource
browser (F6) and the prompts in the palette over server-everything; each server started once,
in the worker, whatever the operator browses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_support import (
    TEST_SERVER,
    server_everything_entry,
)
from textual.widgets import Input, Static
from waits import until

from io_tui.config import Settings
from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.run.request import NewRunRequest
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.resources import ResourcesScreen
from io_tui.ui.state import CallProgress
from io_tui.ui.testing import prepare_demo_workspace, wait_until_idle
from io_tui.ui.widgets.call_progress import progress_line
from io_tui.ui.widgets.table import Table
from io_tui.ui.widgets.transcript import Transcript

SIZE = (120, 36)


def mcp_app(tmp_path: Path, **servers: dict[str, object]) -> IoApp:
    settings = Settings(mcp={"servers": servers})  # type: ignore[arg-type]
    return create_app(settings, tmp_path / "store.db", poll_interval=None, approver=ApproveAll())


def parse_servers(**servers: dict[str, object]) -> dict[str, object]:
    return dict(Settings(mcp={"servers": servers}).mcp.servers)  # type: ignore[arg-type]


def server_entry(*args: str) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(TEST_SERVER), *args]}


def script(path: Path, *turns: dict[str, object]) -> str:
    path.write_text(json.dumps({"turns": [*turns, {"text": "done"}]}))
    return f"scripted:{path}"


async def test_a_calls_progress_is_shown_live_on_it_in_the_transcript(tmp_path: Path) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    gate = tmp_path / "gate"
    call = {"name": "mcp__t__stepped", "arguments": {"gate": str(gate)}}
    provider = script(tmp_path / "s.json", {"tool_calls": [call]})
    app = mcp_app(tmp_path, t=server_entry())
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("step", workspace, provider))
        await until(lambda: 1 in app.runs, "the run", 120)  # the worker starts its servers first
        app.screen.select_run(1)  # type: ignore[attr-defined]
        transcript = app.screen.query_one(Transcript)
        shown = "↻ mcp__t__stepped ████░░░░░░░░ 1/3 · warming up"
        await until(lambda: shown in transcript.live_text, "the call's progress", 120)
        gate.touch()  # the server finishes the call
        await until(lambda: app.runs[1].status == "finished", "the run to finish", 120)
        await wait_until_idle(pilot)
        assert "↻" not in transcript.live_text
        assert "stepped" in transcript.text_of(1)


def test_progress_lines_read_plainly() -> None:
    assert progress_line(CallProgress("mcp__s__build", 2, 4, "linking")) == (
        "↻ mcp__s__build ██████░░░░░░ 2/4 · linking"
    )
    assert progress_line(CallProgress("mcp__s__scan", 2.5)) == "↻ mcp__s__scan 2.5"
    assert progress_line(CallProgress("x", 9, 3)).startswith("↻ x ████████████ 9/3")


async def test_f6_browses_the_servers_resources_and_reads_one(tmp_path: Path) -> None:
    entry = server_everything_entry()
    app = mcp_app(tmp_path, everything={"command": "node", "args": [str(entry), "stdio"]})
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: getattr(app.screen, "ready", False), "the main screen")
        await pilot.press("f6")
        await until(lambda: isinstance(app.screen, ResourcesScreen), "the resources screen")
        screen = app.screen
        assert isinstance(screen, ResourcesScreen)
        await until(lambda: screen.rows, "the resources", 120)
        kinds = {row.kind for row in screen.rows}
        assert kinds == {"resource", "template"}
        uris = [row.uri for row in screen.rows]
        assert "demo://resource/dynamic/text/{resourceId}" in uris
        features = next(i for i, row in enumerate(screen.rows) if row.uri.endswith("/features.md"))
        table = screen.query_one(Table)
        table.move_cursor(row=features)
        await pilot.press("enter")
        await until(
            lambda: "[resource demo://resource/static/document/features.md" in screen.shown,
            "the resource's text",
            30,
        )
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, ResourcesScreen), "back to the runs")
        await pilot.press("f6")  # the worker's server, still up: listed again
        await until(lambda: isinstance(app.screen, ResourcesScreen), "the resources screen")
        again = app.screen
        assert isinstance(again, ResourcesScreen)
        await until(lambda: again.rows, "the resources again", 60)
        head = str(again.query_one("#resources-head", Static).render())
        assert head.startswith(f"MCP resources · {len(again.rows)} from 1 servers")


async def test_a_servers_prompt_in_the_palette_opens_the_new_run_dialog_with_its_text(
    tmp_path: Path,
) -> None:
    from io_tui.core import McpHub
    from io_tui.ui.screens.new_run import NewRunScreen

    server = {"command": "node", "args": [str(server_everything_entry()), "stdio"]}
    async with McpHub(parse_servers(everything=server)) as hub:
        expected = " ".join((await hub.prompt_text("everything", "simple-prompt", {})).split())
    app = mcp_app(tmp_path, everything=server)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: getattr(app.screen, "ready", False), "the main screen")
        await pilot.press("ctrl+p")
        await pilot.press(*"simple-prompt")
        palette = app.screen
        await until(
            lambda: any(
                "everything/simple-prompt" in str(option.prompt)
                for option in palette.query("CommandList").first().options
            ),
            "the prompt in the palette",
            60,
        )
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, NewRunScreen), "the new-run dialog")
        assert app.screen.query_one("#task", Input).value == expected


async def test_a_servers_sampling_request_is_asked_in_the_modal_before_the_model_answers(
    tmp_path: Path,
) -> None:
    """Through the worker: the tool call asks, then the server's sampling request asks with its
    messages; approved, the run's (scripted) model answers it and the server gets the text."""
    from io_tui.ui.screens.approval import ApprovalScreen

    workspace = prepare_demo_workspace(tmp_path / "ws")
    call = {
        "name": "mcp__everything__trigger-sampling-request",
        "arguments": {"prompt": "say hi", "maxTokens": 40},
    }
    provider = script(tmp_path / "s.json", {"tool_calls": [call]}, {"text": "Hi from the model"})
    server = {"command": "node", "args": [str(server_everything_entry()), "stdio"]}
    settings = Settings(mcp={"servers": {"everything": server}})  # type: ignore[arg-type]
    app = create_app(settings, tmp_path / "store.db", poll_interval=None)  # the app asks
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("sample", workspace, provider))
        asked: list[str] = []
        for _ in range(2):  # the tool call, then the server's sampling request
            await until(lambda: isinstance(app.screen, ApprovalScreen), "an approval", 120)
            modal = app.screen
            assert isinstance(modal, ApprovalScreen)
            asked.append(modal.request.target)
            if modal.request.target.endswith("__sampling"):
                assert "[user] Resource trigger-sampling-request context: say hi" in (
                    modal.request.content
                )
            await until(lambda m=modal: m.armed, "the modal to arm")
            await pilot.press("1")  # approve
            await until(lambda m=modal: app.screen is not m, "the modal to close")
        assert asked == ["mcp__everything__trigger-sampling-request", "mcp__everything__sampling"]
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", "the run", 120)
        await wait_until_idle(pilot)
        transcript = app.screen.query_one(Transcript)
        app.screen.select_run(1)  # type: ignore[attr-defined]
        await wait_until_idle(pilot)
        assert "asked: exec mcp__everything__sampling" in transcript.text_of(1)
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, 1)
    assert "Hi from the model" in trace["steps"][0]["observations"][0]["text"]


async def test_a_servers_form_is_filled_in_the_modal_and_sent(tmp_path: Path) -> None:
    """Through the worker: the tool call asks, then the server's elicitation asks with its form;
    approve opens the form (built from the schema, defaults filled), a missing required field
    is said and the form stays, and the filled form is what the server gets."""
    from textual.widgets import Checkbox, Static

    from io_tui.ui.screens.approval import ApprovalScreen
    from io_tui.ui.screens.elicit import ElicitScreen

    workspace = prepare_demo_workspace(tmp_path / "ws")
    call = {"name": "mcp__everything__trigger-elicitation-request", "arguments": {}}
    provider = script(tmp_path / "s.json", {"tool_calls": [call]})
    server = {"command": "node", "args": [str(server_everything_entry()), "stdio"]}
    settings = Settings(mcp={"servers": {"everything": server}})  # type: ignore[arg-type]
    app = create_app(settings, tmp_path / "store.db", poll_interval=None)  # the app asks
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("elicit", workspace, provider))
        for target in ("mcp__everything__trigger-elicitation-request", "elicitation"):
            await until(lambda: isinstance(app.screen, ApprovalScreen), "an approval", 120)
            modal = app.screen
            assert isinstance(modal, ApprovalScreen) and modal.request.target.endswith(target)
            await until(lambda m=modal: m.armed, "the modal to arm")
            await pilot.press("1")  # approve: the form opens for the elicitation
            if target == "elicitation":
                break
            await until(lambda m=modal: app.screen is not m, "the modal to close")
        await until(lambda: isinstance(app.screen, ElicitScreen), "the form")
        form = app.screen
        assert isinstance(form, ElicitScreen)
        assert form.query_one("#field-integer", Input).value == "42"  # the schema's default
        await pilot.press("ctrl+s")  # no name yet
        problems = form.query_one("#elicit-problems", Static)
        assert "'name' is a required property" in str(problems.render())
        assert app.screen is form
        form.query_one("#field-name", Input).value = "Ada Lovelace"
        form.query_one("#field-check", Checkbox).value = True
        await pilot.press("ctrl+s")
        await until(lambda: not isinstance(app.screen, (ElicitScreen, ApprovalScreen)), "closed")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", "the run", 120)
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, 1)
        (record,) = [
            r
            for r in await store.approvals.for_run(1)
            if r.request.target.endswith("__elicitation")
        ]
    text = trace["steps"][0]["observations"][0]["text"]
    assert "- Name: Ada Lovelace" in text and "- Agreed to terms: true" in text
    assert "- Favorite Integer: 42" in text
    assert record.performed is not None and record.performed["action"] == "accept"


async def test_the_new_run_dialog_offers_the_servers_prompts_with_their_arguments(
    tmp_path: Path,
) -> None:
    """The dialog lists the prompts of the worker's servers; a prompt without arguments fills the
    task at once, one that needs them shows the arguments field and fills the task once they
    are typed; opened again, the dialog has none of it left."""
    from textual.widgets import Select

    from io_tui.ui.screens.new_run import NewRunScreen, prompt_arguments

    app = mcp_app(
        tmp_path, everything={"command": "node", "args": [str(server_everything_entry()), "stdio"]}
    )
    async with app.run_test(size=SIZE):
        await until(lambda: getattr(app.screen, "ready", False), "the main screen")
        app.action_new_run()
        await until(lambda: isinstance(app.screen, NewRunScreen), "the new-run dialog")
        dialog = app.screen
        assert isinstance(dialog, NewRunScreen)
        await until(lambda: "everything/args-prompt" in dialog.prompts, "the prompts", 120)
        assert not dialog.has_class("-no-prompts")
        task = dialog.query_one("#task", Input)
        dialog.query_one("#prompt", Select).value = "everything/simple-prompt"
        await until(lambda: task.value == "This is a simple prompt without arguments.", "filled")
        assert dialog.has_class("-no-prompt-args")
        dialog.query_one("#prompt", Select).value = "everything/args-prompt"
        await until(lambda: not dialog.has_class("-no-prompt-args"), "the arguments field")
        args = dialog.query_one("#prompt-args", Input)
        assert args.placeholder == "city*=… state=…"
        await until(lambda: "the prompt needs city" in str(dialog.error.render()), "needs city")
        args.value = 'city="San Francisco" state=CA'
        await until(lambda: task.value == "What's weather in San Francisco, CA?", "the args' text")
        dialog.action_cancel()  # the dialog is kept: opened again, nothing of this is left
        await until(lambda: not isinstance(app.screen, NewRunScreen), "the dialog closed")
        app.action_new_run()
        await until(lambda: app.screen is dialog, "the same dialog open again")
        assert dialog.query_one("#prompt", Select).value is Select.NULL and task.value == ""
        assert (args.value, args.placeholder) == ("", "")
        assert dialog.has_class("-no-prompt-args")
        await until(lambda: "everything/args-prompt" in dialog.prompts, "listed again", 120)
    assert prompt_arguments('a=1 b="x y"') == {"a": "1", "b": "x y"}
    with pytest.raises(ValueError, match="name=value pairs, not 'oops'"):
        prompt_arguments("oops")


async def test_a_form_nobody_answers_is_cancelled_and_its_modal_goes(tmp_path: Path) -> None:
    """The worker stops waiting after the server's call_timeout_s and records the form as
    cancelled; the app's next inbox count sees it decided and takes the modal down (an answer
    now would reach nobody)."""
    from io_tui.ui.screens.approval import ApprovalScreen

    workspace = prepare_demo_workspace(tmp_path / "ws")
    call = {"name": "mcp__everything__trigger-elicitation-request", "arguments": {}}
    provider = script(tmp_path / "s.json", {"tool_calls": [call]})
    server = {"command": "node", "args": [str(server_everything_entry()), "stdio"],
              "call_timeout_s": 4}  # fmt: skip
    settings = Settings(mcp={"servers": {"everything": server}})  # type: ignore[arg-type]
    app = create_app(settings, tmp_path / "store.db", poll_interval=None)
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("elicit", workspace, provider))
        await until(lambda: isinstance(app.screen, ApprovalScreen), "the tool call's ask", 120)
        first = app.screen
        await until(lambda: first.armed, "the modal to arm")  # type: ignore[attr-defined]
        await pilot.press("1")
        await until(
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen is not first,
            "the form's ask",
            60,
        )
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        form_id = modal.request.id
        app.desk.refresh_count()
        await until(lambda: form_id in (app.desk.pending or ()), "the form counted pending")
        async with await Store.open(tmp_path / "store.db") as store:

            async def performed() -> bool:  # decided, then (a later write) what was done
                record = await store.approvals.get(form_id)
                return record is not None and record.performed is not None

            for _ in range(200):
                if await performed():
                    break
                await pilot.pause(0.1)
            record = await store.approvals.get(form_id)
        assert record is not None and record.performed is not None
        assert record.performed["action"] == "cancel"
        app.desk.refresh_count()
        await until(lambda: app.screen is not modal, "the modal to go")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", "the run", 120)


async def test_approving_a_form_in_the_inbox_opens_the_form(tmp_path: Path) -> None:
    """A server's form waiting in the inbox: its approve key opens the form over the request
    (an approval without a form would decline it)."""
    from approval_requests import approval_request, new_run

    from io_tui.core.authority.policy import Act
    from io_tui.ui.screens.approval import ApprovalScreen
    from io_tui.ui.screens.elicit import ElicitScreen
    from io_tui.ui.screens.inbox import InboxScreen

    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    async with await Store.open(tmp_path / "store.db") as store:
        run_id = await new_run(store, str(tmp_path))
        arguments = {"message": "Where?", "requested_schema": schema}
        await store.approvals.create(
            approval_request(
                Act.EXEC, "mcp__s__elicitation", tool="mcp__s__elicitation", run_id=run_id,
                arguments=arguments, content="MCP server 's' asks you to fill in a form: Where?",
            )
        )  # fmt: skip
    app = create_app(Settings(), tmp_path / "store.db", poll_interval=None)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: getattr(app.screen, "ready", False), "the main screen")
        app.action_inbox()
        await until(
            lambda: isinstance(app.screen, InboxScreen) and bool(app.screen.records), "the inbox"
        )
        await pilot.press("1")
        await until(lambda: isinstance(app.screen, ElicitScreen), "the form")
        assert isinstance(app.screen_stack[-2], ApprovalScreen)
        assert [f.name for f in app.screen.fields] == ["city"]  # type: ignore[attr-defined]
