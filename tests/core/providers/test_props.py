"""llama.cpp's ``/props``: where it is and which number is the window."""

import httpx
import pytest
from provider_helpers import Script

from io_tui.core.providers.base import discover_limits, fit_output_limit, tools_ignored
from io_tui.core.providers.fallback import FallbackProvider
from io_tui.core.providers.openai_compat import (
    OpenAICompatProvider,
    is_local,
    props_tools,
    props_url,
    props_window,
)


def test_props_is_beside_the_v1_api() -> None:
    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/props"
    assert props_url("http://host/llm") == "http://host/llm/props"


def test_the_window_is_n_ctx_of_the_default_generation_settings_or_the_top_level() -> None:
    assert props_window({"default_generation_settings": {"n_ctx": 8192}, "n_ctx": 32768}) == 8192
    assert props_window({"n_ctx": 4096}) == 4096
    for bad in (None, [], {}, {"n_ctx": "4096"}, {"n_ctx": 0}, {"n_ctx": True}):
        assert props_window(bad) is None


# -- who is asked: a llama.cpp server or this machine's endpoints, never a hosted API --

PROPS = {"default_generation_settings": {"n_ctx": 4096}}


def _provider(name: str, base_url: str, script: Script) -> OpenAICompatProvider:
    return OpenAICompatProvider(name=name, model="m", base_url=base_url, transport=script.transport)


@pytest.mark.parametrize(
    ("name", "base_url", "asked"),
    [
        ("openai-compatible", "http://127.0.0.1:8080/v1", True),
        ("openai-compatible", "http://localhost:8080/v1", True),
        ("openai-compatible", "http://[::1]:8080/v1", True),
        ("llamacpp", "http://gpu-box.lan:8080/v1", True),  # llama.cpp by configuration
        ("openai-compatible", "https://api.example.com/v1", False),
        ("openrouter", "https://openrouter.ai/api/v1", False),
        ("openai-compatible", "http://10.0.0.7:8080/v1", False),
    ],
)
async def test_props_is_asked_only_of_llama_cpp_or_this_machine(
    name: str, base_url: str, asked: bool
) -> None:
    script = Script([httpx.Response(200, json=PROPS)])
    provider = _provider(name, base_url, script)
    await discover_limits(provider)
    await discover_limits(provider)  # once at most
    assert [r.url.path for r in script.requests] == (["/props"] if asked else [])
    assert provider.window_tokens == (4096 if asked else None)


def test_local_endpoints() -> None:
    assert is_local("http://127.0.0.2:1/v1") and is_local("http://app.localhost/v1")
    assert not is_local("http://localhost.example.com/v1")


async def test_a_fallback_chain_discovers_and_takes_the_smallest_window() -> None:
    """The fallback provider asks each local provider of its chain; the request must fit
    whichever serves it."""
    local = Script([httpx.Response(200, json=PROPS)])
    hosted = Script([])
    small = OpenAICompatProvider(
        name="llamacpp", model="m", base_url="http://127.0.0.1:1/v1", transport=local.transport
    )
    big = _provider("openrouter", "https://openrouter.ai/api/v1", hosted)
    big.window_tokens = 128_000
    chain = FallbackProvider(big, small)
    assert chain.window_tokens == 128_000  # before discovery: the only one known
    await discover_limits(chain)
    assert chain.window_tokens == 4096
    assert [r.url.path for r in local.requests] == ["/props"] and hosted.requests == []


def test_the_chat_templates_tools_are_its_caps_supports_tools() -> None:
    assert props_tools({"chat_template_caps": {"supports_tools": False}}) is False
    assert props_tools({"chat_template_caps": {"supports_tools": True}}) is True
    for unsaid in (None, {}, {"chat_template_caps": {}}, {"chat_template_caps": {"supports_tools": 0}}):  # fmt: skip
        assert props_tools(unsaid) is None


async def test_a_configured_window_still_asks_props_for_the_templates_tools() -> None:
    script = Script([httpx.Response(200, json={**PROPS, "chat_template_caps": {"supports_tools": False}})])  # fmt: skip
    provider = _provider("llamacpp", "http://127.0.0.1:8080/v1", script)
    provider.window_tokens, provider.window_source = 9000, "config"
    await discover_limits(provider)
    await discover_limits(provider)
    assert [r.url.path for r in script.requests] == ["/props"]
    assert (provider.window_tokens, provider.window_source) == (9000, "config")  # kept
    assert tools_ignored(provider)


def test_an_unset_output_limit_takes_half_of_what_the_window_leaves_beside_the_frame() -> None:
    assert fit_output_limit(2_048, 4_096, 2_600) == 748  # a 4k llama.cpp window, tools counted
    assert fit_output_limit(2_048, 4_096, 300) == 1_898  # a template that drops the tools
    assert fit_output_limit(8_192, 200_000, 3_000) == 8_192  # never above the preset's default
    assert fit_output_limit(2_048, 1_024, 2_600) == 256  # the floor: the run then refuses it
