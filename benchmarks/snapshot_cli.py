"""io-tui's command line, with the workspace recorded before each working request.

    python benchmarks/snapshot_cli.py SNAPSHOTS.jsonl WORKSPACE -- run --provider scripted:… …

``real_sessions.py`` needs to know what every file held when each request was sent (a copy
carried in a request is stale only against the file as it was then), and a run's commands
change files the store never sees. So this starts the real CLI (``io_tui.cli.main``, the same
argv) with one addition: before the scripted provider answers a working request, the
workspace's tree is written into a git directory of its own beside the workspace (its own
index, so the workspace's git state and what the agent's ``git`` commands print do not
change), and the tree's hash is appended to SNAPSHOTS.jsonl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from io_tui.cli import main
from io_tui.core.providers.base import CompletionRequest, StreamEvent
from io_tui.core.providers.scripted import ScriptedProvider


def git(snapshots: Path, workspace: Path, *args: str) -> str:
    env = os.environ | {
        "GIT_DIR": str(snapshots),
        "GIT_WORK_TREE": str(workspace),
        "GIT_INDEX_FILE": str(snapshots / "index"),
    }
    done = subprocess.run(["git", *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def snapshot(snapshots: Path, workspace: Path) -> str:
    """The workspace's tree as it is now (ignored files left out, as git leaves them)."""
    git(snapshots, workspace, "add", "-A", ".")
    return git(snapshots, workspace, "write-tree")


def record_before_each_request(log: Path, workspace: Path) -> None:
    snapshots = log.with_suffix(".git")
    subprocess.run(["git", "init", "-q", "--bare", str(snapshots)], check=True)
    answer = ScriptedProvider.stream

    async def stream(
        self: ScriptedProvider, request: CompletionRequest
    ) -> AsyncIterator[StreamEvent]:
        if request.purpose == "work":
            tree = snapshot(snapshots, workspace)
            with log.open("a") as out:
                out.write(json.dumps({"request": self.consumed, "tree": tree}) + "\n")
        async for event in answer(self, request):
            yield event

    ScriptedProvider.stream = stream  # type: ignore[method-assign]


if __name__ == "__main__":
    log, workspace, dashes, *argv = sys.argv[1:]
    if dashes != "--":
        raise SystemExit(__doc__)
    record_before_each_request(Path(log).resolve(), Path(workspace).resolve())
    raise SystemExit(main(argv))
