"""The benchmarks' fixture repository: real source text, pinned in an archive.

    .venv/bin/python benchmarks/fixture_repo.py --build     # make fixture-archive: rebuild from git

``fixture_repo.tar.gz`` holds nine modules of ``io_tui/core`` and their policy test as they were
at commit ``COMMIT`` (under ``src/harness/`` and ``tests/``), and a ``pyproject.toml`` that marks
the tree as data. It is data, not code of this project: nothing lints, formats or tests it, and
no search of the checkout finds it twice. Every load checks the archive's sha256 against
``SHA256``; a different archive is an error (the figures in docs/BENCHMARKS.md were measured on
this one), not a new baseline. ``--build`` writes it byte for byte again from the commit (fixed
order, times, owners and gzip header); bytes that do not match the pin go to ``*.new`` instead.

The benchmarks read it with ``files()`` (path -> text, in memory) or ``write_to(root)`` (a
workspace on disk).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath

COMMIT = "8dd59c2221ef79844c29353b2da6c813cb158b30"
SHA256 = "756b32a62265fd59f5ab4c16b093366634e4a063a48e86b714cc3216e0910dac"
ARCHIVE = Path(__file__).with_name("fixture_repo.tar.gz")
ROOT = Path(__file__).resolve().parents[1]

# path in the fixture -> path in the checkout at COMMIT
SOURCES = {
    f"src/harness/{name}.py": f"io_tui/core/{name}.py"
    for name in (
        "approvals",
        "contract",
        "events",
        "ledger",
        "memory",
        "policy",
        "tools/command",
        "tools/files",
        "tools/search",
    )
} | {"tests/test_policy.py": "tests/core/test_policy.py"}

PYPROJECT = f"""\
# A frozen snapshot of real source text that the context benchmarks read, grep and edit in memory
# (never on disk). Copied from io_tui/core at commit {COMMIT[:7]}; it is data, not code of
# this project: no linting, no formatting, no tests.
[project]
name = "fixture-harness"
version = "0.0.0"

[tool.ruff]
exclude = ["*"]
"""


class FixtureError(SystemExit):
    """The archive is missing or is not the pinned one (a SystemExit: the script stops, no traceback)."""


def files() -> dict[str, str]:
    """Every file of the fixture, path -> text, in path order (as ``sorted(root.rglob(...))``)."""
    return dict(_members())


def write_to(root: Path) -> Path:
    """Lay the fixture out under ``root`` (created if need be) and return ``root``."""
    for rel, text in _members():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _members() -> list[tuple[str, str]]:
    try:
        data = ARCHIVE.read_bytes()
    except OSError as e:
        raise FixtureError(
            f"{ARCHIVE}: cannot read the fixture archive ({e.strerror}); rebuild it with `make fixture-archive`"
        ) from e
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        raise FixtureError(
            f"{ARCHIVE}: sha256 {digest}, expected {SHA256}; the benchmarks' figures were measured"
            f" on the pinned archive: rebuild it with `make fixture-archive` (from commit {COMMIT[:7]})"
        )
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        out = [
            (m.name, tar.extractfile(m).read().decode())  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        ]
    return sorted(out, key=lambda item: PurePosixPath(item[0]))


def build() -> bytes:
    """The archive, from git: the same bytes on every machine with the same zlib."""
    texts = {rel: _git_show(src) for rel, src in SOURCES.items()}
    texts["pyproject.toml"] = PYPROJECT.encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(texts, key=PurePosixPath):
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(texts[rel]), 0o644, 0
            tar.addfile(info, io.BytesIO(texts[rel]))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def _git_show(path: str) -> bytes:
    done = subprocess.run(
        ["git", "show", f"{COMMIT}:{path}"], cwd=ROOT, capture_output=True, check=False
    )
    if done.returncode:
        raise FixtureError(f"git show {COMMIT[:7]}:{path}: {done.stderr.decode().strip()}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="store_true", help=f"rewrite {ARCHIVE.name} from git")
    args = parser.parse_args()
    if args.build:
        data = build()
        digest = hashlib.sha256(data).hexdigest()
        if digest != SHA256:  # another zlib packs differently; the pinned archive stays
            other = ARCHIVE.with_name(ARCHIVE.name + ".new")
            other.write_bytes(data)
            sys.exit(f"wrote {other.name}, sha256 {digest}: NOT the pinned {SHA256}")
        ARCHIVE.write_bytes(data)
        print(f"wrote {ARCHIVE.name}, sha256 {digest} (the pinned one)")
    for rel, text in _members():
        print(f"{len(text.splitlines()):>5}  {rel}")


if __name__ == "__main__":
    main()
