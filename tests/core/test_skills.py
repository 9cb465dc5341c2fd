"""Skills: discovery and shadowing, the frame's catalogue, and read_skill through a real run."""

from __future__ import annotations

import json

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.derived.skills import catalogue, discover, parse_front_matter
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.steering.trace import build_trace
from io_tui.paths import bundled_dir


def make_skill(folder, name, description, body="Do the thing.\n"):
    path = folder / name
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")


def test_front_matter_is_read_without_yaml():
    assert parse_front_matter("---\nname: a\ndescription: 'b: c'\n---\nbody") == {
        "name": "a",
        "description": "b: c",
    }
    assert parse_front_matter("no fences here") == {}


def test_bundled_skills_are_found_and_workspace_ones_shadow_them(tmp_path):
    bundled = discover(tmp_path, bundled=bundled_dir("skills"), user=None)
    assert {"python-tests", "careful-edits"} <= set(bundled)
    assert all(s.description for s in bundled.values())
    make_skill(tmp_path / ".io-tui" / "skills", "python-tests", "this project's way")
    mine = discover(tmp_path, bundled=bundled_dir("skills"), user=None)
    assert mine["python-tests"].origin == "workspace"
    assert "this project's way" in catalogue(mine)


async def test_a_run_lists_skills_and_reads_one(store, workspace, write_script):
    make_skill(
        workspace / ".io-tui" / "skills", "deploy", "How this project deploys.", "Run make ship.\n"
    )
    script = write_script(
        [{"tool_calls": [{"name": "read_skill", "arguments": {"name": "deploy"}}]}]
    )
    harness = Harness(store, ScriptedProvider.from_file(script), ApproveAll(), policy=Policy())
    result = await start_run(harness, TaskContract("ship it", workspace))
    trace = await build_trace(store, result.run_id)
    system = trace["requests"][0]["messages"][0]["content"]
    assert "deploy: How this project deploys." in system
    assert "Run make ship." in trace["steps"][0]["observations"][0]["text"]
    missing = write_script(
        [{"tool_calls": [{"name": "read_skill", "arguments": {"name": "nope"}}]}]
    )
    harness = Harness(store, ScriptedProvider.from_file(missing), ApproveAll(), policy=Policy())
    result = await start_run(harness, TaskContract("x", workspace))
    text = (await build_trace(store, result.run_id))["steps"][0]["observations"][0]["text"]
    assert "no skill named 'nope'" in text and "deploy" in text


async def test_read_skill_obeys_the_read_policy(store, workspace, write_script):
    make_skill(workspace / ".io-tui" / "skills", "secret", "Not for agents.")
    policy = Policy.from_json(
        {
            "layers": [
                {
                    "name": "p",
                    "rules": [{"act": "read", "effect": "deny", "pattern": "skills/secret/*"}],
                }
            ]
        }
    )
    script = write_script(
        [{"tool_calls": [{"name": "read_skill", "arguments": {"name": "secret"}}]}]
    )
    harness = Harness(store, ScriptedProvider.from_file(script), ApproveAll(), policy=policy)
    result = await start_run(harness, TaskContract("x", workspace))
    obs = (await build_trace(store, result.run_id))["steps"][0]["observations"][0]
    assert obs["is_error"] and "Refused by policy" in obs["text"]
    assert json.dumps(obs).count("Not for agents") == 0
