"""Human decisions in the TUI: a Future inside a message, answered by a modal pushed from a worker.

- ``UIApprover`` is the runs' Approver: it posts ``ApprovalRequested`` with a Future and awaits it.
  An app that is closed (or closing) cannot ask anyone, so the answer is a defer: the run pauses
  durably and the request waits in the inbox.
- ``ApprovalDesk`` (one per app, built by it with its store, run host and ``[ui]`` settings:
  ``IoApp.desk``) answers: it rings the bell and marks
  the title when a run starts asking, queues modals so that several runs asking at once are shown
  one at a time and none is lost, resolves each Future exactly once (guarded at shutdown), and
  decides inbox requests — resolving a live run's Future, or having the app's run host resume a
  paused run (also one paused in an earlier session).
- A live ask decided elsewhere first (another cockpit, ``io-tui decide``) is heard from the store
  (``store.approvals.wait_decided``: announced on PostgreSQL, read every half second on
  SQLite): the run gets that decision, its modal goes, and a notification says who decided.
  The inbox badge is counted again as the store follows its runs, and every ``poll_interval``.
- When the operator last pressed a key is the app's ``attention.Activity``, which the desk reads.
- No ask takes keys typed for something else: while the operator types (an input has focus and
  text, or a key arrived within ``typing_quiet_ms``) a new ask waits as a banner in the title and
  a notification naming the inbox key; while the inbox or another approval is open it waits its
  turn. Its modal opens once the operator is idle and nothing else is open, or from the inbox. The modal itself ignores keys while it arms
  (``ApprovalScreen``). Letter shortcuts (``y e a n d``) exist only with ``[ui]
  letter_shortcuts``: ``letter_keymap`` adds them to the digits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.notifications import Notification, Notify
from textual.widgets import Input, TextArea

from io_tui.config import UISettings
from io_tui.core import (
    ApprovalRequest,
    Decision,
    DecisionKind,
    Store,
    operator,
    terminal_notice,
)
from io_tui.ui.attention import Activity
from io_tui.ui.hosts import HostError, RunHost
from io_tui.ui.messages import ApprovalRequested, RunEnded
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.inbox import InboxScreen
from io_tui.ui.state import ended_as
from io_tui.ui.terminal_text import plain

ASKING_MARK = "asking"
TYPING = "typing"
OPERATOR = operator("io-tui")  # who decides in this cockpit, as the store records it
HOLD_POLL_S = 0.1  # how often a held ask looks again whether the operator is idle

# The optional letter aliases of the decision keys (``[ui] letter_shortcuts``), by binding id.
LETTERS = {"approve": "y", "rewrite": "e", "remember": "a", "deny": "n", "defer": "d"}


def letter_keymap() -> dict[str, str]:
    """Keymap entries giving the approval modal's and the inbox's decision bindings their letter
    as well as their own keys (``approval.approve`` → ``1,y``)."""
    keymap: dict[str, str] = {}
    for screen in (ApprovalScreen, InboxScreen):
        for binding in screen.BINDINGS:
            if not isinstance(binding, Binding) or binding.id is None:
                continue
            letter = LETTERS.get(binding.id.split(".", 1)[1])
            if letter is not None:
                keymap[binding.id] = f"{binding.key},{letter}"
    return keymap


def settle(future: asyncio.Future[Decision], decision: Decision) -> bool:
    """Set a decision unless the future is already settled. True when this call settled it."""
    if future.done():
        return False
    future.set_result(decision)
    return True


class UIApprover:
    """The Approver runs in the TUI use."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    async def decide(self, request: ApprovalRequest) -> Decision:
        if not self.app.is_running:
            return Decision.defer(decided_by="io-tui (app closed)")
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        if not self.app.post_message(ApprovalRequested(request, future)):
            return Decision.defer(decided_by="io-tui (app closed)")
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The run itself is being cancelled: nobody will read an answer now.
            settle(future, Decision.defer(decided_by="io-tui (run cancelled)"))
            raise


class ApprovalDesk:
    """``app`` shows the modals and runs the desk's workers; ``inbox_key`` names the key that
    opens the inbox (as remapped) and ``withdraw`` takes a notification back off the screen."""

    def __init__(
        self,
        app: App[Any],
        *,
        store: Store,
        host: RunHost,
        ui: UISettings,
        activity: Activity,
        inbox_key: Callable[[], str],
        withdraw: Callable[[Notification], None],
    ) -> None:
        self.app = app
        self.store = store
        self.host = host
        self.ui = ui
        self.activity = activity
        self._inbox_key = inbox_key
        self._withdraw = withdraw
        self.live: dict[int, asyncio.Future[Decision]] = {}
        self.queue: list[int] = []  # approval ids waiting for or showing a modal, oldest first
        self._lock = asyncio.Lock()
        self._base_title: str | None = None
        self.showing: ApprovalScreen | None = None  # the modal on display, if any
        self.inbox_count = 0  # pending requests in the store, across all runs
        self.held: dict[int, ApprovalRequest] = {}  # asks shown as a banner, the operator busy
        self.toasts: dict[int, Notification] = {}  # the banner's notification, by approval id
        self.pending: set[int] | None = None  # the pending requests last read (None: not yet)
        self.decided_here: set[int] = set()  # decided by this operator: not news to them
        self.told: set[int] = set()  # decided elsewhere, and the operator told so
        self.rung: set[int] = set()  # asks the terminal was told of (once each)

    @property
    def clock(self) -> Callable[[], float]:
        """The operator's clock (``Activity.clock``): the modals arm by it."""
        return self.activity.clock

    @property
    def arm_s(self) -> float:
        return self.ui.approval_arm_ms / 1000

    # -- is the operator busy? --

    def busy(self) -> str | None:
        """Why a modal must not open now (None: the operator is idle and nothing else is open)."""
        app = self.app
        if any(isinstance(screen, ApprovalScreen) for screen in app.screen_stack):
            return "deciding"
        if isinstance(app.screen, InboxScreen):
            return "in the inbox"
        focused = app.focused
        if isinstance(focused, Input) and focused.value:
            return TYPING
        if isinstance(focused, TextArea) and focused.text:
            return TYPING
        if self.activity.since_key() < self.ui.typing_quiet_ms / 1000:
            return TYPING
        return None

    def banner(self, request: ApprovalRequest) -> str:
        """``run 3 asks: write a.txt — f2 to review``."""
        what = "call" if request.tool.startswith("mcp__") else request.act.value
        return (
            f"run {request.run_id} asks: {what} {plain(request.target)}"
            f" — {self._inbox_key()} to review"
        )

    # -- asks from live runs --

    def ask(self, request: ApprovalRequest, future: asyncio.Future[Decision]) -> None:
        """Queue a modal for ``request``; call from the message handler (not a worker).

        When the operator is busy the ask is held: a banner (title and notification) names it and
        the inbox key, and its modal waits until the operator is idle."""
        self.live[request.id] = future
        self.queue.append(request.id)
        if self.busy() == TYPING:
            self.held[request.id] = request
            toast = Notification(
                self.banner(request),
                "Approval waiting",
                "warning",
                self.app.NOTIFICATION_TIMEOUT,
                markup=False,
            )
            self.toasts[request.id] = toast
            self.app.post_message(Notify(toast))  # what App.notify does, keeping the handle
        self._announce(ring=self._first_news(request))
        self.reload_inbox()
        self.app.run_worker(
            self._show(request, future),
            name=f"approval-{request.id}",
            group="approvals",
            exit_on_error=False,
        )
        self.app.run_worker(
            self._until_decided_elsewhere(request, future),
            name=f"approval-{request.id}-elsewhere",
            group="approvals",
            exit_on_error=False,
        )

    async def _show(self, request: ApprovalRequest, future: asyncio.Future[Decision]) -> None:
        try:
            async with self._lock:
                await self._until_idle(request, future)
                if future.done():  # decided from the inbox while it waited
                    return
                if self.held.pop(request.id, None) is not None:
                    self._announce()
                self._withdraw_toast(request.id)  # it would cover the modal's keys
                screen = await ApprovalScreen.prepared(  # the file read: its diff is right
                    request,
                    store=self.store,
                    position=self._position(request.id),
                    arm_s=self.arm_s,
                    clock=self.clock,
                )
                if future.done():  # decided elsewhere while the file was read
                    return
                self.showing = screen
                future.add_done_callback(lambda _: self._withdraw_modal(screen))
                try:
                    decision = await self.app.push_screen_wait(screen)
                finally:
                    self.showing = None
                if settle(future, self.signed(decision)):
                    self.decided_here.add(request.id)
        finally:
            settle(future, Decision.defer(decided_by="io-tui (closed before a decision)"))
            self.held.pop(request.id, None)
            self._withdraw_toast(request.id)
            self.live.pop(request.id, None)
            if request.id in self.queue:
                self.queue.remove(request.id)
            self._announce()

    async def _until_decided_elsewhere(
        self, request: ApprovalRequest, future: asyncio.Future[Decision]
    ) -> None:
        """While the run waits on ``future``, wait for ``request`` to be decided in the store
        (``wait_decided``): by another operator (another cockpit, the CLI), or by the run itself
        (a server's request nobody answered in time). The run gets that decision, its modal
        goes, and the operator is told."""
        elsewhere = asyncio.ensure_future(self.store.approvals.wait_decided(request.id))
        try:
            await asyncio.wait((elsewhere, future), return_when=asyncio.FIRST_COMPLETED)
        finally:
            elsewhere.cancel()
            with contextlib.suppress(BaseException):  # its listening connection closed
                await elsewhere
        if elsewhere.cancelled() or elsewhere.exception() is not None:
            return  # answered here first, or the store could not be read: nothing to say
        decision = elsewhere.result()
        settle(future, decision)
        self._decided_elsewhere(request, decision)

    def _withdraw_modal(self, screen: ApprovalScreen) -> None:
        """The run stopped waiting while its modal showed (its harness process died, it was
        cancelled): the modal goes, with any editor open over it, rather than take an answer
        nobody will read. The request stays in the inbox."""
        if self.showing is not screen or screen not in self.app.screen_stack:
            return
        while self.app.screen is not screen:
            self.app.screen.dismiss(None)  # their callbacks ignore None
        screen.dismiss(Decision.defer(decided_by="io-tui (the run stopped waiting)"))

    async def _until_idle(self, request: ApprovalRequest, future: asyncio.Future[Decision]) -> None:
        """Wait while the operator is busy (or until the request is decided elsewhere); an ask
        that waits for the operator's typing is held (its banner in the title)."""
        while not future.done() and (reason := self.busy()) is not None:
            if reason == TYPING and request.id not in self.held:
                self.held[request.id] = request
                self._announce()
            await asyncio.wait([future], timeout=HOLD_POLL_S)

    def _withdraw_toast(self, approval_id: int) -> None:
        toast = self.toasts.pop(approval_id, None)
        if toast is not None:
            self._withdraw(toast)  # a no-op once it has timed out

    def reload_inbox(self) -> None:
        for screen in self.app.screen_stack:
            if isinstance(screen, InboxScreen):
                screen.load()

    def _position(self, approval_id: int) -> str:
        if approval_id not in self.queue:
            return ""
        return f"{self.queue.index(approval_id) + 1} of {len(self.queue)}"

    def _first_news(self, request: ApprovalRequest) -> ApprovalRequest | None:
        """``request``, the first time the terminal is to be told of it; else None."""
        if request.id in self.rung:
            return None
        self.rung.add(request.id)
        return request

    def _announce(self, *, ring: ApprovalRequest | None = None) -> None:
        """Tell the terminal when a run starts asking (``ring``: the bell, and a desktop
        notification that reaches an operator in another window); mark the title while any
        run here asks (Settings.ui)."""
        if self.showing is not None:
            self.showing.set_position(self._position(self.showing.request.id))
        if self._base_title is None:
            self._base_title = self.app.title
        if ring is not None:
            what = "call" if ring.tool.startswith("mcp__") else ring.act.value
            notice = terminal_notice(
                f"io-tui run {ring.run_id} asks",
                f"{what} {plain(ring.target)}",
                self.ui.notify_on_ask,
                bell=self.ui.bell_on_ask,
            )
            if notice and not self.app.is_headless and self.app._driver is not None:
                self.app._driver.write(notice)  # App.bell's way: no public raw write
        if self.ui.title_on_ask:
            self.app.title = self.title_text()

    def title_text(self) -> str:
        """The title with the inbox badge and the asking mark: ``io-tui · inbox 2 · 1 asking``;
        while asks are held, the banner of the oldest: ``run 3 asks: write a.txt — f2 to
        review``."""
        parts = [self._base_title or self.app.title]
        if self.inbox_count:
            parts.append(f"inbox {self.inbox_count}")
        if self.held:
            oldest = self.held[min(self.held)]
            more = len(self.queue) - 1
            parts.append(self.banner(oldest) + (f" (+{more} asking)" if more else ""))
        elif self.queue:
            parts.append(f"{len(self.queue)} {ASKING_MARK}")
        return " · ".join(parts)

    def attach(self, poll_interval: float | None = 2.0) -> None:
        """Keep the inbox badge (in the title) current: now, and every ``poll_interval``."""
        if self._base_title is None:
            self._base_title = self.app.title
        self.refresh_count()
        if poll_interval:
            self.app.set_interval(poll_interval, self.refresh_count)

    def refresh_count(self) -> None:
        self.app.run_worker(self._count(), group="inbox-count", exclusive=True, exit_on_error=False)

    async def _count(self) -> None:
        try:
            records = {r.request.id: r for r in await self.store.approvals.pending()}
        except Exception:
            return
        pending = set(records)
        known = self.decided_here | self.told
        gone = self.pending - pending - known if self.pending is not None else set()
        # asks of runs elsewhere (a worker, io-tui run, an ACP session) that arrived since the
        # last count: the terminal is told of them too, as of this app's own
        arrived = pending - self.pending if self.pending is not None else set()
        self.pending = pending
        news = [i for i in sorted(arrived) if i not in self.live and i not in self.rung]
        ring = self._first_news(records[news[-1]].request) if news else None
        self.rung.update(news)
        if len(pending) != self.inbox_count or ring is not None:
            self.inbox_count = len(pending)
            self._announce(ring=ring)
        if gone:  # not in this worker: the next count (exclusive) would cancel it
            self.app.run_worker(self._left_the_inbox(sorted(gone)), exit_on_error=False)

    async def _left_the_inbox(self, approval_ids: list[int]) -> None:
        """Requests pending a moment ago that left the inbox: those decided by another operator
        (another cockpit, the CLI) are said."""
        for approval_id in approval_ids:
            try:
                record = await self.store.approvals.get(approval_id)
            except Exception:
                return
            if record is not None and record.decision is not None:
                self._decided_elsewhere(record.request, record.decision)

    def _decided_elsewhere(self, request: ApprovalRequest, decision: Decision) -> None:
        """``request`` was decided elsewhere first: a live run waiting on it gets ``decision``
        (its modal goes), and the operator is told who decided, and how, once."""
        if request.id in self.decided_here or request.id in self.told:
            return
        self.told.add(request.id)
        live = self.live.get(request.id)
        if live is not None:
            settle(live, decision)
        self.app.notify(
            f"request {request.id} (run {request.run_id}: {request.act.value}"
            f" {plain(request.target)}): {decision.kind.value} by {decision.decided_by}",
            title="Decided elsewhere",
        )

    def settled_here(self, approval_ids: Iterable[int]) -> None:
        """Requests this operator decided without the desk (cancelling a run denies its
        pending ones): no "decided elsewhere" for them here, and the badge and inbox follow."""
        self.decided_here.update(approval_ids)
        self.refresh_count()
        self.reload_inbox()

    def shutdown(self) -> None:
        """Answer every open ask with a defer (the runs pause durably)."""
        for future in list(self.live.values()):
            settle(future, Decision.defer(decided_by="io-tui (shutdown)"))

    # -- decisions from the inbox --

    @staticmethod
    def signed(decision: Decision) -> Decision:
        """A human's decision names this operator (``alice@laptop (io-tui)``): every other
        cockpit says who decided."""
        if decision.decided_by != "human":
            return decision
        return replace(decision, decided_by=OPERATOR)

    async def decide_pending(self, approval_id: int, decision: Decision) -> str:
        """Decide a pending request from the inbox; returns a line for a notification.

        A request a live run is waiting on is answered through its Future; any other (a paused
        run, from this session or an earlier one) goes to the app's run host, which records the
        decision with core ``decide()`` and resumes the run under its id.
        """
        decision = self.signed(decision)
        future = self.live.get(approval_id)
        if future is not None and not future.done():
            settle(future, decision)
            self.decided_here.add(approval_id)
            return f"request {approval_id}: {decision.kind.value}"
        if decision.kind is DecisionKind.DEFER:
            return f"request {approval_id} stays pending"
        self.decided_here.add(approval_id)
        try:
            result = await self.host.decide(approval_id, decision)
        except HostError as exc:  # the core's message names the request already
            said = str(exc)
            return (
                said
                if said.startswith(f"request {approval_id} ")
                else f"request {approval_id}: {said}"
            )
        self.refresh_count()
        if result is None:
            return f"request {approval_id}: {decision.kind.value} recorded"
        self.app.post_message(RunEnded(result))
        return (
            f"request {approval_id}: {decision.kind.value}; run {result.run_id} "
            f"{ended_as(result.status, result.outcome.value)}"
        )
