"""io-tui's asks as ACP permission requests, and the client's answers as io-tui decisions.

| the client's option (kind) | io-tui's decision |
|---|---|
| Allow (``allow_once``) | approve |
| Always allow PATTERN (``allow_always``) | remember: approve, and a rule allowing PATTERN in this workspace |
| Always allow WIDER (``allow_always``, one per wider choice) | the same, with that wider pattern |
| Reject (``reject_once``) | deny |
| Always reject PATTERN (``reject_always``) | deny, and a rule denying PATTERN in this workspace |
| the request cancelled (or ``session/cancel``) | defer: the ask stays in io-tui's inbox, the run pauses |

PATTERN is exactly what was asked (``suggest_pattern``: an exec's exact command line, a path's
exact path), as the TUI's remember editor starts from; the wider choices follow it
(``pattern_choices``: a path's folder and extension, a command's subcommand and program), each
named with what it allows and how many earlier requests in this workspace it would have allowed. The ask was stored
before it was put to the client, so the cockpit's inbox shows it while the client is asked, and
a decision made there first (``io-tui decide``, the TUI) wins: the request to the client is
withdrawn and the run goes on with it.

An MCP server's form (elicitation) goes to a client that offers forms
(``clientCapabilities.elicitation.form``) as ACP's own ``elicitation/create`` (unstable in the
protocol), tied to the session and the server's tool call: accept → approve with the form's
content, decline → deny, cancel → defer. A client without forms is not asked: the form is
declined, saying so.

Calls in flight when an earlier process died are put to the client the same way before an
interrupted run resumes (``ClientReconciler``): run it again, mark it done, or skip it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from acp import RequestError, text_block, tool_content
from acp.schema import PermissionOption, ToolCallUpdate

from io_tui.acp.plan import send_plan
from io_tui.acp.updates import call_key, file_diff, tool_kind, tool_title
from io_tui.core import (
    ApprovalRequest,
    Decision,
    DecisionKind,
    InFlight,
    PatternChoice,
    ReconcileChoice,
    ReconcileNeeded,
    RememberRule,
    blast_radius,
    is_elicitation,
    pattern_choices,
    suggest_pattern,
)

if TYPE_CHECKING:
    from acp import Client

    from io_tui.acp.session import Session
    from io_tui.core import Store

log = logging.getLogger("io_tui.acp")

DECIDED_BY = "acp"


def options_for(request: ApprovalRequest, radii: list[str] | None = None) -> list[PermissionOption]:
    """The client's choices for ``request``: allow once, always allow (exactly what was asked,
    then each wider pattern, with ``radii``: what each would have allowed), reject, always
    reject (exactly what was asked), decide later."""
    act = request.act.value
    choices = pattern_choices(request)
    always = [
        PermissionOption(
            option_id=_remember_id(index),
            name=f"Always allow {act} {choice.pattern}" + _wider_note(index, choice, radii),
            kind="allow_always",
        )
        for index, choice in enumerate(choices)
    ]
    return [
        PermissionOption(option_id="approve", name="Allow", kind="allow_once"),
        *always,
        PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
        PermissionOption(
            option_id="deny-always",
            name=f"Always reject {act} {suggest_pattern(request)}",
            kind="reject_always",
        ),
    ]


def _remember_id(index: int) -> str:
    """``remember`` for exactly what was asked, ``remember-2``… for the wider choices."""
    return "remember" if index == 0 else f"remember-{index + 1}"


def _wider_note(index: int, choice: PatternChoice, radii: list[str] | None) -> str:
    if index == 0:
        return ""
    radius = f" · {radii[index]}" if radii and index < len(radii) else ""
    return f" ({choice.meaning}{radius})"


class ClientApprover:
    """The ``Approver`` of a session's runs: each ask becomes a ``session/request_permission``."""

    def __init__(self, client: Client, session: Session, store: Store, client_name: str) -> None:
        self.client = client
        self.session = session
        self.store = store
        self.client_name = client_name

    async def decide(self, request: ApprovalRequest) -> Decision:
        session = self.session
        send_plan(session, self.store)  # the ledger says what waits for the decision
        await session.outbox.flush()  # the tool call (and the plan) on the client's screen first
        if session.cancelled.is_set():
            return Decision.defer(decided_by=f"{DECIDED_BY}: cancelled")
        session.asking += 1
        try:
            return await self._race(request)
        finally:
            session.asking -= 1

    async def _race(self, request: ApprovalRequest) -> Decision:
        asked = asyncio.ensure_future(self._ask_client(request))
        elsewhere = asyncio.ensure_future(self.store.approvals.wait_decided(request.id))
        cancelled = asyncio.ensure_future(self.session.cancelled.wait())
        waiting = {asked, elsewhere, cancelled}
        try:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waiting:
                task.cancel()
            for task in waiting:
                with contextlib.suppress(BaseException):
                    await task
        if asked in done and not asked.cancelled() and asked.exception() is None:
            return asked.result()
        if elsewhere in done and not elsewhere.cancelled() and elsewhere.exception() is None:
            return elsewhere.result()
        if asked in done and not asked.cancelled() and asked.exception() is not None:
            log.warning("permission request %s failed: %s", request.id, asked.exception())
        return Decision.defer(decided_by=f"{DECIDED_BY}: cancelled")

    async def _ask_client(self, request: ApprovalRequest) -> Decision:
        if is_elicitation(request):
            return await self._form(request)
        key = call_key(request.run_id, request.call_id)
        content = await asyncio.to_thread(
            file_diff, self.session.cwd, request.tool, request.arguments
        )
        why = f"{request.summary()}\n\n(io-tui approval #{request.id}, run {request.run_id})"
        answer = await self.client.request_permission(
            session_id=self.session.id,
            tool_call=ToolCallUpdate(
                tool_call_id=key,
                title=tool_title(request.tool, request.arguments),
                kind=tool_kind(request.tool),
                status="pending",
                content=[*(content or []), tool_content(text_block(why))],
                raw_input=request.arguments,
            ),
            options=options_for(request, await self._radii(request)),
        )
        outcome = answer.outcome
        if getattr(outcome, "outcome", None) != "selected":
            return Decision.defer(decided_by=f"{DECIDED_BY}: cancelled")
        return await self._decision(request, str(getattr(outcome, "option_id", "")))

    async def _radii(self, request: ApprovalRequest) -> list[str]:
        """What each pattern choice would have allowed among the earlier requests in the
        workspace (the rule's scope)."""
        history = await self.store.approvals.history()
        return [
            blast_radius(
                history,
                RememberRule(choice.pattern, request.act, "workspace"),
                workspace=request.workspace,
                run_id=request.run_id,
                before_id=request.id,
            ).short()
            for choice in pattern_choices(request)
        ]

    async def _decision(self, request: ApprovalRequest, option: str) -> Decision:
        by = f"{DECIDED_BY}: {self.client_name}"
        rule = RememberRule(suggest_pattern(request), request.act, "workspace")
        if option == "approve":
            return Decision.approve(decided_by=by)
        remembered = {
            _remember_id(index): choice for index, choice in enumerate(pattern_choices(request))
        }
        if option in remembered:
            wider = RememberRule(remembered[option].pattern, request.act, "workspace")
            return Decision(DecisionKind.REMEMBER, rule=wider, decided_by=by)
        if option == "deny-always":
            return Decision.deny(f"rejected always in {self.client_name}", decided_by=by, rule=rule)
        if option == "deny":
            return Decision.deny(f"rejected in {self.client_name}", decided_by=by)
        if option != "defer":
            log.warning("permission request %s: unknown option %r, deferred", request.id, option)
        return Decision.defer(decided_by=by)

    async def _form(self, request: ApprovalRequest) -> Decision:
        """An MCP server's form, as the client's own elicitation when it offers forms."""
        from acp.schema import ElicitationFormSessionMode, ElicitationSchema

        by = f"{DECIDED_BY}: {self.client_name}"
        caps = self.session.capabilities
        if caps is None or caps.elicitation is None or caps.elicitation.form is None:
            return Decision.deny(
                f"{self.client_name} shows no forms (ACP elicitation)", decided_by=by
            )
        call_id = request.call_id.rsplit(":", 1)[0]  # the server's tool call it asks in
        mode = ElicitationFormSessionMode(
            session_id=self.session.id,
            tool_call_id=call_key(request.run_id, call_id),
            requested_schema=ElicitationSchema.model_validate(
                request.arguments.get("requested_schema") or {}
            ),
        )
        answer = await self.client.create_elicitation(
            message=str(request.arguments.get("message") or ""), mode=mode
        )
        if answer.action == "accept":
            content = getattr(answer, "content", None) or {}
            return Decision(DecisionKind.APPROVE, arguments=dict(content), decided_by=by)
        if answer.action == "decline":
            return Decision.deny(f"declined in {self.client_name}", decided_by=by)
        return Decision.defer(decided_by=by)


RECONCILE_OPTIONS = [
    PermissionOption(option_id="rerun", name="Run it again", kind="allow_once"),
    PermissionOption(option_id="done", name="It took effect: mark it done", kind="allow_once"),
    PermissionOption(option_id="skip", name="Skip it", kind="reject_once"),
]


class ClientReconciler:
    """A call in flight at a crash, put to the client: rerun / done / skip (cancelled: the run
    stays interrupted)."""

    def __init__(self, client: Client, session: Session) -> None:
        self.client = client
        self.session = session

    async def reconcile(self, call: InFlight) -> ReconcileChoice:
        intent = call.intent
        await self.session.outbox.flush()
        try:
            answer = await self.client.request_permission(
                session_id=self.session.id,
                tool_call=ToolCallUpdate(
                    tool_call_id=call_key(call.run_id, intent.call_id),
                    title=tool_title(intent.tool, intent.arguments),
                    kind=tool_kind(intent.tool),
                    status="pending",
                    content=[tool_content(text_block(call.known))],
                    raw_input=intent.arguments,
                ),
                options=RECONCILE_OPTIONS,
            )
        except RequestError as exc:
            raise _needed(call, f"the client did not answer: {exc}") from None
        outcome: Any = answer.outcome
        if getattr(outcome, "outcome", None) == "selected":
            with contextlib.suppress(ValueError):
                return ReconcileChoice(outcome.option_id)
        raise _needed(call, "no choice was made")


def _needed(call: InFlight, why: str) -> Exception:
    return ReconcileNeeded(f"run {call.run_id}: {call.intent.tool} was in flight at a crash; {why}")
