"""A call's intent is written before it runs, except a call of a tool that only reads: a resumed
run runs that again whether or not it was in flight, so its intent is written with its
observation, ``done``, in the same commit (``store/intents.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.store import Store
from io_tui.core.store.intents import Intent, IntentRepo


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    return store_on_both  # SQLite and PostgreSQL


def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": arguments}


async def test_a_read_is_written_with_its_result_and_a_write_before_it_runs(
    store: Store, workspace: Path, write_script, monkeypatch: pytest.MonkeyPatch
) -> None:
    ahead: list[tuple[str, list[str]]] = []  # each call written ahead, and the intents then
    begin = IntentRepo.begin

    async def recording(repo: IntentRepo, intent: Intent, **kwargs: object) -> int:
        before = [i.tool for i in await repo.for_run(intent.run_id)]
        ahead.append((intent.tool, before))
        return await begin(repo, intent, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(IntentRepo, "begin", recording)
    script = write_script(
        [
            {"tool_calls": [call("r1", "read_file", path="src/app.py")]},
            {"tool_calls": [call("w1", "write_file", path="src/new.py", content="x = 1\n")]},
            {"tool_calls": [call("g1", "grep", pattern="parse"), call("l1", "list_dir")]},
            {"text": "done"},
        ]
    )
    harness = Harness(store=store, provider=ScriptedProvider.from_file(script),
                      approver=ApproveAll(), policy=Policy())  # fmt: skip
    result = await start_run(harness, TaskContract("look, then write", workspace))
    assert result.status == "finished", result

    # only the write went to the store before it ran; the read's intent was there by then
    assert ahead == [("write_file", ["read_file"])]
    intents = await store.intents.for_run(result.run_id)
    assert [(i.call_id, i.act, i.status) for i in intents] == [
        ("r1", "read", "done"),
        ("w1", "write", "done"),
        ("g1", "", "done"),
        ("l1", "read", "done"),
    ]
    read = intents[0]
    assert (
        read.step == 1 and read.target == "src/app.py" and read.arguments == {"path": "src/app.py"}
    )
    assert read.ended_at is not None and read.started_at <= read.ended_at
    assert (workspace / "src" / "new.py").read_text() == "x = 1\n"
