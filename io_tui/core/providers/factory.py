"""Build a provider from settings, or recreate one from what a run recorded
(``Provider.describe()``), in any process: the one place that dispatches on a provider's kind.

``presets`` (and with it httpx) is imported only when an HTTP provider is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.core.providers.base import Provider, ProviderConfigError
from io_tui.core.providers.scripted import ScriptedProvider

if TYPE_CHECKING:
    import httpx


def provider_from_description(
    desc: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    settings: Any = None,
) -> Provider:
    """Rebuild a provider from its ``describe()``; an HTTP provider's key comes from this
    process's environment (``env``, default ``os.environ``), never from the description, its
    timeout and retries from ``settings`` (the ``RunSettings`` the run started with) if given."""
    kind = desc.get("kind")
    if kind == "scripted":
        if not desc.get("path"):
            raise ProviderConfigError("this run's scripted provider had no file; cannot resume it")
        return ScriptedProvider.from_file(
            Path(desc["path"]),
            consumed=int(desc.get("consumed", 0)),
            summaries_used=int(desc.get("summaries_used", 0)),
            max_output_tokens=desc.get("max_output_tokens"),
            window_tokens=desc.get("window_tokens"),
        )
    if kind == "fallback":
        from io_tui.core.providers.fallback import FallbackProvider

        chain = [
            provider_from_description(d, env=env, transport=transport, settings=settings)
            for d in desc.get("chain") or []
        ]
        if len(chain) < 2:
            raise ProviderConfigError("a recorded fallback provider needs at least two entries")
        return FallbackProvider(*chain)
    if kind != "http":
        raise ProviderConfigError(f"cannot recreate a provider of kind {kind!r}")
    from io_tui.core.providers.presets import make_provider, timeout_and_retry

    timeout, retry = timeout_and_retry(settings) if settings is not None else (None, None)
    return make_provider(
        str(desc.get("preset") or ""),
        model=str(desc.get("model") or ""),
        base_url=desc.get("base_url"),
        env=env,
        transport=transport,
        streaming=bool(desc.get("streaming", True)),
        timeout=timeout,
        retry=retry,
        # a default limit stays a default (fitted to the window); a description from before
        # ``max_output_set`` was kept had its limit set
        max_output_tokens=desc.get("max_output_tokens")
        if desc.get("max_output_set", True)
        else None,
        window_tokens=desc.get("window_tokens"),
    )


def build_provider(settings: Any) -> Provider:
    """The provider the settings name: ``scripted:FILE`` or a preset (openai, anthropic, …)."""
    spec: str = settings.provider
    if spec.startswith("scripted:"):
        return ScriptedProvider.from_file(
            Path(spec.removeprefix("scripted:")).expanduser(),
            max_output_tokens=getattr(settings, "max_output_tokens", None),
            window_tokens=getattr(settings, "context_window", None),
        )
    if spec == "scripted":
        raise ProviderConfigError("the scripted provider needs a script: --provider scripted:FILE")
    from io_tui.core.providers.presets import provider_from_settings

    return provider_from_settings(settings)
