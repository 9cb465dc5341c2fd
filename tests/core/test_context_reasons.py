"""Why each section is in the request, and what its source had that the request left out
(DESIGN §3.2 "Reasons and omissions"): through real runs and their stored traces, the CLI in a
subprocess, and manifests stored before the fields existed."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from cli_process import io_tui

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Policy
from io_tui.core.context.cache import parts
from io_tui.core.contract import ContextBudget, TaskContract
from io_tui.core.derived.parts import digest
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.store.notes import Provenance

# the team's policy: CLAUDE.md is someone's private notes, never read
NO_CLAUDE = Policy.from_json(
    {
        "layers": [
            {"name": "team", "rules": [{"act": "read", "effect": "deny", "pattern": "CLAUDE.md"}]}
        ]
    }
)
PRIVATE = "PRIVATE-CLAUDE-NOTES-7731"


async def seed_memory(store: Store, workspace: Path) -> None:
    """Two notes recalled, one expired, one superseded, one too long for a small block."""
    ws = str(await asyncio.to_thread(workspace.resolve))
    for key, value in (("style", "tabs"), ("test-cmd", "pytest -q"), ("old-cmd", "make check")):
        await store.notes.set(key, value, "workspace", ws, provenance=Provenance(kind="fact"))
    await store.notes.set("tone", "terse", "workspace", ws)
    await store.notes.expire("tone", "workspace", ws, time.time() - 60)
    await store.notes.supersede("old-cmd", "test-cmd", "workspace", ws)
    await store.notes.set("history", "x" * 1_900, "workspace", ws)


async def reasoned_run(store: Store, workspace: Path, write_script: Any) -> dict[str, Any]:
    (workspace / "AGENTS.md").write_text("Keep the tests passing.\n")
    (workspace / "CLAUDE.md").write_text(f"{PRIVATE}\n")
    await seed_memory(store, workspace)
    provider = ScriptedProvider.from_file(write_script([{"text": "done"}]))
    harness = Harness(store=store, provider=provider, approver=ApproveAll(), policy=NO_CLAUDE)
    contract = TaskContract("answer", workspace, context=ContextBudget(1_500))
    result = await start_run(harness, contract)
    return await build_trace(store, result.run_id)


async def test_every_section_says_why_and_what_it_left_out(store, workspace, write_script):
    trace = await reasoned_run(store, workspace, write_script)
    request = trace["requests"][0]
    sections = {s["name"]: s for s in request["sections"]}
    assert all(s["reason"] for s in sections.values())
    derived = request["derived"]
    # the system prompt and tools carry the version of the derived part they render
    assert sections["system"]["source_version"] == derived["skills"]
    assert sections["tools"]["source_version"] == derived["tools"]
    assert sections["tools"]["reason"].startswith("the schemas of the ")
    assert "task contract" in sections["contract"]["reason"]
    agents = sections["AGENTS.md"]
    assert agents["reason"].startswith(f"AGENTS.md found at {workspace / 'AGENTS.md'}")
    assert agents["omitted"] == []
    # the file the policy denies is withheld: named with why, never sent, not in the prefix
    claude = sections["CLAUDE.md"]
    path = str(workspace / "CLAUDE.md")
    assert (claude["est_tokens"], claude["digest"]) == (0, "")
    assert claude["source_version"] == digest(PRIVATE)
    [omission] = claude["omitted"]
    assert omission["ref"] == path
    assert (
        omission["reason"] == "the read policy denies it (rule 'deny read CLAUDE.md', layer team)"
    )
    assert "not sent: the read policy denies it" in claude["reason"]
    assert PRIVATE not in json.dumps(request["messages"])
    assert "CLAUDE.md" not in request["boundary"]["stable_sections"]
    assert (claude["withheld"], agents["withheld"]) == (True, False)
    # each message still stands for its own part: the withheld section sent none
    kinds = [p.key for p in parts(request)]
    assert kinds[: request["boundary"]["stable_messages"]] == [
        "frame:system",
        "frame:contract",
        "frame:AGENTS.md",
    ]
    assert kinds[3] == "memory"
    # the memory block: what it carries of how many, and each note left out with why
    memory = sections["memory"]
    assert memory["source_version"] == derived["memory"]
    assert memory["reason"] == "2 notes of 5 recalled: 1 expired, 1 superseded, 1 over the cap"
    omitted = {o["ref"]: o["reason"] for o in memory["omitted"]}
    assert omitted["tone"] == "expired" and omitted["old-cmd"] == "superseded by test-cmd"
    assert omitted["history"].startswith("over the memory block's cap of ")
    assert set(request["memory_keys"]) == {"style", "test-cmd"}


async def test_a_request_whose_notes_are_all_left_out_still_says_so(store, workspace, write_script):
    ws = str(await asyncio.to_thread(workspace.resolve))
    await store.notes.set("tone", "terse", "workspace", ws)
    await store.notes.expire("tone", "workspace", ws, time.time() - 60)
    provider = ScriptedProvider.from_file(write_script([{"text": "done"}]))
    harness = Harness(store=store, provider=provider, approver=ApproveAll(), policy=Policy())
    result = await start_run(harness, TaskContract("answer", workspace))
    request = (await build_trace(store, result.run_id))["requests"][0]
    memory = next(s for s in request["sections"] if s["name"] == "memory")
    assert (memory["est_tokens"], memory["digest"]) == (0, "")
    assert memory["reason"] == "0 notes of 1 recalled: 1 expired"
    assert memory["omitted"] == [{"ref": "tone", "reason": "expired"}]


def strip_reasons(db: Path) -> None:
    """Make the stored manifests look like ones recorded before reasons were kept."""
    with sqlite3.connect(db) as conn:
        for row_id, text in conn.execute("SELECT id, manifest FROM requests").fetchall():
            manifest = json.loads(text)
            for section in manifest.get("sections", []):
                section.pop("reason", None)
                section.pop("omitted", None)
            conn.execute(
                "UPDATE requests SET manifest = ? WHERE id = ?", (json.dumps(manifest), row_id)
            )


async def test_the_cli_shows_reasons_and_reads_manifests_recorded_before_them(
    store, store_path, workspace, write_script
):
    await reasoned_run(store, workspace, write_script)
    await store.close()
    shown = io_tui("trace", "1", "--context", "1", "--store", str(store_path))
    assert shown.returncode == 0, shown.stderr
    assert "why: 2 notes of 5 recalled: 1 expired, 1 superseded, 1 over the cap" in shown.stdout
    assert "left out: tone — expired" in shown.stdout
    assert "left out: old-cmd — superseded by test-cmd" in shown.stdout
    assert f"left out: {workspace / 'CLAUDE.md'} — the read policy denies it" in shown.stdout
    data = json.loads(io_tui("trace", "1", "--json", "--store", str(store_path)).stdout)
    assert all("reason" in s and "omitted" in s for s in data["requests"][0]["sections"])

    strip_reasons(store_path)
    old = io_tui("trace", "1", "--context", "1", "--store", str(store_path))
    assert old.returncode == 0 and "Traceback" not in old.stderr
    assert "why:" not in old.stdout and "sections:" in old.stdout
    as_json = io_tui("trace", "1", "--json", "--store", str(store_path))
    assert as_json.returncode == 0, as_json.stderr
    assert all("reason" not in s for s in json.loads(as_json.stdout)["requests"][0]["sections"])
