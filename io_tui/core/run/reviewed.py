"""An ask put to the reviewer model the run's policy names, before any human (DESIGN §3.4).

Its verdict is recorded whatever it is (an ``approval_reviewed`` event, stored at once so every
inbox can say why a request escalated); an approve or a deny is the decision, recorded as the
reviewer's (``decided_by``: ``reviewer PROVIDER:MODEL``), and an escalation leaves the request
to the run's human approver. A request is reviewed once: one that was reviewed before its run
paused goes to the human when the run resumes, so no second opinion is shopped for.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from io_tui.core.authority.approvals import ApprovalRequest, Decision, DecisionKind
from io_tui.core.authority.policy import Policy
from io_tui.core.authority.review import (
    DECIDED_BY_PREFIX,
    Review,
    ReviewCause,
    ReviewerSpec,
    ReviewVerdict,
)
from io_tui.core.events import EventKind
from io_tui.core.review.material import gather
from io_tui.core.review.reviewer import ModelReviewer, reviewer_for
from io_tui.core.store import Store


class ReviewerSeat:
    """The reviewer a run's policy names, built at its first ask and kept until the run stops
    (``aclose``)."""

    def __init__(self) -> None:
        self._spec: ReviewerSpec | None = None
        self._reviewer: ModelReviewer | None = None

    async def take(self, spec: ReviewerSpec) -> ModelReviewer:
        """The reviewer for ``spec``; ValueError when it cannot be built (an unknown preset, a
        key not set, a script not found)."""
        if self._reviewer is None or self._spec != spec:
            await self.aclose()
            self._reviewer, self._spec = reviewer_for(spec), spec
        return self._reviewer

    async def aclose(self) -> None:
        if self._reviewer is not None:
            reviewer, self._reviewer, self._spec = self._reviewer, None, None
            await reviewer.aclose()


class ReviewedRun(Protocol):
    """What a review needs of the run that asks (``RunState`` is one)."""

    store: Store
    policy: Policy
    reviewers: ReviewerSeat

    def publish(self, kind: EventKind, detail: dict[str, Any] | None = None) -> None: ...

    async def flush_events(self) -> None: ...


async def reviewed(run: ReviewedRun, request: ApprovalRequest) -> Decision | None:
    """The reviewer's decision on ``request``; None when the run's policy names no reviewer, the
    request was reviewed before, or the reviewer escalated it: a human decides."""
    spec = run.policy.reviewer
    if spec is None or await run.store.approvals.reviews_of(request.id):
        return None
    try:
        reviewer = await run.reviewers.take(spec)
    except ValueError as exc:
        review = Review(
            request.id,
            spec.model,
            ReviewVerdict.ESCALATE,
            f"the reviewer could not be built: {exc}",
            ReviewCause.ERROR,
            at=time.time(),
        )
    else:
        review = await reviewer.review(await gather(run.store, request))
    run.publish(EventKind.APPROVAL_REVIEWED, review.to_json())
    await run.flush_events()  # stored now: an inbox shows why it escalated while it waits
    return decision_of(review)


def decision_of(review: Review) -> Decision | None:
    """An approve or a deny as the reviewer's decision (never one that remembers a rule);
    None for an escalation."""
    by = DECIDED_BY_PREFIX + review.reviewer
    if review.verdict is ReviewVerdict.APPROVE:
        return Decision(DecisionKind.APPROVE, reason=review.reason, decided_by=by)
    if review.verdict is ReviewVerdict.DENY:
        return Decision.deny(f"denied by the reviewer ({review.reviewer}): {review.reason}", by)
    return None
