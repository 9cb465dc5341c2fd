""" "What if" on one recorded request: change its context, send it again, and read the answer
beside the recorded one. Nothing the answer proposes is executed.

Left, the request's entries (each call's result and its state in the request): ``r`` restores
the highlighted one whole, ``d`` drops it (the call with its result), ``e`` edits its text,
space clears the change; ``m`` edits the memory block. Right, where it goes (the run's
provider, or another preset and model) and how often (a batch sends the recorded request and
the changed one N times each and counts how often the first proposed call differs). ``s``
sends; below, the recorded answer and the probe's side by side (text, proposed calls, tokens,
cost). ``p`` lists the step's stored probes; enter on one opens it again.

The core does the work (``baseline``, ``send_probe``, ``send_batch``, ``reopen_probe``), in
workers; every probe is stored with the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Static, TextArea

from io_tui.core import (
    Answer,
    Baseline,
    Batch,
    NewRunRequest,
    Probe,
    ProbeError,
    Provider,
    Store,
    Variant,
    baseline,
    provider_for,
    reopen_probe,
    run_provider,
    run_settings_for,
    send_batch,
    send_probe,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table
from io_tui.ui.widgets.title_bar import TitleBar

STUBS = ("elided", "superseded", "collapsed", "dropped", "summary", "refresh_failed", "echoed")


class EditText(ModalScreen[str | None]):
    """A text to edit: a result's, or the memory block. ctrl+s keeps it, escape does not."""

    DEFAULT_CSS = """
    EditText { align: center middle; background: $background 60%; }
    EditText > Vertical { width: 90%; height: 80%; border: thick $primary; background: $surface; }
    EditText TextArea { height: 1fr; }
    """
    BINDINGS = [
        Binding("ctrl+s", "keep", "Keep", id="whatif.edit.keep", tooltip="Use this text", priority=True),
        Binding("escape", "cancel", "Cancel", id="whatif.edit.cancel", tooltip="Leave it as it was"),
    ]  # fmt: skip

    editor = query_one(TextArea)

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            box.border_subtitle = "ctrl+s keep · esc cancel"
            yield TextArea(self.text, soft_wrap=True, id="edit-text")

    def on_mount(self) -> None:
        self.editor.focus()

    def action_keep(self) -> None:
        self.dismiss(self.editor.text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class WhatIfScreen(Screen[None]):
    CSS_PATH = "whatif.tcss"
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="whatif.close", tooltip="Back to the inspector"),
        Binding("r", "change('restore')", "Restore", id="whatif.restore", tooltip="Send the highlighted entry's result whole"),
        Binding("d", "change('drop')", "Drop", id="whatif.drop", tooltip="Leave the highlighted call and its result out"),
        Binding("e", "edit", "Edit", id="whatif.edit", tooltip="Edit the highlighted entry's result"),
        Binding("space", "change('clear')", "Clear", id="whatif.clear", tooltip="Send the highlighted entry as recorded"),
        Binding("m", "memory", "Memory", id="whatif.memory", tooltip="Edit the memory block"),
        Binding("s", "send", "Send", id="whatif.send", tooltip="Send it (never executed)"),
        Binding("p", "probes", "Probes", id="whatif.probes", tooltip="This step's stored probes"),
    ]  # fmt: skip

    class Loaded(Message):
        def __init__(self, base: Baseline | None, error: str | None) -> None:
            super().__init__()
            self.base = base
            self.error = error

    class Answered(Message):
        def __init__(self, probe: Probe | None, batch: Batch | None, error: str | None) -> None:
            super().__init__()
            self.probe = probe
            self.batch = batch
            self.error = error

    class ProbesLoaded(Message):
        def __init__(self, rows: list[Any]) -> None:
            super().__init__()
            self.rows = rows

    entries = query_one("#whatif-entries", Table)
    probes = query_one("#whatif-probes", Table)
    head = query_one("#whatif-head", Static)
    changes = query_one("#whatif-changes", Static)
    status = query_one("#whatif-status", Static)
    recorded = query_one("#whatif-recorded", Static)
    answer = query_one("#whatif-answer", Static)
    preset = query_one("#whatif-preset", Input)
    model = query_one("#whatif-model", Input)
    repeat = query_one("#whatif-repeat", Input)

    def __init__(self, store: Store, run_id: int, step: int, call_id: str | None = None) -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.step = step
        self.first_call = call_id
        self.base: Baseline | None = None
        self.changed: dict[str, str] = {}  # call id → restore | drop | edit
        self.edits: dict[str, str] = {}
        self.memory: str | None = None
        self.sending = False

    def compose(self) -> ComposeResult:
        yield TitleBar()
        with Vertical(id="whatif-body"):
            yield Static("reading the recorded request…", id="whatif-head")
            with Horizontal(id="whatif-top"):
                with Vertical(id="whatif-left"):
                    yield Table(id="whatif-entries", cursor_type="row", zebra_stripes=True)
                    yield Table(id="whatif-probes", cursor_type="row")
                with Vertical(id="whatif-right"):
                    yield Static("Send to (blank: the run's provider)", classes="label")
                    yield Input(placeholder="preset", id="whatif-preset")
                    yield Input(placeholder="model", id="whatif-model")
                    yield Static("Times each (a batch over 1)", classes="label")
                    yield Input(value="1", id="whatif-repeat", type="integer")
                    yield Static("", id="whatif-changes")
                    yield Button("s  Send", id="whatif-send", variant="primary")
            yield Static("", id="whatif-status")
            with Horizontal(id="whatif-answers"):
                with VerticalScroll(id="whatif-left-answer"):
                    yield Static("", id="whatif-recorded")
                with VerticalScroll(id="whatif-right-answer"):
                    yield Static("", id="whatif-answer")
        yield ScreenFooter()

    def on_mount(self) -> None:
        self.sub_title = f"what if · run {self.run_id} · step {self.step}"
        for key, priority, shrink in (("call", 4, 6), ("state", 5, None), ("kind", 2, None),
                                      ("target", 1, 8), ("step", 3, None), ("change", 6, None)):  # fmt: skip
            self.entries.add_column(key, key=key, priority=priority, shrink_to=shrink)
        self.entries.border_title = "Entries of the request"
        for key, priority, shrink in (("probe", 4, None), ("variant", 3, 8),
                                      ("model", 2, 8), ("first call", 1, 10)):  # fmt: skip
            self.probes.add_column(key, key=key, priority=priority, shrink_to=shrink)
        self.probes.border_title = "Stored probes (enter opens)"
        self.probes.display = False
        self.entries.focus()
        self.load()

    @work(group="whatif", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        try:
            base = await baseline(self.store, self.run_id, self.step)
        except ProbeError as exc:
            self.post_message(self.Loaded(None, str(exc)))
            return
        self.post_message(self.Loaded(base, None))

    @on_answer(Loaded)
    def _loaded(self, message: Loaded) -> None:
        if message.base is None:
            self.head.update(f"Cannot send it again: {message.error}")
            return
        base = self.base = message.base
        self.head.update(
            f"Request {base.request.id} of run {self.run_id} (step {self.step}):"
            f" {len(base.request.messages)} messages, ~{base.request.est_tokens:,} tokens,"
            f" sent with {base.tools_note}. Nothing an answer proposes is executed."
        )
        for entry in base.entries:
            call = str(entry["call_id"])
            self.entries.add_row(
                call, str(entry.get("state")), str(entry.get("kind")),
                plain(str(entry.get("target"))), str(entry.get("step")), "", key=call,
            )  # fmt: skip
        if self.first_call is not None and self.first_call in self.entries.rows:
            self.entries.move_cursor(row=self.entries.get_row_index(self.first_call))
        self.recorded.update(answer_text("recorded", base.answer, base.cost))
        self._say_changes()

    def _highlighted(self) -> str | None:
        if self.entries.row_count == 0:
            return None
        row = self.entries.coordinate_to_cell_key(self.entries.cursor_coordinate).row_key
        return str(row.value)

    def action_change(self, change: str) -> None:
        call = self._highlighted()
        if call is None or self.base is None:
            return
        if change == "restore" and call not in self.base.recorded:
            self.notify(f"{call} is not a call this request could carry", severity="warning")
            return
        if change == "clear":
            self.changed.pop(call, None)
            self.edits.pop(call, None)
        else:
            self.changed[call] = change
            self.edits.pop(call, None)
        self.entries.update_cell(call, "change", self.changed.get(call, ""))
        self._say_changes()

    def action_edit(self) -> None:
        call = self._highlighted()
        if call is None or self.base is None or call not in self.base.recorded:
            return
        text = self.edits.get(call, self.base.recorded[call].result)

        def keep(edited: str | None) -> None:
            if edited is None:
                return
            self.edits[call] = edited
            self.changed[call] = "edit"
            self.entries.update_cell(call, "change", "edit")
            self._say_changes()

        self.app.push_screen(EditText(f"Result of {call}", text), keep)

    def action_memory(self) -> None:
        if self.base is None:
            return
        current = self.memory if self.memory is not None else (self.base.memory or "")

        def keep(edited: str | None) -> None:
            if edited is not None:
                self.memory = edited
                self._say_changes()

        self.app.push_screen(EditText("The memory block", current), keep)

    def variant(self) -> Variant:
        restore = tuple(c for c, what in self.changed.items() if what == "restore")
        drop = tuple(c for c, what in self.changed.items() if what == "drop")
        edit = {c: t for c, t in self.edits.items() if self.changed.get(c) == "edit"}
        return Variant("what if", restore, drop, edit, self.memory)

    def _say_changes(self) -> None:
        variant = self.variant()
        lines = [f"restore {c}" for c in variant.restore] + [f"drop {c}" for c in variant.drop]
        lines += [f"edit {c}" for c in variant.edit]
        if variant.memory is not None:
            lines.append("memory block edited")
        self.changes.update(
            "Changes:\n" + "\n".join(f"  {line}" for line in lines)
            if lines
            else "No change: sent as recorded"
        )

    def action_send(self) -> None:
        if self.base is None or self.sending:
            return
        try:
            times = max(1, int(self.repeat.value or "1"))
        except ValueError:
            times = 1
        self.sending = True
        self.status.update("sending… (nothing it proposes is executed)")
        self.answer.update("")
        self.send(self.base, self.variant(), self.preset.value.strip(), self.model.value.strip(),
                  times)  # fmt: skip

    @on(Button.Pressed, "#whatif-send")
    def _send_pressed(self) -> None:
        self.action_send()

    @work(group="whatif-send", exclusive=True, exit_on_error=False)
    async def send(
        self, base: Baseline, variant: Variant, preset: str, model: str, times: int
    ) -> None:
        try:
            provider = await self._provider(preset, model)
        except (ProbeError, ValueError) as exc:
            self.post_message(self.Answered(None, None, str(exc)))
            return
        try:
            if times > 1:
                batch = await send_batch(self.store, base, [variant], provider, times)
                self.post_message(self.Answered(batch.probes[-1], batch, None))
            else:
                chosen = variant if not variant.empty else Variant("as recorded")
                probe = await send_probe(self.store, base, chosen, provider)
                self.post_message(self.Answered(probe, None, None))
        except ProbeError as exc:
            self.post_message(self.Answered(None, None, str(exc)))
        finally:
            await provider.aclose()

    async def _provider(self, preset: str, model: str) -> Provider:
        if not preset and not model:
            return await run_provider(self.store, self.run_id)
        # a provider of the app's settings: only the request's preset and model matter here
        request = NewRunRequest(
            task="", workspace=Path("."), provider=preset or None, model=model or None
        )
        settings = getattr(self.app, "settings", None)
        if settings is None:
            raise ProbeError("no settings to make another provider from")
        return provider_for(run_settings_for(settings, request))

    @on_answer(Answered)
    def _answered(self, message: Answered) -> None:
        self.sending = False
        if message.probe is None:
            self.status.update(f"Not sent: {message.error}")
            return
        probe = message.probe
        said = f"probe {probe.row.id} · {probe.row.model}"
        if message.batch is not None:
            said = batch_text(message.batch)
        elif probe.answer.error:
            said += f" · failed: {probe.answer.error}"
        self.status.update(said)
        self.answer.update(answer_text(f"what if (probe {probe.row.id})", probe.answer, probe.cost))
        if self.probes.display:
            self.load_probes()

    def action_probes(self) -> None:
        self.probes.display = not self.probes.display
        if self.probes.display:
            self.load_probes()
            self.probes.focus()
        else:
            self.entries.focus()

    @work(group="whatif-probes", exclusive=True, exit_on_error=False)
    async def load_probes(self) -> None:
        self.post_message(
            self.ProbesLoaded(await self.store.probes.for_run(self.run_id, self.step))
        )

    @on_answer(ProbesLoaded)
    def _probes_loaded(self, message: ProbesLoaded) -> None:
        self.probes.clear()
        for row in message.rows:
            calls = (row.answer or {}).get("tool_calls") or []
            first = calls[0]["name"] if calls else "no tool call"
            self.probes.add_row(str(row.id), row.variant, row.model, first, key=str(row.id))

    @on(Table.RowSelected, "#whatif-probes")
    def _probe_chosen(self, event: Table.RowSelected) -> None:
        self.reopen(int(str(event.row_key.value)))

    @work(group="whatif-send", exclusive=True, exit_on_error=False)
    async def reopen(self, probe_id: int) -> None:
        try:
            probe, _ = await reopen_probe(self.store, probe_id)
        except ProbeError as exc:
            self.post_message(self.Answered(None, None, str(exc)))
            return
        self.post_message(self.Answered(probe, None, None))

    def action_close(self) -> None:
        self.dismiss()


def answer_text(title: str, answer: Answer, cost: dict[str, float]) -> Text:
    """One side of the comparison: the text, the proposed calls, tokens and cost."""
    out = Text()
    out.append(f"{title}\n", style="bold")
    if answer.error:
        out.append(f"failed: {plain(answer.error)}\n", style="bold red")
    out.append((plain(answer.text).strip() or "(no text)") + "\n")
    for call in answer.tool_calls:
        out.append(f"→ {call.name} ", style="bold")
        out.append(plain(json.dumps(call.arguments, ensure_ascii=False)) + "\n")
    if not answer.tool_calls:
        out.append("→ no tool call\n", style="dim")
    usage = answer.usage or {}
    if usage:
        cached = usage.get("cache_read_tokens", 0)
        out.append(
            f"tokens: {usage.get('prompt_tokens', 0):,} in"
            + (f" ({cached:,} cached)" if cached else "")
            + f" · {usage.get('completion_tokens', 0):,} out\n",
            style="dim",
        )
    if cost:
        out.append(f"cost: ~{cost['prompt_equivalent']:,.0f} prompt-token equivalents\n",
                   style="dim")  # fmt: skip
    return out


def batch_text(batch: Batch) -> str:
    """How often each variant's first proposed call differed from the recorded one's."""
    parts = []
    for tally in batch.tallies:
        n = tally.answers or 1
        parts.append(
            f"{tally.variant}: first tool differs {tally.other_tool}/{tally.answers}"
            f" ({tally.other_tool / n:.0%}), first call {tally.other_call}/{tally.answers}"
        )
    return f"batch {batch.id}: " + " · ".join(parts)
