"""Steering helpers: suggested patterns, the remember preview, rewrite checks and audit stats."""

from __future__ import annotations

import json
from pathlib import Path

from io_tui.core.approvals import ApprovalRequest, Decision, DecisionKind, RememberRule
from io_tui.core.contract import MemoryLimits
from io_tui.core.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.rule_preview import (
    audit_row,
    audit_stats,
    blast_radius,
    check_rewrite,
    command_examples,
    command_hint,
    glob_escape,
    grant_text,
    preview_matches,
    recall_history,
    suggest_pattern,
    validate_pattern,
)
from io_tui.core.store import Store


def _req(
    act: Act, target: str, *, tool: str = "write_file", run_id: int = 1, **kw: object
) -> ApprovalRequest:
    args = kw.pop("arguments", {"path": target, "content": "x\n"})
    return ApprovalRequest(
        id=0,
        run_id=run_id,
        step=int(kw.pop("step", 1)),  # type: ignore[call-overload]
        call_id="c1",
        tool=tool,
        arguments=args,  # type: ignore[arg-type]
        act=act,
        target=target,
        content=str(kw.pop("content", "x\n")),
        rule=f"default {act.value}",
        layer="defaults",
        workspace=str(kw.pop("workspace", "/ws/a")),
    )


async def _run(store: Store, workspace: str, policy: Policy | None = None) -> int:
    return await store.runs.create(
        goal="g",
        workspace=workspace,
        contract={},
        provider={},
        policy=(policy or Policy()).to_json(),
    )


def test_suggested_patterns() -> None:
    assert suggest_pattern(_req(Act.WRITE, "src/pkg/app.py")) == "src/pkg/*"
    assert suggest_pattern(_req(Act.WRITE, "README.md")) == "README.md"
    git = _req(
        Act.EXEC,
        "git status --short",
        tool="run_command",
        arguments={"argv": ["git", "status", "--short"]},
        content=json.dumps(["git", "status", "--short"]),
    )
    # An exec starts from its exact command line: the bare program would allow every command.
    assert suggest_pattern(git) == "git status --short"
    assert command_hint(git) == "git status"
    pytest_q = _req(Act.EXEC, "pytest -q", tool="run_command", arguments={"argv": ["pytest", "-q"]})
    assert suggest_pattern(pytest_q) == "pytest -q"
    assert validate_pattern("") and validate_pattern(" a") and validate_pattern("src/*") is None


def test_an_exact_command_pattern_allows_that_command_and_nothing_else() -> None:
    argv = ["echo", "[x]", "*"]
    echo = _req(Act.EXEC, "echo '[x]' '*'", tool="run_command", arguments={"argv": argv})
    pattern = suggest_pattern(echo)
    assert pattern == glob_escape("echo '[x]' '*'")
    rule = Rule(Act.EXEC, Effect.ALLOW, pattern)
    assert rule.matches(Act.EXEC, "echo '[x]' '*'")
    assert not rule.matches(Act.EXEC, "echo '[x]' '*' more")
    assert not rule.matches(Act.EXEC, "echo x")
    assert grant_text(RememberRule(pattern, Act.EXEC)) == "exactly the command 'echo '[x]' '*''"


def test_command_examples_all_match_the_request() -> None:
    git = _req(
        Act.EXEC,
        "git status --short",
        tool="run_command",
        arguments={"argv": ["git", "status", "--short"]},
    )
    examples = command_examples(git)
    assert examples == [
        ("git status --short", "only this command"),
        ("git status *", "'git status' with any arguments"),
        ("git", "every git command"),
    ]
    for pattern, _ in examples:
        assert Rule(Act.EXEC, Effect.ALLOW, pattern).matches(Act.EXEC, git.target)
    # "ls *" would not match a bare "ls": only the patterns that do are offered.
    ls = _req(Act.EXEC, "ls", tool="run_command", arguments={"argv": ["ls"]})
    assert command_examples(ls) == [("ls", "only this command")]
    # No subcommand: no "python3 *" beside "python3" (they allow the same).
    py = _req(
        Act.EXEC,
        "python3 -m pytest",
        tool="run_command",
        arguments={"argv": ["python3", "-m", "pytest"]},
    )
    assert [p for p, _ in command_examples(py)] == ["python3 -m pytest", "python3"]
    assert grant_text(RememberRule("ls", Act.EXEC)) == "every 'ls' command, with any arguments"


def test_grant_text_says_what_a_pattern_allows() -> None:
    def grant(pattern: str, act: Act = Act.WRITE) -> str:
        return grant_text(RememberRule(pattern, act))

    assert grant("git status *", Act.EXEC) == "every command line matching 'git status *'"
    assert grant("py*", Act.EXEC) == "every command whose program matches 'py*', with any arguments"
    assert (
        grant("mcp__time__now", Act.EXEC)
        == "calls to the MCP tool mcp__time__now, with any arguments"
    )
    assert grant("src/*") == "write every path matching 'src/*'"
    assert grant("src/app.py") == "write exactly 'src/app.py'"
    assert grant("README.md") == "write any file named 'README.md', in any folder"


async def test_preview_lists_earlier_matches_within_scope(store: Store) -> None:
    run_a = await _run(store, "/ws/a")
    run_b = await _run(store, "/ws/b")
    made = [
        await store.approvals.create(_req(Act.WRITE, "src/a.py", run_id=run_a)),
        await store.approvals.create(_req(Act.WRITE, "docs/x.md", run_id=run_a)),
        await store.approvals.create(_req(Act.WRITE, "src/b.py", run_id=run_b, workspace="/ws/b")),
        await store.approvals.create(_req(Act.EXEC, "src", tool="run_command", run_id=run_a)),
        await store.approvals.create(_req(Act.WRITE, "src/c.py", run_id=run_a)),
    ]
    history = await store.approvals.history()
    current = made[-1]

    def ids(scope: str) -> list[int]:
        rule = RememberRule("src/*", Act.WRITE, scope)  # type: ignore[arg-type]
        found = preview_matches(
            history, rule, workspace="/ws/a", run_id=run_a, before_id=current.id
        )
        return [r.request.id for r in found]

    assert ids("workspace") == [made[0].id]
    assert ids("global") == [made[0].id, made[2].id]
    assert ids("run") == [made[0].id]
    await store.approvals.record_decision(made[2].id, Decision.deny("no"))
    history = await store.approvals.history()
    radius = blast_radius(
        history,
        RememberRule("src/*", Act.WRITE, "global"),
        workspace="/ws/a",
        run_id=run_a,
        before_id=current.id,
    )
    assert (len(radius.allowed), radius.earlier, radius.runs, radius.denied) == (2, 3, 2, 1)
    assert radius.describe() == (
        "would have allowed 2 of the 3 earlier write requests (2 runs; 1 of them denied)"
    )
    none = blast_radius(history, RememberRule("lib/*", Act.WRITE), workspace="/ws/a", run_id=run_a)
    assert none.describe() == "would have allowed none of the 4 earlier write requests"


async def test_rewrite_check_validates_and_refuses_a_deny(store: Store, workspace: Path) -> None:
    policy = Policy().with_layer(Layer("project", (Rule(Act.WRITE, Effect.DENY, "secrets/*"),)))
    run = await _run(store, str(workspace), policy)
    request = await store.approvals.create(
        _req(Act.WRITE, "src/app.py", run_id=run, workspace=str(workspace))
    )
    ok = await check_rewrite(store, request, {"path": "src/new.py", "content": "y\n"})
    assert ok.ok and ok.gate is not None and ok.gate.target == "src/new.py"
    bad = await check_rewrite(store, request, {"path": "src/new.py"})
    assert not bad.ok and "content" in (bad.problem or "")
    denied = await check_rewrite(store, request, {"path": "secrets/k.txt", "content": "y"})
    assert (
        not denied.ok
        and "secrets/*" in (denied.problem or "")
        and "project" in (denied.problem or "")
    )
    secret = await check_rewrite(store, request, {"path": ".env", "content": "y"})
    assert not secret.ok and "builtin-secrets" in (secret.problem or "")


async def test_audit_stats_and_rows(store: Store) -> None:
    run = await _run(store, "/ws/a")
    reqs = [
        await store.approvals.create(_req(Act.WRITE, f"src/{i}.py", run_id=run)) for i in range(4)
    ]
    await store.approvals.record_decision(reqs[0].id, Decision.approve())
    await store.approvals.record_decision(reqs[1].id, Decision.deny("no"))
    await store.approvals.record_decision(
        reqs[2].id, Decision(DecisionKind.REWRITE, arguments={"path": "src/z.py", "content": ""})
    )
    await store.approvals.record_performed(
        reqs[2].id, {"performed": True, "arguments": {"path": "src/z.py", "content": ""}}
    )
    for i, secs in enumerate((10, 20, 60)):
        await store.db.conn.execute(
            "UPDATE approvals SET created_at = 1000, decided_at = ? WHERE id = ?",
            (1000 + secs, reqs[i].id),
        )
    await store.db.conn.commit()
    records = await store.approvals.history()
    stats = audit_stats(records)
    assert (stats.total, stats.pending, stats.decided) == (4, 1, 3)
    assert stats.approval_rate == 2 / 3 and stats.median_seconds == 20
    assert "approval rate 67%" in stats.summary()
    rows = [audit_row(r) for r in records]
    assert rows[1].decision == "deny" and rows[1].reason == "no"
    assert rows[2].performed.startswith("rewritten: ") and "src/z.py" in rows[2].performed
    assert rows[3].performed == "pending"


async def test_recall_history(store: Store) -> None:
    await store.memory.write(
        key="k",
        value="v",
        scope="workspace",
        workspace="/ws/a",
        run_id=1,
        step=1,
        limits=MemoryLimits(),
    )
    await store.memory.record_recall(3, 2, 17, ["k"], "/ws/a")
    found = await recall_history(store, "workspace", "/ws/a", "k")
    assert [(r.request_id, r.run_id, r.step) for r in found] == [(17, 3, 2)]
