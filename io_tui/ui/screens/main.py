"""The main screen: run tree, transcript of the selected run, gauges, the prompt box, and (``l``)
the selected run's progress ledger beside the transcript (in its place below 110 columns).

The screen owns selection. Moving the cursor updates the selection at once; the store reads it
implies (transcript, gauges) go out at most ~10 times a second, for the latest selection only,
and a transcript already showing the selected run is kept (a step in it is scrolled to). Workers
post typed messages back; live changes arrive from the app already coalesced (``apply_changes``)
and repaint the gauges at most ~10 times a second. What it shows and drives comes in through its
constructor (the app's run views, store, run host and the operator's activity); what it asks of
the app goes up as messages (``Ready``, ``StartRun``, ``NewRunRequested``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.binding import ActiveBinding, Binding
from textual.containers import Horizontal, Vertical
from textual.getters import query_one
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Tree

from io_tui.core import CANCELLABLE, Store
from io_tui.ui import attention
from io_tui.ui.answers import on_answer
from io_tui.ui.data import StepData, load_steps
from io_tui.ui.messages import NewRunRequest, NewRunRequested, StartRun
from io_tui.ui.run_board import Changes
from io_tui.ui.screens.skeleton import PROMPT_PLACEHOLDER, SkeletonScreen
from io_tui.ui.state import RunView, StepView
from io_tui.ui.throttle import Throttle
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.gauges import ContextBar, Gauge, context_breakdown
from io_tui.ui.widgets.ledger_pane import LedgerPane
from io_tui.ui.widgets.run_tree import NodeRef, RunTree
from io_tui.ui.widgets.title_bar import TitleBar
from io_tui.ui.widgets.transcript import MAX_STEPS, Transcript

if TYPE_CHECKING:
    from io_tui.core import ProgressLedger
    from io_tui.ui.hosts import RunHost

VIEW_INTERVAL = 0.1  # seconds: selection-driven store reads at most ~10×/s
GAUGE_INTERVAL = 0.1  # seconds: live runs repaint the gauges at most ~10×/s
TAIL_INTERVAL = 0.5  # seconds: a live run's new transcript steps are loaded at most 2×/s
NARROW = 110  # columns: below, the ledger pane takes the transcript's and gauges' place
INTERRUPT_TIP = "Interrupt a live run; cancel a stopped or queued one"
# ``x`` on a run no process drives (``CANCELLABLE``): what the footer and the palette call it
CANCEL_LABEL, CANCEL_TIP = "Cancel", "Cancel the selected run no process drives (asks first)"


@dataclass(frozen=True, slots=True)
class GaugeFigures:
    run_id: int
    step: int | None
    ceiling: int | None
    est: int | None  # the whole request's estimate, comparable with what the provider reports
    frame: int | None  # the fixed frame, counted beside the ceiling, not inside it
    reported: int | None
    memory_entries: int
    memory_chars: int
    usage: dict[str, Any] | None = None  # as the provider reported it (``Usage.to_json``)
    sections: tuple[dict[str, Any], ...] = ()  # the request's manifest sections (raw figures)
    calibration: dict[str, Any] | None = None  # how the raw figures became ``est`` and ``frame``
    cost: dict[str, Any] | None = None  # the request's price with caching, and the run's so far


class MainScreen(SkeletonScreen):
    AUTO_FOCUS = "#runs"
    BINDINGS = [
        Binding("i", "inspect", "Inspect", id="main.inspect", tooltip="Context inspector for the selected step"),
        Binding("t", "trace", "Trace", id="main.trace", tooltip="Full, searchable trace of the selected run"),
        Binding("m", "prompt", "Message", id="main.prompt", tooltip="Steer the selected run, or follow up on a finished one"),
        Binding("x", "interrupt", "Interrupt", id="main.interrupt", tooltip=INTERRUPT_TIP),
        Binding("R", "resume", "Resume", id="main.resume", tooltip="Resume the selected interrupted run"),
        Binding("e", "expand", "Expand tools", id="main.expand", tooltip="Expand or collapse every tool block"),
        Binding("l", "ledger", "Ledger", id="main.ledger", show=False, tooltip="Show or hide the selected run's progress ledger"),
        Binding("w", "rewind", "Rewind", id="main.rewind", show=False, tooltip="Rewind files to before the selected step"),
        Binding("W", "undo_rewind", "Undo rewind", id="main.undo_rewind", show=False, tooltip="Undo the selected run's last rewind"),
        Binding("f", "fork", "Fork", id="main.fork", show=False, tooltip="Fork from the selected step: a new run from its recorded request"),
        Binding("question_mark", "whatif", "What if", id="main.whatif", show=False, tooltip="Send the selected step's request again, changed (never executed)"),
        Binding("escape", "focus_tree", "Tree", id="main.focus_tree", show=False, tooltip="Back to the run tree"),
    ]  # fmt: skip

    class TranscriptLoaded(Message):
        def __init__(self, run_id: int, steps: list[StepData], replace: bool) -> None:
            super().__init__()
            self.run_id = run_id
            self.steps = steps
            self.replace = replace

    class GaugesLoaded(Message):
        def __init__(self, figures: GaugeFigures) -> None:
            super().__init__()
            self.figures = figures

    class LedgerLoaded(Message):
        def __init__(self, run_id: int, ledger: ProgressLedger | None) -> None:
            super().__init__()
            self.run_id = run_id
            self.ledger = ledger

    class Ready(Message):
        """The panes are mounted and show every run the app knew: time to read the store."""

    class Shown(Message):
        """The panes, footer and all, are on screen."""

    run_tree = query_one("#runs", RunTree)
    transcript = query_one("#transcript", Transcript)
    prompt = query_one("#prompt", Input)
    ledger = query_one("#ledger", LedgerPane)
    run_gauge = query_one("#gauge-run", Gauge)
    request_gauge = query_one("#gauge-request", Gauge)
    drift_gauge = query_one("#gauge-drift", Gauge)
    memory_gauge = query_one("#gauge-memory", Gauge)
    cache_gauge = query_one("#gauge-cache", Gauge)
    context_bar = query_one("#context", ContextBar)

    def __init__(
        self,
        runs: Mapping[int, RunView],
        store: Store,
        host: RunHost | None,
        activity: attention.Activity,
    ) -> None:
        super().__init__()
        self.runs = runs  # the app's run views (``RunBoard``), kept current by the app
        self.store = store
        # where runs execute; None while the CLI's app loads its settings (the panes are shown
        # first): no run is live in this app until then, and its keys are held
        self.host = host
        self.activity = activity
        self.selected_run: int | None = None
        self.selected_step: int | None = None
        self._auto_select = True
        self._unseen: int | None = None  # started by another process, not yet scrolled to
        self._unseen_timer: Timer | None = None
        self._figures: GaugeFigures | None = None
        self._loaded_run: int | None = None  # the run whose transcript is shown or loading
        self._bound_status: str | None = None  # the selected run's status its keys were set for
        self.ready = False  # the panes are mounted (the first frame shows the skeleton)
        # a held arrow key costs ≤10 store reads a second; a live run repaints the gauges ≤10×/s;
        # a followed transcript loads its new steps from the store ≤2×/s
        self._schedule_view = Throttle(self, VIEW_INTERVAL, self._load_view)
        self._schedule_gauges = Throttle(self, GAUGE_INTERVAL, self._refresh_gauges)
        self._schedule_tail = Throttle(self, TAIL_INTERVAL, self._follow_tail)
        self._schedule_ledger = Throttle(self, TAIL_INTERVAL, self._refresh_ledger)

    def _panes(self) -> list[Widget]:
        gauges = Vertical(
            Gauge("run", id="gauge-run"),
            Gauge("request", id="gauge-request"),
            Gauge("counted", id="gauge-drift"),
            Gauge("memory", unit="notes", id="gauge-memory"),
            Gauge("cache", id="gauge-cache"),
            ContextBar(id="context"),
            id="gauges",
        )
        gauges.border_title = "Budgets"
        runs = RunTree(id="runs")
        runs.border_title = "Runs"
        transcript = Transcript(id="transcript")
        transcript.border_title = "Transcript"
        return [
            TitleBar(),
            Horizontal(
                runs, Vertical(gauges, transcript, id="side"), LedgerPane(id="ledger"), id="body"
            ),
            Input(placeholder=PROMPT_PLACEHOLDER, id="prompt"),
        ]

    def on_mount(self) -> None:
        self.call_after_refresh(self._mount_panes)

    async def _mount_panes(self) -> None:
        """Replace the skeleton with the panes, then show the runs the app already knows."""
        with self.app.batch_update():
            await self.mount_all(self._panes())
            self.drop_skeleton()
        if not self.is_attached or not self.query(RunTree):
            return  # the app is closing (quit, or its store cannot be opened)
        self.ready = True
        if self.focused is None:
            self.run_tree.focus()
        for run in self.runs.values():  # what the app learnt while the skeleton was shown
            self.upsert_run(run)
            for step in run.steps.values():
                self.run_tree.upsert_step(run, step)
        self.post_message(self.Ready())
        # Last, so that it lays out its keys once, for the bindings they now have.
        await self.mount(ScreenFooter())
        self.call_after_refresh(self.post_message, self.Shown())

    # -- keyed updates from the app ------------------------------------------------------------

    def upsert_run(self, run: RunView) -> None:
        """A run as read from the store (new here, or moved on by another process, or lost
        with the harness worker): the selected one's status line and keys follow it."""
        self.run_tree.upsert_run(run)
        if self._auto_select and self.selected_run is None:
            self.select_run(run.id)
        if run.id == self.selected_run:
            self._refresh_gauges()
            self.transcript.follow(run)
            if run.status != self._bound_status:
                self._bound_status = run.status
                self.refresh_bindings()  # R resumes an interrupted run only; x cancels one
                if not run.live and run.id == self._loaded_run:
                    self._schedule_tail(now=True)  # how it ended: its last step's notes

    def upsert_step(self, run: RunView, step: StepView) -> None:
        self.run_tree.upsert_step(run, step)

    def apply_changes(self, changes: Changes) -> None:
        """Show what a batch of events changed (``RunBoard.apply``)."""
        changed_runs, changed_steps, committed = changes.runs, changes.steps, changes.committed
        runs = self.runs
        for run_id in sorted(changed_runs):
            self.run_tree.upsert_run(runs[run_id])
        for run_id, step in sorted(changed_steps):
            run = runs[run_id]
            if step in run.steps:
                self.run_tree.upsert_step(run, run.steps[step])
        if self._auto_select and self.selected_run is None and changed_runs:
            self.select_run(max(changed_runs))
        self._bring_into_view(attention.claimant(runs, changed_runs))
        for run_id in changed_runs:
            self._hand_back(runs[run_id], selected=run_id == self.selected_run)
        selected = self.selected_run
        if selected is None or selected not in runs:
            return
        run = runs[selected]
        self.transcript.follow(run)
        if selected in changed_runs:
            self._schedule_gauges()
            self._schedule_ledger()
        if selected != self._loaded_run:
            return  # its transcript and gauges load at the next view tick
        if any(run_id == selected for run_id, _ in committed) or (
            selected in changed_runs and not run.live
        ):
            self._schedule_tail(now=not run.live)

    def _follow_tail(self) -> None:
        """Load the selected run's new steps (at once when it has ended, else ≤2×/s)."""
        run_id = self._loaded_run
        run = self.runs.get(run_id) if run_id is not None else None
        if run_id is None or run is None or run_id != self.selected_run:
            return
        # The last step shown is read again: a step is in the store from the model's answer
        # on and gains its results call by call (and, once the run ended, the verification).
        since = max(0, self.transcript.last_step - 1)
        self.load_tail(run_id, since)
        self.load_gauges(run_id, self.selected_step)

    # -- selection -----------------------------------------------------------------------------

    def _bring_into_view(self, claim: attention.Claim | None) -> None:
        """A run that started here or asks: selected unless the operator is busy
        (``attention``), else scrolled to. One another process started: scrolled to once the
        operator is idle, never selected."""
        if claim is None or claim.run_id == self.selected_run:
            return
        if claim.elsewhere:
            self._unseen = claim.run_id
            self._show_unseen()
            return
        run_id = claim.run_id
        busy = (
            attention.busy(self.app, self.activity) if claim.asking else attention.typing(self.app)
        )
        if not busy:
            self.select_run(run_id)
        else:
            self.run_tree.scroll_to_run(run_id)

    def _show_unseen(self) -> None:
        """Scroll the newest run another process started into view once no key came for
        ``attention.IDLE_S`` and nothing is over this screen (a modal, a dialog, another
        screen: tried again when it closes); the cursor and the selection stay put."""
        if self._unseen_timer is not None:
            self._unseen_timer.stop()
            self._unseen_timer = None
        run_id = self._unseen
        if run_id is None or not self.ready or self.app.screen is not self:
            return
        wait = attention.IDLE_S - self.activity.since_key()
        if wait > 0:  # the operator is at the keys: once they stop
            self._unseen_timer = self.set_timer(wait + 0.05, self._show_unseen)
            return
        self._unseen = None
        if run_id != self.selected_run:
            self.run_tree.scroll_to_run(run_id)

    def on_screen_resume(self) -> None:
        self._show_unseen()

    def select_run(self, run_id: int, step: int | None = None) -> None:
        self.run_tree.select_ref(NodeRef(run_id, step))
        self._select(run_id, step)

    @on(Tree.NodeHighlighted, "#runs")
    def _on_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        ref = event.node.data
        if ref is not None:
            self._auto_select = False
            self._select(ref.run_id, ref.step)

    def _select(self, run_id: int, step: int | None) -> None:
        changed_run = run_id != self.selected_run
        self.selected_run, self.selected_step = run_id, step
        if changed_run:
            self.refresh_bindings()  # interrupt / inspect depend on the run only
        if run_id == self._loaded_run and step is not None:
            self.transcript.scroll_to_step(step)
        self._schedule_view()

    def _load_view(self) -> None:
        """Load what the selection shows: its transcript if another run, and its gauges."""
        run_id, step = self.selected_run, self.selected_step
        if run_id is None:
            return
        if run_id != self._loaded_run:
            self._loaded_run = run_id
            self.transcript.run_id = run_id
            self.load_transcript(run_id)
            run = self.runs.get(run_id)
            if run is not None:
                self.transcript.follow(run)
        self.load_gauges(run_id, step)
        self._refresh_ledger()

    @work(group="view", exclusive=True, exit_on_error=False)
    async def load_transcript(self, run_id: int) -> None:
        steps = await load_steps(self.store, run_id, limit=MAX_STEPS)
        self.post_message(self.TranscriptLoaded(run_id, steps, replace=True))

    @work(group="tail", exclusive=True, exit_on_error=False)
    async def load_tail(self, run_id: int, since: int) -> None:
        steps = await load_steps(self.store, run_id, since=since)
        self.post_message(self.TranscriptLoaded(run_id, steps, replace=False))

    @on_answer(TranscriptLoaded)
    def _on_transcript_loaded(self, message: TranscriptLoaded) -> None:
        if message.run_id != self.selected_run:
            return
        run = self.runs.get(message.run_id)
        with self.app.batch_update():
            if message.replace:
                self.transcript.show_run(message.run_id, message.steps, run.goal if run else "")
                if run is not None:
                    self.transcript.follow(run)
            else:
                self.transcript.add_steps(message.steps)

    @work(group="gauges", exclusive=True, exit_on_error=False)
    async def load_gauges(self, run_id: int, step: int | None) -> None:
        store = self.store
        row = await store.trace.latest_request(run_id, step)
        view = self.runs.get(run_id)
        workspace = view.workspace if view is not None else None
        if workspace is None:
            run = await store.runs.get(run_id)
            workspace = run.workspace if run is not None else None
        entries = chars = 0
        if workspace is not None:
            entries, chars = await store.notes.usage("workspace", workspace)
        self.post_message(
            self.GaugesLoaded(
                GaugeFigures(
                    run_id,
                    row.step if row else step,
                    row.ceiling_tokens if row else None,
                    row.est_tokens if row else None,
                    row.frame_tokens if row else None,
                    row.reported_tokens if row else None,
                    entries,
                    chars,
                    row.usage if row else None,
                    row.sections if row else (),
                    row.calibration if row else None,
                    row.cost if row else None,
                )
            )
        )

    @on_answer(GaugesLoaded)
    def _on_gauges_loaded(self, message: GaugesLoaded) -> None:
        if message.figures.run_id == self.selected_run:
            self._figures = message.figures
            self._refresh_gauges()

    def _refresh_gauges(self) -> None:
        # the core modules the gauges and the ledger read (~17 ms of dataclasses) load when a
        # run is first shown, not on the way to the panes
        from io_tui.core import MemoryLimits, usage_hit_rate

        run = self.runs.get(self.selected_run) if self.selected_run is not None else None
        if run is None:
            return
        budget = run.token_budget
        used = f"{run.tokens:,} / {budget:,} tok used" if budget else f"{run.tokens:,} tok used"
        self.run_gauge.update(
            run.tokens,
            budget,
            run.status if budget else f"{run.status}, no budget",
            figures=used,
            short=f"{run.tokens:,} tok",
        )
        figures = self._figures if self._figures and self._figures.run_id == run.id else None
        live = run.live and self.selected_step is None
        ceiling = run.ceiling_tokens if live or figures is None else figures.ceiling
        est = run.est_tokens if live or figures is None else figures.est
        frame = run.frame_tokens if live or figures is None else figures.frame
        reported = run.reported_tokens if live or figures is None else figures.reported
        step = figures.step if figures else None
        inside = None if est is None else est - (frame or 0)
        self.request_gauge.update(
            inside,
            ceiling,
            f"step {step}" if step else "",
            figures=None
            if inside is None or not ceiling
            else f"{inside:,} / {ceiling:,} tok of its ceiling",
            short=None if inside is None or not ceiling else f"{inside:,} / {ceiling:,} tok",
        )
        self._refresh_counted(est, reported)
        limits = MemoryLimits()
        entries = figures.memory_entries if figures else 0
        chars = figures.memory_chars if figures else 0
        self.memory_gauge.update(
            entries,
            limits.max_entries,
            "workspace",
            figures=f"{entries} / {limits.max_entries} notes · {chars:,} / {limits.max_chars:,} chars",
            short=f"{entries} note{'' if entries == 1 else 's'} · {chars:,} chars",
            ratio=max(entries / limits.max_entries, chars / limits.max_chars),
        )
        usage = figures.usage if figures else None
        rate = usage_hit_rate(usage)  # None: the provider reported no cache figures
        cost = figures.cost if figures else None
        against = cost.get("ratio") if cost else None  # the run's, so far, against naive
        run_cost = "" if against is None else f" · this run: {against:.2f}× re-sending everything"
        self.cache_gauge.update(
            None if rate is None else round(rate * 100),
            100,
            figures=(
                "no cache figures from the provider"
                if rate is None or usage is None
                else f"{rate:.0%} of {usage['prompt_tokens']:,} prompt tok read from cache"
            )
            + run_cost,
            short=(
                ("none reported" if rate is None else f"{rate:.0%} read from cache")
                if against is None
                else f"{against:.2f}× re-sending all"
            ),
            ratio=rate,
            alarm=False,
        )
        bar = self.context_bar
        bar.sent = sent_line(run) if live else ""
        if figures is None or figures.step is None or figures.est is None:
            bar.breakdown = None
        else:
            bar.breakdown = context_breakdown(
                figures.step,
                figures.sections,
                figures.est,
                figures.frame or 0,
                figures.ceiling or 0,
                figures.calibration,
            )

    def _refresh_counted(self, est: int | None, reported: int | None) -> None:
        """What the provider counted for the request, beside what io-tui estimated."""
        gauge = self.drift_gauge
        if reported is None or est is None:
            gauge.update(
                None, None, figures="no count from the provider yet", short="none yet", alarm=False
            )
            return
        gauge.update(
            reported,
            None,
            _estimate_note(est, reported),
            figures=f"{reported:,} tok by the provider",
            short=f"{reported:,}, {_estimate_note(est, reported, short=True)}",
            ratio=min(est, reported) / max(est, reported, 1),
            alarm=False,
        )

    # -- the progress ledger -------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")

    def _refresh_ledger(self) -> None:
        if self.has_class("-ledger") and self.selected_run is not None:
            self.load_ledger(self.selected_run)

    @work(group="ledger", exclusive=True, exit_on_error=False)
    async def load_ledger(self, run_id: int) -> None:
        from io_tui.core import ledger_of

        try:
            ledger = await ledger_of(self.store, run_id)
        except LookupError:
            ledger = None
        self.post_message(self.LedgerLoaded(run_id, ledger))

    @on_answer(LedgerLoaded)
    def _on_ledger_loaded(self, message: LedgerLoaded) -> None:
        if message.run_id == self.selected_run:
            self.ledger.show(message.run_id, message.ledger)

    def action_ledger(self) -> None:
        shown = not self.has_class("-ledger")
        self.set_class(shown, "-ledger")
        if shown:
            self._refresh_ledger()
        elif self.focused is self.ledger:
            self.run_tree.focus()

    # -- actions -------------------------------------------------------------------------------

    def x_does(self) -> str | None:
        """What ``x`` does to the selected run: ``interrupt`` a run this app drives, ``cancel``
        one no process drives (paused, interrupted), or nothing (None)."""
        run_id = self.selected_run
        if run_id is None:
            return None
        if self.host is not None and self.host.is_live(run_id):
            return "interrupt"
        run = self.runs.get(run_id)
        return "cancel" if run is not None and run.status in CANCELLABLE else None

    def shown_binding(self, binding: Binding) -> Binding:
        """``binding`` as the footer and the palette show it for the selected run: ``x`` says
        "Cancel" on a paused or interrupted run."""
        if binding.action == "interrupt" and self.x_does() == "cancel":
            return replace(binding, description=CANCEL_LABEL, tooltip=CANCEL_TIP)
        return binding

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        for key, active in bindings.items():
            shown = self.shown_binding(active.binding)
            if shown is not active.binding:
                bindings[key] = active._replace(binding=shown, tooltip=shown.tooltip)
        return bindings

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not self.ready:
            return False
        if action in {"inspect", "trace"}:
            return self.selected_run is not None
        if action in {"rewind", "fork", "whatif"}:
            return self.selected_run is not None and self.selected_step is not None
        if action == "undo_rewind":
            run = self.runs.get(self.selected_run) if self.selected_run is not None else None
            return run is not None and not run.live
        if action == "interrupt":
            return self.x_does() is not None
        if action == "resume":
            run = self.runs.get(self.selected_run) if self.selected_run is not None else None
            return run is not None and run.status == "interrupted"
        return True

    def action_inspect(self) -> None:
        from io_tui.ui.screens.inspector import InspectorScreen  # Pygments: when first opened

        if self.selected_run is None:
            return
        run = self.runs.get(self.selected_run)
        step = self.selected_step or (max(run.steps) if run and run.steps else 1)
        self.app.push_screen(InspectorScreen(self.store, self.selected_run, step))

    async def action_rewind(self) -> None:
        if self.selected_run is not None and self.selected_step is not None:
            await self.app.run_action(f"app.rewind_run({self.selected_run}, {self.selected_step})")

    async def action_undo_rewind(self) -> None:
        if self.selected_run is not None:
            await self.app.run_action(f"app.undo_rewind({self.selected_run})")

    async def action_fork(self) -> None:
        if self.selected_run is not None and self.selected_step is not None:
            await self.app.run_action(f"app.fork_run({self.selected_run}, {self.selected_step})")

    def action_whatif(self) -> None:
        """The inspector on the selected step's request, its "what if" opened."""
        from io_tui.ui.screens.inspector import InspectorScreen

        if self.selected_run is not None and self.selected_step is not None:
            screen = InspectorScreen(self.store, self.selected_run, self.selected_step, whatif=True)
            self.app.push_screen(screen)

    @on(Tree.NodeSelected, "#runs")
    def _on_step_chosen(self, event: Tree.NodeSelected[NodeRef]) -> None:
        """Enter on a step's row: what can be done from it (``StepMenu``)."""
        ref = event.node.data
        if ref is None or ref.step is None:
            return
        from io_tui.ui.screens.step_menu import StepMenu

        def chosen(action: str | None) -> None:
            if action is not None:
                self.call_later(self.run_action, action)

        self.app.push_screen(StepMenu(ref.run_id, ref.step), chosen)

    def action_trace(self) -> None:
        from io_tui.ui.screens.trace import TraceScreen

        if self.selected_run is not None:
            self.app.push_screen(TraceScreen(self.store, self.selected_run))

    def action_prompt(self) -> None:
        self.prompt.focus()

    def action_focus_tree(self) -> None:
        self.run_tree.focus()

    async def action_interrupt(self) -> None:
        """Interrupt the selected live run; cancel a paused or interrupted one (the app asks
        first: a paused run holds a request the operator deferred)."""
        run = self.runs.get(self.selected_run) if self.selected_run is not None else None
        if run is None:
            return
        if self.x_does() == "cancel":
            await self.app.run_action(f"app.cancel_run({run.id})")
        elif self.host is not None and self.host.interrupt(run.id):
            run.interrupt_requested = True
            self.transcript.follow(run)
            self.notify(f"interrupting run {run.id}…")

    async def action_resume(self) -> None:
        if self.selected_run is not None:
            await self.app.run_action(f"app.resume_run({self.selected_run})")

    def action_expand(self) -> None:
        self.transcript.set_all_expanded(self.transcript.has_collapsed_tools)

    @on(Input.Submitted, "#prompt")
    def _on_prompt(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        self.prompt.clear()
        run = self.runs.get(self.selected_run) if self.selected_run is not None else None
        if run is None:
            self.post_message(NewRunRequested(text))
            return
        if run.status in {"running", "asking", "paused"}:
            self.steer(run.id, text)
            run.queue_message(text)  # shown under its steps until a step carries it
            self.transcript.follow(run)
            self.notify(f"message queued for run {run.id}: delivered at its next step")
        else:
            request = NewRunRequest(task=text, workspace=_path(run.workspace), seed_run_id=run.id)
            self.post_message(StartRun(request))
            self.notify(f"follow-up on run {run.id} started as a new run")
        self.run_tree.focus()

    @work(group="db", exit_on_error=False)
    async def steer(self, run_id: int, text: str) -> None:
        await self.store.runs.add_operator_message(run_id, text)

    def _hand_back(self, run: RunView, *, selected: bool) -> None:
        """Messages queued for ``run`` that it ended without receiving are never dropped: they
        stay in its transcript marked "not delivered", and their text goes back into the prompt
        (when the run is selected and the prompt empty: enter sends it as a follow-up) or into
        a notification."""
        if run.live or run.status == "paused":
            return  # a paused run still gets them when it resumes
        lost = [m for m in run.queued if m.delivered_step is None and not m.returned]
        if not lost:
            return
        for message in lost:
            message.returned = True
        text = " ".join(m.text for m in lost)
        prompt = self.prompt
        if selected and not prompt.value:
            prompt.value = text
            self.notify(
                f"run {run.id} ended ({run.status}) before your message reached it; it is back in "
                "the prompt: enter sends it as a follow-up",
                severity="warning",
            )
        else:
            self.notify(f"not delivered to run {run.id} ({run.status}): {text}", severity="warning")


def _estimate_note(est: int, reported: int, *, short: bool = False) -> str:
    """How far io-tui's estimate was from the provider's count, in words."""
    said = "est." if short else f"estimated {est:,},"
    if not est or reported == est:
        return "est. exact" if short else f"estimated {est:,}"
    off = abs(reported - est) / est
    return f"{said} {off:.0%} {'low' if reported > est else 'high'}"


def _path(text: str) -> Path:
    return Path(text)


def sent_line(run: RunView) -> str:
    """The request in flight, as the budgets pane says it before its answer is recorded:
    ``step 1's request sent · ~2,619 tok (2,600 always sent) · waiting for the answer``."""
    step = run.in_flight()
    if step is None or step.started_at is None or run.est_tokens is None:
        return ""
    frame = f" ({run.frame_tokens:,} always sent)" if run.frame_tokens else ""
    doing = "the answer is streaming" if step.writing else "waiting for the answer"
    return f"step {step.step}'s request sent · ~{run.est_tokens:,} tok{frame} · {doing}"
