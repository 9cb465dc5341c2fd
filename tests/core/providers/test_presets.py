"""Presets, the factory the CLI calls, recreating from describe(), probing, and key redaction."""

from __future__ import annotations

import logging
import pickle
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from provider_helpers import Script, run, sse_response
from replay_server import ReplayServer, json_reply

from io_tui.core.prices import CachePrices
from io_tui.core.providers.anthropic import AnthropicProvider
from io_tui.core.providers.base import (
    CompletionRequest,
    ErrorKind,
    ProviderConfigError,
    ProviderError,
)
from io_tui.core.providers.factory import provider_from_description
from io_tui.core.providers.fallback import FallbackProvider
from io_tui.core.providers.messages import Message
from io_tui.core.providers.openai_compat import OpenAICompatProvider
from io_tui.core.providers.presets import (
    PRESETS,
    cache_prices,
    make_provider,
    output_limits,
    probe_models,
    provider_from_settings,
)
from io_tui.core.providers.retry import RetryPolicy
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.providers.secret import Secret
from io_tui.core.run.settings import RunSettings

KEY = "sk-proj-SECRETSECRET-0123456789"


@pytest.mark.parametrize(
    ("preset", "wire", "url", "env", "limit"),
    [
        ("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", 8_192),
        ("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", 8_192),
        ("openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", 8_192),
        ("ollama", "openai", "http://localhost:11434/v1", None, 2_048),
        ("llamacpp", "openai", "http://localhost:8080/v1", None, 2_048),
        ("vllm", "openai", "http://localhost:8000/v1", None, 2_048),
        ("lmstudio", "openai", "http://localhost:1234/v1", None, 2_048),
    ],
)
def test_presets(preset: str, wire: str, url: str, env: str | None, limit: int) -> None:
    spec = PRESETS[preset]
    assert (spec.wire, spec.base_url, spec.key_env) == (wire, url, env)
    provider = make_provider(preset, model="m", env={env: KEY} if env else {})
    assert provider.describe() == {
        "kind": "http",
        "preset": preset,
        "wire": wire,
        "model": "m",
        "base_url": url,
        "streaming": True,
        "max_output_tokens": limit,
        "max_output_set": False,  # the preset's default: each request fits it to the window
    }


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(ProviderConfigError, match="--base-url"):
        make_provider("openai-compatible", model="m", env={})
    provider = make_provider("openai-compatible", model="m", base_url="http://box:9000/v1/", env={})
    assert provider.base_url == "http://box:9000/v1"


@pytest.mark.parametrize(
    ("preset", "kw", "match"),
    [
        ("openai", {}, "OPENAI_API_KEY"),
        ("anthropic", {}, "ANTHROPIC_API_KEY"),
        ("nope", {}, "unknown provider 'nope'"),
        ("ollama", {"model": ""}, "--model"),
        ("ollama", {"base_url": "localhost:11434"}, "http://"),
    ],
)
def test_config_errors(preset: str, kw: dict[str, str], match: str) -> None:
    with pytest.raises(ProviderConfigError, match=match):
        make_provider(preset, **{"model": "m", **kw}, env={})  # type: ignore[arg-type]


def test_openai_preset_uses_max_completion_tokens() -> None:
    provider = make_provider("openai", model="gpt-4o", env={"OPENAI_API_KEY": KEY})
    from provider_helpers import ask

    body = provider.wire.body(ask(), "gpt-4o", stream=True)
    assert "max_completion_tokens" in body and "max_tokens" not in body
    ollama = make_provider("ollama", model="llama3", env={})
    assert "max_tokens" in ollama.wire.body(ask(), "llama3", stream=True)


async def test_key_from_env_is_sent_and_argument_wins() -> None:
    script = Script(
        [
            sse_response(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'),
            sse_response(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'),
        ]
    )
    env = {"OPENROUTER_API_KEY": KEY}
    await run(make_provider("openrouter", model="m", env=env, transport=script.transport))
    await run(
        make_provider(
            "openrouter", model="m", env=env, api_key="sk-arg", transport=script.transport
        )
    )
    assert script.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert script.requests[0].headers["x-title"] == "io-tui"
    assert script.requests[1].headers["authorization"] == "Bearer sk-arg"


def test_recreate_from_description() -> None:
    env = {"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY}
    original = make_provider("anthropic", model="claude-x", base_url="http://proxy:1", env=env)
    again = provider_from_description(original.describe(), env=env)
    assert isinstance(again, AnthropicProvider)
    assert again.describe() == original.describe()
    chain = FallbackProvider(original, make_provider("ollama", model="llama3", env={}))
    rebuilt = provider_from_description(chain.describe(), env=env)
    assert isinstance(rebuilt, FallbackProvider) and rebuilt.describe() == chain.describe()
    with pytest.raises(ProviderConfigError):
        provider_from_description({"kind": "http", "preset": "anthropic", "model": "c"}, env={})


def test_recreate_a_chain_of_any_kinds(write_script: Any) -> None:
    """One dispatcher: a recorded fallback chain may hold a scripted provider beside HTTP ones."""
    scripted = ScriptedProvider.from_file(write_script([{"text": "hi"}]))
    chain = FallbackProvider(make_provider("ollama", model="llama3", env={}), scripted)
    rebuilt = provider_from_description(chain.describe(), env={})
    assert isinstance(rebuilt, FallbackProvider) and rebuilt.describe() == chain.describe()
    with pytest.raises(ProviderConfigError, match="cannot recreate a provider of kind 'mcp'"):
        provider_from_description(
            {"kind": "fallback", "chain": [chain.describe(), {"kind": "mcp"}]}
        )
    with pytest.raises(ProviderConfigError, match="needs at least two entries"):
        provider_from_description({"kind": "fallback", "chain": [scripted.describe()]})


def test_from_settings_builds_fallback_and_retries() -> None:
    settings = SimpleNamespace(
        provider="ollama",
        model="qwen",
        base_url="http://gpu:11434/v1",
        fallback_provider="openai",
        fallback_model="gpt-4o-mini",
        request_timeout_s=30.0,
        max_retries=2,
    )
    built = provider_from_settings(settings, env={"OPENAI_API_KEY": KEY})
    assert isinstance(built, FallbackProvider)
    first, second = built.chain
    assert isinstance(first, OpenAICompatProvider) and isinstance(second, OpenAICompatProvider)
    assert (first.base_url, first.model, first.retry.max_attempts) == (
        "http://gpu:11434/v1",
        "qwen",
        3,
    )
    assert (second.name, second.model) == ("openai", "gpt-4o-mini")
    settings.fallback_provider = None
    assert isinstance(provider_from_settings(settings, env={}), OpenAICompatProvider)


async def test_key_never_leaks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    echoed = {
        "error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}
    }
    script = Script([httpx.Response(401, json=echoed)])
    provider = make_provider(
        "openai",
        model="gpt-4o",
        env={"OPENAI_API_KEY": KEY},
        transport=script.transport,
        retry=RetryPolicy(max_attempts=1),
    )
    with pytest.raises(ProviderError) as info:
        await run(provider)
    assert script.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was used
    assert info.value.kind is ErrorKind.AUTH
    assert "Incorrect API key provided: ***." in info.value.message
    texts = [
        repr(provider),
        str(provider),
        str(provider.describe()),
        str(info.value),
        repr(info.value),
        info.value.message,
        str([a.to_json() for a in info.value.attempts]),
        repr(provider.__dict__),
        caplog.text,
    ]
    for text in texts:
        assert KEY not in text
    assert "SECRETSECRET" not in "".join(texts)


def test_secret_masks_itself() -> None:
    secret = Secret(KEY)
    assert KEY not in repr(secret) and KEY not in str(secret) and KEY not in f"{secret}"
    assert secret.reveal() == KEY
    assert secret.redact(f"key={KEY}!") == "key=***!"
    with pytest.raises(TypeError):
        pickle.dumps(secret)


async def _probe(preset: str, **kwargs: Any) -> tuple[bool, str]:
    result = await probe_models(preset, **kwargs)
    return result.reachable, result.detail


async def test_probe_reachable_and_not(server: ReplayServer) -> None:
    server.add(json_reply(200, {"object": "list", "data": [{"id": "llama3"}, {"id": "qwen"}]}))
    ok, detail = await _probe("openai-compatible", base_url=server.base_url + "/v1", env={})
    assert ok is True
    assert detail == f"2 model(s) at {server.base_url}/v1: llama3, qwen"
    assert server.requests[0].method == "GET" and server.requests[0].path == "/v1/models"

    server.add(json_reply(401, {"error": {"message": f"bad key {KEY}"}}))
    ok, detail = await _probe(
        "openai-compatible", base_url=server.base_url + "/v1", api_key=KEY, env={}
    )
    assert ok is False and "HTTP 401" in detail and KEY not in detail

    ok, detail = await _probe("openai", env={})
    assert ok is False and "OPENAI_API_KEY" in detail

    await server.stop()
    ok, detail = await _probe("llamacpp", base_url=server.base_url + "/v1", timeout_s=1.0)
    assert ok is False and detail.startswith("cannot reach")


async def test_probe_anthropic_uses_its_models_path() -> None:
    script = Script([httpx.Response(200, json={"data": [{"id": "claude-x"}]})])
    ok, _ = await _probe("anthropic", env={"ANTHROPIC_API_KEY": KEY}, transport=script.transport)
    [request] = script.requests
    assert ok is True
    assert str(request.url) == "https://api.anthropic.com/v1/models"
    assert request.headers["x-api-key"] == KEY


@pytest.mark.parametrize(
    ("preset", "write", "read", "keyed"),
    [
        ("anthropic", 1.25, 0.1, False),
        ("openai", 1.0, 0.25, True),
        ("openrouter", 1.0, 0.25, False),
        ("llamacpp", 1.0, 0.1, False),
        ("ollama", 1.0, 0.1, False),
    ],
)
def test_presets_carry_their_cache_prices_and_key(
    preset: str, write: float, read: float, keyed: bool
) -> None:
    prices = cache_prices(preset)
    assert (prices.uncached, prices.write, prices.read) == (1.0, write, read)
    provider = make_provider(preset, model="m", env={PRESETS[preset].key_env or "": KEY})
    request = CompletionRequest((Message("user", "hi"),), cache_key="io-tui-run")
    body = provider.wire.body(request, "m", stream=True)
    assert ("prompt_cache_key" in body) is keyed


def test_a_script_or_unknown_provider_is_priced_as_anthropic_without_a_minimum() -> None:
    assert cache_prices("scripted:run.json") == CachePrices()


# -- output limits and windows (issue 17 item 1) --


def test_output_limits_by_preset_model_and_setting() -> None:
    assert output_limits("llamacpp", "whatever-gguf") == (2_048, None)  # local: small default
    assert output_limits("anthropic", "claude-sonnet-4-5") == (8_192, 200_000)
    assert output_limits("openrouter", "anthropic/claude-3-5-haiku") == (8_192, 200_000)
    assert output_limits("openai", "gpt-4o-mini") == (8_192, 128_000)
    assert output_limits("openai", "gpt-4o-mini", 20_000) == (20_000, 128_000)  # setting wins
    assert output_limits("ollama", "qwen3", 512) == (512, None)


def test_the_limit_travels_with_the_provider_and_its_description() -> None:
    settings = RunSettings(provider="vllm", model="m", max_output_tokens=777)
    provider = provider_from_settings(settings, env={})
    assert (provider.max_output_tokens, provider.window_tokens) == (777, None)  # type: ignore[attr-defined]
    again = provider_from_description(provider.describe(), env={})
    assert again.max_output_tokens == 777  # type: ignore[attr-defined]
    assert provider.output_set and again.output_set  # type: ignore[attr-defined]
    default = provider_from_settings(RunSettings(provider="vllm", model="m"), env={})
    resumed = provider_from_description(default.describe(), env={})
    assert not default.output_set and not resumed.output_set  # type: ignore[attr-defined]
    assert resumed.max_output_tokens == 2_048  # type: ignore[attr-defined]
    claude = make_provider("anthropic", model="claude-opus-4-1", env={"ANTHROPIC_API_KEY": KEY})
    assert (claude.max_output_tokens, claude.window_tokens) == (8_192, 200_000)


def test_a_configured_window_wins_over_the_table_and_survives_a_resume() -> None:
    key = {"ANTHROPIC_API_KEY": KEY}
    claude = make_provider("anthropic", model="claude-opus-4-1", env=key)
    assert (claude.window_tokens, claude.window_source) == (200_000, "preset")
    assert "window_tokens" not in claude.describe()  # the table's: found again on resume
    settings = RunSettings(provider="anthropic", model="claude-opus-4-1", context_window=50_000)
    set_one = provider_from_settings(settings, env=key)
    assert (set_one.window_tokens, set_one.window_source) == (50_000, "config")  # type: ignore[attr-defined]
    again = provider_from_description(set_one.describe(), env=key)
    assert (again.window_tokens, again.window_source) == (50_000, "config")  # type: ignore[attr-defined]
    with pytest.raises(ProviderConfigError, match="no room beside the output budget of 8,192"):
        make_provider("anthropic", model="claude-opus-4-1", env=key, window_tokens=8_192)
