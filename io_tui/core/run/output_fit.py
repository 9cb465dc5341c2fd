"""Whether the output limit the operator set fits the model's window beside the fixed frame,
asked before a run starts (the new-run dialog, ``io-tui run``).

A limit that cannot fit would fail the run at its first request with ``context_overflow``; said
before it starts, the operator gets the figure that fits instead. The frame here is what every
request of the run carries at least (the system prompt, the built-in tools' schemas unless the
server drops them, the task): skills, instruction files and MCP tools only add to it, so a limit
refused here is refused by the run too. A limit left unset is fitted to the window by the run
itself (``providers.base.fit_output_limit``), and never refused here.
"""

from __future__ import annotations

from dataclasses import dataclass

from io_tui.core.context.frame import Frame, frame_messages
from io_tui.core.contract import TaskContract
from io_tui.core.providers.base import (
    Provider,
    discover_limits,
    fit_output_limit,
    fitted_output,
    provider_limits,
    tools_ignored,
)
from io_tui.core.run.harness import SYSTEM_PROMPT, harness_registry


class OutputDoesNotFit(ValueError):
    """The output limit set leaves no room in the model's window beside the frame.

    ``limit``, ``window`` and ``frame`` are the figures (tokens), ``fits`` the limit a run
    would fit to that window (what leaving the limit unset gives). Its text names the setting
    (``max_output_tokens``); a front end words it with its own field's name (``say``)."""

    def __init__(self, limit: int, window: int, frame: int, fits: int) -> None:
        self.limit, self.window, self.frame, self.fits = limit, window, frame, fits
        super().__init__(self.say("max_output_tokens"))

    def say(self, field: str) -> str:
        """One line naming the field as the operator knows it (``Output limit``,
        ``--max-output-tokens``)."""
        if self.frame + self.fits > self.window:
            return (
                f"{field}: no output limit fits the model's window of {self.window:,}: every"
                f" request carries ~{self.frame:,} tokens already; use a model with a larger"
                " window (or a server that sets one: llama-server -c)"
            )
        return (
            f"{field}: {self.limit:,} tokens do not fit the model's window of {self.window:,}"
            f" beside the ~{self.frame:,} tokens every request carries; {self.fits:,} fits"
            " (or leave it unset: each request then fits it to the window)"
        )


@dataclass(frozen=True, slots=True)
class OutputFit:
    """What a run's first request will be bounded by, as far as is known before it starts."""

    limit: int | None  # the answer's limit (None: the provider has none, a script)
    window: int | None  # the model's window (None: unknown)
    frame: int  # tokens every request carries at least
    fitted: bool  # the limit is the preset's default, fitted to the window by each request
    tools_ignored: bool  # the server said its chat template drops tool schemas


async def output_fit(provider: Provider, contract: TaskContract) -> OutputFit:
    """Ask the provider's server what it is (llama.cpp's ``/props``, once; never raises) and
    weigh the frame a run of ``contract`` carries at least."""
    await discover_limits(provider)
    limit, window = provider_limits(provider)
    ignored = tools_ignored(provider)
    tools = () if ignored else harness_registry().specs()
    _, sections = frame_messages(Frame(SYSTEM_PROMPT, tools, contract))
    frame = sum(section.est_tokens for section in sections)
    return OutputFit(limit, window, frame, fitted_output(provider), ignored)


async def check_output_fit(provider: Provider, contract: TaskContract) -> OutputFit:
    """``output_fit``, raising ``OutputDoesNotFit`` when a limit the operator set cannot fit
    the model's known window beside the frame."""
    fit = await output_fit(provider, contract)
    limit, window = fit.limit, fit.window
    if fit.fitted or limit is None or window is None or fit.frame + limit <= window:
        return fit
    raise OutputDoesNotFit(limit, window, fit.frame, fit_output_limit(limit, window, fit.frame))
