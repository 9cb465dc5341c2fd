"""What one input token costs with a prompt cache: a run's contract carries the prices its
provider charges, and the cost annotation of a recorded request reads them (``io-tui trace
--json``) without the rest of the contract."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CachePrices:
    """What one input token costs, relative to an uncached one, when the provider caches prompt
    prefixes (../shared/CONTEXT-COST.md). The context engine weighs a rewrite of an earlier
    message against these; presets set them per provider (the default is Anthropic's).

    ``min_prefix_tokens``: a prefix shorter than this is never cached (OpenAI: 1,024).
    """

    uncached: float = 1.0
    write: float = 1.25
    read: float = 0.1
    min_prefix_tokens: int = 0

    def __post_init__(self) -> None:
        if min(self.uncached, self.write, self.read) < 0 or self.min_prefix_tokens < 0:
            raise ValueError("cache prices must not be negative")
