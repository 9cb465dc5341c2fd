"""A long scripted session through the CLI, as a user would run it: does it end, and what does it cost.

    .venv/bin/python benchmarks/soak.py                # 50 and 500 steps at ceilings 8k and 24k
    .venv/bin/python benchmarks/soak.py --steps 500 --ceiling 8000

Each run is ``io-tui run TASK --workspace WS --provider scripted:FILE --approve all --json`` in a
new process started in a copy of ``benchmarks/fixture_repo.tar.gz`` (the workspace), with a fresh store
(``PYTHONPATH=DIR`` runs another checkout's io-tui; the first line says which ran). The script (seeded,
the same every time) mixes what a long real session does: whole and range reads of the repo's
files, edits and rewrites (by ``write_file`` and by ``run_command``), greps and finds, test runs
with long output repeated many times, listings, and memory notes written, rewritten and
forgotten — so elision, collapse, compaction and the memory block are all in play.

Prints, per run: steps taken, wall time, ms per step once started (the wall time less that of a
run of no steps, the first row) and its ratio to the shortest run at the same ceiling (the
baseline, in the same process), peak RSS of the io-tui process, the store's size (with its WAL),
working and summary requests stored, and the outcome. No assertions (DESIGN §6).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import fixture_repo

STEPS = (50, 500)
CEILINGS = (8_000, 24_000)
PY = sys.executable


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


def script(steps: int, files: list[str], seed: int = 13) -> dict[str, object]:
    """``steps`` turns, one to three calls each, then a final answer."""
    rng = random.Random(seed)
    turns: list[dict[str, object]] = []
    for n in range(1, steps + 1):
        path = rng.choice(files)
        roll = rng.random()
        if roll < 0.30:
            calls = [call("read_file", path=path)]
            if rng.random() < 0.3:
                calls.append(call("read_file", path=rng.choice(files)))
        elif roll < 0.40:
            calls = [call("read_file", path=path, offset=rng.randint(1, 20), limit=40)]
        elif roll < 0.48:
            calls = [call("edit_file", path="NOTES.md", old="revision ", new=f"revision {n}.")]
        elif roll < 0.52:
            body = "".join(f"note {n}.{i}: {'detail ' * rng.randint(1, 12)}\n" for i in range(40))
            calls = [call("write_file", path="NOTES.md", content=f"# notes\nrevision 0\n{body}")]
        elif roll < 0.55:
            rewrite = f"import pathlib; p = pathlib.Path({path!r}); p.write_text(p.read_text() + '# touched {n}\\n')"
            calls = [call("run_command", argv=[PY, "-c", rewrite])]
        elif roll < 0.68:  # the test run, repeated: long output, the failure at the end
            out = f"import sys; print('collected 120 items ' + 'PASSED ' * 900); print('FAILED test_{n % 7}')"
            calls = [call("run_command", argv=[PY, "-c", out])]
        elif roll < 0.76:
            pattern = rng.choice(["def ", "class ", "import", "TODO", "return None", "self\\."])
            calls = [call("grep", pattern=pattern)]
        elif roll < 0.80:
            calls = [call("find", pattern=rng.choice(["*.py", "src/**/*.py", "tests/*"]))]
        elif roll < 0.84:
            calls = [call("list_dir", path=rng.choice([".", "src/harness", "tests"]))]
        elif roll < 0.95:
            key = f"fact-{rng.randint(0, 11)}"
            value = (
                f"learned at step {n}: "
                + "the parser keeps state in the ledger " * rng.randint(1, 8)
            )
            calls = [call("remember", key=key, value=value)]
        else:
            calls = [call("forget", key=f"fact-{rng.randint(0, 11)}")]
        turns.append(
            {"text": f"step {n}: " + "thinking " * rng.randint(0, 40), "tool_calls": calls}
        )
    turns.append({"text": "done"})
    return {"model": "scripted", "turns": turns}


@dataclass
class Result:
    steps: int
    ceiling: int
    wall_s: float
    peak_rss_kb: int
    store_bytes: int
    requests: int
    summaries: int
    outcome: str
    error: str | None

    def ms_per_step(self, start: Result) -> float:
        """Wall time per step once the process is up (``start``: a run of no steps)."""
        return (self.wall_s - start.wall_s) * 1000 / max(1, self.steps - start.steps)


def soak(tmp: Path, steps: int, ceiling: int) -> Result:
    workspace = tmp / f"ws-{steps}-{ceiling}"
    fixture_repo.write_to(workspace)
    (workspace / "NOTES.md").write_text("# notes\nrevision 0\n")
    files = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*.py"))
    files += ["NOTES.md"] * 3  # the file the session keeps editing
    script_path = tmp / f"script-{steps}-{ceiling}.json"
    script_path.write_text(json.dumps(script(steps, files)))
    store = tmp / f"store-{steps}-{ceiling}.db"
    argv = [PY, "-m", "io_tui", "run", "soak: keep the repo tidy", "--workspace", str(workspace)]
    argv += ["--provider", f"scripted:{script_path}", "--approve", "all", "--json"]
    argv += ["--max-steps", str(steps + 10), "--context-max-tokens", str(ceiling)]
    argv += ["--store", str(store)]
    env = {**os.environ, "IO_TUI_CONFIG_DIR": str(tmp / "config")}
    with open(tmp / f"out-{steps}-{ceiling}.jsonl", "w+b") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workspace)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = out.read().decode(errors="replace").splitlines()
    try:
        last = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        last = {"outcome": f"exit {proc.returncode}", "error": "\n".join(lines[-5:])}
    with sqlite3.connect(store) as db:
        (requests,) = db.execute("SELECT count(*) FROM requests WHERE purpose = 'work'").fetchone()
        (summaries,) = db.execute(
            "SELECT count(*) FROM requests WHERE purpose != 'work'"
        ).fetchone()
    size = sum(p.stat().st_size for p in tmp.glob(f"{store.name}*"))
    return Result(
        steps=int(last.get("steps", 0)),
        ceiling=ceiling,
        wall_s=wall,
        peak_rss_kb=usage.ru_maxrss,
        store_bytes=size,
        requests=requests,
        summaries=summaries,
        outcome=str(last.get("outcome")),
        error=last.get("error"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS))
    parser.add_argument("--ceiling", type=int, nargs="+", default=list(CEILINGS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cwd:  # where the runs start: not this checkout
        where = subprocess.run(
            [PY, "-c", "import io_tui; print(io_tui.__file__)"], cwd=cwd, capture_output=True
        )
    print(f"io-tui from {where.stdout.decode().strip()}\n")
    head = "| steps | ceiling | wall | ms/step after start-up | ×shortest | peak RSS | store | requests (summary) | outcome |"
    print(head)
    print("|" + "---|" * head.count(" | ") + "---|")
    with tempfile.TemporaryDirectory() as t:
        for ceiling in args.ceiling:
            start = soak(Path(t), 0, ceiling)  # the final answer alone: start-up and store
            print(row(start, "—", "—"), flush=True)
            shortest: float | None = None
            for steps in sorted(args.steps):
                r = soak(Path(t), steps, ceiling)
                ms = r.ms_per_step(start)
                shortest = shortest or ms
                print(row(r, f"{ms:.1f}", f"{ms / shortest:.2f}"), flush=True)
                if r.error:
                    print(f"  error: {r.error}", flush=True)


def row(r: Result, ms: str, ratio: str) -> str:
    return (
        f"| {r.steps} | {r.ceiling:,} | {r.wall_s:.1f} s | {ms} | {ratio} |"
        f" {r.peak_rss_kb / 1024:.1f} MB | {r.store_bytes / 1e6:.1f} MB |"
        f" {r.requests} ({r.summaries}) | {r.outcome} |"
    )


if __name__ == "__main__":
    main()
