"""API keys from the 0600 credentials file: used when the env has none, refused when too open."""

from __future__ import annotations

import pytest

from io_tui.core.providers.base import ProviderConfigError
from io_tui.core.providers.presets import make_provider

KEY = "sk-from-file-7f3a9c"


@pytest.fixture
def creds(tmp_path, monkeypatch):
    path = tmp_path / "credentials.toml"
    monkeypatch.setenv("IO_TUI_CREDENTIALS", str(path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return path


def test_the_file_supplies_a_missing_key(creds):
    creds.write_text(f'OPENAI_API_KEY = "{KEY}"\n')
    creds.chmod(0o600)
    provider = make_provider("openai", model="gpt-x")
    assert KEY not in repr(provider) and KEY not in str(provider.describe())
    assert provider._key is not None and provider._key.reveal() == KEY


def test_the_environment_wins_over_the_file(creds, monkeypatch):
    creds.write_text(f'OPENAI_API_KEY = "{KEY}"\n')
    creds.chmod(0o600)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert make_provider("openai", model="m")._key.reveal() == "sk-env"


def test_a_file_others_can_read_is_refused_with_the_fix(creds):
    creds.write_text(f'OPENAI_API_KEY = "{KEY}"\n')
    creds.chmod(0o644)
    with pytest.raises(ProviderConfigError, match="chmod 600") as info:
        make_provider("openai", model="m")
    assert KEY not in str(info.value)


def test_a_broken_file_never_echoes_its_contents(creds):
    creds.write_text(f'OPENAI_API_KEY = "{KEY}\n')
    creds.chmod(0o600)
    with pytest.raises(ProviderConfigError, match="cannot be read as TOML") as info:
        make_provider("openai", model="m")
    assert KEY not in str(info.value)
