"""Named providers a user can pick with ``--provider NAME``, and the factories that build them
(``factory`` dispatches to these by a provider's kind).

A preset fixes the wire format, the default base URL and the environment variable that holds the
API key. Keys come from the environment (or an explicit ``api_key``), never from settings or a
run's recorded description, so ``describe()`` output can be stored and shown freely and a run
resumed in another process picks the key up from that process's environment.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

import httpx

from io_tui.core.prices import CachePrices
from io_tui.core.providers.anthropic import API_VERSION, AnthropicProvider
from io_tui.core.providers.base import Provider, ProviderConfigError, check_window
from io_tui.core.providers.credentials import credentials_path, read_credential
from io_tui.core.providers.errors import body_detail, describe_exception
from io_tui.core.providers.fallback import FallbackProvider
from io_tui.core.providers.http_provider import HttpProvider
from io_tui.core.providers.openai_compat import OpenAICompatProvider
from io_tui.core.providers.retry import RetryPolicy
from io_tui.core.providers.secret import Secret
from io_tui.core.providers.wire import DEFAULT_MAX_OUTPUT_TOKENS

WireName = Literal["openai", "anthropic"]

# What an input token costs relative to an uncached one (../shared/CONTEXT-COST.md). Anthropic:
# a 5-minute cache write costs 1.25×, a read 0.1×, from 1,024 tokens on. OpenAI: caching is
# automatic from 1,024 tokens, no write premium, a read 0.25× (GPT-4.1; GPT-5 models: 0.1×).
# Local servers skip the prefill of the prefix their slot reused; 0.1× stands for what attending
# to it still costs. Configurable per run (``[cache]`` in the config).
ANTHROPIC_CACHE = CachePrices(uncached=1.0, write=1.25, read=0.1, min_prefix_tokens=1_024)
OPENAI_CACHE = CachePrices(uncached=1.0, write=1.0, read=0.25, min_prefix_tokens=1_024)
LOCAL_CACHE = CachePrices(uncached=1.0, write=1.0, read=0.1)


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    wire: WireName
    base_url: str | None  # None: the user must give one (--base-url)
    key_env: str | None = None  # where the key is read from; None: the server needs none
    key_required: bool = False
    max_tokens_field: str = "max_tokens"
    headers: tuple[tuple[str, str], ...] = ()
    summary: str = ""
    cache: CachePrices = OPENAI_CACHE
    cache_key: bool = False  # send a per-run prompt_cache_key (OpenAI routes on it)
    # the answer's limit when neither the settings nor the model table say otherwise: a local
    # server's window is often 4-8k tokens, and a runaway answer must not fill it
    max_output_tokens: int = 8_192


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """What a model family accepts: its longest answer and its context window (prompt plus
    answer), both in tokens."""

    max_output_tokens: int
    window_tokens: int


# Known model families, by name pattern (matched on the name after any ``vendor/`` prefix, so
# OpenRouter's ``anthropic/claude-sonnet-4.5`` is found too); the first match wins. A model not
# listed has no known window, and its preset's default limit.
MODEL_LIMITS: tuple[tuple[str, ModelLimits], ...] = (
    ("claude-opus-4*", ModelLimits(32_000, 200_000)),
    ("claude-sonnet-4*", ModelLimits(64_000, 200_000)),
    ("claude-haiku-4*", ModelLimits(64_000, 200_000)),
    ("claude-3-7-sonnet*", ModelLimits(64_000, 200_000)),
    ("claude-3-5-*", ModelLimits(8_192, 200_000)),
    ("gpt-5*", ModelLimits(128_000, 400_000)),
    ("gpt-4.1*", ModelLimits(32_768, 1_047_576)),
    ("gpt-4o*", ModelLimits(16_384, 128_000)),
    ("o3*", ModelLimits(100_000, 200_000)),
    ("o4-mini*", ModelLimits(100_000, 200_000)),
)


def model_limits(model: str) -> ModelLimits | None:
    name = model.rsplit("/", 1)[-1].lower()
    return next((limits for pattern, limits in MODEL_LIMITS if fnmatchcase(name, pattern)), None)


def output_limits(preset: str, model: str, setting: int | None = None) -> tuple[int, int | None]:
    """The answer's token limit a request is sent with, and the model's window (None: unknown).

    ``setting`` (``max_output_tokens`` in the config, ``--max-output-tokens``) wins; else the
    preset's default, lowered to the model's own maximum when the model table knows it (and, by
    each run, to a share of the window: ``base.fitted_output``).
    """
    limits = model_limits(model)
    window = limits.window_tokens if limits else None
    if setting:
        return setting, window
    spec = PRESETS.get(preset)
    default = spec.max_output_tokens if spec else DEFAULT_MAX_OUTPUT_TOKENS
    return (min(default, limits.max_output_tokens) if limits else default), window


PRESETS: Mapping[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "openai",
            "openai",
            "https://api.openai.com/v1",
            key_env="OPENAI_API_KEY",
            key_required=True,
            # OpenAI's reasoning models refuse ``max_tokens``; every OpenAI model takes this.
            max_tokens_field="max_completion_tokens",
            summary="OpenAI Chat Completions",
            cache_key=True,
        ),
        Preset(
            "anthropic",
            "anthropic",
            "https://api.anthropic.com",
            key_env="ANTHROPIC_API_KEY",
            key_required=True,
            summary="Anthropic Messages",
            cache=ANTHROPIC_CACHE,
        ),
        Preset(
            "openrouter",
            "openai",
            "https://openrouter.ai/api/v1",
            key_env="OPENROUTER_API_KEY",
            key_required=True,
            headers=(("X-Title", "io-tui"),),
            summary="OpenRouter (OpenAI-compatible)",
        ),
        *(
            Preset(name, "openai", url, summary=summary, cache=LOCAL_CACHE, max_output_tokens=2_048)
            for name, url, summary in (
                ("ollama", "http://localhost:11434/v1", "Ollama, local"),
                ("llamacpp", "http://localhost:8080/v1", "llama.cpp server, local"),
                ("vllm", "http://localhost:8000/v1", "vLLM server, local"),
                ("lmstudio", "http://localhost:1234/v1", "LM Studio, local"),
            )
        ),
        Preset(
            "openai-compatible",
            "openai",
            None,
            # Its own variable: reusing OPENAI_API_KEY would send an OpenAI key to a third party.
            key_env="OPENAI_COMPATIBLE_API_KEY",
            summary="any OpenAI-compatible server; needs --base-url ending in /v1",
        ),
    )
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise ProviderConfigError(
            f"unknown provider {name!r}; known: {known}, or scripted:FILE"
        ) from None


def _key(preset: Preset, api_key: str | None, env: Mapping[str, str] | None) -> Secret | None:
    if api_key:
        return Secret(api_key)
    environ = os.environ if env is None else env
    value = environ.get(preset.key_env) if preset.key_env else None
    if not value and preset.key_env:
        value = read_credential(preset.key_env)
    if value:
        return Secret(value)
    if preset.key_required:
        raise ProviderConfigError(
            f"provider {preset.name!r} needs an API key: set {preset.key_env}"
            f" (or put it in {credentials_path()}, mode 0600)"
        )
    return None


def _base_url(preset: Preset, base_url: str | None) -> str:
    url = base_url or preset.base_url
    if not url:
        raise ProviderConfigError(
            f"provider {preset.name!r} needs --base-url (the server's URL ending in /v1)"
        )
    if not url.startswith(("http://", "https://")):
        raise ProviderConfigError(f"base URL must start with http:// or https://, got {url!r}")
    return url.rstrip("/")


def make_provider(
    preset: str,
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    streaming: bool = True,
    timeout: httpx.Timeout | float | None = None,
    retry: RetryPolicy | None = None,
    max_output_tokens: int | None = None,
    window_tokens: int | None = None,
) -> HttpProvider:
    """The provider ``preset`` names, talking to ``base_url`` (or the preset's) about ``model``.

    The key is ``api_key`` if given, else the preset's environment variable (read from ``env``,
    default ``os.environ``). ``max_output_tokens`` overrides the preset's and model's limit
    (``output_limits``); ``window_tokens`` (``context_window`` in the config,
    ``--context-window``) is the model's window, over the model table's and the server's own
    report (which is then never asked). Raises ``ProviderConfigError`` with a message fit for the
    user when the preset is unknown, a required key or base URL is missing, the model is empty,
    or the window set leaves no room beside the output budget.
    """
    spec = get_preset(preset)
    if not model:
        raise ProviderConfigError(f"provider {preset!r} needs a model: --model NAME")
    url = _base_url(spec, base_url)
    key = _key(spec, api_key, env)
    limit, window = output_limits(spec.name, model, max_output_tokens)
    source = "preset" if window is not None else None
    if window_tokens is not None:
        check_window(window_tokens, limit)
        window, source = window_tokens, "config"
    options: dict[str, Any] = {
        "name": spec.name,
        "max_output_tokens": limit,
        "output_set": bool(max_output_tokens),
        "window_tokens": window,
        "window_source": source,
        "api_key": key,
        "transport": transport,
        "streaming": streaming,
        "timeout": timeout,
        "retry": retry,
    }
    if spec.wire == "anthropic":
        return AnthropicProvider(model=model, base_url=url, **options)
    return OpenAICompatProvider(
        model=model,
        base_url=url,
        max_tokens_field=spec.max_tokens_field,
        headers=dict(spec.headers),
        send_cache_key=spec.cache_key,
        **options,
    )


def cache_prices(provider: str) -> CachePrices:
    """The cache prices of the preset ``provider`` names; Anthropic's for anything else (a
    script, an unknown name: the benchmark's default)."""
    preset = PRESETS.get(provider)
    return preset.cache if preset else CachePrices()


def _timeout(seconds: float) -> httpx.Timeout:
    """A per-read timeout of ``seconds`` (the gap between streamed chunks), quicker connects."""
    return httpx.Timeout(seconds, connect=min(10.0, seconds))


def timeout_and_retry(settings: Any) -> tuple[httpx.Timeout, RetryPolicy]:
    """``request_timeout_s`` and ``max_retries`` of ``RunSettings`` (attempts = retries + 1)."""
    timeout = _timeout(float(getattr(settings, "request_timeout_s", 120.0)))
    return timeout, RetryPolicy(max_attempts=int(getattr(settings, "max_retries", 3)) + 1)


def provider_from_settings(settings: Any, *, env: Mapping[str, str] | None = None) -> Provider:
    """The provider ``RunSettings`` (``core.run.settings``) asks for, with its fallback if one is set.

    Reads ``provider``, ``model``, ``base_url``, ``fallback_provider``, ``fallback_model``,
    ``request_timeout_s``, ``max_retries`` (attempts = retries + 1), ``max_output_tokens`` and
    ``context_window`` (both also the fallback's).
    """
    timeout, retry = timeout_and_retry(settings)
    limit = getattr(settings, "max_output_tokens", None)
    window = getattr(settings, "context_window", None)
    primary = make_provider(
        settings.provider,
        model=settings.model or "",
        base_url=settings.base_url,
        env=env,
        timeout=timeout,
        retry=retry,
        max_output_tokens=limit,
        window_tokens=window,
    )
    fallback = getattr(settings, "fallback_provider", None)
    if not fallback:
        return primary
    secondary = make_provider(
        fallback,
        model=getattr(settings, "fallback_model", None) or settings.model or "",
        env=env,
        timeout=timeout,
        retry=retry,
        max_output_tokens=limit,
        window_tokens=window,
    )
    return FallbackProvider(primary, secondary)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a preset's server said to a model listing (``probe_models``)."""

    reachable: bool
    detail: str
    models: tuple[str, ...] = ()


@functools.cache
def _probe_tls() -> ssl.SSLContext:
    """One TLS context for every probe: each new one reads the CA bundle (~40 ms of the event
    loop's time), and the new-run dialog probes every preset each time it opens."""
    return httpx.create_ssl_context()


async def probe_models(
    preset: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    timeout_s: float = 3.0,
) -> ProbeResult:
    """The preset's server's model listing (``GET …/models``), with a line saying what happened.

    ``reachable`` is true only for a 2xx answer: a server that refuses the key is reported as
    unreachable with the reason, since a run against it would fail the same way. ``models``
    holds the ids the server listed (none when it lists none, or in another shape). Never
    raises for network or configuration problems; the detail says what is wrong.
    """
    try:
        spec = get_preset(preset)
        url = _base_url(spec, base_url)
        key = _key(spec, api_key, env)
    except ProviderConfigError as exc:
        return ProbeResult(False, str(exc))
    revealed = key.reveal() if key else None
    if spec.wire == "anthropic":
        models_url = url + "/v1/models"
        headers = {"anthropic-version": API_VERSION}
        if revealed:
            headers["x-api-key"] = revealed
    else:
        models_url = url + "/models"
        headers = dict(spec.headers)
        if revealed:
            headers["Authorization"] = f"Bearer {revealed}"

    def redact(text: str) -> str:
        return key.redact(text) if key else text

    try:
        tls = _probe_tls() if transport is None else None
        async with httpx.AsyncClient(
            timeout=timeout_s, transport=transport, verify=tls or True
        ) as client:
            response = await client.get(models_url, headers=headers)
    except httpx.HTTPError as exc:
        return ProbeResult(False, redact(f"cannot reach {models_url}: {describe_exception(exc)}"))
    if response.status_code >= 400:
        _, message = body_detail(response.text)
        return ProbeResult(
            False, redact(f"{models_url} answered HTTP {response.status_code}: {message}"[:300])
        )
    try:
        data = response.json().get("data")
        names = [str(m.get("id")) for m in data if isinstance(m, dict)]
    except (ValueError, AttributeError, TypeError):
        return ProbeResult(True, f"{models_url} answered HTTP {response.status_code}")
    shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    detail = f"{len(names)} model(s) at {url}" + (f": {shown}" if names else "")
    return ProbeResult(True, detail, tuple(names))
