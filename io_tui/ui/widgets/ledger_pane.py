"""The progress ledger pane: the selected run's ledger (``core/progress``) beside its transcript.

The ledger arrives whole from the store (``ledger_of``) and is shown as its text, one heading per
part: failures and the next safe action stand out; nothing of it is read as markup. Its title
names the run, the revision and the digest, so what the pane shows can be matched with
``io-tui trace RUN --ledger`` and with what a continued run's first request carried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.getters import query_one
from textual.widgets import Static

if TYPE_CHECKING:
    from io_tui.core import ProgressLedger


def ledger_content(ledger: ProgressLedger) -> Content:
    """The ledger's text, styled by line: the headings, what failed, the next safe action. Its
    long opening line becomes a short one (the title names the run and revision), and the next
    safe action comes first, where a glance finds it."""
    from io_tui.core import render_ledger  # loaded with the ledger (``ledger_of``), not the pane

    lines = render_ledger(ledger).splitlines()[1:]
    action = next(i for i, line in enumerate(lines) if line.startswith("Next safe action:"))
    lines.insert(0, lines.pop(action))
    outcome = f", {ledger.outcome}" if ledger.outcome else ""
    head = f"{ledger.status}{outcome} · through step {ledger.step} · digest {ledger.digest}"
    styled = [Content.styled(head, "$text-muted")]
    for line in lines:
        if line.startswith("Next safe action:"):
            head, _, rest = line.partition(":")
            styled.append(Content.assemble((head + ": ", "bold $warning"), rest.strip()))
        elif not line.startswith("- ") and line.endswith(":"):
            styled.append(Content.styled(line, "bold $primary"))
        elif "FAILED" in line or (line.startswith("- ") and " failed at step " in line):
            styled.append(Content.styled(line, "$error"))
        else:
            styled.append(Content(line))
    return Content("\n").join(styled)


class LedgerPane(VerticalScroll):
    """The selected run's progress ledger, scrollable."""

    DEFAULT_CSS = """
    LedgerPane { border: round $panel; border-title-color: $primary; padding: 0 1; }
    LedgerPane:focus { border: round $primary; }
    LedgerPane #ledger-text { width: 1fr; }
    """

    text = query_one("#ledger-text", Static)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Ledger"
        self.run_id: int | None = None
        self.ledger: ProgressLedger | None = None

    def compose(self) -> ComposeResult:
        yield Static("select a run to see its progress ledger", id="ledger-text")

    def show(self, run_id: int, ledger: ProgressLedger | None) -> None:
        """``ledger`` of run ``run_id``; None: the run is not in the store."""
        if ledger is not None and ledger == self.ledger and run_id == self.run_id:
            return
        self.run_id, self.ledger = run_id, ledger
        if ledger is None:
            self.border_title = "Ledger"
            self.text.update(f"run {run_id} has no ledger")
            return
        self.border_title = f"Ledger · run {run_id} · rev {ledger.revision}"
        self.text.update(ledger_content(ledger))
