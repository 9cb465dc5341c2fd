"""JSON the store writes as it is, and the cache that encodes a request's long lists once.

A request carries every message and manifest entry of its window, and consecutive requests of a
run share almost all of them (the same objects: the context engine reuses what it emitted). So
each object is encoded once while requests keep carrying it, and a list's JSON is the join of
those pieces: the same text ``json.dumps`` writes for the whole list.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from io_tui.core.text.prefix import common_prefix


class JSONText(str):
    """Text that is already JSON: the store writes it unchanged instead of encoding it.

    A list from ``ListEncoder`` also says how it extends the previous list it encoded: the
    first ``keep`` items of ``base``, then the items in ``tail`` (JSON list text). The store
    writes only that delta when it wrote ``base`` itself (``runs.py``).

    ``base`` is held weakly: each text extends the one before it, so a strong reference would
    keep every request text of the run alive (memory growing with steps × request size). The
    store only asks whether ``base`` is the text it last wrote, which it holds itself.
    """

    keep: int = 0
    tail: str = ""
    _base: weakref.ref[JSONText] | None = None

    @property
    def base(self) -> JSONText | None:
        return None if self._base is None else self._base()

    @base.setter
    def base(self, value: JSONText | None) -> None:
        self._base = None if value is None else weakref.ref(value)


class ManifestText(JSONText):
    """A manifest whose ``entries`` (last) came from a ``ListEncoder``; ``delta`` is the same
    manifest with only the entries' tail."""

    entries: JSONText
    delta: str


def dumps(value: Any) -> str:
    """``value`` as the store writes it: JSON text as is, anything else through ``json.dumps``."""
    return value if isinstance(value, JSONText) else json.dumps(value)


def _opened(head: dict[str, Any], key: str) -> str:
    """``json.dumps({**head, key: value})`` up to ``value``, for a ``key`` not in ``head`` (so
    it comes last): ``{...head..., "key": ``."""
    assert key not in head
    text = json.dumps(head)
    sep = ", " if head else ""
    return f"{text[:-1]}{sep}{json.dumps(key)}: "


def manifest_text(
    head: dict[str, Any], entries: JSONText, sections: JSONText | None = None
) -> ManifestText:
    """The manifest ``{**head, "sections": ..., "entries": ...}`` as JSON (no ``sections`` when
    None: ``head`` has its own), with its delta against the manifest whose entries were
    ``entries.base`` (the head encoded once for both)."""
    if sections is None:
        opened = _opened(head, "entries")
    else:
        opened = f'{_opened(head, "sections")}{sections}, "entries": '
    text = ManifestText(f"{opened}{entries}}}")
    text.entries = entries
    text.delta = f"{opened}{entries.tail}}}"
    return text


class ListEncoder:
    """Encodes lists of immutable objects, each object once for as long as calls keep passing it.

    Consecutive lists mostly extend the last one (a request carries the previous request's
    messages and a few more), so the text of the longest common prefix with the last list is
    reused as one slice and only the rest is looked up, one object at a time, in the pieces
    encoded before.

    The prefix is compared by equality (``common_prefix``), so an item in it may be an equal
    object rebuilt since (the memory block, a collapse line; equal objects must encode equally)
    that was never cached under its own ``id``. Pieces are looked up only past the prefix, and
    pruning keeps for each item of the list the piece it has in the text just made.
    """

    def __init__(self, to_json: Callable[[Any], Any]) -> None:
        self.to_json = to_json
        self._texts: dict[int, tuple[Any, str]] = {}  # id -> (the object, kept alive; its JSON)
        self._items: list[Any] = []  # the last list
        self._ends: list[int] = [1]  # _ends[k]: where the text of _items[:k] ends in _text
        self._text = JSONText("[]")
        self._first = True

    def encode(self, items: Iterable[Any]) -> JSONText:
        """``json.dumps([to_json(i) for i in items])``."""
        items = list(items)
        keep = common_prefix(self._items, items)
        ends = self._ends[: keep + 1]
        parts = [self._text[: ends[-1]]]
        texts = self._texts
        length = ends[-1]
        for index in range(keep, len(items)):
            item = items[index]
            hit = texts.get(id(item))
            if hit is None or hit[0] is not item:
                hit = texts[id(item)] = (item, json.dumps(self.to_json(item)))
            piece = hit[1] if index == 0 else ", " + hit[1]
            parts.append(piece)
            length += len(piece)
            ends.append(length)
        parts.append("]")
        text = JSONText("".join(parts))
        if len(texts) > 2 * len(items) + 64:  # forget objects no longer carried
            self._texts = self._pieces(items, ends, text)
        if not self._first:
            text.base, text.keep = self._text, keep
            text.tail = f"[{text[ends[keep] + (2 if keep else 0) : -1]}]"
        self._items, self._ends, self._text, self._first = items, ends, text, False
        return text

    def _pieces(self, items: list[Any], ends: list[int], text: str) -> dict[int, tuple[Any, str]]:
        """The cache for exactly ``items``: each item's own piece where it is cached, else (an
        equal object kept in the prefix) its piece of ``text``, cut at ``ends``."""
        texts = self._texts
        pieces: dict[int, tuple[Any, str]] = {}
        for index, item in enumerate(items):
            hit = texts.get(id(item))
            if hit is None or hit[0] is not item:
                hit = (item, text[ends[index] + (2 if index else 0) : ends[index + 1]])
            pieces[id(item)] = hit
        return pieces
