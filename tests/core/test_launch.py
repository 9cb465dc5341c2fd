"""Launching a run: the contract carries its provider's cache prices and the config's overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from io_tui.config import load_settings
from io_tui.core.contract import CachePrices
from io_tui.core.launch import build_run
from io_tui.core.run_request import NewRunRequest
from io_tui.core.store import Store


async def launch(tmp_path: Path, config: str, provider: str) -> CachePrices:
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.toml").write_text(config)
    store = await Store.open(tmp_path / "store.db")
    try:
        request = NewRunRequest("fix it", tmp_path, provider=provider, model="m")
        contract, provider_, _ = await build_run(store, load_settings(), request)
        await provider_.aclose()
    finally:
        await store.close()
    return contract.cache


async def test_a_run_is_priced_as_its_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert await launch(tmp_path, "", "anthropic") == CachePrices(1.0, 1.25, 0.1, 1_024)
    assert await launch(tmp_path, "", "llamacpp") == CachePrices(1.0, 1.0, 0.1, 0)


async def test_the_config_overrides_what_it_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    prices = await launch(tmp_path, "[cache]\nread = 0.1\nmin_prefix_tokens = 0\n", "openai")
    assert prices == CachePrices(uncached=1.0, write=1.0, read=0.1, min_prefix_tokens=0)
