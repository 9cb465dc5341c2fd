"""Handlers of the answers a screen's workers post back to it.

A screen loads what it shows in a worker (the store, a server, the disk) and the worker posts the
result back as a message. When the user quits, the app prunes every screen's widgets before the
screens' queues are empty, so such an answer can reach a screen whose widgets are gone; a
handler that looks one up would raise as the app closes, and a traceback would reach the
terminal. ``on_answer(Message)`` is Textual's ``on(Message)`` for such a handler: it drops an
answer that reaches a screen with no widgets left.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from textual import on
from textual.message import Message
from textual.screen import Screen

S = TypeVar("S", bound=Screen[Any])
M = TypeVar("M", bound=Message)


def on_answer(
    message_type: type[M],
) -> Callable[[Callable[[S, M], Any]], Callable[[S, M], Any]]:
    """``@on_answer(Loaded)``: handle ``Loaded`` while the screen has its widgets."""

    def decorate(handler: Callable[[S, M], Any]) -> Callable[[S, M], Any]:
        @wraps(handler)
        def handled(screen: S, message: M) -> Any:
            if not screen.children:
                return None  # the app closed with the answer on its way
            return handler(screen, message)

        return on(message_type)(handled)

    return decorate
