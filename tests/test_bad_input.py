"""A fast subset of the bad-input corpus (benchmarks/bad_input.py), through the real CLI: no
traceback, no hang, nothing changed, no secret stored, no process left behind."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).parent.parent / "benchmarks" / "bad_input.py"
_spec = importlib.util.spec_from_file_location("bad_input", _PATH)
assert _spec and _spec.loader
corpus = importlib.util.module_from_spec(_spec)
sys.modules["bad_input"] = corpus
_spec.loader.exec_module(corpus)

# The corpus finds leftover processes by their command line (``sleep 987654``, which one case
# starts) and checks a fixed /tmp path: its cases run on one xdist worker, one at a time.
pytestmark = pytest.mark.xdist_group("bad-input")

FAST = [
    "read_file pipe",
    "grep over a workspace with a FIFO",
    "grep ^(a+)+$",
    "write_file 'link_out'",
    "run_command setsid grandchild",
    "run_command env with secrets set",
    "config: binary",
    "policy: a FIFO",
    "script: a FIFO",
]


def test_the_corpus_is_large_and_names_are_unique() -> None:
    names = [c.name for c in corpus.CASES]
    assert len(names) >= 60 and len(set(names)) == len(names)
    assert set(FAST) <= set(names)


@pytest.mark.parametrize("name", FAST)
def test_bad_input_is_a_clear_error(name: str) -> None:
    case = next(c for c in corpus.CASES if c.name == name)
    result = corpus.run_case(case, sys.executable)
    assert result.ok, (result.traceback, result.hung, result.changed, result.leaked, result.message)
