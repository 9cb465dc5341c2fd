"""``RunOrigin``: what a run records of how it started, secret-free, and what a resume makes of
it in another process (its MCP servers, its provider's timeout and retries)."""

from __future__ import annotations

from io_tui.core.mcp.config import HttpServer, StdioServer
from io_tui.core.mcp.connection import InProcessServer
from io_tui.core.providers.http_provider import HttpProvider
from io_tui.core.run.origin import RunOrigin, servers_to_resume, without_secrets
from io_tui.core.run.settings import RunSettings
from io_tui.core.steering.decisions import harness_for_run
from io_tui.core.store import Store

GIT = StdioServer(
    command="mcp-git",
    args=["--repo", "."],
    env={"GITHUB_TOKEN": "ghp_literal", "HOME_DIR": "${HOME}", "LEVEL": "debug"},
)
API = HttpServer(
    url="https://mcp.example/api",
    headers={"Authorization": "Bearer ${API_TOKEN}", "X-Key": "literal-key"},
)


def test_only_variable_names_are_recorded() -> None:
    kept = without_secrets({"git": GIT, "api": API, "mem": InProcessServer(server=None)})
    assert set(kept) == {"git", "api"}  # an in-process server is not config
    git = kept["git"]
    assert isinstance(git, StdioServer) and (git.command, git.args) == ("mcp-git", ["--repo", "."])
    assert git.env == {
        "GITHUB_TOKEN": "${GITHUB_TOKEN}",
        "HOME_DIR": "${HOME}",
        "LEVEL": "${LEVEL}",
    }
    api = kept["api"]
    assert isinstance(api, HttpServer)
    assert api.headers == {"Authorization": "Bearer ${API_TOKEN}", "X-Key": "${X_Key}"}
    origin = RunOrigin.at_start(RunSettings(max_steps=3), {"git": GIT, "api": API})
    text = str(origin.to_json())
    assert "ghp_literal" not in text and "literal-key" not in text
    assert RunOrigin.from_json(origin.to_json()) == origin


def test_a_record_that_does_not_load_is_no_record() -> None:
    assert RunOrigin.from_json(None) is None
    assert RunOrigin.from_json({"settings": {"max_steps": "many"}}) is None
    assert RunOrigin.from_json({"settings": {}, "from_the_future": 1}) is None


def test_values_come_from_the_environment_else_this_process_config() -> None:
    origin = RunOrigin.at_start(RunSettings(), {"git": GIT})
    mine = StdioServer(command="other-git", env={"GITHUB_TOKEN": "ghp_mine", "LEVEL": "info"})
    here = origin.servers_here({"git": mine}, env={"GITHUB_TOKEN": "from-env", "HOME": "/h"})
    git = here["git"]
    assert isinstance(git, StdioServer) and git.command == "mcp-git"  # the run's server
    # set in the environment: the recorded name; not set: this config's value for that key
    assert git.env == {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "HOME_DIR": "${HOME}", "LEVEL": "info"}
    api = RunOrigin.at_start(RunSettings(), {"api": API}).servers_here({"api": API}, env={})
    assert isinstance(api["api"], HttpServer) and api["api"].headers["X-Key"] == "literal-key"
    with_password = HttpServer(url="https://bot:pa55@mcp.example/api")
    [kept] = without_secrets({"api": with_password}).values()
    assert isinstance(kept, HttpServer) and kept.url == "https://bot:***@mcp.example/api"
    recorded = RunOrigin.at_start(RunSettings(), {"api": with_password})
    assert "pa55" not in str(recorded.to_json())
    assert recorded.servers_here({"api": with_password})["api"] == with_password
    bare = origin.servers_here({}, env={})["git"]
    assert isinstance(bare, StdioServer) and bare.env["LEVEL"] == "${LEVEL}"  # a start notice


async def test_servers_to_resume_says_when_they_are_not_this_process(store: Store) -> None:
    origin = RunOrigin.at_start(RunSettings(), {"git": GIT})
    with_record = await new_run(store, origin.to_json())
    without = await new_run(store, None)
    servers, notice = await servers_to_resume(store, with_record, {})
    assert list(servers) == ["git"]
    assert notice == f"resuming run {with_record} with the MCP servers it started with: git"
    assert (await servers_to_resume(store, with_record, {"git": GIT}))[1] is None  # the same
    servers, notice = await servers_to_resume(store, without, {"api": API})
    assert servers == {"api": API} and notice is not None and "no record" in notice
    assert await servers_to_resume(store, 999, {"api": API}) == ({}, None)


async def test_the_provider_is_rebuilt_with_the_run_timeout_and_retries(store: Store) -> None:
    origin = RunOrigin.at_start(RunSettings(request_timeout_s=7.5, max_retries=1))
    run_id = await new_run(store, origin.to_json(), provider=OLLAMA)
    harness = await harness_for_run(store, run_id)
    provider = harness.provider
    assert isinstance(provider, HttpProvider) and harness.origin == origin
    assert provider.retry.max_attempts == 2 and provider._timeout.read == 7.5
    older = await harness_for_run(store, await new_run(store, None, provider=OLLAMA))
    assert isinstance(older.provider, HttpProvider) and older.origin is None
    assert older.provider.retry.max_attempts != 2  # the provider's own defaults


OLLAMA = {"kind": "http", "preset": "ollama", "model": "qwen", "base_url": None, "streaming": True}


async def new_run(
    store: Store, origin: dict[str, object] | None, provider: dict[str, object] | None = None
) -> int:
    return await store.runs.create(
        goal="g",
        workspace="/ws",
        contract={"goal": "g", "workspace": "/ws"},
        provider=provider or {"kind": "scripted", "path": "/s.json"},
        policy={},
        origin=origin,
    )
