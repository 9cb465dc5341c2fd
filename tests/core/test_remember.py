"""Remembering a rule: suggested patterns, what a pattern grants, the preview of earlier matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from approval_requests import approval_request, new_run

from io_tui.core.authority.approvals import Decision, RememberRule
from io_tui.core.authority.policy import Act, Effect, Rule
from io_tui.core.steering.remember import (
    blast_radius,
    command_hint,
    glob_escape,
    grant_text,
    pattern_choices,
    preview_matches,
    suggest_pattern,
    validate_pattern,
)
from io_tui.core.store import Store


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


def test_suggested_patterns() -> None:
    # A path starts from exactly itself; one at the root is anchored there.
    assert suggest_pattern(approval_request(Act.WRITE, "src/pkg/app.py")) == "src/pkg/app.py"
    assert suggest_pattern(approval_request(Act.WRITE, "README.md")) == "/README.md"
    assert suggest_pattern(approval_request(Act.WRITE, "src/[x].py")) == "src/[[]x].py"
    git = approval_request(
        Act.EXEC,
        "git status --short",
        tool="run_command",
        arguments={"argv": ["git", "status", "--short"]},
        content=json.dumps(["git", "status", "--short"]),
    )
    # An exec starts from its exact command line: the bare program would allow every command.
    assert suggest_pattern(git) == "git status --short"
    assert command_hint(git) == "git status"
    pytest_q = approval_request(
        Act.EXEC, "pytest -q", tool="run_command", arguments={"argv": ["pytest", "-q"]}
    )
    assert suggest_pattern(pytest_q) == "pytest -q"
    assert validate_pattern("") and validate_pattern(" a") and validate_pattern("src/*") is None


def test_an_exact_command_pattern_allows_that_command_and_nothing_else() -> None:
    argv = ["echo", "[x]", "*"]
    echo = approval_request(
        Act.EXEC, "echo '[x]' '*'", tool="run_command", arguments={"argv": argv}
    )
    pattern = suggest_pattern(echo)
    assert pattern == glob_escape("echo '[x]' '*'")
    rule = Rule(Act.EXEC, Effect.ALLOW, pattern)
    assert rule.matches(Act.EXEC, "echo '[x]' '*'")
    assert not rule.matches(Act.EXEC, "echo '[x]' '*' more")
    assert not rule.matches(Act.EXEC, "echo x")
    assert grant_text(RememberRule(pattern, Act.EXEC)) == "exactly the command 'echo '[x]' '*''"


def test_command_choices_all_match_the_request() -> None:
    git = approval_request(
        Act.EXEC,
        "git status --short",
        tool="run_command",
        arguments={"argv": ["git", "status", "--short"]},
    )
    choices = [(c.pattern, c.meaning) for c in pattern_choices(git)]
    assert choices == [
        ("git status --short", "only this command"),
        ("git status *", "'git status' with any arguments"),
        ("git", "every git command"),
    ]
    for pattern, _ in choices:
        assert Rule(Act.EXEC, Effect.ALLOW, pattern).matches(Act.EXEC, git.target)
    # "ls *" would not match a bare "ls": only the patterns that do are offered.
    ls = approval_request(Act.EXEC, "ls", tool="run_command", arguments={"argv": ["ls"]})
    assert [(c.pattern, c.meaning) for c in pattern_choices(ls)] == [("ls", "only this command")]
    # No subcommand: no "python3 *" beside "python3" (they allow the same).
    py = approval_request(
        Act.EXEC,
        "python3 -m pytest",
        tool="run_command",
        arguments={"argv": ["python3", "-m", "pytest"]},
    )
    assert [c.pattern for c in pattern_choices(py)] == ["python3 -m pytest", "python3"]
    mcp = approval_request(Act.EXEC, "mcp__time__now", tool="mcp__time__now", arguments={})
    assert [(c.pattern, c.meaning) for c in pattern_choices(mcp)] == [
        ("mcp__time__now", "only this command"),
        ("mcp__time__*", "every tool of the MCP server time"),
    ]
    assert grant_text(RememberRule("ls", Act.EXEC)) == "every 'ls' command, with any arguments"


def test_path_choices_widen_from_the_exact_path() -> None:
    """The exact path first, then its folder and its extension: each matches the request, and
    the exact one matches nothing else (a root file too, anchored)."""
    nested = approval_request(Act.WRITE, "textstats/counts.py")
    assert [(c.pattern, c.meaning) for c in pattern_choices(nested)] == [
        ("textstats/counts.py", "only this file"),
        ("textstats/*", "every file under textstats/"),
        ("*.py", "every .py file, in any folder"),
    ]
    root = approval_request(Act.WRITE, "README.md")
    assert [c.pattern for c in pattern_choices(root)] == ["/README.md", "*.md"]
    exact = Rule(Act.WRITE, Effect.ALLOW, "/README.md")
    assert exact.matches(Act.WRITE, "README.md")
    assert not exact.matches(Act.WRITE, "docs/README.md")
    assert [c.pattern for c in pattern_choices(approval_request(Act.WRITE, "Makefile"))] == [
        "/Makefile"
    ]
    for request in (nested, root):
        for choice in pattern_choices(request):
            assert Rule(Act.WRITE, Effect.ALLOW, choice.pattern).matches(Act.WRITE, request.target)


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
    assert grant("/README.md") == "write exactly 'README.md'"


async def test_preview_lists_earlier_matches_within_scope(store: Store) -> None:
    run_a = await new_run(store, "/ws/a")
    run_b = await new_run(store, "/ws/b")
    made = [
        await store.approvals.create(approval_request(Act.WRITE, "src/a.py", run_id=run_a)),
        await store.approvals.create(approval_request(Act.WRITE, "docs/x.md", run_id=run_a)),
        await store.approvals.create(
            approval_request(Act.WRITE, "src/b.py", run_id=run_b, workspace="/ws/b")
        ),
        await store.approvals.create(
            approval_request(Act.EXEC, "src", tool="run_command", run_id=run_a)
        ),
        await store.approvals.create(approval_request(Act.WRITE, "src/c.py", run_id=run_a)),
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
