"""The new-run dialog: task, workspace, where it runs (this machine or the queue, with the labels
a worker must serve), provider, base URL, model and budgets → ``NewRunRequest``; or "continue
from run N": a fresh run in that run's workspace whose first request carries its progress
ledger (the task may then stay empty).

Providers are the presets (``core.providers.presets``) plus the scripted demo, each labelled with
what its server answered to a model listing (``probe_models``, as ``io-tui providers`` does),
probed in workers when the dialog opens and again when the base URL changes. The models the
server lists fill a picker; the model field stays free text. Start builds the run the way the
harness will (``core.run.launch.prepare_run``: provider, policy, workspace, its MCP files) in a
worker, and closes only when that succeeds:
every error is shown in the dialog with what was typed kept. The fields scroll; the error line
and the buttons stay in view at any size.

The "MCP prompt" picker lists the prompts of the servers a run in the workspace typed gets (the
app's ``ServerPrompts``, asked of its run host, where the servers live), listed again when the
workspace changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static

from io_tui import demo
from io_tui.config import Settings
from io_tui.core import (
    PRESETS,
    OutputDoesNotFit,
    ProbeResult,
    Store,
    check_output_fit,
    prepare_run,
    probe_models,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.messages import NewRunRequest
from io_tui.ui.screens.new_run_fields import (
    BY_ID,
    FieldError,
    dialog_words,
    field_of,
    labels_of,
    prompt_arguments,
    shown,
)
from io_tui.ui.terminal_text import plain

if TYPE_CHECKING:
    from io_tui.ui.mcp_prompts import ServerPrompts

SCRIPTED_DEMO = f"scripted:{demo.SCRIPT}"
PROBE_TIMEOUT_S = 2.0
REPROBE_DELAY_S = 0.4  # seconds a base URL must stay unchanged before it is probed
MIN_CONTEXT = 256
NO_TASK = "what the agent should do"  # the Task's placeholder when no run is continued
CONTINUE_CHOICES = 500  # the newest runs offered under "continue from run N"
# where the run goes: driven by this app, or queued for an `io-tui worker` (docs/SCALE-OUT.md)
RUN_ON = [("this machine", "here"), ("the queue (a worker drives it)", "queue")]


@dataclass(frozen=True, slots=True)
class Choice:
    """One entry of the provider picker."""

    value: str  # what ``--provider`` takes: a preset name or ``scripted:FILE``
    summary: str

    @property
    def preset(self) -> bool:
        return self.value in PRESETS


def choices(settings: Settings) -> list[Choice]:
    """The presets, the scripted demo, and the config's provider if it is neither."""
    out = [Choice(name, preset.summary) for name, preset in PRESETS.items()]
    out.append(Choice(SCRIPTED_DEMO, "scripted demo: the bundled script, no model"))
    configured = settings.provider
    if configured != "scripted" and all(c.value != configured for c in out):
        summary = "scripted: answers from this file" if configured.startswith("scripted:") else ""
        out.append(Choice(configured, summary or "from the config"))
    return out


def default_provider(settings: Settings) -> str:
    """The config's provider; the scripted demo when it names none (bare ``scripted``)."""
    return SCRIPTED_DEMO if settings.provider == "scripted" else settings.provider


class NewRunScreen(ModalScreen[NewRunRequest | None]):
    CSS_PATH = "new_run.tcss"
    AUTO_FOCUS = "#task"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="new_run.cancel", tooltip="Close without starting"),
        Binding("ctrl+s", "start", "Start", id="new_run.start", tooltip="Start the run"),
    ]  # fmt: skip

    class Probed(Message):
        """A preset's server answered (or not) a model listing at ``base_url``."""

        def __init__(self, name: str, base_url: str, result: ProbeResult) -> None:
            super().__init__()
            self.name = name
            self.base_url = base_url
            self.result = result

    class RunsListed(Message):
        """The runs a new run can continue from, newest first: (label, run id, workspace)."""

        def __init__(self, runs: list[tuple[str, int, str]]) -> None:
            super().__init__()
            self.runs = runs

    class PromptsListed(Message):
        """The prompts (``PromptRow``) of the MCP servers a run in ``workspace`` gets, or why
        they could not be listed."""

        def __init__(self, workspace: Path, prompts: list[Any], problem: str | None) -> None:
            super().__init__()
            self.workspace = workspace
            self.prompts = prompts
            self.problem = problem

    class PromptFilled(Message):
        """A prompt's text for the task, or why it could not be had, for ``opening``."""

        def __init__(self, opening: int, text: str | None, problem: str | None = None) -> None:
            super().__init__()
            self.opening = opening
            self.text = text
            self.problem = problem

    class Checked(Message):
        """The request was built as the run would build it: ``error`` None means it starts;
        ``opening``: the dialog's opening it was asked in."""

        def __init__(self, opening: int, request: NewRunRequest, error: FieldError | None) -> None:
            super().__init__()
            self.opening = opening
            self.request = request
            self.error = error

    prompt_choice = query_one("#prompt", Select)
    prompt_args = query_one("#prompt-args", Input)
    task_input = query_one("#task", Input)
    workspace_input = query_one("#workspace", Input)
    continue_choice = query_one("#continue-from", Select)
    run_on = query_one("#run-on", Select)
    provider = query_one("#provider", Select)
    base_url = query_one("#base-url", Input)
    model = query_one("#model", Input)
    models = query_one("#models", Select)
    status = query_one("#status", Static)
    error = query_one("#error", Static)

    def __init__(
        self,
        store: Store,
        settings: Settings,
        workspace: Path,
        *,
        task: str = "",
        continue_from: int | None = None,
        prompts: ServerPrompts | None = None,
        prompt: str | None = None,
        last: Mapping[str, Any] | None = None,
    ) -> None:
        """``prompts``: where the servers' prompts come from (the app's, asked of its run host);
        ``prompt`` (``server/name``): the one chosen when the dialog opens (the palette's, for
        a prompt that needs arguments); ``last``: what the last run started here was started
        with (``ui_state``), over the settings."""
        self.server_prompts = prompts
        self.prompts: dict[str, Any] = {}  # "server/name" → PromptRow
        self.prompts_of: Path | None = None  # the workspace whose servers' prompts are listed
        self.prompts_asked: Path | None = None  # the workspace last asked for
        self.run_workspaces: dict[int, str] = {}
        self.store = store
        self.settings = settings
        self.choices = {c.value: c for c in choices(settings)}
        self.probes: dict[str, tuple[str, ProbeResult]] = {}  # preset → (base URL, answer)
        self.reopened = False  # ``reopen`` called: the next resume asks around again
        self.opening = 0  # how many times it was opened again: an earlier one's answers are late
        self._start_from(workspace, task, continue_from, prompt, last)
        # the classes its first provider gives it, set before it mounts: each class changed
        # on a mounted screen restyles every field (~0.1 s apiece on a busy machine)
        classes = "-no-prompts -no-prompt-args -no-models"  # until listed or probed
        scripted = self._chosen() not in PRESETS
        super().__init__(classes=f"{classes} -scripted" if scripted else classes)

    def _start_from(
        self,
        workspace: Path,
        task: str,
        continue_from: int | None,
        prompt: str | None,
        last: Mapping[str, Any] | None,
    ) -> None:
        """What an opening of the dialog starts from (``__init__``'s arguments)."""
        self.continue_from = continue_from
        self.initial_prompt = prompt
        self.initial_task = task
        self.last: Mapping[str, Any] = last or {}
        kept = Path(str(self.last.get("workspace", "")))
        self.workspace = kept if self.last.get("workspace") and kept.is_dir() else workspace
        if self.last.get("provider") not in self.choices:
            self.last = {}  # a provider no longer offered: the settings' values
        self.checking = False
        self.provider_shown: str | None = None  # the provider the fields are set for

    def _chosen(self) -> str:
        """The provider the dialog opens on: the last run's, else the config's."""
        return str(self.last.get("provider") or default_provider(self.settings))

    def _opening_values(self) -> dict[str, str]:
        """What each text field holds when the dialog opens."""
        s, last, chosen = self.settings, self.last, self._chosen()
        return {
            "prompt-args": "",
            "task": self.initial_task,
            "workspace": str(self.workspace),
            "labels": "",
            "base-url": self._base_url_for(chosen),
            "model": self._model_for(chosen),
            "max-steps": shown(last, "max_steps", s.max_steps),
            "token-budget": shown(last, "token_budget", s.token_budget),
            "context-max": shown(last, "context_max_tokens", s.context_max_tokens),
            "max-output": shown(last, "max_output_tokens", s.max_output_tokens),
            "context-window": shown(last, "context_window", s.context_window),
        }

    def compose(self) -> ComposeResult:
        chosen, value = self._chosen(), self._opening_values()
        with Vertical(id="dialog"):
            yield Static("New run", id="title")
            with VerticalScroll(id="fields", can_focus=False):
                yield _row("MCP prompt", Select[str]([], prompt="none: write the task", id="prompt", compact=True), id="prompt-row")  # fmt: skip
                yield _row("Arguments", Input(id="prompt-args", compact=True), id="prompt-args-row")  # fmt: skip
                yield _row("Task", Input(value["task"], placeholder=NO_TASK, id="task", compact=True))  # fmt: skip
                yield _row("Workspace", Input(value["workspace"], id="workspace", compact=True))
                yield _row("Continue", Select[int]([], prompt="no: a new task", id="continue-from", compact=True))  # fmt: skip
                yield _row("Run on", Select(RUN_ON, value="here", allow_blank=False, id="run-on", compact=True))  # fmt: skip
                yield _row("Labels", Input(placeholder="e.g. gpu, linux: a worker serving all of them takes it", id="labels", compact=True), id="labels-row")  # fmt: skip
                yield _row(
                    "Provider",
                    Select(
                        self._options(),
                        value=chosen,
                        allow_blank=False,
                        id="provider",
                        compact=True,
                    ),
                )
                # as ``_show_provider`` would set them: each change on a mounted field restyles it
                self.provider_shown = chosen
                no_server = chosen not in PRESETS
                yield _row("", Static(self._provider_note(chosen), id="status"), id="status-row")
                yield _row("Base URL", Input(value["base-url"], placeholder="http://host:port/v1", id="base-url", compact=True, disabled=no_server))  # fmt: skip
                yield _row("Model", Input(value["model"], placeholder="the model's name", id="model", compact=True, disabled=no_server))  # fmt: skip
                yield _row("", Select[str]([], prompt="models the server lists", id="models", compact=True), id="models-row")  # fmt: skip
                yield _row("Max steps", Input(value["max-steps"], type="integer", id="max-steps", compact=True))  # fmt: skip
                yield _row("Token budget", Input(value["token-budget"], type="integer", placeholder="none", id="token-budget", compact=True))  # fmt: skip
                yield _row("Context max", Input(value["context-max"], type="integer", id="context-max", compact=True))  # fmt: skip
                yield Horizontal(  # the CLI's --max-output-tokens and --context-window
                    Label("Output limit"),
                    Input(value["max-output"], type="integer", placeholder="fits the window", id="max-output", compact=True),
                    Label("Window", classes="second"),
                    Input(value["context-window"], type="integer", placeholder="the model's", id="context-window", compact=True),
                    classes="row",
                )  # fmt: skip
            with Vertical(id="foot"):
                yield Static("", id="error")
                with Horizontal(id="buttons"):
                    yield Button("Start", variant="primary", id="start", compact=True)
                    yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.set_focus(self.task_input)  # now: ``focus()`` would come later,
        # after the held keys, and take the cursor back from the field they tabbed to
        self.call_after_refresh(self._ready)  # drawn, the cursor in Task: keys may come
        self.call_after_refresh(self._ask_around)  # composed as its provider shows it

    def reopen(
        self,
        workspace: Path,
        *,
        task: str = "",
        continue_from: int | None = None,
        prompt: str | None = None,
        last: Mapping[str, Any] | None = None,
    ) -> None:
        """Set every field as a dialog composed with these arguments would be, before the app
        pushes this one again: composing its ~115 widgets anew costs a press 0.2–0.4 s. What the
        servers answered before is shown until they answer again."""
        self.workers.cancel_node(self)  # a prompt's text or a check for the last opening
        self._start_from(workspace, task, continue_from, prompt, last)
        chosen = self._chosen()
        with self.prevent(Input.Changed, Select.Changed):
            for field_id, value in self._opening_values().items():
                field = self.query_one(f"#{field_id}", Input)
                field.value = value
                field.cursor_position = len(value)  # where a composed field has it
            self.prompt_choice.clear()
            self.continue_choice.clear()
            self.run_on.value = "here"
            self.provider.value = chosen
        self.task_input.placeholder = NO_TASK
        self.prompt_args.placeholder = ""  # a prompt chosen last time named its arguments there
        self.error.update("")
        self.set_class(False, "-queue")
        self.set_class(True, "-no-prompt-args")
        self.provider_shown = chosen
        self._show_provider(chosen)
        self.query_one("#fields").scroll_home(animate=False)
        self.set_focus(self.task_input)
        self.reopened = True
        self.opening += 1

    def take(self, task: str, prompt: str | None) -> None:
        """A task or an MCP prompt chosen elsewhere (the palette) while the dialog is open."""
        if prompt in self.prompts:
            self.prompt_choice.value = prompt
        elif task:
            self.task_input.value = task

    def on_screen_resume(self) -> None:
        if self.reopened:  # not when a screen opened over it (help, the palette) closes
            self.reopened = False
            self.call_after_refresh(self._ready)
            self.call_after_refresh(self._ask_around)

    def _ask_around(self) -> None:
        """Once the dialog is drawn: probe the presets' servers, list the runs it may continue
        and the workspace's MCP prompts (their answers would otherwise hold its first frame)."""
        self.probe_all()
        self.list_runs()
        if self.server_prompts is not None:
            self.prompts_asked = self.workspace
            self.list_prompts(self.workspace, settle=False)

    def _ready(self) -> None:
        """The keys typed since ctrl+n, held by the app, are typed into the field that has the
        cursor (``ui.typeahead``)."""
        typeahead = getattr(self.app, "typeahead", None)
        if typeahead is not None and typeahead.held is not None:
            typeahead.release(self)

    def on_screen_suspend(self) -> None:
        typeahead = getattr(self.app, "typeahead", None)
        if typeahead is not None and typeahead.held is not None:
            typeahead.release()  # closed before it was ready: the keys go on to the app

    # -- the MCP servers' prompts --------------------------------------------------------------

    @work(group="prompts", exclusive=True, exit_on_error=False)
    async def list_prompts(self, workspace: Path, *, settle: bool = True) -> None:
        """The prompts of the servers a run in ``workspace`` gets (once typing settles)."""
        await asyncio.sleep(REPROBE_DELAY_S if settle else 0)
        assert self.server_prompts is not None
        try:
            prompts, problem = await self.server_prompts.rows(workspace), None
        except Exception as exc:  # a server that hangs: the host's ask timed out
            prompts, problem = [], f"MCP prompts not listed: {exc}"
        self.post_message(self.PromptsListed(workspace, prompts, problem))

    @on(Input.Changed, "#workspace")
    def _on_workspace_changed(self, event: Input.Changed) -> None:
        """Another workspace may have other servers (its ``.mcp.json``): list theirs."""
        if self.server_prompts is None or not event.value.strip():
            return
        workspace = Path(event.value.strip()).expanduser()
        if workspace != self.prompts_asked and workspace.is_dir():
            self.prompts_asked = workspace
            self.list_prompts(workspace)

    @on_answer(PromptsListed)
    def _on_prompts_listed(self, message: PromptsListed) -> None:
        self.prompts_of = message.workspace
        if message.problem is not None:
            self.error.update(Content.styled(plain(message.problem), "$text-muted"))
        self.prompts = {f"{p.server}/{p.name}": p for p in message.prompts}
        select = self.prompt_choice
        with self.prevent(Select.Changed):
            select.set_options([(key, key) for key in self.prompts])
        self.set_class(not self.prompts, "-no-prompts")
        if self.initial_prompt in self.prompts:
            select.value = self.initial_prompt

    @on(Select.Changed, "#prompt")
    def _on_prompt_chosen(self, event: Select.Changed) -> None:
        row = self.prompts.get(str(event.value)) if event.value is not Select.NULL else None
        args = self.prompt_args
        self.set_class(row is None or not row.arguments, "-no-prompt-args")
        if row is None:
            return
        args.value = ""
        args.placeholder = " ".join(
            f"{name}{'*' if required else ''}=…" for name, required, _ in row.arguments
        )
        self._fill_prompt()

    @on(Input.Changed, "#prompt-args")
    def _on_prompt_args_changed(self) -> None:
        self._fill_prompt()

    def _fill_prompt(self) -> None:
        """Fetch the chosen prompt's text with the arguments typed, once the required are."""
        row = self.prompts.get(str(self.prompt_choice.value))
        if row is None or self.server_prompts is None or self.prompts_of is None:
            return
        try:
            arguments = prompt_arguments(self._value("prompt-args"))
        except ValueError as exc:
            self.error.update(Content.styled(f"✗ {plain(str(exc))}", "$text-error"))
            return
        missing = [name for name in row.required if not arguments.get(name)]
        if missing:
            needs = ", ".join(missing)
            self.error.update(Content.styled(f"the prompt needs {needs}", "$text-muted"))
            return
        self.error.update("")
        self.fetch_prompt(self.prompts_of, row.server, row.name, arguments)

    @work(group="prompt-text", exclusive=True, exit_on_error=False)
    async def fetch_prompt(
        self, workspace: Path, server: str, name: str, arguments: dict[str, str]
    ) -> None:
        opening = self.opening
        await asyncio.sleep(REPROBE_DELAY_S if arguments else 0)  # typing settles first
        assert self.server_prompts is not None
        try:
            text = await self.server_prompts.text(workspace, server, name, arguments)
        except Exception as exc:
            self.post_message(self.PromptFilled(opening, None, f"the prompt failed: {exc}"))
            return
        self.post_message(self.PromptFilled(opening, text))

    @on_answer(PromptFilled)
    def _on_prompt_filled(self, message: PromptFilled) -> None:
        if message.opening != self.opening:
            return  # asked in an earlier opening: this one's task is not it
        if message.text is None:
            self.error.update(Content.styled(f"✗ {plain(message.problem or '')}", "$text-error"))
            return
        self.task_input.value = message.text

    # -- continuing from an earlier run --------------------------------------------------------

    @work(group="runs", exit_on_error=False)
    async def list_runs(self) -> None:
        rows = await self.store.runs.latest(CONTINUE_CHOICES)  # a store keeps every run
        ended = [r for r in rows if r.status not in ("running", "asking")]
        self.post_message(
            self.RunsListed(
                [
                    (f"run {r.id}: {plain(r.goal)[:48]} ({r.status})", r.id, r.workspace)
                    for r in ended
                ]
            )
        )

    @on_answer(RunsListed)
    def _on_runs_listed(self, message: RunsListed) -> None:
        self.run_workspaces = {run_id: workspace for _, run_id, workspace in message.runs}
        select = self.continue_choice
        with self.prevent(Select.Changed):
            select.set_options([(label, run_id) for label, run_id, _ in message.runs])
        if self.continue_from in self.run_workspaces:
            select.value = self.continue_from

    @on(Select.Changed, "#continue-from")
    def _on_continue_changed(self, event: Select.Changed) -> None:
        task = self.task_input
        if event.value is Select.NULL:
            task.placeholder = NO_TASK
            return
        run_id = int(str(event.value))
        self.workspace_input.value = self.run_workspaces.get(run_id, "")
        task.placeholder = f"empty: go on with run {run_id}'s objective"

    # -- providers and their servers -----------------------------------------------------------

    def _options(self) -> list[tuple[Content, str]]:
        return [(self._label(choice), value) for value, choice in self.choices.items()]

    def _label(self, choice: Choice) -> Content:
        if not choice.preset:
            name = "scripted demo" if choice.value == SCRIPTED_DEMO else choice.value
            return Content.assemble(("▸ ", "$text-muted"), name, ("  no model", "dim"))
        answer = self.probes.get(choice.value)
        if answer is None:
            mark, note = ("… ", "$text-muted"), "probing"
        elif answer[1].reachable:
            count = len(answer[1].models)
            mark, note = ("✓ ", "$text-success"), f"answers · {count} model{'s' * (count != 1)}"
        else:
            mark, note = ("· ", "$text-muted"), "not reachable" if _unreached(answer[1]) else "not set up"  # fmt: skip
        return Content.assemble(mark, f"{choice.value}  ", (note, "dim"))

    def _base_url_for(self, value: str) -> str:
        if value == self.last.get("provider") and self.last.get("base_url"):
            return str(self.last["base_url"])  # the last run's, started here
        if value == self.settings.provider and self.settings.base_url:
            return self.settings.base_url
        preset = PRESETS.get(value)
        return (preset.base_url or "") if preset else ""

    def _model_for(self, value: str) -> str:
        if value == self.last.get("provider") and self.last.get("model"):
            return str(self.last["model"])
        return (self.settings.model or "") if value == self.settings.provider else ""

    @work(group="probe", exit_on_error=False)
    async def probe_all(self) -> None:
        """Every preset at its URL, at once; each answer is posted as it comes."""

        async def one(name: str, url: str) -> None:
            result = await probe_models(name, base_url=url or None, timeout_s=PROBE_TIMEOUT_S)
            self.post_message(self.Probed(name, url, result))

        await asyncio.gather(*(one(name, self._base_url_for(name)) for name in PRESETS))

    @work(group="probe-url", exclusive=True, exit_on_error=False)
    async def probe_url(self, name: str, url: str) -> None:
        """The selected preset at a URL the operator typed (the newest one wins)."""
        await asyncio.sleep(REPROBE_DELAY_S)
        result = await probe_models(name, base_url=url or None, timeout_s=PROBE_TIMEOUT_S)
        self.post_message(self.Probed(name, url, result))

    @on_answer(Probed)
    def _on_probed(self, message: Probed) -> None:
        name = message.name
        self.probes[name] = (message.base_url, message.result)
        value = self.provider.value
        with self.prevent(Select.Changed):
            self.provider.set_options(self._options())
            self.provider.value = value
        if name == value and message.base_url == self.base_url.value.strip():
            self._show_probe(message.result)

    @on(Select.Changed, "#provider")
    def _on_provider_changed(self, event: Select.Changed) -> None:
        value = str(event.value)
        if value == self.provider_shown:
            return  # the picker announcing the value it was composed with, as it mounts
        self.provider_shown = value
        self.base_url.value = self._base_url_for(value)
        self.model.value = self._model_for(value)
        self._show_provider(value)

    @on(Input.Changed, "#base-url")
    def _on_base_url_changed(self, event: Input.Changed) -> None:
        name, url = str(self.provider.value), event.value.strip()
        if name not in PRESETS:
            return
        answer = self.probes.get(name)
        if answer is not None and answer[0] == url:
            self._show_probe(answer[1])
        elif answer is None and url == self._base_url_for(name):
            return  # ``probe_all`` is asking that URL already
        else:
            self.status.update(Content.styled("… asking the server for its models", "$text-muted"))
            self.probe_url(name, url)

    @on(Select.Changed, "#run-on")
    def _on_run_on_changed(self, event: Select.Changed) -> None:
        self.set_class(event.value == "queue", "-queue")

    @on(Select.Changed, "#models")
    def _on_model_picked(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL:
            self.model.value = str(event.value)

    def _show_provider(self, value: str) -> None:
        preset = value in PRESETS
        self.base_url.disabled = self.model.disabled = not preset
        self.set_class(not preset, "-scripted")
        answer = self.probes.get(value)
        if preset and answer is not None and answer[0] == self.base_url.value.strip():
            self._show_probe(answer[1])
        else:
            self._show_models(())
            self.status.update(self._provider_note(value))

    def _provider_note(self, value: str) -> Content:
        """The status line under a provider not probed yet (or that takes no server)."""
        if value in PRESETS:
            return Content.styled("… asking the server for its models", "$text-muted")
        script = value.removeprefix("scripted:")
        note = (
            "The config names no model provider, so this answers from the demo's "
            "script. Pick a server for real work."
            if value == SCRIPTED_DEMO and self.settings.provider == "scripted"
            else f"Answers from the script {script}; base URL and model do not apply."
        )
        return Content.styled(note, "$text-muted")

    def _show_probe(self, result: ProbeResult) -> None:
        style = "$text-success" if result.reachable else "$text-warning"
        self.status.update(Content.styled(plain(result.detail), style))
        self._show_models(result.models)
        if result.models and not self.model.value.strip():
            self.model.value = result.models[0]

    def _show_models(self, models: tuple[str, ...]) -> None:
        with self.prevent(Select.Changed):
            self.models.set_options([(name, name) for name in models])
        self.set_class(not models, "-no-models")
        self.model.suggester = SuggestFromList(models, case_sensitive=False) if models else None

    # -- starting ------------------------------------------------------------------------------

    def _value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    def _int(self, widget_id: str, least: int) -> int | None:
        """The whole number a field holds (None: empty); ``FieldError`` naming its label."""
        name = BY_ID[widget_id].label
        text = self._value(widget_id)
        if not text:
            return None
        try:
            number = int(text)
        except ValueError:
            raise FieldError(widget_id, f"{name} must be a whole number, not {text!r}") from None
        if number < least:
            raise FieldError(widget_id, f"{name} must be at least {least:,}")
        return number

    def request(self) -> NewRunRequest:
        """What the fields ask for; ``FieldError`` names the field that cannot start a run."""
        task = self._value("task")
        chosen = self.continue_choice.value
        continue_run_id = None if chosen is Select.NULL else int(str(chosen))
        if not task and continue_run_id is None:
            raise FieldError("task", "the task is empty: say what the agent should do")
        named = self._value("workspace")
        if not named:  # never the app's own directory by default: that is rarely the project
            raise FieldError("workspace", "the workspace is empty: name the agent's directory")
        workspace = Path(named).expanduser()
        if not workspace.is_dir():
            what = "not a directory" if workspace.exists() else "no such directory"
            raise FieldError("workspace", f"{what}: {workspace}")
        provider = str(self.provider.value)
        preset = provider in PRESETS
        max_steps = self._int("max-steps", 1)
        if max_steps is None:
            raise FieldError("max-steps", "Max steps is empty")
        queue = self.run_on.value == "queue"
        return NewRunRequest(
            task=task,
            workspace=workspace,
            provider=provider,
            model=(self._value("model") or None) if preset else None,
            base_url=(self._value("base-url") or None) if preset else None,
            max_steps=max_steps,
            token_budget=self._int("token-budget", 1),
            context_max_tokens=self._int("context-max", MIN_CONTEXT),
            max_output_tokens=self._int("max-output", 1),
            context_window=self._int("context-window", 1),
            queue=queue,
            labels=labels_of(self._value("labels")) if queue else (),
            continue_run_id=continue_run_id,
        )

    @on(Button.Pressed, "#start")
    @on(Input.Submitted)
    def action_start(self) -> None:
        if self.checking:
            return
        try:
            request = self.request()
        except FieldError as exc:
            self._show_error(exc)
            return
        self.checking = True
        self.error.update(Content.styled("checking…", "$text-muted"))
        self.check(request)

    @work(group="check", exclusive=True, exit_on_error=False)
    async def check(self, request: NewRunRequest) -> None:
        """Make the run ready as the harness will (``prepare_run``), then let it go."""
        opening = self.opening
        error: FieldError | None = None
        try:
            run = await prepare_run(self.store, self.settings, request)
        except ValueError as exc:  # the CLI's words: said with the dialog's fields
            error = FieldError(field_of(str(exc)), dialog_words(str(exc)))
        else:
            try:  # the server's window, asked now: a limit that cannot fit says so here
                await check_output_fit(run.provider, run.contract)
            except OutputDoesNotFit as exc:
                error = FieldError("max-output", exc.say("Output limit"))
            finally:
                await run.provider.aclose()
        self.post_message(self.Checked(opening, request, error))

    @on(Checked)
    def _on_checked(self, message: Checked) -> None:
        if message.opening != self.opening:
            return  # asked in an earlier opening, answered after this one began
        self.checking = False
        if self not in self.app.screen_stack:
            return  # closed while it was being checked: nothing starts
        if message.error is not None:
            self._show_error(message.error)
        else:
            self.dismiss(message.request)

    def _show_error(self, error: FieldError) -> None:
        self.error.update(Content.styled(f"✗ {plain(str(error))}", "$text-error"))
        widget = self.query_one(f"#{error.field}", Widget)
        if not widget.disabled:
            widget.focus()
            widget.scroll_visible(animate=False)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.workers.cancel_group(self, "check")  # a start being checked does not start
        self.checking = False
        self.dismiss(None)


def _row(label: str, widget: Widget, *, id: str | None = None) -> Horizontal:
    return Horizontal(Label(label), widget, classes="row", id=id)


def _unreached(result: ProbeResult) -> bool:
    return result.detail.startswith("cannot reach")


__all__ = ["SCRIPTED_DEMO", "NewRunScreen", "choices", "default_provider"]
