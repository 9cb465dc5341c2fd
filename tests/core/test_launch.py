"""Launching a run: the contract carries its provider's cache prices and the config's overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from io_tui.config import Settings, load_settings
from io_tui.core.prices import CachePrices
from io_tui.core.run.launch import build_run
from io_tui.core.run.request import NewRunRequest
from io_tui.core.run.settings import RunSettings
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


async def test_another_provider_does_not_inherit_the_configs_model_or_base_url(
    tmp_path: Path,
) -> None:
    settings = RunSettings(provider="openai", model="gpt-4o", base_url="http://127.0.0.1:9/v1")
    store = await Store.open(tmp_path / "store.db")
    try:
        request = NewRunRequest("fix it", tmp_path, provider="ollama", model="qwen3")
        _, provider, _ = await build_run(store, settings, request)
        await provider.aclose()
        with pytest.raises(ValueError, match="'ollama' needs a model"):
            await build_run(store, settings, NewRunRequest("fix it", tmp_path, provider="ollama"))
    finally:
        await store.close()
    described = provider.describe()
    assert (described["preset"], described["model"]) == ("ollama", "qwen3")
    assert described["base_url"] == "http://localhost:11434/v1"


async def test_a_request_limit_out_of_range_names_its_field(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "store.db")
    try:
        request = NewRunRequest("fix it", tmp_path, provider="scripted", max_steps=10_001)
        with pytest.raises(ValueError, match="max_steps: Input should be less than or equal"):
            await build_run(store, RunSettings(), request)
    finally:
        await store.close()


def test_the_apps_settings_are_run_settings_plus_its_own() -> None:
    app = Settings(provider="ollama", approve="all", ui={"theme": "io-light"}, max_steps=5)
    assert isinstance(app, RunSettings)
    run = RunSettings.from_json(app.model_dump(mode="json"))  # the worker's hello
    assert (run.provider, run.max_steps) == ("ollama", 5)
    assert run.updated(max_steps=7).max_steps == 7 and app.max_steps == 5
