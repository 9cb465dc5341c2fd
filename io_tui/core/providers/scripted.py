"""The scripted provider: answers from a JSON script, for tests, benchmarks and the demo.

The n-th working completion of a run gets ``turns[n]``. Summary requests do not consume turns:
they take the next entry of ``summaries``, or a deterministic digest of the folded notes.
"""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from io_tui.core.providers.base import (
    Attempt,
    Completed,
    CompletionRequest,
    Response,
    StreamEvent,
    TextDelta,
    Usage,
    check_window,
)
from io_tui.core.providers.messages import ToolCall


class ScriptError(ValueError):
    """The script file is missing or does not validate; the message says where."""


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class _Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[_Call] = Field(default_factory=list)
    usage: _Usage | None = None
    finish_reason: str | None = None  # default: tool_calls when it calls one, else stop


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "scripted"
    turns: list[_Turn] = Field(default_factory=list)
    summaries: list[str] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Script:
        try:
            if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read
                raise ScriptError(f"script {path} is not a regular file")
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ScriptError(f"script not found: {path}") from None
        except UnicodeDecodeError as exc:
            raise ScriptError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ScriptError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ScriptError(f"{path}: {where}: {first['msg']}") from None


class ScriptedProvider:
    name = "scripted"

    def __init__(
        self,
        script: Script,
        *,
        path: Path | None = None,
        consumed: int = 0,
        summaries_used: int = 0,
        chunk_chars: int = 12,
        max_output_tokens: int | None = None,
        window_tokens: int | None = None,
    ) -> None:
        check_window(window_tokens, max_output_tokens)
        self.script = script
        self.path = path
        self.model = script.model
        self.consumed = consumed
        self.summaries_used = summaries_used
        self.chunk_chars = chunk_chars
        # as a model's provider has them, when set (the config, --max-output-tokens,
        # --context-window): the run budgets against them as it would against a model's
        self.max_output_tokens = max_output_tokens
        self.window_tokens = window_tokens
        self.window_source = "config" if window_tokens is not None else None

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> ScriptedProvider:
        return cls(Script.load(path), path=path.resolve(), **kwargs)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "scripted",
            "path": str(self.path) if self.path else None,
            "model": self.model,
            "consumed": self.consumed,
            "summaries_used": self.summaries_used,
            "max_output_tokens": self.max_output_tokens,
            "window_tokens": self.window_tokens,
        }

    async def aclose(self) -> None:
        return None

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[StreamEvent, None]:
        if request.purpose == "summary":
            text = self._summary(request)
            yield Completed(self._response(text, (), None, "stop"))
            return
        if self.consumed >= len(self.script.turns):
            yield Completed(self._response("", (), None, "stop"))
            return
        index = self.consumed
        turn = self.script.turns[index]
        self.consumed += 1
        for start in range(0, len(turn.text), self.chunk_chars):
            yield TextDelta(turn.text[start : start + self.chunk_chars])
        calls = tuple(
            ToolCall(call.id or f"call_{index + 1}_{n + 1}", call.name, dict(call.arguments))
            for n, call in enumerate(turn.tool_calls)
        )
        usage = (
            Usage(turn.usage.prompt_tokens, turn.usage.completion_tokens) if turn.usage else None
        )
        finish = turn.finish_reason or ("tool_calls" if calls else "stop")
        yield Completed(self._response(turn.text, calls, usage, finish))

    def _summary(self, request: CompletionRequest) -> str:
        if self.summaries_used < len(self.script.summaries):
            text = self.script.summaries[self.summaries_used]
            self.summaries_used += 1
            return text
        notes = request.messages[-1].content if request.messages else ""
        digest = hashlib.sha256(notes.encode()).hexdigest()[:12]
        lines = [line for line in notes.splitlines() if line.strip()][:12]
        return f"Summary {digest} of {len(lines)} noted lines:\n" + "\n".join(lines)

    def _response(
        self, text: str, calls: tuple[ToolCall, ...], usage: Usage | None, finish: str
    ) -> Response:
        attempt = Attempt(provider=self.name, model=self.model, usage=usage, stop_reason=finish)
        return Response(text, calls, usage, finish, self.model, self.name, (attempt,))
