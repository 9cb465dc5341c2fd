"""Memory write (with eviction) and recall rendering at 64 / 512 / 4,096 entries per scope.

    .venv/bin/python benchmarks/memory_ops.py

For each size N the scope is filled to its cap (``MemoryLimits.max_entries = N``), so every timed
write evicts the oldest note; each write also runs the restatement check over every visible note.
Recall is ``NoteRepo.notes_for`` plus ``render_notes`` under a 24,000-char budget (a quarter of
the default 24,000-token ceiling), measured together and the rendering alone. Prints medians and
ratios to the 64-entry case; no assertions (DESIGN §6).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from io_tui.core.contract import MemoryLimits
from io_tui.core.memory.notes import render_notes
from io_tui.core.store import Store

SIZES = (64, 512, 4_096)
WRITES = 50
RECALLS = 20
BUDGET_CHARS = 24_000
WS = "/bench/workspace"
BASE_WORDS = ("run", "tests", "build", "cache", "config", "parser", "schema", "deploy", "store")
# A vocabulary the size of a project's jargon, so notes overlap about as much as real ones do.
WORDS = BASE_WORDS + tuple(f"term{i}" for i in range(500))


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))


async def _fill(store: Store, n: int, rng: random.Random) -> None:
    """Seed ``n`` notes directly (seeding through ``write`` would time the seeding itself)."""
    now = time.time()
    async with store.db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO memory (scope, workspace, key, value, run_id, step, written_at)"
            " VALUES ('workspace', ?, ?, ?, 1, ?, ?)",
            [(WS, f"seed-{i}", _sentence(rng), i, now) for i in range(n)],
        )


async def _measure(n: int) -> dict[str, float]:
    rng = random.Random(n)
    limits = MemoryLimits(max_entries=n, max_chars=n * 2_000)
    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(Path(tmp) / "bench.db") as store:
            await _fill(store, n, rng)
            writes = []
            for i in range(WRITES):
                value = _sentence(rng)
                start = time.perf_counter()
                result = await store.notes.write(
                    key=f"new-{i}",
                    value=value,
                    scope="workspace",
                    workspace=WS,
                    run_id=2,
                    step=i + 1,
                    limits=limits,
                )
                writes.append(time.perf_counter() - start)
                assert len(result.evicted) == 1
            recalls, renders = [], []
            for _ in range(RECALLS):
                start = time.perf_counter()
                notes = await store.notes.notes_for(WS)
                mid = time.perf_counter()
                rendered = render_notes(notes, BUDGET_CHARS)
                end = time.perf_counter()
                recalls.append(end - start)
                renders.append(end - mid)
            return {
                "write_ms": statistics.median(writes) * 1_000,
                "recall_ms": statistics.median(recalls) * 1_000,
                "render_ms": statistics.median(renders) * 1_000,
                "shown": len(rendered.keys),
                "chars": len(rendered.text),
            }


async def main() -> None:
    results = {n: await _measure(n) for n in SIZES}
    base = results[SIZES[0]]
    header = (
        f"{'entries':>8} {'write ms':>9} {'x64':>6} {'recall ms':>10} {'x64':>6} "
        f"{'render ms':>10} {'x64':>6} {'shown':>6} {'block chars':>12}"
    )
    print(header)
    print("-" * len(header))
    for n, r in results.items():
        print(
            f"{n:>8,} {r['write_ms']:>9.2f} {r['write_ms'] / base['write_ms']:>5.1f}x "
            f"{r['recall_ms']:>10.2f} {r['recall_ms'] / base['recall_ms']:>5.1f}x "
            f"{r['render_ms']:>10.2f} {r['render_ms'] / base['render_ms']:>5.1f}x "
            f"{int(r['shown']):>6} {int(r['chars']):>12,}"
        )


if __name__ == "__main__":
    asyncio.run(main())
