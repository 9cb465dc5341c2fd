"""The new-run dialog through the app: presets with their live status, a real OpenAI-compatible
server on 127.0.0.1 listing its models and then answering the run, errors kept in the dialog,
and pictures at 80×24 and 160×48."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from replay_server import ReplayServer, json_reply, sse_reply
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static

from io_tui.config import Settings
from io_tui.core import build_trace
from io_tui.core.providers.presets import ProbeResult
from io_tui.ui.app import create_app
from io_tui.ui.screens import new_run
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.new_run import SCRIPTED_DEMO, NewRunScreen
from io_tui.ui.testing import freeze, prepare_demo_workspace, wait_until_idle

from .conftest import SNAPSHOT_WORKSPACE

WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire" / "openai_chat"
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_COMPATIBLE_API_KEY")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture
async def server() -> AsyncIterator[ReplayServer]:
    srv = ReplayServer()
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
def local_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Presets whose default server is not the test's answer as an unreachable one would, so
    the test never knocks on another program's port."""
    real = new_run.probe_models

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused (test)", request=request)

    async def probe(name: str, *, base_url: str | None = None, **kw: object) -> ProbeResult:
        if base_url and base_url.startswith("http://127.0.0.1:"):
            return await real(name, base_url=base_url, **kw)  # type: ignore[arg-type]
        return await real(name, base_url=base_url, transport=httpx.MockTransport(refuse), **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(new_run, "probe_models", probe)


def models_reply(*names: str):
    return json_reply(
        200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
    )


async def open_dialog(pilot: Pilot[object]) -> NewRunScreen:
    await pilot.press("ctrl+n")
    for _ in range(40):
        await pilot.pause(0.05)
        if isinstance(pilot.app.screen, NewRunScreen):
            break
    dialog = pilot.app.screen
    assert isinstance(dialog, NewRunScreen)
    return dialog


async def until(pilot: Pilot[object], condition, what: str, tries: int = 600) -> None:
    for _ in range(tries):
        if condition():
            return
        await pilot.pause(0.05)
    screen = pilot.app.screen
    shown = (
        str(screen.query_one("#error", Static).render()) if isinstance(screen, NewRunScreen) else ""
    )
    raise AssertionError(f"never happened: {what} (error line: {shown!r})")


async def test_default_without_a_configured_provider_starts_the_scripted_demo(
    make_app, local_only
) -> None:
    app = make_app(demo=False)
    workspace = prepare_demo_workspace(app.store_path.parent / "textstats")
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        assert dialog.provider.value == SCRIPTED_DEMO
        assert "no model provider" in str(dialog.status.render())
        assert dialog.base_url.disabled and dialog.model.disabled
        dialog.query_one("#workspace", Input).value = str(workspace)
        await pilot.press(*"fix the failing test", "ctrl+s")  # the task has the focus
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await wait_until_idle(pilot)
        row = await app.store.runs.get(1)
        assert row is not None and row.goal == "fix the failing test"
        assert row.provider["kind"] == "scripted" and row.status == "finished"


async def test_a_local_server_lists_its_models_and_runs_the_chosen_one(
    tmp_path, server: ReplayServer, local_only
) -> None:
    server.add(models_reply("qwen3-8b", "llama-3.2-3b"))
    server.add(sse_reply((WIRE / "text_plain.sse").read_bytes(), chunk_size=64))
    settings = Settings(provider="openai-compatible", base_url=server.base_url + "/v1")
    app = create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        assert dialog.provider.value == "openai-compatible"
        assert dialog.base_url.value == server.base_url + "/v1"
        await until(pilot, lambda: dialog.model.value == "qwen3-8b", "the first model chosen")
        assert "2 model(s)" in str(dialog.status.render())
        label = dict((v, str(p)) for p, v in dialog.provider._options)["openai-compatible"]
        assert label.startswith("✓ ") and "2 models" in label
        dialog.models.value = "llama-3.2-3b"  # the picker fills the free-text field
        await pilot.pause(0.05)
        assert dialog.model.value == "llama-3.2-3b"
        dialog.query_one("#task", Input).value = "say hello"
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        await pilot.click("#start")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await wait_until_idle(pilot)
        row = await app.store.runs.get(1)
        assert row is not None and row.status == "finished"
        assert row.provider["model"] == "llama-3.2-3b"
        assert row.provider["base_url"] == server.base_url + "/v1"
        # what a resume rebuilds, recorded in the app's own loop too (``[ui] harness = inline``)
        assert row.origin is not None and row.origin["settings"]["model"] == "llama-3.2-3b"
        [listing, completion] = server.requests
        assert (listing.method, listing.path) == ("GET", "/v1/models")
        assert (completion.method, completion.path) == ("POST", "/v1/chat/completions")
        assert completion.body["model"] == "llama-3.2-3b"


async def test_the_output_limit_and_the_window_set_in_the_dialog_reach_the_request(
    tmp_path, server: ReplayServer, local_only
) -> None:
    """The dialog's "Output limit" and "Window" are the CLI's --max-output-tokens and
    --context-window: the request asks for that answer, its trace records that window from the
    config, and a window with no room beside the answer is refused in the dialog."""
    server.add(models_reply("qwen3-8b"))
    server.add(sse_reply((WIRE / "text_plain.sse").read_bytes(), chunk_size=64))
    settings = Settings(provider="openai-compatible", base_url=server.base_url + "/v1")
    app = create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        await until(pilot, lambda: dialog.model.value == "qwen3-8b", "the model listed")
        dialog.query_one("#task", Input).value = "say hello"
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        dialog.query_one("#max-output", Input).value = "700"
        dialog.query_one("#context-window", Input).value = "600"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "no room beside" in str(dialog.error.render()), "refused")
        refused = str(dialog.error.render())
        assert "(Window)" in refused and "lower the Output limit" in refused
        assert "--" not in refused and "max_output_tokens" not in refused
        assert dialog.query_one("#context-window", Input).has_focus
        dialog.query_one("#context-window", Input).value = "8192"
        await pilot.click("#start")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await wait_until_idle(pilot)
        row = await app.store.runs.get(1)
        assert row is not None and row.status == "finished"
        completion = server.requests[-1]
        assert completion.body["max_tokens"] == 700
        [request] = (await build_trace(app.store, 1))["requests"]
        limits = request["limits"]
        assert (limits["window_tokens"], limits["window_source"]) == (8192, "config")
        assert limits["max_output_tokens"] == 700


async def test_an_output_limit_the_servers_window_cannot_hold_is_refused_on_its_field(
    tmp_path, server: ReplayServer, local_only
) -> None:
    """A llama.cpp server on 127.0.0.1 with a 4,096-token window (its ``/props``): an Output
    limit of 8,192 is refused before the run starts, on its own field, naming the field and
    the value that fits; emptied, the run starts and its request asks for a limit fitted to
    the window (issue 29 item 6)."""
    server.props = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
    server.add(models_reply("smollm2"))
    server.add(sse_reply((WIRE / "text_plain.sse").read_bytes(), chunk_size=64))
    settings = Settings(provider="llamacpp", base_url=server.base_url + "/v1")
    app = create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        await until(pilot, lambda: dialog.model.value == "smollm2", "the model listed")
        dialog.query_one("#task", Input).value = "say hello"
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        limit = dialog.query_one("#max-output", Input)
        limit.value = "8192"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "do not fit" in str(dialog.error.render()), "refused")
        line = str(dialog.error.render())
        assert "Output limit: 8,192 tokens do not fit the model's window of 4,096" in line
        assert "max_output_tokens" not in line and "--max" not in line  # the dialog's words
        fits = int(line.split("; ")[1].split(" fits")[0].replace(",", ""))
        assert 256 <= fits < 2048 and limit.has_focus and app.runs == {}
        limit.value = ""
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await wait_until_idle(pilot)
        row = await app.store.runs.get(1)
        assert row is not None and row.status == "finished"
        [request] = (await build_trace(app.store, 1))["requests"]
        asked = server.requests[-1].body["max_tokens"]
        assert request["limits"]["max_output_tokens"] == asked < 2048  # fitted to 4,096
        assert request["limits"]["window_source"] == "server"


async def test_the_dialog_opens_with_what_the_last_run_was_started_with(
    tmp_path, server: ReplayServer, local_only
) -> None:
    """After a run started from the dialog, the dialog opens again (and after a restart) with
    its provider, base URL, model, limits and workspace, not the config's defaults (issue 29
    item 10)."""
    server.add(models_reply("qwen3-8b"))
    server.add(sse_reply((WIRE / "text_plain.sse").read_bytes(), chunk_size=64))
    workspace = tmp_path / "project"
    workspace.mkdir()
    app = create_app(Settings(), tmp_path / "s.db", poll_interval=None, harness="inline")
    typed = {
        "#workspace": str(workspace),
        "#base-url": server.base_url + "/v1",
        "#max-steps": "7",
        "#token-budget": "90000",
        "#context-max": "5000",
        "#max-output": "700",
        "#context-window": "8192",
    }
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        assert dialog.provider.value == SCRIPTED_DEMO  # nothing kept yet: the config's
        dialog.provider.value = "openai-compatible"
        await pilot.pause(0.05)
        for field, value in typed.items():
            dialog.query_one(field, Input).value = value
        await until(pilot, lambda: dialog.model.value == "qwen3-8b", "the model listed")
        dialog.query_one("#task", Input).value = "say hello"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await wait_until_idle(pilot)
        assert (await app.store.runs.get(1)).status == "finished"  # type: ignore[union-attr]
        again = await open_dialog(pilot)
        assert again.provider.value == "openai-compatible" and again.model.value == "qwen3-8b"
        for field, value in typed.items():
            assert again.query_one(field, Input).value == value, field
        assert again.query_one("#task", Input).value == ""  # a new task each time
    restarted = create_app(Settings(), tmp_path / "s.db", poll_interval=None, harness="inline")
    async with restarted.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        assert dialog.provider.value == "openai-compatible"
        assert dialog.query_one("#max-output", Input).value == "700"
        assert dialog.query_one("#workspace", Input).value == str(workspace)


def typed(*keys: str) -> list[events.Key]:
    """Keys as a terminal sends them: named keys, or each character of a text."""
    out = []
    for key in keys:
        if key in ("ctrl+n", "ctrl+s", "tab", "backspace"):
            out.append(events.Key(key, "\t" if key == "tab" else None))
        else:
            out += [events.Key(_key_name(c), c) for c in key]
    return out


def _key_name(character: str) -> str:
    return {"/": "slash", " ": "space", "-": "minus", ".": "full_stop"}.get(character, character)


async def test_keys_typed_right_after_ctrl_n_reach_the_task_then_the_next_field_in_order(
    make_app, tmp_path, local_only
) -> None:
    """ctrl+n and what follows arrive before the dialog has mounted (all of them are in the
    app's queue at once, as a fast typist's are): the text goes to the Task, the tab moves to
    the Workspace, whose text is replaced, in order; nothing is lost, nothing reaches the main
    screen, and keys typed once the dialog is ready are not held (issue 29 item 5)."""
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for key in typed("ctrl+n", "fix the flaky test", "tab", str(tmp_path), "backspace"):
            app.post_message(key)
        await until(pilot, lambda: isinstance(app.screen, NewRunScreen), "the dialog open")
        dialog = app.screen
        workspace = dialog.query_one("#workspace", Input)
        await until(pilot, lambda: workspace.value == str(tmp_path)[:-1], "the workspace typed")
        assert dialog.query_one("#task", Input).value == "fix the flaky test"
        assert dialog.focused is workspace and app.typeahead.held is None
        await pilot.press(*str(tmp_path)[-1])  # typed now: at the cursor, nothing selected
        assert workspace.value == str(tmp_path)
        assert app.screen_stack[0].query_one("#prompt", Input).value == ""  # nothing below


async def test_ctrl_s_typed_right_after_the_task_starts_the_run(make_app, local_only) -> None:
    """A fast typist's ctrl+n, task and ctrl+s, all queued before the dialog is ready: the
    dialog's own key starts the run once the task is typed (it was held, handed back and lost
    short of the app, which looks the dialog's bindings up)."""
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for key in typed("ctrl+n", "say hi", "ctrl+s"):
            app.post_message(key)
        # the dialog may open and close between two looks: the run it started is the proof
        started = lambda: 1 in app.runs and isinstance(app.screen, MainScreen)  # noqa: E731
        await until(pilot, started, "the run started and the dialog closed")
        await wait_until_idle(pilot)
        row = await app.store.runs.get(1)
        assert row is not None and row.goal == "say hi"


def as_met(dialog: NewRunScreen) -> dict[str, object]:
    """What a user meets in the dialog: each field's value, cursor, placeholder and whether it
    takes keys, each picker's choice, the rows shown (its classes), its lines, the focus."""
    met: dict[str, object] = {
        f"#{i.id}": (i.value, i.cursor_position, i.placeholder, i.disabled)
        for i in dialog.query(Input)
    }
    met.update({f"#{s.id}": s.value for s in dialog.query(Select)})
    met["classes"] = sorted(dialog.classes)
    met["status"] = str(dialog.status.render())
    met["error"] = str(dialog.error.render())
    met["focused"] = dialog.focused.id if dialog.focused else None
    met["scrolled"] = dialog.query_one("#fields").scroll_y
    return met


async def test_a_dialog_opened_again_is_the_one_a_first_opening_shows(make_app, local_only) -> None:
    """The dialog is kept when it closes (composing it anew cost every ctrl+n 0.2–0.4 s): opened
    again after a user changed every kind of field and met an error, it is what a first opening
    shows, and keys typed right after ctrl+n still reach its Task."""
    app = make_app(demo=False)
    async with app.run_test(size=(80, 24)) as pilot:
        first = await open_dialog(pilot)
        fresh = as_met(first)
        first.task_input.value = "half a thought"
        first.run_on.value = "queue"
        first.query_one("#labels", Input).value = "gpu"
        first.provider.value = "openai-compatible"
        await pilot.pause(0.05)
        first.model.value = "some-model"
        first.query_one("#context-max", Input).value = "10"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "at least" in str(first.error.render()), "the error shown")
        assert as_met(first) != fresh
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        again = await open_dialog(pilot)
        await wait_until_idle(pilot)
        assert again is first and as_met(again) == fresh
        await pilot.press("ctrl+n")  # open already: not opened twice
        assert app.screen_stack[-2:] == [app.screen_stack[0], first]
        app.action_new_run("from the palette")  # a task chosen meanwhile goes into it
        assert first.task_input.value == "from the palette"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        for key in typed("ctrl+n", "fix it", "tab", "x"):
            app.post_message(key)
        await until(pilot, lambda: first.workspace_input.value.endswith("x"), "x typed")
        assert first.task_input.value == "fix it" and app.typeahead.held is None


async def test_a_kept_dialog_follows_a_theme_chosen_while_it_was_closed(
    make_app, tmp_path, local_only
) -> None:
    """Kept out of the screen stack, the dialog still takes the theme switched to meanwhile:
    opened again, its colours are a dialog's composed in that theme."""
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        kept = await open_dialog(pilot)
        dark = kept.query_one("#dialog").styles.background
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await pilot.press("ctrl+t")
        await pilot.pause(0.1)
        assert await open_dialog(pilot) is kept
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        fresh = NewRunScreen(app.store, app.settings, tmp_path)
        await app.push_screen(fresh)
        await pilot.pause(0.1)
        colours = [
            (w.styles.background, w.styles.color)
            for w in (fresh.query_one("#dialog"), fresh.task_input)
        ]
        assert colours[0][0] != dark
        assert colours == [
            (w.styles.background, w.styles.color)
            for w in (kept.query_one("#dialog"), kept.task_input)
        ]


async def test_a_start_cancelled_while_it_is_checked_starts_nothing(
    make_app, local_only, monkeypatch
) -> None:
    """escape while Start is being checked closes the dialog; the check that ends after it
    neither starts the run nor touches the screens (the kept dialog is out of the stack), nor
    does one answered only after the next opening began."""
    real = new_run.prepare_run

    async def slow(*args: object, **kwargs: object) -> object:
        await asyncio.sleep(0.3)
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(new_run, "prepare_run", slow)
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        dialog.task_input.value = "say hi"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "checking" in str(dialog.error.render()), "checking")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await pilot.pause(0.6)  # the check would have ended
        assert isinstance(app.screen, MainScreen) and len(app.screen_stack) == 1
        assert app.runs == {} and await app.store.runs.latest(5) == []
        again = await open_dialog(pilot)
        assert again is dialog and not dialog.checking
        # an answer of the last opening's check, handled only after this opening began
        dialog.task_input.value = "say hi"
        dialog.post_message(dialog.Checked(dialog.opening - 1, dialog.request(), None))
        dialog.post_message(dialog.PromptFilled(dialog.opening - 1, "a prompt's text"))
        await pilot.pause(0.2)
        assert app.screen is dialog and app.runs == {}
        assert dialog.task_input.value == "say hi"


async def test_every_field_is_reachable_at_80x24(make_app, local_only) -> None:
    """The fields scroll inside the dialog: the last ones, below the fold at 80×24, come into
    sight when focused (they were cut off, out of reach)."""
    app = make_app(demo=False)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_dialog(pilot)
        for field in ("#max-steps", "#token-budget", "#context-max", "#max-output", "#context-window"):  # fmt: skip
            dialog.query_one(field, Input).focus()
            await pilot.pause(0.1)
            region = dialog.query_one(field, Input).region
            assert region.height == 1 and 0 < region.y < 23, (field, region)


async def test_another_base_url_is_probed_for_its_models(
    tmp_path, server: ReplayServer, local_only
) -> None:
    other = ReplayServer()
    await other.start()
    server.add(models_reply("a-model"))
    other.add(models_reply("b-model", "c-model"))
    settings = Settings(provider="openai-compatible", base_url=server.base_url + "/v1")
    app = create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            dialog = await open_dialog(pilot)
            await until(pilot, lambda: dialog.model.value == "a-model", "the first listing")
            dialog.model.value = ""
            dialog.base_url.value = other.base_url + "/v1"
            await until(pilot, lambda: dialog.model.value == "b-model", "the second listing")
            assert [v for _, v in dialog.models._options if v is not Select.NULL] == [
                "b-model",
                "c-model",
            ]
            assert len(server.requests) == len(other.requests) == 1
    finally:
        await other.stop()


async def test_errors_stay_in_the_dialog_with_the_inputs_kept(
    make_app, tmp_path, local_only
) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        await pilot.click("#start")
        await pilot.pause(0.1)
        assert "the task is empty" in str(dialog.error.render())
        assert dialog.query_one("#task", Input).has_focus
        dialog.query_one("#task", Input).value = "count lines"
        dialog.query_one("#workspace", Input).value = str(tmp_path / "missing")
        await pilot.press("ctrl+s")  # a click within 0.2 s of the last is the same press
        await pilot.pause(0.1)
        assert "no such directory" in str(dialog.error.render())
        (tmp_path / "a.txt").write_text("a file")
        dialog.query_one("#workspace", Input).value = str(tmp_path / "a.txt")
        await pilot.press("ctrl+s")
        await pilot.pause(0.1)
        assert f"not a directory: {tmp_path / 'a.txt'}" in str(dialog.error.render())
        dialog.query_one("#workspace", Input).value = ""  # never the app's own directory
        await pilot.press("ctrl+s")
        await pilot.pause(0.1)
        assert "the workspace is empty" in str(dialog.error.render())
        assert dialog.query_one("#workspace", Input).has_focus
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        dialog.provider.value = "openai"  # no key in this environment
        await pilot.pause(0.05)
        assert dialog.base_url.value == "https://api.openai.com/v1"
        dialog.model.value = "gpt-4o"
        await pilot.press("ctrl+s")  # a click within 0.2 s of the last is the same press
        await until(pilot, lambda: "OPENAI_API_KEY" in str(dialog.error.render()), "key error")
        dialog.provider.value = "openai-compatible"  # needs a model and a base URL
        await pilot.pause(0.05)
        assert dialog.base_url.value == dialog.model.value == ""
        await pilot.press("ctrl+s")  # a click within 0.2 s of the last is the same press
        await until(pilot, lambda: "needs a model" in str(dialog.error.render()), "model error")
        assert "needs a model: fill in Model" in str(dialog.error.render())  # its own words
        assert dialog.model.has_focus
        dialog.model.value = "qwen3"
        await pilot.press("ctrl+s")  # a click within 0.2 s of the last is the same press
        await until(pilot, lambda: "needs a Base URL" in str(dialog.error.render()), "base URL")
        assert "--" not in str(dialog.error.render())  # no CLI flag in the dialog's words
        dialog.query_one("#max-steps", Input).value = "0"
        await pilot.press("ctrl+s")  # a click within 0.2 s of the last is the same press
        await pilot.pause(0.1)
        assert "Max steps must be at least 1" in str(dialog.error.render())
        assert app.screen is dialog
        assert dialog.query_one("#task", Input).value == "count lines"
        assert dialog.query_one("#workspace", Input).value == str(tmp_path)
        assert app.runs == {}


async def test_a_workspace_mcp_json_that_does_not_load_is_reported_in_the_dialog(
    make_app, tmp_path, write_script, local_only
) -> None:
    """The dialog checks the run as it will start, MCP files too: a bad ``.mcp.json`` keeps it
    open on the workspace with the CLI's line, rather than failing the run once it closed."""
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"x": {"command": 7}}}')
    app = make_app(demo=False)
    app.settings.provider = f"scripted:{write_script([{'text': 'done'}])}"
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        dialog.query_one("#task", Input).value = "count lines"
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: ".mcp.json" in str(dialog.error.render()), "the MCP error")
        assert app.screen is dialog and dialog.query_one("#workspace", Input).has_focus
        assert app.runs == {}


async def test_an_unknown_provider_from_the_config_is_reported_in_the_dialog(
    tmp_path, local_only
) -> None:
    settings = Settings(provider="olama", model="qwen3")
    app = create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        assert dialog.provider.value == "olama"
        dialog.query_one("#task", Input).value = "x"
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "unknown provider" in str(dialog.error.render()), "error")
        assert "ollama" in str(dialog.error.render())  # the known names are listed
        assert app.screen is dialog and dialog.query_one("#task", Input).value == "x"


# -- pictures ------------------------------------------------------------------------------------

ANSWERS = {
    "ollama": ProbeResult(True, "3 model(s) at http://localhost:11434/v1: qwen3:8b, …",
                          ("qwen3:8b", "llama3.2:3b", "gemma3:4b")),
    "llamacpp": ProbeResult(False, "cannot reach http://localhost:8080/v1/models: refused"),
}  # fmt: skip


def picture_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    async def probe(name: str, *, base_url: str | None = None, **kw: object) -> ProbeResult:
        return ANSWERS.get(name) or ProbeResult(False, f"provider {name!r} needs an API key")

    monkeypatch.setattr(new_run, "probe_models", probe)
    settings = Settings(provider="ollama", model="qwen3:8b", ui={"theme": "io-dark"})  # type: ignore[arg-type]
    return create_app(settings, tmp_path / "s.db", poll_interval=None, harness="inline")


async def _dialog_open(pilot: Pilot[object]) -> None:
    dialog = await open_dialog(pilot)
    dialog.query_one("#workspace", Input).value = str(SNAPSHOT_WORKSPACE)
    dialog.query_one("#task", Input).value = "add a --verbose flag"
    await until(pilot, lambda: "3 model(s)" in str(dialog.status.render()), "the probe")
    dialog.query_one("#task", Input).focus()
    freeze(pilot.app)
    await pilot.pause(0.1)


@pytest.mark.fixed_paths  # the picture shows SNAPSHOT_WORKSPACE
def test_new_run_dialog_80x24(snap_compare, tmp_path, monkeypatch) -> None:
    """80×24: every field reachable, Start and Cancel in view; ollama answers with 3 models."""
    app = picture_app(tmp_path, monkeypatch)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_dialog_open)


@pytest.mark.fixed_paths  # the picture shows SNAPSHOT_WORKSPACE
def test_new_run_dialog_160x48(snap_compare, tmp_path, monkeypatch) -> None:
    """160×48: the whole dialog, the model picker under the model field."""
    app = picture_app(tmp_path, monkeypatch)
    assert snap_compare(app, terminal_size=(160, 48), run_before=_dialog_open)


def test_provider_list_shows_each_presets_status(snap_compare, tmp_path, monkeypatch) -> None:
    """The provider picker open: ✓ for the server that answered, · for the others."""
    app = picture_app(tmp_path, monkeypatch)

    async def run_before(pilot: Pilot[object]) -> None:
        await _dialog_open(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, NewRunScreen)
        dialog.provider.focus()
        await pilot.press("enter")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_request_json_round_trips_the_base_url(tmp_path) -> None:
    from io_tui.core.run.request import NewRunRequest

    request = NewRunRequest("t", tmp_path, "ollama", "qwen3", "http://127.0.0.1:9/v1")
    assert NewRunRequest.from_json(json.loads(json.dumps(request.to_json()))) == request
    limits = NewRunRequest("t", tmp_path, max_output_tokens=700, context_window=8192)
    assert NewRunRequest.from_json(json.loads(json.dumps(limits.to_json()))) == limits
    # a request queued before the limits were kept still reads
    old = {k: v for k, v in limits.to_json().items() if k not in ("max_output_tokens", "context_window")}  # fmt: skip
    assert NewRunRequest.from_json(old).context_window is None
