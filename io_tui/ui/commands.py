"""Command-palette providers (ctrl+p): runs, themes and memory.

Each provider reads the app's current state when the palette opens; actions that touch the
store run as workers on the app.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from io_tui.ui.app import IoApp


class ListedCommands(Provider):
    """A provider over a fixed list of (name, callback, help): subclasses say what is listed."""

    @property
    def io_app(self) -> IoApp:
        return self.app  # type: ignore[return-value]

    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        return []

    async def discover(self) -> Hits:
        for name, callback, help_text in self.commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self.commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


class RunCommands(ListedCommands):
    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.io_app
        out: list[tuple[str, Callable[[], Any], str]] = [
            ("Run: new run…", app.action_new_run, "open the new-run dialog"),
            ("Run: demo", app.start_demo, "start the bundled demo on a fresh temp copy"),
        ]
        for run in sorted(app.runs.values(), key=lambda r: -r.id)[:50]:
            label = f"#{run.id} {run.goal[:40]}"
            out.append(
                (f"Run: select {label}", partial(_select, app, run.id), f"status {run.status}")
            )
            out.append(
                (f"Run: trace {label}", partial(_trace, app, run.id), "full, searchable trace")
            )
            if run.live:
                out.append(
                    (
                        f"Run: interrupt {label}",
                        partial(app.interrupt, run.id),
                        "cancel it; it ends cancelled",
                    )
                )
        return out


class ThemeCommands(ListedCommands):
    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.io_app
        return [
            (f"Theme: {name}", partial(setattr, app, "theme", name), "switch theme")
            for name in sorted(app.available_themes)
            if name.startswith("io-")
        ]


class MemoryCommands(ListedCommands):
    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.io_app
        workspace = _selected_workspace(app)
        out: list[tuple[str, Callable[[], Any], str]] = [
            ("Memory: show usage and notes", partial(_memory_show, app), "of the selected run")
        ]
        if workspace:
            out.append(
                (
                    "Memory: clear this workspace's notes (keeps pinned)",
                    partial(_memory_clear, app, workspace),
                    workspace,
                )
            )
        # approvals: "Memory: open editor" is added by the memory editor's provider
        return out


def _select(app: IoApp, run_id: int) -> None:
    main = app._main_screen()
    if main is not None:
        main.select_run(run_id)


def _trace(app: IoApp, run_id: int) -> None:
    from io_tui.ui.screens.trace import TraceScreen

    app.push_screen(TraceScreen(run_id))


def _selected_workspace(app: IoApp) -> str | None:
    main = app._main_screen()
    run_id = main.selected_run if main is not None else None
    run = app.runs.get(run_id) if run_id is not None else None
    return run.workspace if run is not None else None


def _memory_show(app: IoApp) -> None:
    app.run_worker(_memory_show_worker(app), group="db", exit_on_error=False)


async def _memory_show_worker(app: IoApp) -> None:
    workspace = _selected_workspace(app)
    if workspace:
        notes = await app.store.memory.notes_for(workspace)
    else:
        notes = await app.store.memory.list("global", None)
    lines = [f"{n.scope}:{n.key} = {n.value[:60]}" for n in notes[:12]] or ["(no notes)"]
    app.notify("\n".join(lines), title=f"Memory ({len(notes)} notes)", timeout=12)


def _memory_clear(app: IoApp, workspace: str) -> None:
    async def clear() -> None:
        await app.store.memory.clear("workspace", workspace)
        app.notify(f"cleared the notes of {workspace} (pinned notes kept)")

    app.run_worker(clear(), group="db", exit_on_error=False)
