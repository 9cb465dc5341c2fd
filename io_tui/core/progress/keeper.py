"""Keeping a run's progress ledger, and reading any run's back.

A live run's ``ProgressKeeper`` is fed each batch of events, with the observations and the
model's text committed with it, right after the batch is stored (``RunState.flush_events``,
``RunState.commit_step``); when what the ledger says changed, it is saved as a new revision
(``store.progress``), the modified files' digests taken then. The first batch of a run, or of a
resumed one, folds everything the store holds instead, so a resume in any process picks the
ledger up where it was. ``ledger_of`` reads any run's ledger: its newest revision, or one folded
from its events for a run that has none (a store from before schema 7).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.core.errors import WorkspaceError
from io_tui.core.events import RunEvent
from io_tui.core.ledger import Observation, content_digest
from io_tui.core.progress.model import Change, ProgressLedger
from io_tui.core.store import Store

# The fold, the contract, the workspace, the summaries' agreement and the ledger's text are a
# live run's (or a run's from before schema 7, folded now): reading a run's newest revision
# (``ledger_of``, as ``io-tui trace`` does) loads none of them (issue 34).
if TYPE_CHECKING:
    from io_tui.core.boundary.workspace import Workspace
    from io_tui.core.context.summary import Agreement
    from io_tui.core.contract import Continuation, TaskContract
    from io_tui.core.progress.fold import Fold

FILE_TOOLS = ("write_file", "edit_file")


@dataclass(frozen=True, slots=True)
class Revision:
    """A new revision of a run's ledger, to be saved (``store.progress``): the ledger, and its
    JSON with its digest."""

    ledger: ProgressLedger
    data: dict[str, Any]

    @property
    def step(self) -> int:
        return self.ledger.step

    @property
    def digest(self) -> str:
        return str(self.data["digest"])

    @property
    def row(self) -> tuple[int, str, dict[str, Any]]:
        """What the store saves: step, digest, ledger."""
        return self.step, self.digest, self.data


class ProgressKeeper:
    def __init__(self, store: Store, run_id: int, contract: TaskContract, workspace: Workspace):
        from io_tui.core.progress.fold import Fold

        self.store = store
        self.workspace = workspace
        self.fold = Fold(run_id, contract)
        self.current: ProgressLedger | None = None  # the newest revision (``ledger()``)
        self._number = 0  # ``current``'s revision number, given it when it is asked for
        self._loaded = False
        self._digests: dict[str, str] = {}  # a write's handle → the file's digest after it
        self._saved: str | None = None  # the digest of ``current``, the newest revision
        self._unsettled = False  # ``prepare`` left the revision to ``settle``
        self._said: tuple[object, ...] | None = None  # what ``saved``'s says (``says``)
        # the ledger as last folded says what ``current`` says: while the fold has not
        # ``moved`` since, the next batch's ledger says it too, and is not built
        self._clean = False
        self._pending: Revision | None = None  # the revision last given, not saved yet

    async def take(
        self,
        events: Sequence[RunEvent],
        observations: Iterable[Observation] = (),
        text: str = "",
        step: int = 0,
    ) -> None:
        """Fold a batch the store has just written, and save the ledger if it changed."""
        if not self._loaded:
            await self._load()  # the store holds this batch too
        else:
            self._fold(events, observations, text, step)
        await self.settle()

    @property
    def loaded(self) -> bool:
        """Whether the keeper has folded what the store holds of its run: its first batch
        folds the store, so it goes to ``take`` once stored; a later one may be ``prepare``d."""
        return self._loaded

    def prepare(
        self,
        events: Sequence[RunEvent],
        observations: Iterable[Observation] = (),
        text: str = "",
        step: int = 0,
    ) -> Revision | None:
        """Fold a batch about to be stored (a loaded keeper's), with nothing awaited: the new
        revision to save in the batch's own transaction (``saved`` once it is committed), or
        None. None when the ledger says what its newest revision says, or when a file it names
        has no digest yet: ``settle`` takes that, and saves the revision, once the batch is
        stored. A batch that is not stored after all must ``unload`` the keeper."""
        assert self._loaded
        self._fold(events, observations, text, step)
        if self._clean and not self.fold.moved:
            return None  # nothing the ledger says has changed since it said what is saved
        ledger = self._folded()
        if missing(ledger, self._digests):
            self._unsettled = True
            return None
        return self._revision(filled(ledger, self._digests))

    async def settle(self) -> None:
        """Save the ledger as folded so far, if it changed (``take``, or after a ``prepare``
        that could not give the revision: its digests taken first)."""
        self._unsettled = False
        ledger = await with_digests(self._folded(), self.workspace, self._digests)
        revision = self._revision(ledger)
        if revision is not None:
            number = await self.store.progress.save(self.fold.run_id, *revision.row)
            self.saved(revision, number)

    @property
    def unsettled(self) -> bool:
        """A ``prepare``d batch left its revision to ``settle``."""
        return self._unsettled

    def _fold(
        self, events: Sequence[RunEvent], observations: Iterable[Observation], text: str, step: int
    ) -> None:
        fold = self.fold
        for obs in observations:
            fold.texts[obs.call_id] = obs.text
        fold.note_model(step, text)
        for event in events:
            fold.apply(event.kind.value, event.step, event.detail)

    def _folded(self) -> ProgressLedger:
        """The fold's ledger, built now: ``moved`` from here on says whether it changed."""
        self.fold.moved = self._clean = False
        self._pending = None
        return self.fold.ledger()

    def _revision(self, ledger: ProgressLedger) -> Revision | None:
        if ledger.says() == self._said:
            self._clean = True
            return None  # says what the newest revision says: the same JSON, the same digest
        data = ledger.to_json()  # hashed once a batch: the whole ledger as JSON
        if data["digest"] == self._saved:
            self._clean = True
            return None
        self._pending = Revision(ledger, data)
        return self._pending

    def saved(self, revision: Revision, number: int) -> None:
        """``revision`` is stored, as revision ``number``."""
        self.current, self._number, self._saved = revision.ledger, number, revision.digest
        # what it says, without its step and number, which its digest leaves out: a ledger
        # that says the same has its digest, with no JSON made
        self._said = revision.ledger.says()
        self._clean = revision is self._pending  # the newest ledger folded: saved now

    def unload(self) -> None:
        """A batch folded by ``prepare`` may not be stored: the next batch folds the store
        again (what it holds, nothing else)."""
        self._loaded = self._unsettled = self._clean = False
        self._said = None

    def ledger(self) -> ProgressLedger:
        """The ledger as of the last batch (digests as of its revision)."""
        current = self.current
        if current is None:
            return self.fold.ledger()
        if current.revision != self._number:  # numbered when asked for, not at every save
            current = self.current = replace(current, revision=self._number)
        return current

    def agreement(self) -> Agreement:
        """What the run's compaction summaries must agree with: this ledger."""
        from io_tui.core.context.summary import Agreement
        from io_tui.core.progress.render import OBJECTIVE_ABOVE, render_ledger

        ledger = self.ledger()
        above = render_ledger(ledger, objective=OBJECTIVE_ABOVE)
        return Agreement(render_ledger(ledger), ledger.must_name(), above)

    async def _load(self) -> None:
        store, run_id = self.store, self.fold.run_id
        self.fold = await fold_from_store(store, run_id, self.fold.contract)
        latest = await store.progress.latest(run_id)
        if latest is not None:
            self.current, self._saved = ProgressLedger.from_json(latest.ledger), latest.digest
            self._number = self.current.revision
            self._digests = {c.ref: c.digest for c in self.current.changes if c.tool in FILE_TOOLS}
        self._loaded = True


async def with_digests(
    ledger: ProgressLedger, workspace: Workspace, known: dict[str, str]
) -> ProgressLedger:
    """The ledger with each modified file's digest, taken once per write (``known``: a write's
    handle → the digest taken after it, filled in here)."""
    needed = missing(ledger, known)
    if needed:
        found = await asyncio.to_thread(_digests, workspace, [c.resource for c in needed])
        known |= {c.ref: d for c, d in zip(needed, found, strict=True)}
    return filled(ledger, known)


def missing(ledger: ProgressLedger, known: dict[str, str]) -> list[Change]:
    """The ledger's file changes whose digest is not taken yet."""
    return [c for c in ledger.changes if c.tool in FILE_TOOLS and c.ref not in known]


def filled(ledger: ProgressLedger, known: dict[str, str]) -> ProgressLedger:
    """The ledger with the digests ``known`` (one for each file change it holds)."""
    if not any(c.tool in FILE_TOOLS and c.digest != known[c.ref] for c in ledger.changes):
        return ledger  # nothing to fill in: no copy
    changes = tuple(
        replace(c, digest=known[c.ref]) if c.tool in FILE_TOOLS else c for c in ledger.changes
    )
    return replace(ledger, changes=changes)


def _digests(workspace: Workspace, paths: list[str]) -> list[str]:
    """``content_digest`` of each file as it is now; "" for one that is gone or unreadable."""
    out = []
    for path in paths:
        try:
            out.append(content_digest(workspace.resolve(path).read_bytes()))
        except (OSError, WorkspaceError):
            out.append("")
    return out


async def fold_from_store(store: Store, run_id: int, contract: TaskContract) -> Fold:
    """The fold of everything the store holds of a run."""
    from io_tui.core.progress.fold import Fold

    fold = Fold(run_id, contract)
    fold.texts = {o.call_id: o.text for o in await store.trace.observations(run_id)}
    steps = await store.trace.steps_after(run_id, 0, limit=8)
    for row in steps:
        fold.note_model(row.step, row.text)
    for event in await store.trace.events(run_id):
        fold.apply(event.kind, event.step, event.detail)
    return fold


async def ledger_of(store: Store, run_id: int) -> ProgressLedger:
    """A run's ledger: its newest revision, or, without one, folded from its events now (its
    files' digests as they are now). ``LookupError`` when there is no such run."""
    latest = await store.progress.latest(run_id)
    if latest is not None:
        return ProgressLedger.from_json(latest.ledger)
    return await _folded_now(store, run_id)


async def _folded_now(store: Store, run_id: int) -> ProgressLedger:
    """The ledger of a run with no revision, folded from its events now."""
    from io_tui.core.boundary.workspace import Workspace
    from io_tui.core.contract import TaskContract, contract_from_json

    row = await store.runs.get(run_id)
    if row is None:
        raise LookupError(f"no run {run_id} in {store.path}")
    try:
        contract = contract_from_json(row.contract)
    except (KeyError, TypeError, ValueError):  # a contract as an early store wrote it
        contract = TaskContract(row.goal, Path(row.workspace))
    ledger = (await fold_from_store(store, run_id, contract)).ledger()
    try:
        workspace = Workspace(contract.workspace)
    except WorkspaceError:
        return ledger
    return await with_digests(ledger, workspace, {})


async def continuation(store: Store, run_id: int) -> Continuation:
    """What a run that continues ``run_id`` carries in its first request: that run's ledger."""
    from io_tui.core.contract import Continuation
    from io_tui.core.progress.render import render_ledger

    ledger = await ledger_of(store, run_id)
    return Continuation(run_id, ledger.revision, ledger.digest, render_ledger(ledger, carried=True))
