"""Recreate a provider from what a run recorded (``Provider.describe()``), in any process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from io_tui.core.providers.base import Provider
from io_tui.core.providers.scripted import ScriptedProvider


class ProviderConfigError(ValueError):
    """A provider cannot be built from the given settings; the message says why."""


def provider_from_description(desc: dict[str, Any]) -> Provider:
    kind = desc.get("kind")
    if kind == "scripted":
        if not desc.get("path"):
            raise ProviderConfigError("this run's scripted provider had no file; cannot resume it")
        return ScriptedProvider.from_file(
            Path(desc["path"]),
            consumed=int(desc.get("consumed", 0)),
            summaries_used=int(desc.get("summaries_used", 0)),
        )
    try:
        from io_tui.core.providers import presets
    except ImportError as exc:  # pragma: no cover - presets ship with the package
        raise ProviderConfigError(f"provider kind {kind!r} is not available: {exc}") from None
    return presets.provider_from_description(desc)


def build_provider(settings: Any) -> Provider:
    """The provider the settings name: ``scripted:FILE`` or a preset (openai, anthropic, …)."""
    spec: str = settings.provider
    if spec.startswith("scripted:"):
        return ScriptedProvider.from_file(Path(spec.removeprefix("scripted:")).expanduser())
    if spec == "scripted":
        raise ProviderConfigError("the scripted provider needs a script: --provider scripted:FILE")
    try:
        from io_tui.core.providers import presets
    except ImportError as exc:  # pragma: no cover
        raise ProviderConfigError(f"provider {spec!r} is not available: {exc}") from None
    return presets.provider_from_settings(settings)
