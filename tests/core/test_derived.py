"""Derived context that invalidates (DESIGN §3.2, ``core/derived/parts.py``): the instruction files, the
skill catalogue, the tool catalogue and the memory block record what they were built from; a
mutation of any of it shows as an ``invalidated`` event, and the next request carries the rebuilt
part with the old version gone. Each test: build → mutate a dependency → see the event → rebuild
→ the old version is absent, through a real run and its stored trace."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolListChangedNotification

from io_tui.core.authority.approvals import ApprovalRequest, ApproveAll, Decision, DeferAll
from io_tui.core.authority.policy import Act, Effect, Policy
from io_tui.core.context.labels import digest as label_digest
from io_tui.core.contract import TaskContract
from io_tui.core.derived.parts import ABSENT, Built, Files, digest, invalidation, invalidation_line
from io_tui.core.ledger import content_digest
from io_tui.core.mcp.connection import InProcessServer
from io_tui.core.mcp.hub import McpHub
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.steering.decisions import decide
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.tools.base import Tool, ToolArgs, ToolContext, ToolOutcome
from io_tui.core.tools.late import Arrival

ALLOW_ALL = Policy(
    defaults={Act.READ: Effect.ALLOW, Act.WRITE: Effect.ALLOW, Act.EXEC: Effect.ALLOW,
              Act.NET: Effect.DENY}
)  # fmt: skip
ASK_WRITES = Policy(
    defaults={Act.READ: Effect.ALLOW, Act.WRITE: Effect.ASK, Act.EXEC: Effect.ALLOW,
              Act.NET: Effect.DENY}
)  # fmt: skip


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


class Meddler:
    """An operator who, asked to approve, first changes something under the run."""

    def __init__(self, meddle: Callable[[], Awaitable[None]]) -> None:
        self.meddle = meddle

    async def decide(self, request: ApprovalRequest) -> Decision:
        await self.meddle()
        return Decision.approve()


async def run(
    store: Store,
    workspace: Path,
    script: Path,
    *,
    policy: Policy = ALLOW_ALL,
    approver: Any = None,
    late: Any = None,
) -> dict[str, Any]:
    harness = Harness(
        store, ScriptedProvider.from_file(script), approver or ApproveAll(), policy=policy,
        late_tools=late,
    )  # fmt: skip
    result = await start_run(harness, TaskContract("keep the notes", workspace))
    return await build_trace(store, result.run_id)


def invalidations(trace: dict[str, Any], cache: str) -> list[dict[str, Any]]:
    return [
        {"step": e["step"], **e["detail"]}
        for e in trace["events"]
        if e["kind"] == "invalidated" and e["detail"]["cache"] == cache
    ]


def sent(trace: dict[str, Any], index: int) -> str:
    """Everything request ``index`` sent, as one text."""
    return json.dumps(trace["requests"][index]["messages"], ensure_ascii=False)


# -- instruction files --


async def test_a_written_agents_md_is_invalidated_and_the_next_request_carries_the_new_one(
    store, workspace, write_script
):
    (workspace / "AGENTS.md").write_text("Indent with tabs. OLD-RULE\n")
    script = write_script(
        [call("write_file", path="AGENTS.md", content="Indent with spaces.\n"), {"text": "ok"}]
    )
    trace = await run(store, workspace, script)
    assert "OLD-RULE" in sent(trace, 0)
    [event] = invalidations(trace, "instructions")
    assert event["step"] == 2 and event["effect"] == "rebuilt"
    assert event["cause"] == "step 1 wrote AGENTS.md (write_file)"
    assert event["changed"] == [
        {"ref": "file:AGENTS.md", "before": digest("Indent with tabs. OLD-RULE\n"),
         "after": digest("Indent with spaces.\n")}
    ]  # fmt: skip
    before, after = (r["derived"]["instructions"] for r in trace["requests"])
    assert (before, after) == (event["before"], event["after"]) and before != after
    assert "OLD-RULE" not in sent(trace, 1)
    frame = trace["requests"][1]["messages"]
    assert any(m["content"].startswith("Project instructions from AGENTS.md:\nIndent with spaces")
               for m in frame)  # fmt: skip
    # the request after the rebuild rewrote its prefix from the frame on, and says why
    assert trace["requests"][1]["cache"]["broke_at"] is not None


def git(workspace: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *argv],
        cwd=workspace, check=True, capture_output=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "after"),
    [
        (["git", "checkout", "-q", "other"], "Branch rules. BRANCH-RULE"),
        (["mv", "AGENTS.md", "NOTES.md"], None),
        (["rm", "AGENTS.md"], None),
    ],
    ids=["checkout", "rename", "delete"],
)
async def test_a_command_that_checks_out_renames_or_deletes_agents_md_invalidates_it(
    store, workspace, write_script, argv, after
):
    (workspace / "AGENTS.md").write_text("Main rules. MAIN-RULE\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "main")
    git(workspace, "checkout", "-q", "-b", "other")
    (workspace / "AGENTS.md").write_text("Branch rules. BRANCH-RULE\n")
    git(workspace, "commit", "-q", "-am", "other")
    git(workspace, "checkout", "-q", "main")
    script = write_script([call("run_command", argv=argv), {"text": "ok"}])
    trace = await run(store, workspace, script)
    assert "MAIN-RULE" in sent(trace, 0)
    [event] = invalidations(trace, "instructions")
    [changed] = event["changed"]
    assert changed["ref"] == "file:AGENTS.md"
    assert changed["after"] == (digest(after + "\n") if after else ABSENT)
    assert "run_command" in event["cause"] and event["effect"] == "rebuilt"
    assert "MAIN-RULE" not in sent(trace, 1)
    sections = [s["name"] for s in trace["requests"][1]["sections"]]
    if after:
        assert "BRANCH-RULE" in sent(trace, 1) and "AGENTS.md" in sections
    else:
        assert "AGENTS.md" not in sections


async def test_an_edit_outside_the_run_is_seen_and_a_file_changed_back_is_not(
    store, workspace, write_script
):
    agents = workspace / "AGENTS.md"
    agents.write_text("First. FIRST-RULE\n")

    async def edit() -> None:
        agents.write_text("Second. SECOND-RULE\n")

    script = write_script(
        [call("write_file", path="x.txt", content="1"), call("read_file", path="x.txt"),
         {"text": "ok"}]
    )  # fmt: skip
    trace = await run(store, workspace, script, policy=ASK_WRITES, approver=Meddler(edit))
    [event] = invalidations(trace, "instructions")
    assert event["step"] == 2 and "AGENTS.md changed on disk" in event["cause"]
    assert "FIRST-RULE" not in sent(trace, 1) + sent(trace, 2)
    assert "SECOND-RULE" in sent(trace, 2)
    # no event without a change: a rewrite of the same bytes moves no digest
    agents.write_text("Second. SECOND-RULE\n")
    trace = await run(store, workspace, write_script([call("read_file", path="x.txt"), {}]))
    assert invalidations(trace, "instructions") == []


# -- the skill catalogue and the policy --


def skill(text_name: str, description: str) -> str:
    return f"---\nname: {text_name}\ndescription: {description}\n---\nSteps.\n"


async def test_a_new_or_edited_skill_rebuilds_the_catalogue(store, workspace, write_script):
    path = ".io-tui/skills/deploy/SKILL.md"
    script = write_script(
        [
            call("write_file", path=path, content=skill("deploy", "Ship it. OLD-DESC")),
            call("write_file", path=path, content=skill("deploy", "Ship it. NEW-DESC")),
            call("read_skill", name="deploy"),
            {"text": "ok"},
        ]
    )
    trace = await run(store, workspace, script)
    system = [r["messages"][0]["content"] for r in trace["requests"]]
    assert "deploy:" not in system[0]
    assert "- deploy: Ship it. OLD-DESC" in system[1]
    assert "OLD-DESC" not in system[2] and "- deploy: Ship it. NEW-DESC" in system[2]
    added, edited = invalidations(trace, "skills")
    assert (added["step"], edited["step"]) == (2, 3)
    assert {c["ref"] for c in added["changed"]} == {
        "dir:.io-tui/skills",
        f"file:{path}",
        "policy:skills/deploy/SKILL.md",
    }
    assert [c["ref"] for c in edited["changed"]] == [f"file:{path}"]
    assert edited["cause"] == f"step 2 wrote {path} (write_file)"
    assert "Steps." in trace["steps"][2]["observations"][0]["text"]  # read_skill reads it


async def test_a_policy_that_comes_to_deny_a_skill_takes_it_out_of_the_catalogue(
    store, workspace, write_script
):
    async def deny() -> None:
        await store.rules.add(
            act=Act.READ, pattern="skills/careful-edits/*", scope="workspace",
            workspace=str(workspace.resolve()), run_id=None, effect=Effect.DENY,
        )  # fmt: skip

    script = write_script(
        [call("write_file", path="x.txt", content="1"), call("read_file", path="x.txt"),
         {"text": "ok"}]
    )  # fmt: skip
    trace = await run(store, workspace, script, policy=ASK_WRITES, approver=Meddler(deny))
    system = [r["messages"][0]["content"] for r in trace["requests"]]
    assert "- careful-edits:" in system[0] and "- careful-edits:" in system[1]
    # the rule joins the policy at the next step's calls; the request after them drops it
    [event] = invalidations(trace, "skills")
    assert event["step"] == 3 and event["effect"] == "rebuilt"
    assert event["changed"] == [
        {"ref": "policy:skills/careful-edits/SKILL.md", "before": "allow", "after": "deny"}
    ]
    assert "verdict on skills/careful-edits/SKILL.md is deny" in event["cause"]
    assert "careful-edits" not in system[2] and "- python-tests:" in system[2]


# -- the tool catalogue --


class NowArgs(ToolArgs):
    pass


class Now(Tool):
    name = "mcp__clock__now"
    description = "The time."
    Args = NowArgs

    async def run(self, args: NowArgs, ctx: ToolContext) -> ToolOutcome:
        raise NotImplementedError  # never called: the test looks at what is offered


class Late:
    """An MCP hub whose server becomes ready while the run goes."""

    def __init__(self) -> None:
        self.ready: list[Arrival] = []

    def arrivals(self) -> Sequence[Arrival]:
        return tuple(self.ready)

    def starting(self) -> tuple[str, ...]:
        return () if self.ready else ("MCP server 'clock'",)

    async def settle(self) -> None:
        return None

    async def relisted(self) -> None:
        return None


async def test_a_server_whose_tools_arrive_invalidates_the_tool_catalogue(
    store, workspace, write_script
):
    late = Late()

    async def ready() -> None:
        late.ready.append(Arrival("MCP server 'clock'", (Now(),)))

    script = write_script([call("write_file", path="x.txt", content="1"), {"text": "ok"}])
    trace = await run(store, workspace, script, policy=ASK_WRITES, approver=Meddler(ready),
                      late=late)  # fmt: skip
    [event] = invalidations(trace, "tools")
    assert event["step"] == 2 and event["effect"] == "rebuilt"
    assert event["cause"] == "offered from this request on: mcp__clock__now"
    assert [c["ref"] for c in event["changed"]] == ["tool:mcp__clock__now"]
    first, second = (r["derived"]["tools"] for r in trace["requests"][:2])
    assert (first, second) == (event["before"], event["after"])
    counts = [
        next(s["source"] for s in r["sections"] if s["name"] == "tools") for r in trace["requests"]
    ]
    assert int(counts[1].split()[0]) == int(counts[0].split()[0]) + 1


def changing_server() -> MCPServer:
    """An MCP server whose ``grow`` tool offers ``later``, withdraws ``gone`` and says so."""
    server = MCPServer("changing")

    def later() -> str:
        return "later"

    @server.tool(description="Withdrawn by grow.")
    def gone() -> str:
        return "gone"

    @server.tool(description="Change the tool list.")
    async def grow(ctx: Context) -> str:
        server.add_tool(later, description="Offered once grow ran.")
        server.remove_tool("gone")
        # on the call's own stream: an in-process server has no standalone one
        await ctx.session.send_notification(
            ToolListChangedNotification(), related_request_id=ctx.request_id
        )
        return "grown"

    return server


async def test_an_mcp_servers_changed_tool_list_is_offered_and_invalidates_the_catalogue(
    store, workspace, write_script
):
    script = write_script([call("mcp__c__grow"), call("mcp__c__later"), {"text": "ok"}])
    async with McpHub({"c": InProcessServer(changing_server())}, background=True) as hub:
        await hub.wait_all()
        trace = await run(store, workspace, script, late=hub)
    [event] = invalidations(trace, "tools")
    assert event["step"] == 2 and event["effect"] == "rebuilt"
    assert event["cause"] == "offered from this request on: mcp__c__later; withdrawn: mcp__c__gone"
    assert trace["steps"][1]["operator_messages"] == [
        "io-tui: MCP server 'c' changed its tools; offered from this request on: mcp__c__later;"
        " withdrawn: mcp__c__gone."
    ]
    assert "later" in trace["steps"][1]["observations"][0]["text"]  # the new tool is called


# -- the memory block --


async def test_an_operator_change_to_a_note_rebuilds_the_memory_block_at_once(
    store, workspace, write_script
):
    ws = str(workspace.resolve())
    await store.notes.set("style", "tabs OLD-NOTE", "workspace", ws)

    async def change() -> None:
        await store.notes.set("style", "spaces NEW-NOTE", "workspace", ws)

    script = write_script(
        [call("write_file", path="x.txt", content="1"), call("read_file", path="x.txt"),
         {"text": "ok"}]
    )  # fmt: skip
    trace = await run(store, workspace, script, policy=ASK_WRITES, approver=Meddler(change))
    assert "OLD-NOTE" in sent(trace, 0)
    [event] = invalidations(trace, "memory")
    assert event["step"] == 2 and event["effect"] == "rebuilt"
    assert [c["ref"] for c in event["changed"]] == ["note:workspace:style"]
    assert event["cause"] == "style changed by the operator"
    assert "OLD-NOTE" not in sent(trace, 1) and "spaces NEW-NOTE" in sent(trace, 1)


async def test_the_runs_own_new_note_waits_for_the_next_rewrite_and_a_forget_does_not(
    store, workspace, write_script
):
    ws = str(workspace.resolve())
    await store.notes.set("style", "tabs OLD-NOTE", "workspace", ws)
    script = write_script(
        [
            call("remember", key="tests", value="run pytest -q"),
            call("forget", key="style"),
            {"text": "ok"},
        ]
    )
    trace = await run(store, workspace, script)
    added, forgot = invalidations(trace, "memory")
    assert added["effect"] == "deferred" and added["cause"].startswith("tests written by run")
    assert [c["ref"] for c in added["changed"]] == ["note:workspace:tests"]
    # the block the first request sent is sent again: the new note is in its tool result
    assert (
        trace["requests"][1]["messages"][: len(trace["requests"][0]["messages"])]
        == (trace["requests"][0]["messages"])
    )
    assert forgot["effect"] == "rebuilt"
    assert forgot["cause"] == "style forgotten, expired or superseded"
    assert "OLD-NOTE" not in sent(trace, 2)


# -- the records themselves --


def test_a_built_part_names_what_moved(tmp_path):
    before = Built("x", "v1", {"file:a": "1", "file:b": "2"})
    after = Built("x", "v1", {"file:a": "1", "file:c": "3"})
    moved = invalidation(before, after, "because")
    assert moved is not None and moved.effect == "unchanged"  # rebuilt to the same thing
    assert moved.to_json()["changed"] == [
        {"ref": "file:b", "before": "2", "after": ABSENT},
        {"ref": "file:c", "before": ABSENT, "after": "3"},
    ]
    assert invalidation(before, before, "") is None


def test_files_are_hashed_again_only_when_their_stat_moves(tmp_path, monkeypatch):
    files = Files(tmp_path)
    path = tmp_path / "AGENTS.md"
    assert files.versions([path]) == {"file:AGENTS.md": ABSENT}
    path.write_text("one")
    assert files.version(path) == digest("one")
    # one version of a file everywhere: what a read of it records, and a section's label
    assert digest("one") == content_digest(b"one") == label_digest("one")
    reads: list[Path] = []
    original = Path.open

    def counting(self: Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting)
    assert files.version(path) == digest("one") and reads == []  # the stat holds
    files.forget(path)
    assert files.version(path) == digest("one") and reads == [path]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert files.version(fifo) == ABSENT  # never opened: it would block


# -- across a pause --


async def test_a_change_while_the_run_waits_for_a_decision_is_invalidated_on_resume(
    store, workspace, write_script
):
    ws = str(workspace.resolve())
    (workspace / "AGENTS.md").write_text("Paused rules. OLD-RULE\n")
    await store.notes.set("style", "tabs OLD-NOTE", "workspace", ws)
    script = write_script([call("write_file", path="x.txt", content="1"), {"text": "ok"}])
    first = await start_run(
        Harness(store, ScriptedProvider.from_file(script), DeferAll(), policy=ASK_WRITES),
        TaskContract("keep the notes", workspace),
    )
    assert first.status == "paused"
    (workspace / "AGENTS.md").write_text("Resumed rules. NEW-RULE\n")  # while nobody runs it
    await store.notes.set("style", "spaces NEW-NOTE", "workspace", ws)
    [pending] = await store.approvals.pending()
    decided = await decide(store, pending.request.id, Decision.approve())
    assert decided.result is not None and decided.result.status == "finished"
    trace = await build_trace(store, first.run_id)
    for cache in ("instructions", "memory"):
        [event] = invalidations(trace, cache)
        was = trace["requests"][0]["derived"][cache]
        assert event["changed"] == [] and event["cause"] == (
            f"changed while the run was stopped (its last request carried version {was})"
        )
        assert invalidation_line(event) == f"↻ {cache} rebuilt — {event['cause']}"
        assert event["before"] == trace["requests"][0]["derived"][cache]
        assert event["after"] == trace["requests"][1]["derived"][cache] != event["before"]
    assert invalidations(trace, "skills") == invalidations(trace, "tools") == []
    assert "OLD-RULE" not in sent(trace, 1) and "NEW-RULE" in sent(trace, 1)
    assert "OLD-NOTE" not in sent(trace, 1) and "NEW-NOTE" in sent(trace, 1)


def test_a_folder_s_listing_is_pathlib_s_glob_as_the_folder_changes(tmp_path: Path) -> None:
    """``Files.listed`` keeps its last answer per folder while the names it finds are the
    same: through skills added, hidden, linked, emptied and removed, it answers as
    ``Path.glob`` does, listed afresh each time."""
    import shutil

    files, folder = Files(tmp_path), tmp_path / "skills"
    ref = "dir:skills"

    def plain() -> tuple[dict[str, str], list[Path]]:
        if not folder.is_dir():
            return {ref: ABSENT}, []
        paths = sorted(folder.glob("*/SKILL.md"))
        names = sorted(p.relative_to(folder).as_posix() for p in paths)
        return {ref: digest("\n".join(names))}, paths

    def skill(name: str) -> None:
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "SKILL.md").write_text(f"# {name}\n")

    changes: list[Callable[[], object]] = [
        lambda: None,
        lambda: folder.mkdir(),
        lambda: skill("b"),
        lambda: None,  # unchanged: the kept answer
        lambda: skill("a"),
        lambda: skill(".hidden"),
        lambda: (folder / "empty").mkdir(),
        lambda: (folder / "linked").symlink_to(folder / "a", target_is_directory=True),
        lambda: (folder / "a" / "SKILL.md").unlink(),
        lambda: (folder / "b" / "SKILL.md").write_text("# b, changed\n"),
        lambda: shutil.rmtree(folder),
        lambda: folder.write_text("a file where the folder was"),
        lambda: folder.unlink() or folder.symlink_to(folder),  # a link to itself: a loop
        lambda: folder.unlink() or folder.symlink_to(tmp_path / "nowhere"),  # dangling
        lambda: (tmp_path / "nowhere").mkdir(),  # the link now leads to a folder
        lambda: skill("d"),
        lambda: folder.unlink(),
        lambda: skill("c") if folder.mkdir() is None else None,
    ]
    for change in changes:
        change()
        assert files.listed(folder, "*/SKILL.md") == plain()
        assert files.listing(folder, "*/SKILL.md") == plain()[0]


def test_the_dependency_paths_kept_per_folder_follow_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The instruction files and skill folders asked every request are kept per workspace and
    config folder: a config folder moved (IO_TUI_CONFIG_DIR) moves them, as built afresh."""
    from io_tui.core.derived.instructions import USER_FILE, instruction_paths
    from io_tui.core.derived.skills import WORKSPACE_SKILLS, skill_folders
    from io_tui.paths import bundled_dir, config_dir, user_skills

    for config in ("one", "two", "one"):
        monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(tmp_path / config))
        assert config_dir() == tmp_path / config
        assert instruction_paths(tmp_path / "ws") == (
            tmp_path / config / USER_FILE, tmp_path / "ws" / "AGENTS.md",
            tmp_path / "ws" / "CLAUDE.md",
        )  # fmt: skip
        assert user_skills() == tmp_path / config / "skills"
        bundled = bundled_dir("skills")
        assert skill_folders(tmp_path / "ws", bundled=bundled, user=user_skills()) == [
            (bundled, "bundled"), (tmp_path / config / "skills", "user"),
            (tmp_path / "ws" / WORKSPACE_SKILLS, "workspace"),
        ]  # fmt: skip
