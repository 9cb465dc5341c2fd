"""The quick set of benchmarks, and one table of their figures against issue 34's targets.

    make bench        (or: .venv/bin/python benchmarks/summary.py [--only NAME ...])

Each benchmark below runs as its own process with a small round count and writes its figures
to a JSON file (its ``--json`` option); this script reads them back and prints one row per
figure: what was measured, against what baseline (in the same run), the target, and whether it
is met. The benchmarks' own tables, printed as they run, say more; docs/BENCHMARKS.md records
full runs. A figure timed on a loaded machine reads worse than on a quiet one: the load average
is printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Row:
    figure: str
    value: str
    baseline: str
    target: str
    met: bool | None  # None: a figure shown for context, with no target of its own


@dataclass(frozen=True)
class Bench:
    name: str
    args: list[str]  # the script and its quick options; ``--json FILE`` is added
    rows: Callable[[dict[str, Any]], list[Row]]


def cli_rows(data: dict[str, Any]) -> list[Row]:
    target = data["target_ms"]
    base = f"python -c pass {data['yardsticks']['python -c pass']:.0f} ms"
    return [
        Row(f"io-tui {command}", f"{ms:.0f} ms", base, f"≤ {target} ms", ms <= target)
        for command, ms in data["figures"].items()
    ]


def startup_rows(data: dict[str, Any]) -> list[Row]:
    figures, targets = data["figures"], data["targets"]
    base = f"empty app {figures['empty Textual app']['ms']:.0f} ms"
    return [
        Row(
            f"start → {row.removeprefix('io-tui ')}",
            f"{figure['ms']:.0f} ms ({figure['ratio']:.2f}×)",
            base,
            f"≤ {targets[row]}×" if row in targets else "",
            figure["ratio"] <= targets[row] if row in targets else None,
        )
        for row, figure in figures.items()
        if row != "empty Textual app"
    ]


def assembly_rows(data: dict[str, Any]) -> list[Row]:
    cold = data["figures"]["cold, no compaction, 20,000"]
    step = data["figures"]["next step, no compaction, 20,000"]
    clock = data["clock"]
    return [
        Row(
            "cold build, 20,000 observations", f"{cold:.0f} ms {clock}", "", "≤ 200 ms", cold <= 200
        ),
        Row("next-step build, 20,000 observations", f"{step:.1f} ms {clock}", "", "", None),
    ]


def harness_rows(data: dict[str, Any]) -> list[Row]:
    base, now = data["events_per_s"]
    return [
        Row(
            "harness alone: events/s",
            f"{now:,.0f} ({data['ratio']:.2f}×)",
            f"{data['base']} {base:,.0f}",
            "≥ 1.0×",
            data["ratio"] >= 1.0,
        )
    ]


def e2e_rows(data: dict[str, Any]) -> list[Row]:
    size = data["size"]
    return [
        Row(f"end to end {size}: events/s", f"{data['events_per_s']:,.0f}", "", "≥ 2,000",
            data["events_per_s"] >= 2000),
        Row(f"end to end {size}: p95 event → screen", f"{data['p95_ms']:.0f} ms", "", "< 100 ms",
            data["p95_ms"] < 100),
        Row("peak RSS: app, worker", f"{data['app_rss_mb']:.0f}, {data['worker_rss_mb']:.0f} MB",
            "", "", None),
    ]  # fmt: skip


BENCHES = [
    Bench("cli", ["cli_latency.py", "--runs", "5"], cli_rows),
    Bench("startup", ["startup.py", "--runs", "5"], startup_rows),
    Bench("assembly", ["assembly_speed.py", "--repeat", "3", "--cpu"], assembly_rows),
    Bench("harness", ["harness_speed.py", "--rounds", "5"], harness_rows),
    Bench("e2e", ["ui_load.py", "--only", "e2e", "--size", "8x250"], e2e_rows),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=[b.name for b in BENCHES])
    args = parser.parse_args()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    rows: list[Row] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="io-tui-bench-") as tmp:
        for bench in chosen:
            out = Path(tmp) / f"{bench.name}.json"
            print(f"== {bench.name}: {' '.join(bench.args)}", flush=True)
            done = subprocess.run([sys.executable, str(HERE / bench.args[0]), *bench.args[1:],
                                   "--json", str(out)], cwd=HERE.parent)  # fmt: skip
            if done.returncode != 0 or not out.exists():
                rows.append(Row(bench.name, "failed", "", "", False))
                continue
            rows.extend(bench.rows(json.loads(out.read_text())))
    minutes = (time.perf_counter() - started) / 60
    print(
        f"\nsummary: {len(chosen)} benchmarks in {minutes:.1f} min, load {os.getloadavg()[0]:.2f}"
    )
    widths = [max(len(r.figure) for r in rows), max(len(r.value) for r in rows),
              max(len(r.baseline) for r in rows), max(len(r.target) for r in rows)]  # fmt: skip
    for r in rows:
        mark = {True: "✓", False: "✗", None: ""}[r.met]
        cells = (r.figure, r.value, r.baseline, r.target)
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + f"  {mark}")
    met = [r.met for r in rows if r.met is not None]
    print(f"{sum(met)} of {len(met)} targets met")


if __name__ == "__main__":
    main()
