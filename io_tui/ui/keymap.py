"""The config's ``[ui.keys]`` (binding id → key) checked before the app uses it: an id no
binding has, or a key Textual has no name for, would otherwise be taken without a word (a
remapped F2 silently dead, the help listing "notakey!!")."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from functools import cache

from textual.binding import Binding, BindingType
from textual.keys import Keys

MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})


@cache
def _named_keys() -> frozenset[str]:
    return frozenset(key.value.split("+")[-1] for key in Keys if not key.value.startswith("<"))


def is_key(key: str) -> bool:
    """Whether ``key`` names a key as Textual's bindings do: modifiers joined by ``+``, then a
    printable character, a key name (``f5``, ``escape``, ``pageup``) or a character's Unicode
    name (``question_mark``)."""
    *modifiers, base = key.strip().split("+")
    if not base or not MODIFIERS.issuperset(modifiers):
        return False
    if len(base) == 1:
        return base.isprintable() and not base.isspace()
    if base in _named_keys():
        return True
    try:
        unicodedata.lookup(base.upper().replace("_", " "))
    except KeyError:
        return False
    return True


def checked_keymap(
    keys: Mapping[str, str], bindings: Iterable[BindingType]
) -> tuple[dict[str, str], list[str]]:
    """``keys`` without the entries that cannot work, and a sentence on each one dropped."""
    ids = {b.id for b in bindings if isinstance(b, Binding) and b.id}
    kept: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in keys.items():
        bad = [k for k in value.split(",") if not is_key(k)]
        if binding_id not in ids:
            problems.append(f"{binding_id!r} is no binding's id (the help, F1, lists them)")
        elif bad:
            problems.append(
                f"{binding_id} = {value!r}: {', '.join(repr(k) for k in bad)} is not a key"
                " (e.g. ctrl+i, f5, x, question_mark)"
            )
        else:
            kept[binding_id] = value
    return kept, problems
