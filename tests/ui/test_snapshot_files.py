"""Every snapshot SVG belongs to a snapshot test. syrupy fails a session on a snapshot no test
used, but not under pytest-xdist (``make test``), where no process sees every test: this check
stands in for it there (without xdist both run)."""

from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).parent
SNAPSHOTS = HERE / "__snapshots__"


def _snapshot_tests(module: Path) -> set[str]:
    """The test functions in ``module`` that take ``snap_compare``."""
    tree = ast.parse(module.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
        and any(arg.arg == "snap_compare" for arg in node.args.args)
    }


def test_every_snapshot_file_has_its_test() -> None:
    svgs = sorted(SNAPSHOTS.glob("*/*.svg"))
    assert svgs, f"no snapshots under {SNAPSHOTS}"
    orphans = []
    for svg in svgs:
        module = HERE / f"{svg.parent.name}.py"
        test = svg.stem.split("[", 1)[0]  # a parametrized test's snapshot: name[id].svg
        if not module.is_file() or test not in _snapshot_tests(module):
            orphans.append(str(svg.relative_to(HERE)))
    assert not orphans, f"snapshots of no snapshot test (delete them): {orphans}"
