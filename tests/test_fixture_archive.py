"""The benchmarks' pinned fixture: it loads, it refuses an archive that is not the pinned one,
and it is rebuilt byte for byte from its commit."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fixture_repo() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fixture_repo", ROOT / "benchmarks" / "fixture_repo.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_loads_every_file_in_path_order(fixture_repo: ModuleType) -> None:
    files = fixture_repo.files()
    assert list(files) == ["pyproject.toml", *fixture_repo.SOURCES]
    assert "class EventKind(StrEnum):" in files["src/harness/events.py"]
    assert files["pyproject.toml"] == fixture_repo.PYPROJECT


def test_writes_a_workspace(fixture_repo: ModuleType, tmp_path: Path) -> None:
    root = fixture_repo.write_to(tmp_path / "ws")
    on_disk = {
        p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()
    }
    assert on_disk == fixture_repo.files()


def test_a_changed_archive_is_refused(
    fixture_repo: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = tmp_path / "fixture_repo.tar.gz"
    changed.write_bytes(fixture_repo.ARCHIVE.read_bytes() + b"\0")
    monkeypatch.setattr(fixture_repo, "ARCHIVE", changed)
    with pytest.raises(
        fixture_repo.FixtureError, match=r"sha256 [0-9a-f]{64}, expected .*make fixture-archive"
    ):
        fixture_repo.files()
    monkeypatch.setattr(fixture_repo, "ARCHIVE", tmp_path / "missing.tar.gz")
    with pytest.raises(fixture_repo.FixtureError, match="cannot read the fixture archive"):
        fixture_repo.files()


def test_rebuilt_from_its_commit_byte_for_byte(fixture_repo: ModuleType) -> None:
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{fixture_repo.COMMIT}^{{commit}}"], cwd=ROOT, check=False
    )
    if known.returncode:
        pytest.skip(f"this clone lacks commit {fixture_repo.COMMIT[:7]} (shallow)")
    assert fixture_repo.build() == fixture_repo.ARCHIVE.read_bytes()
