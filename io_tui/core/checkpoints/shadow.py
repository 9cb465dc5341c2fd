"""One workspace's shadow git store: checkpoints of the whole workspace, taken, compared and
restored with git's own plumbing, kept outside the workspace (``paths.checkpoints_dir()``).

A checkpoint is a git tree of every file the workspace holds (tracked by its own git or not,
and the files its ignore files exclude while they are small), wrapped in a commit on its run's
ref (``refs/io-tui/runs/<run>``). The shadow index always describes the last tree written and
``HEAD`` points at it, so ``git status`` lists only what changed since: a checkpoint of a large
workspace with a small change stats the tree and hashes the few files that moved.

What is left out is said, never silently lost: a file over ``max_file_bytes``, an ignored
directory over ``ignored_dir_files``/``ignored_dir_bytes`` (``node_modules``), a nested git
repository. A rewind leaves those alone. Every call is synchronous (git processes); the run
calls them on a thread. One process at a time takes a checkpoint of a workspace (a lock file).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from io_tui.core.checkpoints.git import (
    CheckpointError,
    git_env,
    nul_join,
    nul_split,
    run_git,
)
from io_tui.core.contract import CheckpointLimits

BRANCH = "refs/heads/workspace"  # HEAD: the tree the shadow index describes
RUN_REF = "refs/io-tui/runs/{run}"
SKIPPED_CACHE = "skipped-dirs.json"  # ignored directories found too large, by mtime
HEAD_NOTE = "head.json"  # HEAD's commit and tree, as the last checkpoint left them


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path a checkpoint left out, and why."""

    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One checkpoint as git holds it: the commit and its tree, how many paths changed since
    the tree before it (0: the same tree, no new commit), and what was left out."""

    commit: str
    tree: str
    changed: int
    skipped: tuple[Skipped, ...] = ()


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path that differs between two trees: ``status`` A (only in the second), D (only in
    the first), M (content), T (type: a file became a link); the modes are git's (``100644``,
    ``100755``, ``120000``; ``000000`` when absent); lines added and removed (None: binary)."""

    path: str
    status: str
    old_mode: str
    new_mode: str
    added: int | None = None
    removed: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "old_mode": self.old_mode,
            "new_mode": self.new_mode,
            "added": self.added,
            "removed": self.removed,
        }


@dataclass
class _Status:
    """What ``git status`` says moved since the last tree."""

    update: list[str] = field(default_factory=list)  # changed or new, to hash
    remove: list[str] = field(default_factory=list)  # gone
    ignored: list[str] = field(default_factory=list)  # excluded by the ignore files
    nested: list[str] = field(default_factory=list)  # untracked directories git will not enter


def store_dir_for(base: Path, workspace: Path) -> Path:
    """The shadow store of ``workspace`` under ``base``: its name and a digest of its path."""
    root = str(workspace.resolve())
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(root).name)[:40] or "root"
    return base / f"{name}-{hashlib.sha256(root.encode()).hexdigest()[:16]}"


class ShadowStore:
    """The checkpoints of one workspace (``root``), in ``directory``."""

    def __init__(self, root: Path, directory: Path, limits: CheckpointLimits | None = None) -> None:
        self.root = root.resolve()
        self.directory = directory
        self.git_dir = directory / "git"
        self.limits = limits or CheckpointLimits()
        self.env = git_env(self.git_dir, self.root)

    @classmethod
    def for_workspace(
        cls, base: Path, root: Path, limits: CheckpointLimits | None = None
    ) -> ShadowStore:
        return cls(root, store_dir_for(base, root), limits)

    # -- the store --

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def _ensure(self) -> None:
        if self.exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        run_git(self.env, ["init", "--quiet", "--template=", str(self.git_dir)], cwd=self.directory)
        for key, value in (
            ("core.bare", "false"),
            ("core.autocrlf", "false"),
            ("core.filemode", "true"),
            ("core.symlinks", "true"),
            ("core.quotepath", "false"),
            ("core.untrackedCache", "true"),
            ("core.fsmonitor", "false"),
            ("core.hooksPath", os.devnull),
            ("core.splitIndex", "true"),  # a checkpoint rewrites a small index, not 10,000 entries
            ("commit.gpgSign", "false"),
        ):
            run_git(self.env, ["config", key, value])
        run_git(self.env, ["symbolic-ref", "HEAD", BRANCH])
        (self.directory / "workspace").write_text(str(self.root) + "\n")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One process at a time changes this store (its index, its refs)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / "lock", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- taking a checkpoint --

    def snapshot(
        self, message: str, *, run_id: int | None, parent: tuple[str, str] | None = None
    ) -> Snapshot:
        """A checkpoint of the workspace as it is now, on run ``run_id``'s ref (None: on no
        run's, a look at the workspace that a later ``collect`` may free). ``parent``: the
        run's previous checkpoint (commit, tree); an unchanged workspace gives it back."""
        if not self.root.is_dir():
            raise CheckpointError(f"the workspace {self.root} is not a directory")
        with self.locked():
            self._ensure()
            head = self._head()  # None: unknown, so the index's tree is written to learn it
            status = self._status()
            skipped: list[Skipped] = [
                Skipped(p, "a nested git repository (its own .git): not checkpointed")
                for p in status.nested
            ]
            update, too_big = self._within_cap(status.update)
            ignored, left_out = self._ignored(status.ignored)
            skipped += too_big + left_out
            remove = status.remove + sorted(self._indexed(too_big))
            changed = len(update) + len(ignored) + len(remove)
            if changed:
                self._forget_head()  # the index moves: the note holds until the tree is known
            if update or ignored:
                run_git(
                    self.env,
                    ["update-index", "--add", "--remove", "-z", "--stdin"],
                    stdin=nul_join(update + ignored),
                )
            if remove:
                run_git(
                    self.env,
                    ["update-index", "--force-remove", "-z", "--stdin"],
                    stdin=nul_join(remove),
                )
            if head is not None and not changed:
                tree = head[1]
            else:
                tree = run_git(self.env, ["write-tree"]).decode().strip()
            if parent is not None and parent[1] == tree:
                commit = parent[0]
            elif parent is None and head is not None and head[1] == tree:
                commit = head[0]
            else:
                commit = self._commit(tree, parent[0] if parent else None, message)
            self._keep_head(commit, tree)
            refs = {BRANCH: commit}  # HEAD's tree is the index's: status lists what moved
            if head is not None and head[0] == commit:
                del refs[BRANCH]
            if run_id is not None and (parent is None or commit != parent[0]):
                refs[RUN_REF.format(run=run_id)] = commit
            if refs:
                lines = "".join(f"update {ref} {value}\n" for ref, value in refs.items())
                run_git(self.env, ["update-ref", "--stdin"], stdin=lines.encode())
            return Snapshot(commit, tree, changed, tuple(skipped))

    def _head(self) -> tuple[str, str] | None:
        """HEAD's commit and the index's tree, as the last checkpoint left them (a note beside
        the store, dropped while the index moves); None when not known."""
        try:
            data = json.loads((self.directory / HEAD_NOTE).read_text())
            return str(data["commit"]), str(data["tree"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _forget_head(self) -> None:
        (self.directory / HEAD_NOTE).unlink(missing_ok=True)

    def _keep_head(self, commit: str, tree: str) -> None:
        note = self.directory / HEAD_NOTE
        temp = note.with_suffix(".tmp")
        temp.write_text(json.dumps({"commit": commit, "tree": tree}))
        os.replace(temp, note)

    def _commit(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        return run_git(self.env, args).decode().strip()

    def _status(self) -> _Status:
        out = run_git(
            self.env,
            [
                "status",
                "--porcelain=v2",
                "-z",
                "--untracked-files=all",
                "--ignored=matching",
                "--no-renames",
                "--ignore-submodules=all",
            ],
        )
        found = _Status()
        for record in out.split(b"\0"):
            if not record:
                continue
            kind, text = record[:1], record.decode(errors="surrogateescape")
            if kind == b"1":
                fields = text.split(" ", 8)
                worktree, path = fields[1][1], fields[8]
                if worktree == "D":
                    found.remove.append(path)
                elif worktree != ".":
                    found.update.append(path)
            elif kind == b"?":
                path = text[2:]
                (found.nested if path.endswith("/") else found.update).append(path)
            elif kind == b"!":
                found.ignored.append(text[2:])
        return found

    def _within_cap(self, paths: Sequence[str]) -> tuple[list[str], list[Skipped]]:
        """``paths`` under the file size cap, and the ones over it (left out)."""
        cap = self.limits.max_file_bytes
        kept: list[str] = []
        skipped: list[Skipped] = []
        for path in paths:
            try:
                st = os.lstat(self.root / path)
            except OSError:
                kept.append(path)  # gone since: update-index --remove drops it
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > cap:
                skipped.append(Skipped(path, f"{st.st_size:,} bytes: over the {cap:,}-byte cap"))
            else:
                kept.append(path)
        return kept, skipped

    def _indexed(self, skipped: Sequence[Skipped]) -> set[str]:
        """Which of the paths in ``skipped`` the index holds (a file that grew over the cap)."""
        if not skipped:
            return set()
        out = run_git(self.env, ["ls-files", "-z", "--", *[f":(literal){s.path}" for s in skipped]])
        return set(nul_split(out))

    def _ignored(self, entries: Sequence[str]) -> tuple[list[str], list[Skipped]]:
        """The files of what the ignore files exclude that are kept (each file under the cap,
        each directory under its file and byte caps), and what is left out."""
        cache = self._skipped_dirs()
        kept: list[str] = []
        skipped: list[Skipped] = []
        for entry in entries:
            if not entry.endswith("/"):
                small, large = self._within_cap([entry])
                kept += small
                skipped += large
                continue
            directory = self.root / entry
            try:
                mtime = os.stat(directory).st_mtime_ns
            except OSError:
                continue
            known = cache.get(entry)
            if known is not None and known[0] == mtime:
                skipped.append(Skipped(entry, known[1]))
                continue
            files, reason = self._small_dir(entry)
            if reason is None:
                cache.pop(entry, None)
                kept += files
            else:
                cache[entry] = (mtime, reason)
                skipped.append(Skipped(entry, reason))
        self._keep_skipped_dirs(cache, entries)
        return kept, skipped

    def _small_dir(self, entry: str) -> tuple[list[str], str | None]:
        """Every file of the ignored directory ``entry``, or why it is left out (it stops
        counting at the cap, so ``node_modules`` costs a few thousand entries, once)."""
        limits = self.limits
        files: list[str] = []
        total = 0
        for top, dirs, names in os.walk(self.root / entry):
            if ".git" in dirs or ".git" in names:
                return [], "an ignored directory holding a git repository: not checkpointed"
            rel = os.path.relpath(top, self.root)
            for name in names:
                path = os.path.join(rel, name)
                try:
                    st = os.lstat(self.root / path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    if st.st_size > limits.max_file_bytes:
                        continue  # said when listed on its own: under a kept directory it is
                    total += st.st_size
                files.append(path)
                if len(files) > limits.ignored_dir_files:
                    return [], (
                        f"ignored by the workspace's ignore files, over {limits.ignored_dir_files:,}"
                        " files: not checkpointed"
                    )
                if total > limits.ignored_dir_bytes:
                    return [], (
                        f"ignored by the workspace's ignore files, over {limits.ignored_dir_bytes:,}"
                        " bytes: not checkpointed"
                    )
        return files, None

    def _skipped_dirs(self) -> dict[str, tuple[int, str]]:
        try:
            data = json.loads((self.directory / SKIPPED_CACHE).read_text())
            return {k: (int(v[0]), str(v[1])) for k, v in data.items()}
        except (OSError, ValueError, TypeError, IndexError, AttributeError):
            return {}

    def _keep_skipped_dirs(self, cache: dict[str, tuple[int, str]], seen: Sequence[str]) -> None:
        current = {k: v for k, v in cache.items() if k in seen}
        if current == self._skipped_dirs():
            return
        path = self.directory / SKIPPED_CACHE
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(current))
        os.replace(temp, path)

    # -- reading checkpoints --

    def diff(self, old_tree: str, new_tree: str) -> list[FileChange]:
        """Every path that differs between two trees, with its lines added and removed."""
        if old_tree == new_tree:
            return []
        raw = run_git(
            self.env, ["diff-tree", "-r", "-z", "--no-renames", "--raw", old_tree, new_tree]
        ).split(b"\0")
        numstat = ["diff-tree", "-r", "-z", "--no-renames", "--numstat", old_tree, new_tree]
        counts = _numstat(run_git(self.env, numstat))
        changes = []
        for head, path_bytes in zip(raw[0::2], raw[1::2], strict=False):
            if not head.startswith(b":"):
                continue
            old_mode, new_mode, _, _, status = head[1:].decode().split(" ")
            path = path_bytes.decode(errors="surrogateescape")
            added, removed = counts.get(path, (None, None))
            changes.append(FileChange(path, status[0], old_mode, new_mode, added, removed))
        return changes

    def paths(self, tree: str) -> set[str]:
        return set(nul_split(run_git(self.env, ["ls-tree", "-r", "-z", "--name-only", tree])))

    def has(self, commit: str) -> bool:
        probe = run_git(
            self.env, ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], check=False
        )
        return bool(probe.strip())

    def adopt(self, other: ShadowStore, run_id: int) -> None:
        """Take run ``run_id``'s checkpoints from ``other``'s store (a fork's parent's, made in
        another directory), so this store can restore them too."""
        ref = RUN_REF.format(run=run_id)
        with self.locked():
            self._ensure()
            run_git(
                self.env,
                [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    str(other.git_dir),
                    f"+{ref}:refs/io-tui/inherited/{run_id}",
                ],
                cwd=self.directory,
            )

    # -- restoring --

    def restore(self, tree: str, write: Sequence[str], delete: Sequence[str]) -> None:
        """Make ``write`` (paths of ``tree``) what ``tree`` holds, byte for byte and with its
        mode, and remove ``delete`` (paths ``tree`` does not hold), then the directories that
        emptied which ``tree`` has no file under. Nothing else in the workspace is touched."""
        with self.locked():
            self._ensure()
            keep_dirs = _dirs_of(self.paths(tree)) if delete else set()
            for path in delete:
                _remove(self.root / path)
            for path in write:
                _clear_way(self.root, path)
            for path in delete:
                _prune_empty(self.root, Path(path).parent, keep_dirs)
            if write:
                self._checkout(tree, write, self.root)

    def materialize(self, tree: str, target: Path, *, clean: bool = False) -> None:
        """Write every file of ``tree`` into ``target`` (a copy of the workspace as it was; a
        fork's). ``clean``: first remove every file there that ``tree`` does not hold, but a
        ``.git``."""
        with self.locked():
            self._ensure()
            paths = sorted(self.paths(tree))
            if clean:
                wanted = set(paths)
                for top, dirs, names in os.walk(target):
                    dirs[:] = [d for d in dirs if d != ".git"]
                    for name in names:
                        if name == ".git":
                            continue
                        rel = os.path.relpath(os.path.join(top, name), target)
                        if rel not in wanted:
                            _remove(target / rel)
            for path in paths:
                _clear_way(target, path)
            self._checkout(tree, paths, target)

    def _checkout(self, tree: str, paths: Sequence[str], target: Path) -> None:
        index = self.directory / f"restore-{os.getpid()}.index"
        env = git_env(self.git_dir, target, index)
        try:
            run_git(env, ["read-tree", tree])
            run_git(env, ["checkout-index", "--force", "-z", "--stdin"], stdin=nul_join(paths))
        finally:
            index.unlink(missing_ok=True)

    # -- pruning --

    def drop_runs(self, run_ids: Sequence[int]) -> None:
        """Forget the checkpoints of ``run_ids`` (their refs); ``collect`` frees their objects."""
        if not run_ids or not self.exists():
            return
        lines = "".join(f"delete {RUN_REF.format(run=r)}\n" for r in run_ids)
        with self.locked():
            run_git(self.env, ["update-ref", "--stdin"], stdin=lines.encode())

    def collect(self, *, now: bool = True) -> None:
        """Free the objects no kept checkpoint reaches: ``git gc`` with an immediate prune, or
        (``now`` False) ``git gc --auto``, which packs and prunes only past git's thresholds
        and keeps unreachable objects for git's grace period (two weeks)."""
        if not self.exists():
            return
        args = ["gc", "--quiet", "--prune=now"] if now else ["gc", "--quiet", "--auto"]
        with self.locked():
            run_git(self.env, args, cwd=self.directory)

    def size_bytes(self) -> int:
        """What the store takes on disk."""
        total = 0
        for top, _, names in os.walk(self.git_dir):
            for name in names:
                try:
                    total += os.lstat(os.path.join(top, name)).st_size
                except OSError:
                    continue
        return total


def _numstat(output: bytes) -> dict[str, tuple[int | None, int | None]]:
    counts: dict[str, tuple[int | None, int | None]] = {}
    for line in output.split(b"\0"):
        parts = line.split(b"\t", 2)
        if len(parts) != 3:
            continue
        added, removed, path = parts
        if added == b"-":
            counts[path.decode(errors="surrogateescape")] = (None, None)
        else:
            counts[path.decode(errors="surrogateescape")] = (int(added), int(removed))
    return counts


def _dirs_of(paths: set[str]) -> set[str]:
    dirs: set[str] = set()
    for path in paths:
        parent = Path(path).parent
        while str(parent) not in (".", ""):
            dirs.add(str(parent))
            parent = parent.parent
    return dirs


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path)


def _clear_way(root: Path, path: str) -> None:
    """Make room for the file ``path``: a directory where it goes, or a file where one of its
    parent directories goes, is removed (the checkpoint being restored held neither)."""
    target = root / path
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    parent = Path(path).parent
    for part in reversed([parent, *parent.parents]):
        if str(part) in (".", ""):
            continue
        candidate = root / part
        if candidate.is_symlink() or candidate.is_file():
            candidate.unlink()


def _prune_empty(root: Path, directory: Path, keep: set[str]) -> None:
    while str(directory) not in (".", "") and str(directory) not in keep:
        try:
            (root / directory).rmdir()
        except OSError:
            return  # not empty, or gone
        directory = directory.parent
