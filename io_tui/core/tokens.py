"""The token estimate the context engine budgets with, and its calibration per model (DESIGN §3.1).

``estimate_tokens`` weighs a text's UTF-8 bytes by character class: every byte costs
``BYTE`` thousandths of a token, and digits, ASCII punctuation and non-ASCII bytes cost more on
top (a BPE vocabulary merges runs of letters and spaces into long tokens, but splits numbers,
operators, JSON syntax and non-Latin text into short ones). The weights are fitted to cl100k_base and
o200k_base over code, line-numbered reads, prose, logs, JSON and real request texts; the
accuracy per content kind and tokenizer is measured by ``benchmarks/token_estimate.py``
(docs/BENCHMARKS.md). No tokenizer dependency: one ``bytes.translate`` and two byte counts,
O(len) in C.

A model's own tokenizer still differs (a small vocabulary splits more, the provider adds
per-message framing and renders tool schemas its own way), so ``Calibration`` learns, per
provider and model, the ratio of the prompt tokens the provider reported to the estimate of the
same request, and the run loop scales the ceiling check by it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Token weights, in thousandths: per UTF-8 byte, and extra per digit and per ASCII punctuation
# or non-ASCII byte (fitted; see the module docstring).
BYTE, DIGIT, PUNCT = 212, 545, 225


def _class_table() -> bytes:
    """Digits to ``0``, ASCII punctuation and non-ASCII bytes to ``!``, the rest to a space."""
    table = bytearray(b" " * 256)
    for byte in range(33, 256):
        char = chr(byte)
        if byte < 127 and char.isdigit():
            table[byte] = ord("0")
        elif byte >= 128 or (byte < 127 and not char.isalpha()):
            table[byte] = ord("!")
    return bytes(table)


_CLASSES = _class_table()
_ZERO, _BANG = ord("0"), ord("!")


def estimate_tokens(text: str) -> int:
    """The context engine's token estimate of ``text`` (0 for the empty string, else at least 1)."""
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate (from a file decoded with surrogateescape)
        data = text.encode("utf-8", "surrogatepass")
    classes = data.translate(_CLASSES)
    weighted = BYTE * len(data) + DIGIT * classes.count(_ZERO) + PUNCT * classes.count(_BANG)
    return (weighted + 999) // 1000


# -- calibration per model --

MIN_FACTOR, MAX_FACTOR = 0.5, 2.0  # a factor outside this says the report is not comparable
WINDOW = 3  # the factor is the median of the newest ratios observed


@dataclass(frozen=True, slots=True)
class Calibrated:
    """One request's estimate: the raw figure, the factor applied and the calibrated figure."""

    raw: int
    factor: float

    @property
    def tokens(self) -> int:
        return round(self.raw * self.factor)

    def to_json(self) -> dict[str, int | float]:
        return {"raw_est_tokens": self.raw, "factor": self.factor, "calibrated_tokens": self.tokens}


@dataclass
class Calibration:
    """The drift between the estimate and what a model's provider reports, per provider+model.

    Each ``observe`` records ``reported / estimated`` for one request; ``factor`` is the median of
    the newest ``WINDOW`` ratios (one odd report does not move it), bounded to
    [``MIN_FACTOR``, ``MAX_FACTOR``], and 1.0 for a model with no report yet.

    A server that drops the tool schemas (llama.cpp under a chat template without tools) reports
    far fewer prompt tokens than a request with schemas is estimated at: when a report is below
    ``MIN_FACTOR`` of the estimate but not of the estimate less the schemas, the schemas are
    taken as dropped for that provider+model and no longer counted (``counts_tools``).
    """

    ratios: dict[tuple[str, str], deque[float]] = field(default_factory=dict)
    latest: tuple[str, str] | None = None  # the provider+model that answered last
    tools_dropped: set[tuple[str, str]] = field(default_factory=set)

    def factor(self, provider: str, model: str) -> float:
        seen = self.ratios.get((provider, model))
        if not seen:
            return 1.0
        import statistics  # a run's drift only: reading a trace costs no fractions nor decimal

        return round(min(MAX_FACTOR, max(MIN_FACTOR, statistics.median(seen))), 4)

    def counts_tools(self, provider: str, model: str) -> bool:
        return (provider, model) not in self.tools_dropped

    def observe(
        self, provider: str, model: str, estimated: int, reported: int, tools: int = 0
    ) -> None:
        """Learn from one request estimated at ``estimated`` tokens, ``tools`` of them tool
        schemas (counted in it); a report of 0 or an empty estimate teaches nothing."""
        key = (provider, model)
        if key in self.tools_dropped:
            estimated -= tools
        elif tools and MIN_FACTOR * (estimated - tools) <= reported < MIN_FACTOR * estimated:
            self.tools_dropped.add(key)
            estimated -= tools
        if estimated <= 0 or reported <= 0:
            return
        self.latest = key
        seen = self.ratios.setdefault(key, deque(maxlen=WINDOW))
        seen.append(reported / estimated)

    def next_key(self, provider: str, model: str) -> tuple[str, str]:
        """Whose factor the next request takes: the provider+model that answered last (a
        fallback chain's answer comes from one of its members), else ``provider``+``model``."""
        return self.latest or (provider, model)


def raw_ceiling(ceiling_tokens: int, factor: float) -> int:
    """The ceiling in raw estimated tokens: a build that fits it fits ``ceiling_tokens`` once
    calibrated by ``factor``."""
    return max(1, int(ceiling_tokens / factor))
