"""Each scripted command's latency, whole process, as a user or a script meets it (issue 34).

Every command of the table runs as a user runs it (no ``--store``, no config file: the data
dir's store, holding the demo's run), in turn with the two yardsticks (``python -c pass``: the
interpreter alone; ``python -c "import textual.app"``), round after round, so that a drift of
the machine's speed moves them all alike. With ``--vs DIR`` the
same commands run from the checkout in DIR too (``git worktree add DIR COMMIT``), in the same
rounds: the paired baseline. The table prints each median in ms, its ratio to the baseline's,
and whether it is under the target of 150 ms.

Run: ``.venv/bin/python benchmarks/cli_latency.py [--runs 9] [--vs /tmp/base] [--json FILE]``.
The package is byte-compiled first (in both checkouts), as ``make run``'s install does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 150
COMMANDS = [
    ("--help",),
    ("--version",),
    ("approvals", "--json"),
    ("decide", "--help"),
    ("trace", "1", "--json"),
    ("trace", "1"),
    ("memory", "list"),
    ("rules", "list"),
]
YARDSTICKS = {"python -c pass": ["-c", "pass"], "import textual.app": ["-c", "import textual.app"]}


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--vs", type=Path, help="a baseline checkout (git worktree add DIR C)")
    parser.add_argument("--json", type=Path, help="write each command's median ms to this file")
    args = parser.parse_args()
    python = sys.executable
    trees = {"now": ROOT} | ({"base": args.vs.resolve()} if args.vs else {})
    for tree in trees.values():
        subprocess.run([python, "-m", "compileall", "-q", str(tree / "io_tui")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        # As a user runs them: no --store, the data dir's store, and no config file (the
        # commands look for one; finding none must not cost them the settings' import).
        user = {**os.environ, "XDG_DATA_HOME": tmp, "IO_TUI_CONFIG": str(Path(tmp) / "none")}
        user.pop("IO_TUI_STORE", None)
        subprocess.run(  # the demo's run: something for trace, approvals and memory to read
            [python, "-m", "io_tui", "demo", "--headless"],
            cwd=ROOT, env=user, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
        )  # fmt: skip
        samples: dict[tuple[str, str], list[float]] = {}
        for round_ in range(args.runs + 1):  # the first round warms the page cache, not counted
            for name, code in YARDSTICKS.items():
                ms = timed([python, *code], ROOT)
                if round_:
                    samples.setdefault(("", name), []).append(ms)
            for command in COMMANDS:
                for label, tree in trees.items():
                    ms = timed([python, "-m", "io_tui", *command], tree, user)
                    if round_:
                        samples.setdefault((label, " ".join(command)), []).append(ms)
    median = {key: statistics.median(values) for key, values in samples.items()}
    print(
        f"{args.runs} runs each, median ms, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    head = "| command | ms | ≤ 150 ms |" + (" base ms | now / base |" if args.vs else "")
    print(head)
    print("|---|---:|---|" + ("---:|---:|" if args.vs else ""))
    for name in YARDSTICKS:
        print(f"| `{name}` | {median[('', name)]:.0f} | |" + (" | |" if args.vs else ""))
    for command in COMMANDS:
        words = " ".join(command)
        now = median[("now", words)]
        row = f"| `io-tui {words}` | {now:.0f} | {'yes' if now <= TARGET_MS else 'no'} |"
        if args.vs:
            base = median[("base", words)]
            row += f" {base:.0f} | {now / base:.2f}× |"
        print(row)
    if args.json:
        figures = {" ".join(c): median[("now", " ".join(c))] for c in COMMANDS}
        yardsticks = {name: median[("", name)] for name in YARDSTICKS}
        data = {"figures": figures, "yardsticks": yardsticks, "target_ms": TARGET_MS}
        args.json.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
