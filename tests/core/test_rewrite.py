"""Checking an edited action: validated by the tool's model, refused when it crosses a deny."""

from __future__ import annotations

from pathlib import Path

from approval_requests import approval_request, new_run

from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.steering.rewrite import check_rewrite
from io_tui.core.store import Store


async def test_rewrite_check_validates_and_refuses_a_deny(store: Store, workspace: Path) -> None:
    policy = Policy().with_layer(Layer("project", (Rule(Act.WRITE, Effect.DENY, "secrets/*"),)))
    run = await new_run(store, str(workspace), policy)
    request = await store.approvals.create(
        approval_request(Act.WRITE, "src/app.py", run_id=run, workspace=str(workspace))
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
