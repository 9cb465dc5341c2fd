"""Turning a ``NewRunRequest`` into a contract, provider and policy (new runs, follow-ups and
continuations).

A follow-up continues a conversation as a new run seeded with the earlier one (``seed_run_id``):
the earlier run's goal and final answer go into the new contract's constraints, the workspace,
provider (a fresh copy from its description) and policy are the earlier run's.
A continuation (``continue_run_id``, ``io-tui run --continue RUN``) is a fresh run in the
earlier run's workspace, with its verification and constraints, whose first request carries
the earlier run's progress ledger and nothing else of it (``continue_contract``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from io_tui.core.authority.policy import Policy
from io_tui.core.boundary.workspace import Workspace, WorkspaceError
from io_tui.core.contract import ContextBudget, TaskContract, contract_from_json
from io_tui.core.mcp.config import FoundServers
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import Provider, ProviderConfigError
from io_tui.core.providers.factory import build_provider
from io_tui.core.providers.scripted import ScriptError
from io_tui.core.run.mcp_hubs import admit_workspace_servers
from io_tui.core.run.origin import RunOrigin, configured_servers
from io_tui.core.run.request import NewRunRequest
from io_tui.core.run.settings import RunSettings, policy_for
from io_tui.core.store import Store

FINAL_ANSWER_CHARS = 2_000


async def build_run(
    store: Store, settings: RunSettings, request: NewRunRequest
) -> tuple[TaskContract, Provider, Policy]:
    """Raises ValueError with a readable message when the request cannot start."""
    if not request.task.strip() and request.continue_run_id is None:
        raise ValueError("the task is empty")
    if request.seed_run_id is not None:
        return await _follow_up(store, settings, request)
    if request.continue_run_id is not None:
        earlier = await store.runs.get(request.continue_run_id)
        if earlier is None:
            raise ValueError(f"no run {request.continue_run_id} to continue")
        request = dataclasses.replace(request, workspace=Path(earlier.workspace))
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
        checkpoints=run_settings.checkpoints.limits(),
    )
    if request.continue_run_id is not None:
        contract = await continue_contract(store, request.continue_run_id, contract)
    return contract, provider_for(run_settings), policy


@dataclasses.dataclass(frozen=True, slots=True)
class StartingRun:
    """A run about to start: what ``build_run`` makes of the request, the MCP servers a run in
    its workspace gets (``configured_servers``) and the origin a resume rebuilds it from."""

    contract: TaskContract
    provider: Provider
    policy: Policy
    found: FoundServers
    origin: RunOrigin
    notices: tuple[str, ...] = ()  # a workspace .mcp.json left out: untrusted, or denied


async def prepare_run(store: Store, settings: RunSettings, request: NewRunRequest) -> StartingRun:
    """A request made ready to start, the same wherever it starts (the app's own loop, its
    worker process, the queue): ValueError with the CLI's line when it cannot, or when an MCP
    file does not load (the provider closed again)."""
    contract, provider, policy = await build_run(store, settings, request)
    try:
        found = configured_servers(settings, contract.workspace)
        found, said = await admit_workspace_servers(store, found, policy)
        origin = RunOrigin.at_start(run_settings_for(settings, request), found.servers)
    except ValueError:
        await provider.aclose()
        raise
    return StartingRun(contract, provider, policy, found, origin, tuple(said))


async def continue_contract(store: Store, run_id: int, contract: TaskContract) -> TaskContract:
    """``contract`` as a continuation of run ``run_id``: in its workspace, with its verification
    (unless ``contract`` names one) and constraints, carrying its progress ledger; an empty goal
    becomes "continue its objective". ValueError when there is no such run."""
    from io_tui.core.progress.keeper import continuation

    row = await store.runs.get(run_id)
    if row is None:
        raise ValueError(f"no run {run_id} to continue")
    earlier = contract_from_json(row.contract)
    carried = await continuation(store, run_id)
    goal = contract.goal.strip() or (
        f"Continue the work of run {run_id} from its progress ledger. Its objective: {row.goal}"
    )
    return dataclasses.replace(
        contract,
        goal=goal,
        workspace=Path(row.workspace),
        verify=contract.verify or earlier.verify,
        constraints=(*earlier.constraints, *contract.constraints),
        continues=carried,
    )


def run_settings_for(settings: RunSettings, request: NewRunRequest) -> RunSettings:
    """``settings`` with the request's provider, model and limits (ValueError if they do not
    validate)."""
    provider = request.provider or settings.provider
    same_provider = provider == settings.provider
    limits = {
        "max_steps": request.max_steps,
        "token_budget": request.token_budget,
        "context_max_tokens": request.context_max_tokens,
        "max_output_tokens": request.max_output_tokens,
        "context_window": request.context_window,
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
        checkpoints=earlier.checkpoints,
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
