"""The reviewer: one ask in, one ``Review`` out, failing closed.

A guard that holds the ask (``guards.py``), a model that errors, takes longer than the spec's
``timeout_s``, or answers anything but the two lines asked for: each is an escalation, with the
cause and reason recorded. Each ask is reviewed on its own: the reviewer keeps nothing between
asks and never remembers a rule.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from io_tui.core.authority.review import Review, ReviewCause, ReviewerSpec, ReviewVerdict
from io_tui.core.providers.base import CompletionRequest, Provider, Response, complete
from io_tui.core.providers.retry import RetryPolicy
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.review.guards import held
from io_tui.core.review.material import ReviewAsk
from io_tui.core.review.prompt import messages, new_nonce
from io_tui.core.review.verdict import parse_answer

MAX_ANSWER_TOKENS = 80  # two lines: the verdict and a reason of up to 300 chars
MAX_ANSWER_CHARS = 600  # of the model's answer, kept with the review


class ModelReviewer:
    """Reviews asks with ``provider``'s model, each bounded by ``timeout_s``. ``guards=False``
    asks the model about everything (the benchmark measures the model alone so)."""

    def __init__(self, provider: Provider, *, timeout_s: float, guards: bool = True) -> None:
        self.provider = provider
        self.timeout_s = timeout_s
        self.guards = guards
        self.label = f"{provider.name}:{provider.model}"

    async def review(self, ask: ReviewAsk) -> Review:
        started = time.monotonic()
        escalate = ReviewVerdict.ESCALATE
        guarded = held(ask) if self.guards else None
        if guarded is not None:
            return self._made(
                ask, started, escalate, f"held for a human: {guarded}", ReviewCause.GUARD
            )
        request = CompletionRequest(
            messages(ask, new_nonce()),
            max_output_tokens=MAX_ANSWER_TOKENS,
            temperature=0.0,
            purpose="review",
        )
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await complete(self.provider, request)
        except TimeoutError:
            said = f"no answer within {self.timeout_s:g} s"
            return self._made(ask, started, escalate, said, ReviewCause.TIMEOUT)
        except Exception as exc:  # a provider's error, whatever it is: the human decides
            said = f"the reviewer failed: {_one_line(exc)}"
            return self._made(ask, started, escalate, said, ReviewCause.ERROR)
        parsed = parse_answer(response.text)
        if parsed is None:
            said = " ".join(response.text.split())[:80] or "(nothing)"
            reason = f"answered out of format: {said!r}"
            return self._made(ask, started, escalate, reason, ReviewCause.FORMAT, response)
        verdict, reason = parsed
        return self._made(ask, started, verdict, reason, ReviewCause.MODEL, response)

    def _made(
        self,
        ask: ReviewAsk,
        started: float,
        verdict: ReviewVerdict,
        reason: str,
        cause: ReviewCause,
        response: Response | None = None,
    ) -> Review:
        usage = response.usage if response is not None else None
        return Review(
            approval_id=ask.request.id,
            reviewer=self.label,
            verdict=verdict,
            reason=reason,
            cause=cause,
            answer=response.text[:MAX_ANSWER_CHARS] if response is not None else "",
            prompt_tokens=usage.prompt_tokens if usage is not None else None,
            completion_tokens=usage.completion_tokens if usage is not None else None,
            latency_s=time.monotonic() - started,
            at=time.time(),
        )

    async def aclose(self) -> None:
        await self.provider.aclose()


def reviewer_provider(spec: ReviewerSpec) -> Provider:
    """The provider ``spec`` names, its key from this process's environment (or
    ``credentials.toml``); ``ProviderConfigError`` (a ValueError) when it cannot be built."""
    if spec.preset == "scripted":
        return ScriptedProvider.from_file(Path(spec.model_name))
    from io_tui.core.providers.presets import make_provider

    return make_provider(
        spec.preset,
        model=spec.model_name,
        base_url=spec.base_url,
        timeout=spec.timeout_s,
        retry=RetryPolicy(max_attempts=2),
        max_output_tokens=MAX_ANSWER_TOKENS,
    )


def reviewer_for(spec: ReviewerSpec) -> ModelReviewer:
    return ModelReviewer(reviewer_provider(spec), timeout_s=spec.timeout_s)


async def check_reviewer(spec: ReviewerSpec) -> None:
    """Build the reviewer ``spec`` names and let it go, so a command can refuse one that cannot
    be built (unknown preset, key not set, script not found: a ValueError saying so) before its
    run starts rather than escalate every ask."""
    await reviewer_provider(spec).aclose()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
