"""``common_prefix``: how many leading items two sequences share, compared in C."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share. Slices compare in C (identity first), so a
    history or request that extends the previous one costs one comparison; otherwise the usual
    case (the last item replaced) is tried, then a binary search on the prefix length."""
    a = a if isinstance(a, list) else list(a)
    b = b if isinstance(b, list) else list(b)
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    if n and a[: n - 1] == b[: n - 1]:
        return n - 1
    lo, hi = 0, n - 1  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo
