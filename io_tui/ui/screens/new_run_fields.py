"""The new-run dialog's fields: what each is called on screen, in the CLI and in the settings, the
error that names one (``FieldError``), and the last run's values the dialog opens with.

The core and the provider presets word their errors for the command line (``--max-output-tokens``,
``max_output_tokens``); in the dialog the same error names the dialog's own field ("Output
limit"), and the cursor goes there (``field_of``, ``dialog_words``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from io_tui.core import NewRunRequest


class FieldError(ValueError):
    """A field's value cannot start a run; ``field`` is the input to focus."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Field:
    """One field: its input's id, its label, the CLI's flag and the settings' key for it
    (``NewRunRequest``'s attribute too)."""

    id: str
    label: str
    flag: str
    setting: str


FIELDS = (
    Field("provider", "Provider", "--provider", "provider"),
    Field("base-url", "Base URL", "--base-url", "base_url"),
    Field("model", "Model", "--model", "model"),
    Field("workspace", "Workspace", "--workspace", "workspace"),
    Field("max-steps", "Max steps", "--max-steps", "max_steps"),
    Field("token-budget", "Token budget", "--token-budget", "token_budget"),
    Field("context-max", "Context max", "--context-max-tokens", "context_max_tokens"),
    Field("max-output", "Output limit", "--max-output-tokens", "max_output_tokens"),
    Field("context-window", "Window", "--context-window", "context_window"),
)
BY_ID = {f.id: f for f in FIELDS}
_FLAG = re.compile(r"--[a-z][a-z-]*(?: NAME)?")
_SETTING = re.compile(r"\b(" + "|".join(f.setting for f in FIELDS if "_" in f.setting) + r")\b")
_BOTH = re.compile(r"\((\w+), (--[a-z-]+)\)")  # "(context_window, --context-window)"


def field_of(message: str) -> str:
    """The field a launch error is about, to put the cursor there: the first flag or setting
    it names, else what it speaks of."""
    for found in (_SETTING.search(message), _FLAG.search(message)):
        if found is not None:
            name = found.group(0).removesuffix(" NAME")
            for f in FIELDS:
                if name in (f.flag, f.setting):
                    return f.id
    text = message.lower()
    if "mcp.json" in text:  # the workspace's .mcp.json (or the user's mcp.json)
        return "workspace"
    if "model" in text:
        return "model"
    if "base url" in text:
        return "base-url"
    if "director" in text or "workspace" in text:
        return "workspace"
    if "context window" in text:
        return "context-window"
    return "provider"


def dialog_words(message: str) -> str:
    """A launch error in the dialog's words: the flags and settings it names become the fields'
    labels (``--max-output-tokens`` → "the Output limit"); anything else is left as it is."""
    labels = {f.flag: f.label for f in FIELDS} | {f.setting: f.label for f in FIELDS}
    text = message.removeprefix("settings: ")
    text = _BOTH.sub(lambda m: f"({labels.get(m.group(1), m.group(1))})", text)
    text = re.sub(r"needs (--[a-z-]+)", lambda m: f"needs a {labels.get(m.group(1), m.group(1))}", text)  # fmt: skip
    text = re.sub(r": (--[a-z-]+) NAME\b", lambda m: f": fill in {labels.get(m.group(1), m.group(1))}", text)  # fmt: skip

    def flag(match: re.Match[str]) -> str:
        name = match.group(0)
        return f"the {labels[name]}" if name in labels else name

    text = re.sub(r"--[a-z][a-z-]*", flag, text)
    return _SETTING.sub(lambda m: labels[m.group(1)], text)


def remembered(request: NewRunRequest) -> dict[str, Any]:
    """What the dialog keeps of a run it started, for the next time it opens
    (``ui_state.NEW_RUN_FIELDS``): the values set, as typed."""
    values = {
        "provider": request.provider,
        "base_url": request.base_url,
        "model": request.model,
        "workspace": str(request.workspace),
        "max_steps": request.max_steps,
        "token_budget": request.token_budget,
        "context_max_tokens": request.context_max_tokens,
        "max_output_tokens": request.max_output_tokens,
        "context_window": request.context_window,
    }
    return {name: value for name, value in values.items() if value is not None}


def shown(kept: Mapping[str, Any], name: str, default: object) -> str:
    """A field's text when the dialog opens: the last run's value, else ``default`` (the
    settings'), empty for none."""
    value = kept.get(name, default)
    return "" if value is None else str(value)


def prompt_arguments(text: str) -> dict[str, str]:
    """``city=Paris style="very short"`` as a prompt's arguments; ValueError saying what is not
    ``name=value``."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"the arguments: {exc}") from None
    out: dict[str, str] = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not name:
            raise ValueError(f"the arguments are name=value pairs, not {word!r}")
        out[name] = value
    return out


def labels_of(text: str) -> tuple[str, ...]:
    """The labels typed (separated by commas or spaces), each once, sorted as the queue keeps
    them."""
    return tuple(sorted({label for label in re.split(r"[,\s]+", text) if label}))
