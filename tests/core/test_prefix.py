"""``common_prefix`` agrees with counting the shared leading items one by one."""

from __future__ import annotations

from hypothesis import given, strategies as st

from io_tui.core.text.prefix import common_prefix


def _naive(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@given(st.lists(st.integers(0, 3), max_size=30), st.lists(st.integers(0, 3), max_size=30))
def test_agrees_with_counting(a: list[int], b: list[int]) -> None:
    assert common_prefix(a, b) == _naive(a, b)
    assert common_prefix(tuple(a), b) == _naive(a, b)


@given(st.lists(st.integers(), max_size=30), st.lists(st.integers(), max_size=5))
def test_a_list_extended_shares_all_of_itself(a: list[int], more: list[int]) -> None:
    assert common_prefix(a, a + more) == len(a)
