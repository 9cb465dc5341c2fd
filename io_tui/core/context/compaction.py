"""Compaction, the last rung: fold old steps into one summary (DESIGN §3.2, step 6).

When the observed part of a request passes ``Compaction.threshold`` of its ceiling, every step
older than the newest ``keep_newest`` observations is folded into a summary written under the
summary contract (``summary.py``). The summary is bought once, stored, and reused by every later
request and across resume; the next fold rewrites it together with the newly folded steps.
Without a summarizer (or when it fails), the deterministic digest (``digest.py``) stands in.
Where the request before the fold still shows the steps to fold, the summary request repeats it
to share its prompt cache (``Shared``, ``summary.shared_summary_request``).

No I/O besides the injected summarizer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from io_tui.core.context.digest import digest
from io_tui.core.context.frame import schema_tokens
from io_tui.core.context.live import LiveSteps
from io_tui.core.context.stubs import cut, what
from io_tui.core.context.summary import (
    Agreement,
    FoldResult,
    FoldStep,
    Summarizer,
    Summary,
    agree,
    render_fold_notes,
    shared_summary_request,
    summary_request,
)
from io_tui.core.context.turns import COMPACT_CHARS, clip, message_tokens
from io_tui.core.contract import CHARS_PER_TOKEN, Compaction
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import CompletionRequest, ErrorKind, ProviderError, ToolSpec
from io_tui.core.providers.messages import Message

AFTER_FOLD = 0.625  # of the threshold: where a fold must bring the request back to


# -- when to fold ---------------------------------------------------------------------------


def fold_due(
    demand_tokens: int,
    kept_tokens: int,
    ceiling_tokens: int,
    policy: Compaction,
    *,
    foldable: bool,
    force: bool = False,
) -> bool:
    """Whether this request folds.

    ``demand_tokens`` is what carrying everything live would cost; ``kept_tokens`` what stays
    after the fold (memory and the newest ``keep_newest`` results). A fold is due past
    ``threshold`` of the ceiling, and only when it pays: the kept part plus the new summary must
    come back to ``AFTER_FOLD`` of the threshold (half the ceiling at the default 80%). A fold is
    a provider call; one that frees little would repeat every few steps, and while the newest
    results alone hold that much, the cheaper fit (stubs, collapse) keeps the request under its
    ceiling instead. ``force`` (after a provider's context-overflow error) skips both tests but
    still needs something to fold.
    """
    if not policy.enabled or not foldable:
        return False
    if force:
        return True
    return (
        demand_tokens > policy.threshold * ceiling_tokens
        and kept_tokens + summary_cap_tokens(ceiling_tokens)
        <= AFTER_FOLD * policy.threshold * ceiling_tokens
    )


def fold_boundary(counts_newest_first: Iterable[int], steps: int, keep_newest: int) -> int:
    """How many of the oldest of ``steps`` steps fold, given their result counts newest-first.

    Steps fold whole (a call never loses its result), so the step holding the
    ``keep_newest``-th newest observation and everything after it stay. Stops reading
    ``counts_newest_first`` as soon as it knows.
    """
    seen = 0
    for index, count in enumerate(counts_newest_first):
        seen += count
        if seen >= keep_newest:
            return steps - index - 1
    return 0


def summary_cap_tokens(ceiling_tokens: int) -> int:
    """A summary may take an eighth of the ceiling, like any one entry."""
    return max(1, ceiling_tokens // 8)


def summary_cap_chars(ceiling_tokens: int) -> int:
    return summary_cap_tokens(ceiling_tokens) * CHARS_PER_TOKEN


def notes_budget_chars(ceiling_tokens: int, previous: Summary | None) -> int:
    """The notes may take one ceiling's worth of chars, less what the previous summary takes."""
    room = ceiling_tokens * CHARS_PER_TOKEN - (len(previous.text) if previous else 0)
    return max(summary_cap_chars(ceiling_tokens), room)


# -- what folds ----------------------------------------------------------------------------


def fold_steps(
    live: LiveSteps, boundary: int, cap: int, budget: int, shown_from: int | None = None
) -> tuple[list[FoldStep], tuple[int, int, int] | None]:
    """The ``boundary`` oldest live steps as the summarizer sees them, newest first: whole
    within three quarters of the notes ``budget``, then as header lines only (what was asked,
    no bodies) within the rest; older ones are only counted (``(first, last, count)``).
    Steps from ``shown_from`` on are in the conversation the summarizer reads (``Shared``):
    their header lines index it, with the first line of a failure or a remembered note (what
    the digest keeps).

    Stale reads go in as stubs (stale content is never sent, not even to the summarizer).
    """
    out: list[FoldStep] = []
    used = 0
    index = boundary - 1
    while index >= 0 and used < budget:
        whole = used < budget * 3 // 4
        st = live[index]
        shown = shown_from is not None and st.record.step >= shown_from
        results = []
        for e in st.entries:
            obs = e.obs
            stale = e.stale
            if e.shown_by is not None or e.by is not None:
                state, body = "superseded", e.stub()
            elif stale is not None:
                state, body = "stale", f"[stale: {stale}]"
            else:
                state, body = "full", cut(obs, cap)
            if shown:
                keep = obs.is_error or obs.kind.value == "memory"
                state, body = f"{state}; shown above", body.partition("\n")[0] if keep else ""
            elif not whole:
                state, body = f"{state}; body left out", ""
            used += len(body) + 80
            target = clip(what(obs), COMPACT_CHARS) if shown else what(obs)
            results.append(FoldResult(obs.tool, obs.kind.value, target, state, body, obs.is_error))
        rec = st.record
        limit = cap if whole and not shown else COMPACT_CHARS
        calls = tuple(
            f"{c.name} {clip(json.dumps(c.arguments, ensure_ascii=False), COMPACT_CHARS)}"
            for c in (rec.tool_calls if whole or shown else ())
        )
        ops = tuple(clip(m, cap) for m in rec.operator_messages)
        out.append(FoldStep(rec.step, ops, clip(rec.text, limit), calls, tuple(results)))
        used += min(len(rec.text), limit) + 40 + sum(len(c) for c in calls)
        index -= 1
    out.reverse()
    left_out = None
    if index >= 0:
        records = live.records
        left_out = (records[0].step, records[index].step, index + 1)
    return out, left_out


# -- folding -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shared:
    """The request before a fold, which the summary request may repeat to share its prompt
    cache: its messages (``above``) and ``tools`` as sent, the folded steps as ``fold_steps``
    gives them with what ``above`` shows as an index (``steps``, ``left_out``), and the run's
    cache ``prices``."""

    above: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    steps: Sequence[FoldStep]
    left_out: tuple[int, int, int] | None
    prices: CachePrices

    def worth(self, shared: CompletionRequest, own: CompletionRequest) -> bool:
        """Whether to ask ``shared`` rather than ``own``: what it adds to ``above`` (a request
        the provider took) is no larger than ``own``, and it costs less, ``above`` read from the
        cache and the ask written to it, than ``own`` sent uncached. A provider that refuses it
        as too long is asked ``own`` next (``fold``)."""
        above = sum(message_tokens(m) for m in self.above) + schema_tokens(self.tools)
        ask = message_tokens(shared.messages[-1])
        alone = sum(message_tokens(m) for m in own.messages)
        prices = self.prices
        return ask <= alone and above * prices.read + ask * prices.write < alone * prices.uncached


async def fold(
    *,
    goal: str,
    previous: Summary | None,
    steps: Sequence[FoldStep],
    first_step: int,
    through_step: int,
    ceiling_tokens: int,
    summarize: Summarizer | None,
    left_out: tuple[int, int, int] | None = None,
    agreement: Agreement | None = None,
    shared: Shared | None = None,
) -> Summary:
    """Write the summary that replaces ``previous`` and ``steps``, through ``through_step``,
    in agreement with the run's progress ledger (``agreement``: shown to the summarizer, and
    what the summary leaves out of it added, ``summary.agree``).

    The notes take at most one ceiling's worth of chars (less what the previous summary takes);
    the summary at most an eighth of the ceiling. A summarizer that fails with a provider error
    falls back to the digest: the run keeps going and the fold is still bought only once.

    With ``shared``, the summary request repeats the request before it (its prompt cache read,
    not paid again) where that is worth it (``Shared.worth``); one the provider refuses as too
    long, or answers with no text, is asked again on its own.
    """
    cap = summary_cap_chars(ceiling_tokens)
    budget = notes_budget_chars(ceiling_tokens, previous)
    notes = render_fold_notes(steps, budget, left_out)
    if summarize is not None:
        requests = [summary_request(
            goal, previous, notes, first_step, through_step, summary_cap_tokens(ceiling_tokens),
            agreement,
        )]  # fmt: skip
        if shared is not None:
            index = render_fold_notes(shared.steps, budget, shared.left_out)
            request = shared_summary_request(
                shared.above, shared.tools, previous, index, first_step, through_step,
                summary_cap_tokens(ceiling_tokens), agreement,
            )  # fmt: skip
            if shared.worth(request, requests[0]):
                requests.insert(0, request)
        text = await _ask(summarize, requests)
        if text:
            if len(text) > cap:
                text = text[: max(0, cap - 40)].rstrip() + "\n[… summary cut to its cap]"
            return Summary(through_step, agree(text, agreement, cap), "provider")
    text = digest(goal, previous, notes, first_step, through_step, cap)
    return Summary(through_step, agree(text, agreement, cap), "digest")


async def _ask(summarize: Summarizer, requests: Sequence[CompletionRequest]) -> str:
    """The first summary of ``requests`` the summarizer writes: the next is asked when the
    provider refused one as too long, or the answer had no text (a model that called a tool).
    "" when none was written."""
    for request in requests:
        try:
            text = (await summarize(request)).strip()
        except ProviderError as exc:
            if exc.kind is not ErrorKind.CONTEXT_OVERFLOW:
                return ""
            continue
        if text:
            return text
    return ""
