"""An approval request to store, and a run to hang it on (the remember, rewrite and audit tests)."""

from __future__ import annotations

from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.authority.policy import Act, Policy
from io_tui.core.store import Store


def approval_request(
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


async def new_run(store: Store, workspace: str, policy: Policy | None = None) -> int:
    return await store.runs.create(
        goal="g",
        workspace=workspace,
        contract={},
        provider={},
        policy=(policy or Policy()).to_json(),
    )
