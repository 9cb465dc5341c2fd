"""Keys typed while a dialog opens, held and given to it once it is ready, in their order.

A dialog is pushed at once but mounts over a few frames (its widgets, its first workers); until
it has put the cursor in its first field, a key typed has nowhere to go: a letter is dropped and
a tab moves the cursor before the text it followed. The app holds every key (and paste) from
the moment it opens the dialog (``hold``) until the dialog says it is ready (``release``).

The held keys are then typed into the dialog at once, one after another, as its fields take
them: text into the field with the cursor, tab and shift+tab move the cursor, backspace deletes,
enter and escape press the dialog's own keys. (Posting them to the app again would not keep their
order: a letter is typed into the focused field as it arrives, while a tab moves the cursor only
once it has bubbled back up to the app, after the letters behind it.) Anything else, and every
key after it, goes to the app as typed. A dialog that never says it is ready (it failed to
mount) gets its keys after ``LONGEST_HOLD_S``.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input
from textual.widgets.input import Selection

LONGEST_HOLD_S = 10.0


class Typeahead:
    """The keys held for a dialog that is opening (``held`` is None while none is)."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.held: list[events.Key | events.Paste] | None = None
        self._timer: Timer | None = None

    def hold(self) -> None:
        """Hold every key from now until ``release`` (or ``LONGEST_HOLD_S``)."""
        if self.held is None:
            self.held = []
            self._timer = self.app.set_timer(LONGEST_HOLD_S, self.release)

    def take(self, event: events.Event) -> bool:
        """Keep ``event`` if keys are held (True: the app must not handle it now). Keys an
        earlier release handed back to the app (forwarded ones) pass."""
        if self.held is None or not isinstance(event, events.Key | events.Paste):
            return False
        if event.is_forwarded:
            return False
        self.held.append(event)
        return True

    def release(self, screen: Screen[object] | None = None) -> None:
        """Type the held keys into ``screen`` (the dialog that is ready), or hand them to the
        app as typed when there is none."""
        held, self.held = self.held or [], None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        rest = type_into(screen, held) if screen is not None else held
        for event in rest:
            self.app.post_message(typed_again(event, self.app))


def typed_again(event: events.Key | events.Paste, app: App[Any]) -> events.Key | events.Paste:
    """A held key (or paste), to post to ``app`` again as typed: sent by the app, as the
    terminal's keys are. Made elsewhere its sender would be that place (a dialog), and a key
    stops bubbling at its sender, short of the app that looks up the dialog's bindings (ctrl+s
    typed after the Task would start nothing)."""
    again = (
        events.Key(event.key, event.character)
        if isinstance(event, events.Key)
        else events.Paste(event.text)
    )
    return again.set_sender(app)


def type_into(screen: Screen[object], held: list[events.Key | events.Paste]) -> list:
    """Type ``held`` into ``screen`` as far as its fields take them; the keys left over."""
    for index, event in enumerate(held):
        focused = screen.focused
        if isinstance(event, events.Paste):
            if not isinstance(focused, Input):
                return held[index:]
            _type(focused, event.text.splitlines()[0] if event.text else "")
        elif event.key in ("tab", "shift+tab"):
            _move(screen, forward=event.key == "tab")
        elif isinstance(focused, Input) and event.is_printable and event.character:
            _type(focused, event.character)
        elif isinstance(focused, Input) and event.key == "backspace":
            focused.action_delete_left()
        else:  # enter, escape, ctrl+s and the rest: the dialog's bindings, as typed
            return held[index:]
    return []


def _type(field: Input, text: str) -> None:
    """As ``Input`` takes a key: over its selection if there is one, else at the cursor."""
    selection = field.selection
    if selection.is_empty:
        field.insert_text_at_cursor(text)
    else:
        field.replace(text, *selection)


def _move(screen: Screen[object], *, forward: bool) -> None:
    """Move the cursor as tab does. A field reached selects its text, as ``Input`` does when
    focused, so what is typed next replaces it; its own select-on-focus, which would run after
    the typing below, is held off until its focus event has passed."""
    (screen.focus_next if forward else screen.focus_previous)()
    field = screen.focused
    if isinstance(field, Input) and field.select_on_focus:
        field.select_on_focus = False
        field.selection = Selection(0, len(field.value))
        field.call_later(setattr, field, "select_on_focus", True)
