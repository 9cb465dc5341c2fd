"""Help: every key of every screen, with its binding id (remap any in the config file:
``[ui.keys]`` ``"main.inspect" = "ctrl+i"``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.getters import query_one
from textual.screen import ModalScreen
from textual.widgets import Static

from io_tui.ui.widgets.table import Table


class HelpScreen(ModalScreen[None]):
    """``sections``: (where, its bindings) for the app and every screen (and widget with keys
    of its own), as the app lists them; ``keymap``: the config's remaps, by binding id."""

    CSS_PATH = "help.tcss"
    BINDINGS = [
        Binding("escape,q,f1", "dismiss", "Close", id="help.close", tooltip="Close the help"),
    ]

    key_table = query_one("#keys", Table)

    def __init__(
        self, sections: Sequence[tuple[str, Iterable[BindingType]]], keymap: Mapping[str, str]
    ) -> None:
        super().__init__()
        self.sections = sections
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        with Vertical(id="panel"):
            yield Static(
                "Keys — remap any binding id in the config file under [ui.keys]", id="title"
            )
            yield Table(id="keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.key_table
        # the binding id is what the config remaps: it is never cut
        table.add_column("where", key="where", priority=4)
        table.add_column("key", key="key", priority=5)
        table.add_column("does", key="does", priority=3, shrink_to=12)
        table.add_column("binding id", key="binding id", priority=6)
        keymap = self.keymap
        seen: set[tuple[str, str]] = set()
        for where, bindings in self.all_bindings():
            for binding in bindings:
                key = keymap.get(binding.id or "", binding.key) if binding.id else binding.key
                row_key = (where, binding.id or binding.action)
                if row_key in seen:
                    continue
                seen.add(row_key)
                shown = ", ".join(self.app.get_key_display(Binding(k, "")) for k in key.split(","))
                table.add_row(
                    where,
                    shown,
                    binding.tooltip or binding.description or binding.action,
                    binding.id or "",
                    key=f"{where}:{binding.id or binding.action}",
                )
        table.add_row("app", "ctrl+p", "Command palette (runs, memory, themes)", "", key="palette")
        table.focus()

    async def on_key(self, event: events.Key) -> None:
        """The app's keys work from the help as from any screen (F2 the inbox, ctrl+n a new
        run…): Textual stops a modal screen's keys at the modal, so the help passes on those
        of the app's bindings (with the config's remaps) that it has no use for itself."""
        app: Any = self.app
        remaps: Mapping[str, str] = getattr(app, "key_remaps", {})
        for binding in _bindings(app.BINDINGS):
            keys = remaps.get(binding.id, binding.key) if binding.id else binding.key
            if event.key in keys.split(",") and binding.action != "help":
                event.stop()
                await app.run_action(binding.action)
                return

    def all_bindings(self) -> Iterable[tuple[str, list[Binding]]]:
        for where, bindings in self.sections:
            yield where, _bindings(bindings)
        yield "help", _bindings(self.BINDINGS)


def _bindings(items: Iterable[BindingType]) -> list[Binding]:
    out = []
    for item in items:
        if isinstance(item, Binding):
            out.append(item)
        elif isinstance(item, tuple):
            out.append(Binding(*item))
    return out
