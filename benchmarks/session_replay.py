"""The real sessions and their replay through io-tui's CLI, for ``real_sessions.py``.

A session is a converted trajectory (``session_convert.py``) and its repository; a replay runs
it through the real CLI on a fresh extraction and keeps what the figures are read from: the
store's trace and steps, and the workspace's tree before each working request
(``snapshot_cli.py``), readable through ``Files``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from io_tui.core.ledger import StepRecord
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

HERE = Path(__file__).resolve().parent
DATA = HERE / "real_sessions"
LONG_STEPS = 300
RESET = {
    "text": "Starting over from a clean checkout to make the change again.",
    "tool_calls": [
        {"name": "run_command", "arguments": {"argv": ["git", "stash", "--include-untracked"]}}
    ],
}
GIT_ID = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (("NAME", "agent"), ("EMAIL", "agent@example.invalid"))
}


# -- the sessions -------------------------------------------------------------------------------


@dataclass
class Session:
    name: str
    meta: dict[str, Any]
    task: str
    script: dict[str, Any]
    tarball: Path
    long: bool = False

    @property
    def steps(self) -> int:
        return len(self.script["turns"])


def load(name: str) -> Session:
    data = json.loads((DATA / name / "session.json").read_text())
    return Session(name, data["meta"], data["task"], data["script"], DATA / name / "repo.tar.xz")


def all_sessions() -> list[str]:
    return sorted(p.parent.name for p in DATA.glob("*/session.json"))


def truncated(session: Session, steps: int) -> Session:
    """The first ``steps`` turns with calls, then a closing answer."""
    turns = [t for t in session.script["turns"] if t["tool_calls"]][:steps]
    turns.append({"text": "(the session is cut here)", "tool_calls": []})
    script = session.script | {"turns": turns}
    return Session(f"{session.name}[:{steps}]", session.meta, session.task, script, session.tarball)


def extended(session: Session, steps: int = LONG_STEPS) -> Session:
    """The session run again after ``git stash -u`` until it has ``steps`` turns."""
    work = [t for t in session.script["turns"] if t["tool_calls"]]
    turns = list(work)
    while len(turns) < steps - 1:
        turns += [RESET, *work][: steps - 1 - len(turns)]
    turns.append(session.script["turns"][-1])
    script = session.script | {"turns": turns}
    passes = -(-steps // (len(work) + 1))
    name = f"{session.name}+x{passes}"
    return Session(name, session.meta, session.task, script, session.tarball, long=True)


# -- one replay through the CLI -----------------------------------------------------------------


@dataclass
class Replay:
    """What one replay left: the trace, the steps, and the workspace's tree at each request."""

    session: Session
    ceiling: int
    exit_code: int
    seconds: float
    trace: dict[str, Any]
    history: list[StepRecord]
    trees: list[str]
    snapshots: Path
    output: str
    base: Path


def prepare(session: Session, base: Path) -> Path:
    workspace = base / "ws"
    workspace.mkdir(parents=True)
    with tarfile.open(session.tarball) as tar:
        tar.extractall(workspace, filter="tar")
    git = ["git", "-C", str(workspace)]
    env = os.environ | GIT_ID
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "base commit"], check=True, env=env)
    return workspace


def isolation() -> list[str]:
    """``unshare -n`` where this user may (a network namespace with no way out), else none."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n", "--"] if probe.returncode == 0 else []


def replay(session: Session, ceiling: int) -> Replay:
    # A fixed path, not a random one: it shows up in tool output (tracebacks), and so in the
    # token estimate.
    slug = re.sub(r"[^\w.-]", "_", session.name)
    base = Path(tempfile.gettempdir()) / f"io-tui-real-{slug}-{ceiling}"
    shutil.rmtree(base, ignore_errors=True)
    workspace = prepare(session, base)
    script = base / "script.json"
    script.write_text(json.dumps(session.script))
    store = base / "store.db"
    log = base / "snapshots.jsonl"
    venv_bin = str(Path(sys.executable).parent)
    env = (
        os.environ
        | GIT_ID
        | {
            "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
            "PIP_NO_INDEX": "1",
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_DATA_HOME": str(base / "data"),
            "XDG_CACHE_HOME": str(base / "cache"),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    argv = [
        *isolation(), sys.executable, str(HERE / "snapshot_cli.py"), str(log), str(workspace),
        "--", "run", "--provider", f"scripted:{script}", "--context-max-tokens", str(ceiling),
        "--approve", "all", "--store", str(store), "--workspace", str(workspace),
        "--max-steps", str(session.steps + 5), session.task,
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=base)
    seconds = time.perf_counter() - started
    trace, history = asyncio.run(read_store(store))
    trees = [json.loads(line)["tree"] for line in log.read_text().splitlines()]
    output = done.stdout[-2000:] + done.stderr[-2000:]
    return Replay(
        session, ceiling, done.returncode, seconds, trace, history, trees,
        log.with_suffix(".git"), output, base,
    )  # fmt: skip


async def read_store(path: Path) -> tuple[dict[str, Any], list[StepRecord]]:
    store = await Store.open(path)
    try:
        return await build_trace(store, 1), await store.runs.history(1)
    finally:
        await store.close()


class Files:
    """The workspace's files as each recorded tree holds them."""

    def __init__(self, snapshots: Path) -> None:
        self.git = ["git", "--git-dir", str(snapshots)]
        self._trees: dict[str, dict[str, str]] = {}
        self._blobs: dict[str, list[str]] = {}

    def lines(self, tree: str, path: str) -> list[str] | None:
        """``path``'s lines in ``tree``; None where it has no such file."""
        if tree not in self._trees:
            listing = subprocess.run(
                [*self.git, "ls-tree", "-r", "-z", tree], capture_output=True, check=True
            ).stdout.decode(errors="replace")
            entries = (e.split("\t", 1) for e in listing.split("\0") if e)
            self._trees[tree] = {p: meta.split()[2] for meta, p in entries}
        blob = self._trees[tree].get(os.path.normpath(path))
        if blob is None:
            return None
        if blob not in self._blobs:
            raw = subprocess.run([*self.git, "cat-file", "blob", blob], capture_output=True)
            self._blobs[blob] = raw.stdout.decode(errors="replace").splitlines()
        return self._blobs[blob]
