"""Derived context that invalidates (DESIGN §3.2): the skill catalogue, the tool catalogue, the
instruction files and the memory block, each recorded with what it was built from.

A ``Built`` is one such part as the run's requests carry it: its ``version`` (a digest of what
it renders) and its dependencies, each a reference with the version it was built from:

| reference | version |
|---|---|
| ``file:AGENTS.md`` (workspace-relative, else absolute) | the file's content digest, or ``absent`` |
| ``dir:.io-tui/skills`` | the digest of the skill folders it holds (names of their SKILL.md) |
| ``policy:skills/deploy/SKILL.md`` | the read policy's verdict on the skill (``allow``, ``deny``, …) |
| ``tool:read_file`` | the digest of the tool's schema as the model is shown it |
| ``note:workspace:style`` | the digest of the note as the memory block shows it |

Before each request the run checks every part (``rebuild.refresh_derived``): a file is hashed
again only when its stat moved (``Files``); a part whose dependencies moved is rebuilt, and an
``invalidated`` event says which part, what moved (before → after), its cause, the versions
before and after, and what the rebuild did (``Invalidation``).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from io_tui.core.derived.skills import Skill
from io_tui.core.ledger import ObsKind, StepRecord, content_digest
from io_tui.core.memory.notes import MemoryNote, note_line
from io_tui.core.providers.base import ToolSpec

ABSENT = "absent"
# what ``Path.is_dir`` answers False for rather than raise: no such path, not a folder, a loop
_NO_FOLDER = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
MAX_HASHED_BYTES = 4 * 1024 * 1024  # a dependency larger than this is hashed on its head

# what a rebuild did: carried from this request on; identical (nothing sent changes); or, for
# the memory block, left for the next rewrite (new notes of this run, shown in their results)
RebuildEffect = Literal["rebuilt", "unchanged", "deferred"]


def digest(data: str | bytes) -> str:
    """The version of what a part renders or depends on: ``content_digest``, as a read's
    ``Seen.digest`` and a section's ``source_version`` are (one file, one version everywhere)."""
    return content_digest(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)


@dataclass(frozen=True, slots=True)
class Built:
    """One derived part and the version of each dependency it was built from."""

    name: str  # skills | tools | instructions | memory
    version: str
    depends: Mapping[str, str]

    def moved(self, depends: Mapping[str, str]) -> list[dict[str, str]]:
        """The references whose version is not the one this part was built from (a new one's
        before, a gone one's after, are ``absent``), in order."""
        refs = sorted(set(self.depends) | set(depends))
        return [
            {"ref": ref, "before": self.depends.get(ref, ABSENT), "after": depends.get(ref, ABSENT)}
            for ref in refs
            if self.depends.get(ref, ABSENT) != depends.get(ref, ABSENT)
        ]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "depends": dict(self.depends)}


@dataclass(frozen=True, slots=True)
class Invalidation:
    """A part whose dependencies moved, and what its rebuild gave: the ``invalidated`` event."""

    before: Built
    after: Built
    changed: tuple[dict[str, str], ...]
    cause: str
    effect: RebuildEffect

    def to_json(self) -> dict[str, Any]:
        return {
            "cache": self.after.name,
            "before": self.before.version,
            "after": self.after.version,
            "changed": list(self.changed),
            "cause": self.cause,
            "effect": self.effect,
        }


def invalidation(
    before: Built, after: Built, cause: str, effect: RebuildEffect | None = None
) -> Invalidation | None:
    """The invalidation of ``before`` by ``after`` (None: no dependency moved)."""
    changed = before.moved(after.depends)
    if not changed:
        return None
    if effect is None:
        effect = "rebuilt" if after.version != before.version else "unchanged"
    return Invalidation(before, after, tuple(changed), cause, effect)


def _glob(folder: Path, pattern: str) -> list[str] | None:
    """The names ``folder.glob(pattern)`` matches, relative to ``folder`` (POSIX); None when
    ``folder.is_dir()`` is false. For a ``*/<name>`` pattern, from one ``scandir``: as pathlib
    matches it (hidden folders too, a link to a folder followed, the file's stat followed),
    without its selector machinery, a ``Path`` per entry, or a ``stat`` of the folder first,
    which every request paid for each skill folder."""
    star, _, name = pattern.partition("/")
    if star != "*" or not name or any(c in name for c in "*?[/"):
        if not folder.is_dir():
            return None
        return [p.relative_to(folder).as_posix() for p in folder.glob(pattern)]
    found = []
    try:
        entries = os.scandir(folder)
    except OSError as exc:
        if exc.errno in _NO_FOLDER:  # what ``is_dir`` says False for
            return None
        return [] if folder.is_dir() else None  # (which raises where it raised)
    try:
        with entries:
            for entry in entries:
                try:
                    if not entry.is_dir():
                        continue
                except OSError:
                    continue
                if os.path.exists(os.path.join(entry.path, name)):
                    found.append(f"{entry.name}/{name}")
    except OSError:
        return []
    return found


class ReadPolicy(Protocol):
    def read_effect(self, target: str) -> str: ...


# -- files: hashed again only when their stat moved --------------------------------------------


@dataclass
class Files:
    """Content digests of the files derived parts depend on. A file is hashed again only when
    its stat (size, mtime, inode) moved, or after ``forget`` (a write the run made to it, which
    may leave the stat as it was within the clock's grain)."""

    root: Path
    _known: dict[Path, tuple[tuple[int, int, int], str]] = field(default_factory=dict)
    mtimes: dict[Path, int] = field(default_factory=dict)  # when each was last seen to change
    _refs: dict[Path, str] = field(default_factory=dict)  # asked again every request
    # ``listed``'s last answer for each folder and pattern: the names, their digest, the paths
    _listed: dict[tuple[Path, str], tuple[tuple[str, ...], str, list[Path]]] = field(
        default_factory=dict
    )

    def ref(self, path: Path) -> str:
        known = self._refs.get(path)
        if known is not None:
            return known
        try:
            ref = f"file:{path.relative_to(self.root).as_posix()}"
        except ValueError:
            ref = f"file:{path}"
        self._refs[path] = ref
        return ref

    def version(self, path: Path) -> str:
        try:
            st = path.stat()
        except OSError:
            self._known.pop(path, None)
            return ABSENT
        if not stat.S_ISREG(st.st_mode):
            return ABSENT  # a FIFO in its place is never opened
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        known = self._known.get(path)
        if known is not None and known[0] == key:
            return known[1]
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_HASHED_BYTES)
        except OSError:
            return ABSENT
        self._known[path] = (key, digest(data))
        self.mtimes[path] = st.st_mtime_ns
        return self._known[path][1]

    def versions(self, paths: Iterable[Path]) -> dict[str, str]:
        return {self.ref(path): self.version(path) for path in paths}

    def forget(self, path: Path) -> None:
        self._known.pop(path, None)

    def listing(self, folder: Path, pattern: str) -> dict[str, str]:
        """``dir:<folder>`` → the digest of the names ``pattern`` matches in it (absent: no
        such folder), so a file added or removed there moves it."""
        return self.listed(folder, pattern)[0]

    def listed(self, folder: Path, pattern: str) -> tuple[dict[str, str], list[Path]]:
        """``listing``, and the paths it names, sorted (none when there is no such folder): one
        walk of the folder for both."""
        ref = "dir:" + self.ref(folder).removeprefix("file:")
        found = _glob(folder, pattern)
        if found is None:
            return {ref: ABSENT}, []
        names = tuple(sorted(found))
        # the same names as last time: the same digest and paths (the paths' files are still
        # stat'ed by ``versions``, each request)
        known = self._listed.get((folder, pattern))
        if known is None or known[0] != names:
            paths = sorted(folder / n for n in names)
            known = self._listed[folder, pattern] = (names, digest("\n".join(names)), paths)
        return {ref: known[1]}, list(known[2])


# -- the parts' dependencies --------------------------------------------------------------------


def tool_versions(specs: Sequence[ToolSpec]) -> dict[str, str]:
    return {
        f"tool:{t.name}": digest(
            json.dumps([t.description, t.parameters], sort_keys=True, default=str)
        )
        for t in specs
    }


def note_ref(note: MemoryNote) -> str:
    return f"note:{note.scope}:{note.key}"


def note_versions(notes: Sequence[MemoryNote]) -> dict[str, str]:
    """Each active note's digest as the memory block shows it: its line (value, label, source),
    its section and whether it is pinned (which decide where, and whether, it is shown)."""
    return {note_ref(n): digest(f"{n.section}\n{int(n.pinned)}\n{note_line(n)}") for n in notes}


def version_of(depends: Mapping[str, str]) -> str:
    """A part's version when what it renders is fixed by its dependencies alone."""
    return digest(json.dumps(dict(depends), sort_keys=True))


# -- causes, in words ---------------------------------------------------------------------------


def file_cause(changed: Sequence[dict[str, str]], last: StepRecord | None, files: Files) -> str:
    """Why files changed: the run's own write to one, else the tool that ran when one's mtime
    says it changed, else the calls of the step since the last check, else outside the run."""
    refs = [c["ref"].partition(":")[2] for c in changed]
    what = ", ".join(refs)
    if last is not None:
        for obs in last.observations:
            if obs.kind is ObsKind.WRITE and not obs.is_error and obs.target in refs:
                return f"step {obs.step} wrote {obs.target} ({obs.tool})"
        for path, mtime in files.mtimes.items():
            if files.ref(path).partition(":")[2] not in refs:
                continue
            for obs in last.observations:
                start, end = obs.ran_ns
                if start <= mtime <= end:
                    return f"{what} changed on disk during step {obs.step} ({obs.tool})"
        tools = sorted({o.tool for o in last.observations if o.kind is not ObsKind.READ})
        if tools:
            return f"{what} changed on disk after step {last.step} ({', '.join(tools)} ran)"
    return f"{what} changed on disk, outside the run"


def note_cause(changed: Sequence[dict[str, str]], notes: Sequence[MemoryNote]) -> str:
    by_ref = {note_ref(n): n for n in notes}
    parts = []
    for c in changed:
        note = by_ref.get(c["ref"])
        key = c["ref"].split(":", 2)[2]
        if note is None:
            parts.append(f"{key} forgotten, expired or superseded")
        else:
            verb = "written" if c["before"] == ABSENT else "changed"
            who = "the operator" if note.run_id is None else f"run {note.run_id} step {note.step}"
            parts.append(f"{key} {verb} by {who}")
    return "; ".join(parts)


# -- a run's derived parts ----------------------------------------------------------------------


@dataclass
class DerivedContext:
    """A run's derived parts as its requests carry them (``Built`` by name), the skills found
    before the policy chose the readable ones, the tool schemas last recorded, and the file
    digests they all depend on."""

    files: Files
    built: dict[str, Built] = field(default_factory=dict)
    # where the parts are read from, fixed for the run (``rebuild.sources``): each instruction
    # file, and each skill folder with its origin
    sources: tuple[tuple[Path, ...], tuple[tuple[Path, str], ...]] | None = None
    # the bundled skill folder's dependencies: package data, read at the run's first check
    bundled: dict[str, str] | None = None
    # the versions the run's last stored request carried, for a run resumed in this process
    carried: dict[str, str] = field(default_factory=dict)
    skills_found: dict[str, Skill] = field(default_factory=dict)
    specs: tuple[ToolSpec, ...] | None = None
    # the read policy's verdicts on the paths the parts depend on, while the run's policy is
    # the same (frozen) object: every request asks them again, each against every rule
    _policy: ReadPolicy | None = None
    _verdicts: dict[str, str] = field(default_factory=dict)

    def read_effect(self, policy: ReadPolicy, target: str) -> str:
        """``policy.read_effect(target)``, asked of ``policy`` once per target."""
        if policy is not self._policy:
            self._policy, self._verdicts = policy, {}
        effect = self._verdicts.get(target)
        if effect is None:
            effect = self._verdicts[target] = policy.read_effect(target)
        return effect

    def versions(self) -> dict[str, str]:
        """Each part's version, for the manifest of the request that carries them."""
        return {name: built.version for name, built in self.built.items()}

    def update(
        self, after: Built, cause: str, effect: RebuildEffect | None = None
    ) -> Invalidation | None:
        """Record ``after`` as what the requests carry from now on; the invalidation of what it
        replaces (None: no dependency moved, or the run's first build; a resumed run's first
        build is compared with the version its last request carried)."""
        before = self.built.get(after.name)
        self.built[after.name] = after
        if before is not None:
            return invalidation(before, after, cause, effect)
        was = self.carried.get(after.name)
        if was is None or was == after.version:
            return None
        # what it was built from then is not kept: only that its version moved meanwhile
        stopped = f"changed while the run was stopped (its last request carried version {was})"
        return Invalidation(Built(after.name, was, {}), after, (), stopped, "rebuilt")


def invalidation_line(detail: Mapping[str, Any], shown: int = 3) -> str:
    """An ``invalidated`` event in one line (the transcript, the trace viewer, the CLI):
    ``↻ instructions rebuilt: AGENTS.md — step 1 wrote AGENTS.md (write_file)``."""
    refs = [str(c.get("ref", "")).partition(":")[2] for c in detail.get("changed") or ()]
    listed = ", ".join(refs[:shown]) + (f" +{len(refs) - shown} more" if len(refs) > shown else "")
    cause = detail.get("cause") or ""
    return (
        f"↻ {detail.get('cache')} {detail.get('effect')}"
        + (f": {listed}" if refs else "")
        + (f" — {cause}" if cause else "")
    )
