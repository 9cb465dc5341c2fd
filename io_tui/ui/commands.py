"""Command-palette providers (ctrl+p): every key of the app and the main screen, runs, themes,
memory and the steering screens.

Each provider reads the app's current state when the palette opens, through ``Cockpit`` (what
the providers use of ``IoApp``); actions that touch the store run as workers on the app, and
the steering screens open through the app's own actions (so they switch, never stack).

A destructive command (clearing notes) is found only by a query whose every word it holds as
written, ranks below every other hit, and asks before it acts (``ConfirmScreen``): a fuzzy
query for something else never offers it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from io_tui.core import Store
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.state import RunView, counted
from io_tui.ui.terminal_text import file_name, shown


class Cockpit(Protocol):
    """What the palette's providers use of the app (``IoApp``), besides Textual's ``App``."""

    @property
    def runs(self) -> Mapping[int, RunView]: ...

    @property
    def store(self) -> Store: ...

    def main_screen(self) -> MainScreen | None: ...

    def keymap_key(self, binding: Binding) -> str: ...

    def action_new_run(self, task: str = "") -> None: ...

    def start_demo(self, *, fresh: bool = False) -> None: ...

    def interrupt(self, run_id: int) -> bool: ...

    def action_resume_run(self, run_id: int) -> object: ...


DESTRUCTIVE_RANK = 0.2
"""A destructive hit's score is scaled by this: it ranks below every other hit."""


class ListedCommands(Provider):
    """A provider over a fixed list of (name, callback, help): subclasses say what is listed;
    the names in ``destructive()`` are matched only word for word, and rank last."""

    @property
    def io_app(self) -> Cockpit:
        return cast(Cockpit, self.app)

    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        return []

    def destructive(self) -> frozenset[str]:
        return frozenset()

    async def discover(self) -> Hits:
        risky = self.destructive()
        for name, callback, help_text in self.commands():
            if name not in risky:  # found by name only
                yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        risky = self.destructive()
        words = query.lower().split()
        for name, callback, help_text in self.commands():
            score = matcher.match(name)
            if name in risky:
                if not all(word in name.lower() for word in words):
                    continue
                score *= DESTRUCTIVE_RANK
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


class KeyCommands(ListedCommands):
    """Every binding of the app and of the main screen, by its name, with its key: what a key
    does can be found without knowing the key. Main-screen actions are listed while the main
    screen can take them (``check_action``: inspect needs a selected run, interrupt a live one,
    and then named as the footer names them: x cancels a paused or interrupted run).
    """

    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.app
        out: list[tuple[str, Callable[[], Any], str]] = [
            (f"App: {b.description}", partial(app.run_action, b.action), self._help(b))
            for b in _bindings(type(app).BINDINGS)
            if b.action != "command_palette"
        ]
        main = self.io_app.main_screen()
        if main is not None:
            for binding in _bindings(MainScreen.BINDINGS):
                name = binding.action.partition("(")[0]
                if main.check_action(name, ()) is not True:
                    continue
                binding = main.shown_binding(binding)  # x: "Cancel" on a paused run
                out.append(
                    (
                        f"Main: {binding.description}",
                        partial(_on_main, app, main, binding.action),
                        self._help(binding),
                    )
                )
        return out

    def _help(self, binding: Binding) -> str:
        key = self.io_app.keymap_key(binding)
        return f"{binding.tooltip or binding.description} · key {key}"


class RunCommands(ListedCommands):
    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.io_app
        out: list[tuple[str, Callable[[], Any], str]] = [
            ("Run: new run…", app.action_new_run, "open the new-run dialog"),
            (
                "Run: demo",
                partial(app.start_demo, fresh=True),
                "start the bundled demo on a fresh temp copy",
            ),
        ]
        for run in sorted(app.runs.values(), key=lambda r: -r.id)[:50]:
            label = f"#{run.id} {run.goal[:40]}"
            out.append(
                (f"Run: select {label}", partial(_select, app, run.id), f"status {run.status}")
            )
            out.append(
                (
                    f"Run: trace {label}",
                    partial(_trace, self.app, app.store, run.id),
                    "full, searchable trace",
                )
            )
            if run.status == "interrupted":
                out.append(
                    (
                        f"Run: resume {label}",
                        partial(app.action_resume_run, run.id),
                        "continue it; calls in flight at the crash are reconciled first",
                    )
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
        app = self.app
        return [
            (f"Theme: {name}", partial(setattr, app, "theme", name), "switch theme")
            for name in sorted(app.available_themes)
            if name.startswith("io-")
        ]


CLEAR_NOTES = "Memory: clear this workspace's notes (keeps pinned)"


class MemoryCommands(ListedCommands):
    def destructive(self) -> frozenset[str]:
        return frozenset({CLEAR_NOTES})

    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.io_app
        workspace = _selected_workspace(app)
        out: list[tuple[str, Callable[[], Any], str]] = [
            (
                "Memory: show usage and notes",
                partial(_memory_show, self.app, app),
                "of the selected run",
            )
        ]
        if workspace:
            out.append(
                (
                    CLEAR_NOTES,
                    partial(_memory_clear, self.app, app.store, workspace),
                    f"asks first · {workspace}",
                )
            )
        # approvals: "Memory: open editor" is listed by ``SteeringCommands``
        return out


class SteeringCommands(ListedCommands):
    """The steering screens, opened as their keys open them (``IoApp.action_inbox`` …)."""

    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        run = self.app.run_action
        return [
            ("Approvals: inbox", partial(run, "inbox"), "every pending request, oldest first"),
            ("Approvals: remembered rules", partial(run, "rules"), "list and revoke"),
            ("Approvals: audit", partial(run, "audit"), "every decision, rate, median wait"),
            ("Memory: open editor", partial(run, "memory"), "notes, pins, recalls, caps"),
        ]


class McpTrustCommands(ListedCommands):
    """Trust the selected run's workspace ``.mcp.json`` (its exact content): its servers start
    in the runs there from then on."""

    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        workspace = _selected_workspace(self.io_app)
        if not workspace:
            return []
        return [
            (
                "MCP: trust this workspace's .mcp.json",
                partial(_mcp_trust, self.app, self.io_app.store, workspace),
                workspace,
            )
        ]


def _mcp_trust(app: App[Any], store: Store, workspace: str) -> None:
    app.run_worker(_mcp_trust_worker(app, store, workspace), group="db", exit_on_error=False)


async def _mcp_trust_worker(app: App[Any], store: Store, workspace: str) -> None:
    """Show the file and what it starts, and keep its digest once the operator says yes."""
    from io_tui.core import McpConfigError, configured_servers, operator, server_command_line
    from io_tui.ui.screens.confirm import ConfirmScreen

    settings = getattr(app, "settings", None)
    try:
        found = configured_servers(settings, Path(workspace))  # type: ignore[arg-type]
    except (McpConfigError, AttributeError) as exc:
        app.notify(str(exc), title="MCP", severity="error")
        return
    if found.workspace_file is None or not found.from_workspace:
        app.notify(f"no .mcp.json with servers in {file_name(workspace)}", title="MCP")
        return
    text = await asyncio.to_thread(found.workspace_file.read_text, "utf-8", "replace")
    starts = "\n".join(
        f"  {n}: {server_command_line(e) or getattr(e, 'url', '')}"
        for n, e in found.from_workspace.items()
    )
    question = (
        f"Trust {file_name(str(found.workspace_file))} (digest {found.workspace_digest[:12]})?\n"
        f"It starts:\n{starts}\n\n{shown(text)}\n\nA changed file is asked about again."
    )
    if not await app.push_screen_wait(ConfirmScreen(question)):
        return
    await store.trust.trust(
        str(found.workspace_file.parent.resolve()), found.workspace_digest, operator("io-tui")
    )
    app.notify(
        f"trusted {file_name(str(found.workspace_file))}: its servers start in the next run there",
        title="MCP",
    )


def _bindings(items: Any) -> list[Binding]:
    return [item for item in items if isinstance(item, Binding)]


def _on_main(app: App[Any], main: MainScreen, action: str) -> None:
    """Run a main-screen action on the main screen, closing what is open over it first."""
    while app.screen is not main and len(app.screen_stack) > 1:
        app.pop_screen()
    app.call_later(main.run_action, action)


def _select(app: Cockpit, run_id: int) -> None:
    main = app.main_screen()
    if main is not None:
        main.select_run(run_id)


def _trace(app: App[Any], store: Store, run_id: int) -> None:
    from io_tui.ui.screens.trace import TraceScreen

    app.push_screen(TraceScreen(store, run_id))


def _selected_workspace(app: Cockpit) -> str | None:
    main = app.main_screen()
    run_id = main.selected_run if main is not None else None
    run = app.runs.get(run_id) if run_id is not None else None
    return run.workspace if run is not None else None


def _memory_show(app: App[Any], cockpit: Cockpit) -> None:
    app.run_worker(_memory_show_worker(app, cockpit), group="db", exit_on_error=False)


async def _memory_show_worker(app: App[Any], cockpit: Cockpit) -> None:
    workspace = _selected_workspace(cockpit)
    if workspace:
        notes = await cockpit.store.notes.notes_for(workspace)
    else:
        notes = await cockpit.store.notes.list("global", None)
    lines = [f"{n.scope}:{n.key} = {n.value[:60]}" for n in notes[:12]] or ["(no notes)"]
    app.notify("\n".join(lines), title=f"Memory ({counted(len(notes), 'note')})", timeout=12)


def _memory_clear(app: App[Any], store: Store, workspace: str) -> None:
    """Clear the workspace's unpinned notes once the operator says yes (as the memory editor
    asks)."""
    from io_tui.ui.screens.confirm import ConfirmScreen

    async def clear() -> None:
        count = await store.notes.clear("workspace", workspace)
        app.notify(f"cleared {counted(count, 'note')} of {workspace} (pinned notes kept)")

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(clear(), group="db", exit_on_error=False)

    question = f"Clear every unpinned note of {workspace}? Pinned notes stay."
    app.push_screen(ConfirmScreen(question), answered)
