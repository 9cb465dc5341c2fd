"""Requests are stored from cached JSON pieces: the text is exactly what ``json.dumps`` writes."""

from __future__ import annotations

import json

from io_tui.core.context.manifest import EntryState, ManifestEntry
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.store.encoded import JSONText, ListEncoder, dumps, manifest_text


def entry(step: int, target: str = "a.py") -> ManifestEntry:
    return ManifestEntry(step, f"c{step}", "read", target, EntryState.FULL, "why", None, 3, 1)


def test_a_list_encodes_as_json_dumps_would_and_reuses_pieces() -> None:
    encoder = ListEncoder(Message.to_json)
    call = ToolCall("c1", "read_file", {"path": "é.py", "n": [1, None]})
    first = [Message("system", "hi"), Message("assistant", "ok ✓", (call,))]
    assert encoder.encode(first) == json.dumps([m.to_json() for m in first])
    second = [*first, Message("tool", 'x\n"y"', tool_call_id="c1")]
    assert encoder.encode(second) == json.dumps([m.to_json() for m in second])
    assert encoder.encode([]) == "[]"


def test_lists_that_extend_shrink_or_change_the_last_one_encode_exactly() -> None:
    encoder = ListEncoder(ManifestEntry.to_json)
    kept = [entry(n) for n in range(1, 40)]
    lists = [
        kept[:10],
        kept[:30],  # extends
        kept[:30],  # the same again
        [*kept[:12], entry(99), *kept[13:35]],  # one changed in the middle
        kept[:5],  # shrinks
        [entry(7), *kept],  # changes at the start
        [],
        kept,
    ]
    for items in lists:
        assert encoder.encode(items) == json.dumps([e.to_json() for e in items])


def test_an_object_is_encoded_once_while_calls_keep_it() -> None:
    calls = []

    def to_json(e: ManifestEntry) -> dict:
        calls.append(e.step)
        return e.to_json()

    encoder = ListEncoder(to_json)
    kept = [entry(1), entry(2)]
    encoder.encode(kept)
    encoder.encode([*kept, entry(3)])
    assert calls == [1, 2, 3]


def test_a_manifest_with_its_entries_last_is_the_dumped_dict() -> None:
    head = {"ceiling_tokens": 4000, "memory_keys": ["k"], "summary_through": None}
    entries = [entry(1), entry(2, "b ü.py")]
    encoder = ListEncoder(ManifestEntry.to_json)
    text = manifest_text(head, encoder.encode(entries))
    assert text == json.dumps({**head, "entries": [e.to_json() for e in entries]})
    more = manifest_text(head, encoder.encode([*entries, entry(3)]))
    assert more.delta == json.dumps({**head, "entries": [entry(3).to_json()]})
    assert manifest_text({}, encoder.encode([])) == json.dumps({"entries": []})
    assert dumps(text) is text and dumps({"a": 1}) == '{"a": 1}'
    assert isinstance(text, JSONText)


def test_a_manifest_s_sections_encoded_apart_come_before_its_entries() -> None:
    head = {"ceiling_tokens": 4000, "rewrite": None}
    sections = [{"name": "system", "est_tokens": 264}, {"name": "turns", "est_tokens": 9}]
    entries = [entry(1)]
    encoded = ListEncoder(ManifestEntry.to_json)
    said = ListEncoder(dict)
    text = manifest_text(head, encoded.encode(entries), said.encode(sections))
    whole = {**head, "sections": sections, "entries": [e.to_json() for e in entries]}
    assert text == json.dumps(whole)
    more = manifest_text(head, encoded.encode([*entries, entry(2)]), said.encode(sections))
    assert more.delta == json.dumps({**whole, "entries": [entry(2).to_json()]})


def test_equal_items_rebuilt_since_the_last_list_survive_the_pruning() -> None:
    """The kept prefix is compared by equality, so its items may be equal objects that were never
    cached under their own id (the memory block and collapse line are rebuilt every build):
    pruning once the lists shrink must not look them up (it raised ``KeyError``)."""
    encoder = ListEncoder(lambda x: x)
    encoder.encode([[i] for i in range(300)])
    assert encoder.encode([[0], [1]]) == "[[0], [1]]"
    # and the pieces kept for the rebuilt items are theirs: later lists still encode exactly
    rebuilt = [[0], [1]]
    for items in ([*rebuilt, [2]], [[5], *rebuilt], rebuilt, [[i] for i in range(200)], []):
        assert encoder.encode(items) == json.dumps(items)


def test_an_equal_rebuilt_item_in_the_prefix_is_not_encoded_again() -> None:
    calls = []

    def to_json(e: ManifestEntry) -> dict:
        calls.append(e.step)
        return e.to_json()

    encoder = ListEncoder(to_json)
    encoder.encode([entry(1), entry(2)])
    encoder.encode([entry(1), entry(2), entry(3)])  # 1 and 2 rebuilt: equal, kept as the prefix
    assert calls == [1, 2, 3]
