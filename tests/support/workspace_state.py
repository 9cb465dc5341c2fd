"""A workspace's state as files on disk, for rewind and fork tests: every path's kind, mode
and content digest; its own ``.git``, digested; a copy taken before each step of a run; a git
repository with an index, a stash and a hook of its own."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

from io_tui.core import RunEvent
from io_tui.core.events import EventKind

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(root: Path) -> None:
    """A workspace that is a git repository with an index, a stash and a hook of its own."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def parse(x):\n    return x\n")
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "README.md").write_text("# demo\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / ".gitignore").write_text("build/\n*.log\n")
    os.symlink("src/app.py", root / "link.py")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "README.md").write_text("# demo, stashed edit\n")
    git(root, "stash", "-q")
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    git(root, "add", "notes.txt")  # staged: the index differs from HEAD
    (root / "scratch.txt").write_text("untracked before the run\n")
    (root / "debug.log").write_text("ignored, small\n")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)


def tree_state(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every path under ``root`` (its ``.git`` aside): kind, permission bits, content digest
    (a link's target)."""
    found: dict[str, tuple[str, int, str]] = {}
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" or Path(top) != root]
        for name in dirs + names:
            path = Path(top) / name
            rel = str(path.relative_to(root))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", 0, "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", stat.S_IMODE(st.st_mode), digest)
    return found


def dot_git(root: Path) -> dict[str, str]:
    """The workspace's own ``.git``, every file's bytes digested."""
    out = {}
    for top, _, names in os.walk(root / ".git"):
        for name in names:
            path = Path(top) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class Copier:
    """An event sink that copies the workspace before each step's request goes out."""

    def __init__(self, root: Path, into: Path) -> None:
        self.root, self.into = root, into
        self.copies: dict[int, dict[str, tuple[str, int, str]]] = {}

    def emit(self, event: RunEvent) -> None:
        if event.kind is EventKind.REQUEST_STARTED and event.step not in self.copies:
            self.copies[event.step] = tree_state(self.root)
