"""Prompt-cache accounting: cached prefixes, their price, where and why they broke."""

from __future__ import annotations

import pytest

from io_tui.core.cache import cached_prefix, message_key, request_cost
from io_tui.core.contract import CachePrices
from io_tui.core.providers.base import Message, ToolCall


def keys(*messages: Message) -> list[str]:
    return [message_key(m.to_json()) for m in messages]


SYSTEM = Message("system", "be careful")
TASK = Message("user", "Goal: fix it")
CALL = Message("assistant", "", (ToolCall("c1", "read_file", {"path": "a.txt"}),))
RESULT = Message("tool", "1│a", tool_call_id="c1")


def test_message_key_is_byte_exact_and_order_free() -> None:
    assert message_key({"role": "user", "content": "x"}) == message_key(
        {"content": "x", "role": "user"}
    )
    assert message_key({"role": "user", "content": "x"}) != message_key(
        {"role": "user", "content": "x "}
    )
    assert message_key({"role": "user", "content": "é"}) == '{"content":"é","role":"user"}'


def test_first_request_has_no_cached_prefix() -> None:
    prefix = cached_prefix(None, keys(SYSTEM, TASK), [10, 5])
    assert (prefix.items, prefix.tokens, prefix.rewrote) == (0, 0, False)


def test_an_append_only_request_caches_all_of_the_previous_one() -> None:
    previous = keys(SYSTEM, TASK)
    prefix = cached_prefix(previous, keys(SYSTEM, TASK, CALL, RESULT), [10, 5, 3, 2])
    assert (prefix.items, prefix.tokens, prefix.rewrote) == (2, 15, False)


def test_a_changed_earlier_message_rewrites_the_prefix() -> None:
    stub = Message("tool", "[superseded]", tool_call_id="c1")
    previous = keys(SYSTEM, TASK, CALL, RESULT)
    prefix = cached_prefix(previous, keys(SYSTEM, TASK, CALL, stub), [10, 5, 3, 1])
    assert (prefix.items, prefix.tokens, prefix.rewrote) == (3, 18, True)


def test_a_dropped_last_message_is_a_rewrite_too() -> None:
    prefix = cached_prefix(keys(SYSTEM, TASK, CALL), keys(SYSTEM, TASK), [10, 5])
    assert prefix.rewrote and prefix.items == 2


def test_request_cost_prices_the_prefix_at_read_and_the_rest_at_write() -> None:
    anthropic = CachePrices()
    assert request_cost(1_000, 0, anthropic) == pytest.approx(1_250)
    assert request_cost(1_000, 800, anthropic) == pytest.approx(80 + 250)
    openai = CachePrices(write=1.0, read=0.25, min_prefix_tokens=1_024)
    assert request_cost(2_000, 1_000, openai) == pytest.approx(2_000)  # under the minimum
    assert request_cost(2_000, 1_500, openai) == pytest.approx(375 + 500)
