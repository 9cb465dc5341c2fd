"""``io-tui trace RUN --lifecycle CALL_ID|TEXT``: why did it forget X?

Each entry the query names (a call id, or text in a target, a call's arguments or a recorded
result), followed across the run's requests, then the compaction ledger of what each summary
replaced (``core/steering/lifecycle.py``).
"""

from __future__ import annotations

from typing import Any

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, counted, error, print_json
from io_tui.core import Lifecycle, LifecycleReport, lifecycles


def print_lifecycle(trace: dict[str, Any], query: str, as_json: bool) -> int:
    report = lifecycles(trace, query)
    if as_json:
        print_json(report.to_json())
        return EXIT_OK if report.matches else EXIT_FAILED
    if not report.matches:
        error(
            f"run {trace['run']['id']} has no entry matching {query!r} (searched its call"
            " ids, then the targets, arguments and recorded results of its tool calls)"
        )
        return EXIT_FAILED
    for line in lifecycle_lines(trace["run"]["id"], report):
        print(line)
    return EXIT_OK


def lifecycle_lines(run_id: int, report: LifecycleReport) -> list[str]:
    count = len(report.matches) + report.more
    lines = [f"run {run_id} · {report.query!r}: {count} {'entry' if count == 1 else 'entries'}"]
    for entry in report.matches:
        lines += ["", *entry_lines(entry)]
    if report.more:
        lines.append(f"\n… and {report.more} more (name one by its call id)")
    lines += ["", "── compaction ledger " + "─" * 56, *ledger_lines(report)]
    return lines


def entry_lines(entry: Lifecycle) -> list[str]:
    lines = [
        f"{entry.call_id} · step {entry.step} · {entry.call} (matched by {entry.matched})",
        f"  {entry.story()}",
    ]
    for phase in entry.phases:
        requests = f"{phase.requests} request{'s' if phase.requests != 1 else ''}"
        reason = f" · {phase.reason}" if phase.reason and phase.reason != phase.label() else ""
        lines.append(f"  {phase.span():<14} {phase.label():<36} {requests:>12}{reason}")
    for recall in entry.recalls:
        page = "" if recall.offset is None else f", offset {recall.offset:,}"
        page += "" if recall.limit is None else f", limit {recall.limit:,}"
        lines.append(f"  recalled by handle at step {recall.step} ({recall.call_id}{page})")
    if any(p.summary is not None for p in entry.phases):
        named = ", ".join(str(k) for k in entry.named_by) or "none"
        lines.append(f"  summaries whose text names {entry.target}: {named}")
    return lines


def ledger_lines(report: LifecycleReport) -> list[str]:
    if not report.ledger:
        return ["no summary: nothing of this run was folded"]
    lines = []
    for fold in report.ledger:
        rewrote = f", rewrote summary {fold.rewrote}" if fold.rewrote is not None else ""
        lines.append(
            f"summary {fold.through} (steps {fold.first}–{fold.through}, {fold.source or '?'}"
            f"{rewrote}) · first sent for step {fold.written_at} · carried by"
            f" {counted(fold.carried_by, 'request')} · {fold.est_tokens:,} tok"
        )
        lines.append(f"  replaced: {fold.replaced_text()}")
    return lines
