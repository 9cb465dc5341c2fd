"""remember / forget as the model calls them: what it is told, and what the trace records."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.contract import MemoryLimits
from io_tui.core.ledger import ObsKind
from io_tui.core.store import Store
from io_tui.core.tools.base import ToolContext, ToolError
from io_tui.core.tools.memory_tools import MEMORY_TOOLS, Forget, Remember


class Harness:
    """A ToolContext wired the way the run loop wires it, recording emitted events."""

    def __init__(self, store: Store, root: Path, limits: MemoryLimits) -> None:
        self.store = store
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.workspace = Workspace(root)
        self.limits = limits

    def ctx(self, run_id: int = 1, step: int = 1) -> ToolContext:
        return ToolContext(
            workspace=self.workspace,
            run_id=run_id,
            step=step,
            cap_chars=8_000,
            notes=self.store.notes,
            memory_limits=self.limits,
            emit=lambda kind, detail: self.events.append((kind, detail)),
        )

    def ops(self) -> list[tuple[str, str | None]]:
        return [(d["op"], d.get("key")) for _, d in self.events]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    root = tmp_path / "ws"
    root.mkdir()
    async with await Store.open(tmp_path / "store.db") as store:
        yield Harness(store, root, MemoryLimits(max_entries=3))


async def remember(h: Harness, key: str, value: str, scope: str = "workspace", **kw: Any) -> Any:
    tool = Remember()
    return await tool.run(tool.parse({"key": key, "value": value, "scope": scope}), h.ctx(**kw))


async def forget(h: Harness, key: str, scope: str = "workspace") -> Any:
    tool = Forget()
    return await tool.run(tool.parse({"key": key, "scope": scope}), h.ctx())


def test_schemas_and_no_gate() -> None:
    names = [cls().spec().name for cls in MEMORY_TOOLS]
    assert names == ["remember", "forget"]
    params = Remember().spec().parameters
    assert set(params["properties"]) == {"key", "value", "scope", "type", "section", "source"}
    assert params["required"] == ["key", "value"]
    assert params["properties"]["scope"]["enum"] == ["workspace", "global"]
    assert params["properties"]["type"]["enum"] == ["fact", "preference", "inference"]
    assert params["properties"]["section"]["enum"] == ["preferences", "project", "lessons"]


async def test_memory_tools_are_not_path_acts(h: Harness) -> None:
    tool = Remember()
    args = tool.parse({"key": "k", "value": "v"})
    assert await tool.gate(args, h.ctx()) is None
    assert await Forget().gate(Forget().parse({"key": "k"}), h.ctx()) is None
    assert list(h.workspace.root.iterdir()) == []  # nothing written into the workspace


async def test_remember_attributes_and_keys_by_workspace_root(h: Harness) -> None:
    out = await remember(h, "build", "make build", run_id=4, step=2)
    assert (out.kind, out.target, out.is_error) == (ObsKind.MEMORY, "build", False)
    assert "Remembered 'build' (workspace scope, project: model inference)" in out.text
    (note,) = await h.store.notes.notes_for(str(h.workspace.root))
    assert (note.run_id, note.step, note.workspace) == (4, 2, str(h.workspace.root))
    assert (note.kind, note.status, note.section) == ("inference", "unverified", "project")
    assert h.events[0][0] == "memory"
    assert h.events[0][1]["op"] == "write" and h.events[0][1]["run_id"] == 4


async def test_eviction_is_told_and_emitted(h: Harness) -> None:
    for i in range(4):
        out = await remember(h, f"k{i}", f"note {i}", step=i + 1)
    assert "the oldest notes were dropped: 'k0'" in out.text
    assert h.ops()[-2:] == [("write", "k3"), ("evict", "k0")]
    assert h.events[-1][1]["evicted_by"] == "k3"
    assert h.events[-1][1]["value"] == "note 0"  # the trace keeps what eviction lost


async def test_truncation_is_told(h: Harness) -> None:
    h.limits = MemoryLimits(max_entry_chars=50)
    out = await remember(h, "long", "é" * 80)
    assert "The value was 80 chars, over the 50-char cap" in out.text
    assert h.events[0][1]["truncated_from"] == 80 and h.events[0][1]["chars"] == 50


async def test_pinned_notes_refuse_overwrite_and_forget_and_say_so(h: Harness) -> None:
    await remember(h, "k", "original")
    await h.store.notes.pin("k", "workspace", str(h.workspace.root))
    out = await remember(h, "k", "changed")
    assert out.is_error and out.kind is ObsKind.MEMORY
    assert "the operator pinned 'k', so you cannot overwrite it" in out.text
    out = await forget(h, "k")
    assert out.is_error and "the operator pinned 'k'" in out.text
    assert h.ops() == [("write", "k"), ("refuse", "k"), ("refuse", "k")]
    assert all(d["reason"] == "pinned" for _, d in h.events[1:])
    assert h.events[1][1]["value"] == "changed"  # what the agent tried to write
    (note,) = await h.store.notes.notes_for(str(h.workspace.root))
    assert note.value == "original"


async def test_forget_and_wrong_scope_hint(h: Harness) -> None:
    await remember(h, "tz", "UTC", scope="global")
    out = await forget(h, "tz")
    assert out.is_error and "pass scope='global'" in out.text
    out = await forget(h, "tz", scope="global")
    assert not out.is_error and "Forgot 'tz' (global scope" in out.text
    assert h.ops() == [("write", "tz"), ("forget", "tz")]


async def test_restated_note_warns_naming_the_other_key(h: Harness) -> None:
    await remember(h, "tests", "run the tests with pytest -q from the repo root", step=1)
    out = await remember(h, "how-to-test", "Run the tests using pytest -q from the repo root")
    assert "Warning: this note restates 'tests'" in out.text
    assert "written by run 1 step 1" in out.text
    assert h.events[-1][1]["restates"] == ["tests"]


async def test_replacing_names_the_earlier_writer(h: Harness) -> None:
    await remember(h, "cmd", "make", run_id=1, step=5)
    out = await remember(h, "cmd", "just", run_id=2, step=1)
    assert "replaced the earlier note written by run 1 step 5" in out.text


async def test_bad_arguments_and_missing_service(h: Harness) -> None:
    with pytest.raises(ToolError, match="scope"):
        Remember().parse({"key": "k", "value": "v", "scope": "team"})
    with pytest.raises(ToolError, match="one line"):
        await remember(h, "a\nb", "v")
    with pytest.raises(ToolError, match="a note needs a value"):
        await remember(h, "k", " \n ")  # a blank note: export could not read it back
    assert await h.store.notes.list("workspace", h.workspace.root) == []
    ctx = replace(h.ctx(), notes=None)
    with pytest.raises(ToolError, match="not available"):
        await Remember().run(Remember().parse({"key": "k", "value": "v"}), ctx)


async def test_an_agent_fact_is_unverified_until_the_operator_verifies_it(h: Harness) -> None:
    tool = Remember()
    args = tool.parse(
        {
            "key": "test-cmd",
            "value": "pytest -q",
            "type": "fact",
            "section": "lessons",
            "source": "pytest -q → exit 0",
        }
    )
    out = await tool.run(args, h.ctx(run_id=3, step=5))
    assert "lessons: unverified fact" in out.text
    (note,) = await h.store.notes.notes_for(str(h.workspace.root))
    assert (note.kind, note.status, note.section, note.source) == (
        "fact",
        "unverified",
        "lessons",
        "pytest -q → exit 0",
    )
    await h.store.notes.verify("test-cmd", "workspace", str(h.workspace.root))
    (note,) = await h.store.notes.notes_for(str(h.workspace.root))
    assert note.label == "verified fact"
    with pytest.raises(ToolError):
        tool.parse({"key": "k", "value": "v", "type": "gospel"})


async def test_forgetting_a_note_that_superseded_another_says_it_is_current_again(
    h: Harness,
) -> None:
    await remember(h, "old-cmd", "make check")
    await remember(h, "cmd", "make test")
    await h.store.notes.supersede("old-cmd", "cmd", "workspace", h.workspace.root)
    out = await forget(h, "cmd")
    assert "It had superseded 'old-cmd', which is current again" in out.text
    assert h.ops()[-2:] == [("forget", "cmd"), ("supersede", "old-cmd")]
    assert [n.key for n in await h.store.notes.notes_for(h.workspace.root)] == ["old-cmd"]
