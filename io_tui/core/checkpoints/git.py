"""The ``git`` binary run against a shadow object store: a separate ``GIT_DIR`` and index
outside the workspace, the workspace as ``GIT_WORK_TREE``.

Only git's own plumbing writes the store (objects, trees, commits, refs), so it is a plain
git repository anyone can inspect with ``git --git-dir``. The user's git configuration, hooks
and any ``GIT_*`` variable of the caller's environment are kept out: a checkpoint must not run
a hook, sign a commit or follow a ``core.excludesFile`` that differs between machines. The
workspace's own ``.git`` is never named, read or written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

GIT_TIMEOUT_S = 300  # a first checkpoint of a large workspace hashes every file


class CheckpointError(Exception):
    """A checkpoint could not be taken, read or restored: one line saying why."""


def git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise CheckpointError("checkpoints need the git binary, and none is on PATH")
    return found


def git_env(git_dir: Path, work_tree: Path, index: Path | None = None) -> dict[str, str]:
    """The environment of every git call on a shadow store: the caller's, without any
    ``GIT_*`` variable, with no system or global configuration and a fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_DIR=str(git_dir),
        GIT_WORK_TREE=str(work_tree),
        GIT_INDEX_FILE=str(index or git_dir / "index"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="io-tui",
        GIT_AUTHOR_EMAIL="io-tui@localhost",
        GIT_COMMITTER_NAME="io-tui",
        GIT_COMMITTER_EMAIL="io-tui@localhost",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


def repository_env() -> dict[str, str]:
    """The environment of a git call on the workspace's own repository (a fork's worktree): the
    caller's, with no ``GIT_*`` variable that could point it elsewhere."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def run_git(
    env: dict[str, str],
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    check: bool = True,
) -> bytes:
    """``git ARGS`` in ``env``; its stdout. A failure raises ``CheckpointError`` with git's
    first line of complaint (``check``), or returns what it printed."""
    try:
        done = subprocess.run(
            [git_binary(), *args],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=cwd or env.get("GIT_WORK_TREE"),
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CheckpointError(f"git {args[0]} took longer than {GIT_TIMEOUT_S} s") from None
    except OSError as exc:
        raise CheckpointError(f"git {args[0]} could not start: {exc.strerror}") from None
    if check and done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise CheckpointError(f"git {args[0]} failed: {said[-1] if said else done.returncode}")
    return done.stdout


def nul_split(output: bytes) -> list[str]:
    """git's ``-z`` output as paths (git writes them as bytes; a name that is not UTF-8 keeps
    its bytes through ``surrogateescape``)."""
    return [p.decode(errors="surrogateescape") for p in output.split(b"\0") if p]


def nul_join(paths: Sequence[str]) -> bytes:
    return b"".join(p.encode(errors="surrogateescape") + b"\0" for p in paths)
