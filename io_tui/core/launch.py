"""Turning a ``NewRunRequest`` into a contract, provider and policy (new runs and follow-ups).

A follow-up continues a conversation as a new run seeded with the earlier one (``seed_run_id``):
the earlier run's goal and final answer go into the new contract's constraints, the workspace,
provider (a fresh copy from its description) and policy are the earlier run's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from io_tui.core.contract import CachePrices, ContextBudget, TaskContract, contract_from_json
from io_tui.core.policy import Policy, PolicyError
from io_tui.core.providers.base import Provider, ProviderConfigError
from io_tui.core.providers.factory import build_provider
from io_tui.core.providers.scripted import ScriptError
from io_tui.core.run_request import NewRunRequest
from io_tui.core.settings import RunSettings
from io_tui.core.store import Store
from io_tui.core.workspace import Workspace, WorkspaceError

FINAL_ANSWER_CHARS = 2_000


async def build_run(
    store: Store, settings: RunSettings, request: NewRunRequest
) -> tuple[TaskContract, Provider, Policy]:
    """Raises ValueError with a readable message when the request cannot start."""
    if not request.task.strip():
        raise ValueError("the task is empty")
    if request.seed_run_id is not None:
        return await _follow_up(store, settings, request)
    try:
        workspace = Workspace(request.workspace)
    except WorkspaceError as exc:
        raise ValueError(str(exc)) from None
    run_settings = run_settings_for(settings, request)
    policy = policy_for(run_settings)
    contract = TaskContract(
        goal=request.task.strip(),
        workspace=workspace.root,
        max_steps=run_settings.max_steps,
        token_budget=run_settings.token_budget,
        context=ContextBudget(run_settings.context_max_tokens, run_settings.context_share),
        cache=cache_prices_for(run_settings),
        env_allow=tuple(run_settings.run.env_allow),
    )
    return contract, provider_for(run_settings), policy


def run_settings_for(settings: RunSettings, request: NewRunRequest) -> RunSettings:
    """``settings`` with the request's provider, model and limits (ValueError if they do not
    validate)."""
    provider = request.provider or settings.provider
    same_provider = provider == settings.provider
    limits = {
        "max_steps": request.max_steps,
        "token_budget": request.token_budget,
        "context_max_tokens": request.context_max_tokens,
    }
    return settings.updated(
        provider=provider,
        model=request.model or (settings.model if same_provider else None),
        # the config's base URL belongs to the config's provider, not to another preset
        base_url=request.base_url or (settings.base_url if same_provider else None),
        **{name: value for name, value in limits.items() if value is not None},
    )


def cache_prices_for(settings: RunSettings) -> CachePrices:
    """The provider preset's cache prices, with the ``[cache]`` settings that are set."""
    from io_tui.core.providers.presets import cache_prices

    overrides = {k: v for k, v in settings.cache.model_dump().items() if v is not None}
    return dataclasses.replace(cache_prices(settings.provider), **overrides)


async def _follow_up(
    store: Store, settings: RunSettings, request: NewRunRequest
) -> tuple[TaskContract, Provider, Policy]:
    from io_tui.core.providers.factory import provider_from_description

    assert request.seed_run_id is not None
    row = await store.runs.get(request.seed_run_id)
    if row is None:
        raise ValueError(f"no run {request.seed_run_id} to follow up")
    final = await _final_answer(store, row.id)
    earlier = contract_from_json(row.contract)
    constraints = (
        *earlier.constraints,
        f"This continues run {row.id}. Its goal was: {row.goal}",
        f"Run {row.id} ended {row.status} ({row.outcome}); its final answer was: "
        f"{final or '(none)'}",
    )
    contract = TaskContract(
        goal=request.task.strip(),
        workspace=Path(row.workspace),
        verify=earlier.verify,
        max_steps=request.max_steps or earlier.max_steps,
        token_budget=request.token_budget or earlier.token_budget,
        constraints=constraints,
        context=earlier.context,
        compaction=earlier.compaction,
        memory=earlier.memory,
        cache=earlier.cache,
        env_allow=earlier.env_allow,
    )
    try:
        provider = provider_from_description(row.provider)
    except Exception:
        provider = provider_for(settings)
    return contract, provider, Policy.from_json(row.policy, source=f"run {row.id} policy")


async def _final_answer(store: Store, run_id: int) -> str:
    steps = await store.trace.steps(run_id)
    for row in reversed(steps):
        if row.text and row.decision.get("final"):
            return row.text[:FINAL_ANSWER_CHARS]
    return steps[-1].text[:FINAL_ANSWER_CHARS] if steps else ""


def provider_for(settings: RunSettings) -> Provider:
    """The settings' provider; ValueError with a readable message when it cannot be built."""
    try:
        return build_provider(settings)
    except (ProviderConfigError, ScriptError) as exc:
        raise ValueError(str(exc)) from None


def policy_for(settings: RunSettings) -> Policy:
    """The settings' policy file, or the defaults; ValueError when the file does not load."""
    if settings.policy is None:
        return Policy()
    try:
        return Policy.load(settings.policy)
    except PolicyError as exc:
        raise ValueError(str(exc)) from None
