"""Pausing Python's cyclic garbage collector over a pass that allocates many long-lived objects.

CPython collects by generation, triggered by counts of container allocations. A pass that makes
tens of thousands of objects that all live on (a cold context build over a long run: an entry
per observation, a step per record, the manifest) sets off collections that walk the whole heap
again and again and find nothing to free: at 20,000 observations that was more than half of the
build (docs/BENCHMARKS.md). ``gc_paused`` defers collection to the end of the pass, as
Mercurial's ``util.nogc`` does; what the pass leaves as cyclic garbage is collected after it.

Pauses nest and may interleave (two runs' builds in one event loop): the collector is enabled
again when the last one ends, and only if it was enabled when the first began. Pause only
synchronous code, or awaits that are short: never a provider call or an operator's answer.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside the block (reference counting frees as always)."""
    global _depth, _resume
    if _depth == 0:
        _resume = gc.isenabled()
        gc.disable()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _resume:
            gc.enable()
