"""scripts/check_import_cycles.py on tiny packages written for the test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checker(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    path = ROOT / "scripts" / "check_import_cycles.py"
    spec = importlib.util.spec_from_file_location("check_import_cycles", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


def package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"__init__.py": "", **files}.items():
        (root / "pkg" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "pkg" / rel).write_text(text)
    return root / "pkg"


def test_a_cycle_is_printed_with_the_names_that_tie_it(
    checker: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = package(
        tmp_path,
        {
            "a.py": "from pkg.b import B, helper\nA = 1\n",
            # relative, and inside a function: still an edge
            "b.py": "B = 2\ndef helper():\n    from .a import A\n    return A\n",
            "c.py": "import pkg.a\n",  # imports into the cycle, not part of it
        },
    )
    assert checker.main([str(pkg)]) == 1
    out = capsys.readouterr().out
    assert "cycle 1: 2 modules: pkg.a, pkg.b\n" in out
    assert "pkg/a.py:1 -> pkg.b: B, helper\n" in out
    assert "pkg/b.py:3 -> pkg.a: A (in helper())\n" in out
    assert "pkg.c" not in out
    assert out.endswith("1 import cycle(s) among 4 modules\n")


def test_a_cycle_through_subpackages_and_type_only_imports(
    checker: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = package(
        tmp_path,
        {
            "sub/__init__.py": "",
            "sub/x.py": "from ..top import T\n",
            "sub/y.py": "from pkg.sub import x\n",
            "top.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg.sub.y import Y\n"
                "else:\n"
                "    import os\n"
                "T = 0\n"
            ),
        },
    )
    assert checker.main([str(pkg)]) == 1
    out = capsys.readouterr().out
    assert "cycle 1: 3 modules: pkg.sub.x, pkg.sub.y, pkg.top\n" in out
    assert "pkg/sub/y.py:1 -> pkg.sub.x: x\n" in out  # `from P import module` ties to the module
    assert "pkg/top.py:3 -> pkg.sub.y: Y (type only)\n" in out


def test_no_cycle(checker: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = package(
        tmp_path,
        {"a.py": "import json\nfrom pkg import b\n", "b.py": "from . import c\n", "c.py": ""},
    )
    assert checker.main([str(pkg)]) == 0
    assert capsys.readouterr().out == "no import cycle among 4 modules\n"


def test_bad_input_is_a_clear_error(
    checker: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert checker.main([str(tmp_path)]) == 2
    assert "not a package" in capsys.readouterr().err
    pkg = package(tmp_path, {"bad.py": "def (:\n"})
    assert checker.main([str(pkg)]) == 2
    assert "bad.py:1: cannot parse" in capsys.readouterr().err
