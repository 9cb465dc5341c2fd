"""The ACP agent: ``initialize``, the session's lifecycle (``session/new``, ``load``,
``resume``, ``fork``, ``list``, ``close``, ``delete``), ``session/prompt`` and its cancellation
(``session/cancel``, ``$/cancel_request``) and the ``_io-tui/rewind`` extension method,
over io-tui's harness and store.

Each prompt drives one ordinary io-tui run (``session``): the cockpit on the same store shows it
live, with its context manifest, like any other. Its events stream to the client as updates
(``updates``), its asks become permission requests (``permission``), its files and commands go
through the client where the client offers them (``editor``). Bad requests get a JSON-RPC error
that says what is wrong (``RequestError``), never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from acp import PROTOCOL_VERSION, RequestError, text_block, tool_content, update_agent_message_text
from acp.schema import (
    AgentCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    StopReason,
    ToolCallUpdate,
)

from io_tui import __version__
from io_tui.acp.editor import Editor, client_tools
from io_tui.acp.forking import REWIND_METHOD, fork_run, rewind_run
from io_tui.acp.mcp import client_servers
from io_tui.acp.permission import ClientApprover, ClientReconciler
from io_tui.acp.session import Outbox, Session, new_session_id, session_runs
from io_tui.acp.updates import UpdateSink, replay, run_note
from io_tui.core import (
    HAND_BACK,
    OPERATOR_CANCEL,
    DecideError,
    FoundServers,
    Harness,
    NewRunRequest,
    Outcome,
    RunOrigin,
    RunResult,
    StoreError,
    ToolRegistry,
    admit_workspace_servers,
    build_hub,
    build_run,
    harness_registry,
    policy_for,
    resume,
    start_run,
    strip_escapes,
)

if TYPE_CHECKING:
    from acp import Client
    from acp.schema import ClientCapabilities, Implementation as ClientInfo

    from io_tui.config import Settings
    from io_tui.core import McpHub, ServerSource, Store

log = logging.getLogger("io_tui.acp")

RESUMABLE = ("paused", "interrupted")
ENDED = ("finished", "failed", "cancelled")
STOP_REASONS: dict[Outcome, StopReason] = {
    Outcome.CANCELLED: "cancelled",
    Outcome.STEP_CAP: "max_turn_requests",
    Outcome.TRUNCATED: "max_tokens",
    Outcome.TOKEN_BUDGET: "max_tokens",
}
TITLE_CHARS = 80

# a directory → the config's MCP servers for it (``FoundServers``: its .mcp.json's marked), or
# a plain mapping of servers
Servers = Callable[[Path], "FoundServers | Mapping[str, ServerSource]"]


def invalid(details: str, **data: Any) -> RequestError:
    return RequestError.invalid_params({"details": details, **data})


class IoAgent:
    """One client's connection to io-tui (one ``io-tui acp`` process)."""

    def __init__(self, store: Store, settings: Settings, servers: Servers | None = None) -> None:
        self.store = store
        self.settings = settings
        self.servers = servers or (lambda _cwd: {})
        self.sessions: dict[str, Session] = {}
        self.capabilities: ClientCapabilities | None = None
        self.compaction = False  # the client opted in to compaction_update (``saw_initialize``)
        self.client_name = "the client"
        self._client: Client | None = None
        self._configured: dict[Path, dict[str, ServerSource]] = {}  # the config's, by directory
        self._hubs: dict[str, McpHub] = {}  # a session's MCP servers, started at its first prompt
        self._hub_exits: dict[str, contextlib.AsyncExitStack] = {}  # each hub's, to stop it

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:  # pragma: no cover - the SDK connects before any request
            raise RequestError.internal_error({"details": "no client connected"})
        return self._client

    async def aclose(self) -> None:
        """The client is gone: a run it was prompting is handed back (``interrupted``, its open
        ask left pending), so a later ``session/load`` and prompt resume it."""
        for session in list(self.sessions.values()):
            await self._hand_back(session)

    async def _hand_back(self, session: Session) -> None:
        """Stop serving ``session`` here: a run it is prompting handed back (``interrupted``,
        an open ask left pending), its updates sent, its MCP servers stopped."""
        if session.busy and session.turn is not None:
            session.turn.cancel(HAND_BACK)
            with contextlib.suppress(BaseException):
                await session.turn
        await session.outbox.close()
        self.sessions.pop(session.id, None)
        self._hubs.pop(session.id, None)
        if (exit_stack := self._hub_exits.pop(session.id, None)) is not None:
            await exit_stack.aclose()

    # -- the connection --

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: ClientInfo | None = None,
        **_: Any,
    ) -> InitializeResponse:
        self.capabilities = client_capabilities
        if client_info is not None:
            self.client_name = client_info.title or client_info.name
        log.info("initialize: %s, protocol %s", self.client_name, protocol_version)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                    delete=SessionDeleteCapabilities(),
                    fork=SessionForkCapabilities(),  # a draft (RFD session-fork)
                ),
            ),
            agent_info=Implementation(name="io-tui", title="io-tui", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        raise invalid(f"io-tui offers no authentication methods (asked for {method_id!r})")

    # -- sessions --

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        session = self._open(new_session_id(), _directory(cwd), mcp_servers)
        log.info("session %s in %s", session.id, session.cwd)
        return NewSessionResponse(session_id=session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        session, runs = await self._reopen(cwd, session_id, mcp_servers)
        await replay(session, self.store, runs)
        log.info("session %s loaded: runs %s", session_id, [r.id for r in runs])
        return LoadSessionResponse()

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ResumeSessionResponse:
        """``session/load`` without the replay: the client still shows the history."""
        session, runs = await self._reopen(cwd, session_id, mcp_servers)
        log.info("session %s resumed: runs %s", session_id, [r.id for r in runs])
        return ResumeSessionResponse(field_meta={"io-tui": {"run_id": session.run_id}})

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """Stop serving the session in this process: its prompt's run handed back, its MCP
        servers stopped, and the approval rules remembered only for its runs revoked. Its runs
        stay in the store; ``session/load`` or ``resume`` open it again."""
        session = self._session(session_id)
        session.cancelled.set()  # a prompt it is answering answers ``cancelled``
        await self._hand_back(session)
        revoked = await self._revoke_run_rules(session_id)
        log.info("session %s closed; rules revoked: %s", session_id, revoked)
        return CloseSessionResponse(field_meta={"io-tui": {"revoked_rules": revoked}})

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        """The session closed (when open here) and forgotten: no longer listed or loadable.
        Its runs stay in the store, as the cockpit's history, no longer tied to it."""
        runs = await self._runs(session_id)
        if not runs and session_id not in self.sessions:
            raise RequestError.resource_not_found(session_id)
        if (session := self.sessions.get(session_id)) is not None:
            await self._hand_back(session)
        revoked = await self._revoke_run_rules(session_id)
        forgotten = await self.store.runs.forget_session(session_id)
        log.info("session %s deleted: %d runs kept, untied", session_id, forgotten)
        meta = {"io-tui": {"runs": [r.id for r in runs], "revoked_rules": revoked}}
        return DeleteSessionResponse(field_meta=meta)

    async def _reopen(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None
    ) -> tuple[Session, list[Any]]:
        """The stored session ``session_id`` opened in this process (a prompt goes on from its
        last run), with its runs."""
        directory = _directory(cwd)
        runs = await self._runs(session_id)
        if not runs:
            raise RequestError.resource_not_found(session_id)
        recorded = Path(runs[-1].workspace)
        if recorded != directory:  # recorded resolved; its follow-ups go on there
            raise invalid(f"session {session_id} works in {recorded}, not in {cwd}", cwd=cwd)
        if (open_already := self.sessions.get(session_id)) is not None:
            if open_already.busy:
                raise RequestError.invalid_request(
                    {"details": f"session {session_id} is answering a prompt"}
                )
            await open_already.outbox.close()
        session = self._open(session_id, directory, mcp_servers)
        session.run_id = runs[-1].id
        return session, runs

    async def _revoke_run_rules(self, session_id: str) -> list[int]:
        """Revoke the rules remembered for one of the session's runs only (scope ``run``):
        they were approvals for the session, not for its workspace."""
        runs = {r.id for r in await self._runs(session_id)}
        for run_id in list(runs):
            runs.update(child.id for child in await self.store.runs.children(run_id))
        revoked = []
        for rule in await self.store.rules.list():
            if (
                rule.scope == "run"
                and rule.run_id in runs
                and await self.store.rules.revoke(rule.id)
            ):
                revoked.append(rule.id)
        return revoked

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        where = None if cwd is None else await asyncio.to_thread(Path(cwd).resolve)  # as load
        by_session: dict[str, list[Any]] = {}
        for row in await self._runs(None):
            by_session.setdefault(row.origin["session"], []).append(row)
        infos = [
            SessionInfo(
                session_id=session_id,
                cwd=rows[0].workspace,
                title=_title(rows[0].goal),
                updated_at=_iso(max(r.updated_at for r in rows)),
            )
            for session_id, rows in by_session.items()
            if where is None or Path(rows[0].workspace) == where
        ]
        infos.sort(key=lambda info: info.updated_at or "", reverse=True)
        return ListSessionsResponse(sessions=infos)

    def saw_initialize(self, params: Any) -> None:
        """The client's ``initialize`` as it was sent: the SDK's model drops what it does not
        know, among it ``clientCapabilities.session.compaction`` (the session-compaction RFD's
        opt-in), read here."""
        offered = params.get("clientCapabilities") if isinstance(params, dict) else None
        session = offered.get("session") if isinstance(offered, dict) else None
        self.compaction = isinstance(session, dict) and isinstance(session.get("compaction"), dict)

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        **meta: Any,
    ) -> ForkSessionResponse:
        """A new session whose run is a fork of this session's (``forking``): its first prompt
        resumes the fork, whose first request is the forked step's, as recorded. The SDK
        spreads ``_meta`` into the keywords: ``io-tui`` is ours."""
        runs = await self._runs(session_id)
        new_id = new_session_id()
        fork_id, parent, step, directory = await fork_run(
            self.store, runs, session_id, new_id, cwd, meta
        )
        session = self._open(new_id, directory, mcp_servers)
        session.run_id = fork_id
        log.info("session %s forked from %s: run %s at step %s", new_id, session_id, fork_id, step)
        meta = {"run_id": fork_id, "forked_from": parent.id, "step": step, "cwd": str(directory)}
        return ForkSessionResponse(session_id=new_id, field_meta={"io-tui": meta})

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``_io-tui/rewind``: a session's run's files rewound to before a step, or undone."""
        if method != REWIND_METHOD:
            raise RequestError.method_not_found(f"_{method}")
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise invalid("sessionId is required")
        session = self.sessions.get(session_id)
        if session is not None and session.busy:
            raise RequestError.invalid_request(
                {"details": f"session {session_id} is answering a prompt: cancel it first"}
            )
        return await rewind_run(self.store, await self._runs(session_id), session_id, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("extension notification %s ignored", method)

    def _open(self, session_id: str, cwd: Path, mcp_servers: list[Any] | None) -> Session:
        session = Session(session_id, cwd, Outbox(self.client, session_id), self.capabilities)
        session.compaction = self.compaction
        session.servers = client_servers(mcp_servers)
        self.sessions[session_id] = session
        return session

    async def _runs(self, session_id: str | None) -> list[Any]:
        """The session's runs, a run whose process died (an editor closed mid-run) shown
        ``interrupted`` first, as the cockpit shows it."""
        try:
            await self.store.leases.reap()
            return await session_runs(self.store, session_id)
        except StoreError as exc:
            raise RequestError.internal_error({"details": f"the store: {exc}"}) from None

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"details": f"unknown session {session_id!r}: create it with session/new or"
                 " load it with session/load first", "sessionId": session_id}
            )  # fmt: skip
        return session

    # -- prompts --

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.busy:
            raise RequestError.invalid_request(
                {"details": f"session {session_id} is still answering its last prompt"}
            )
        text = prompt_text(prompt, session.cwd)
        if not text.strip():
            raise invalid("the prompt has no text")
        session.cancelled.clear()
        session.turn = turn = asyncio.ensure_future(self._turn(session, text))
        try:
            result = await turn
        except asyncio.CancelledError:
            if not session.cancelled.is_set():  # the connection is closing, not the client
                turn.cancel()
                raise
            await session.outbox.flush()
            row = await self.store.runs.get(session.run_id) if session.run_id else None
            meta = self._meta(session)
            if row is not None:  # what the cancel left: cancelled, or paused on a deferred ask
                meta["io-tui"].update(status=row.status, outcome=row.outcome, error=row.error)
            return PromptResponse(stop_reason="cancelled", usage=session.usage, field_meta=meta)
        except RequestError:
            raise
        except Exception as exc:  # a failure of the harness or the store: one line, no trace
            log.warning(
                "session %s: the prompt failed: %s: %s", session_id, type(exc).__name__, exc
            )
            log.debug("the prompt's failure", exc_info=True)
            raise RequestError.internal_error(
                {"details": f"{type(exc).__name__}: {exc}", "runId": session.run_id}
            ) from None
        await session.outbox.flush()
        stop: StopReason = STOP_REASONS.get(result.outcome, "end_turn")
        if session.cancelled.is_set() and result.status in RESUMABLE:
            stop = "cancelled"  # a cancel during an ask defers it: the run paused
        return PromptResponse(
            stop_reason=stop, usage=session.usage, field_meta=self._meta(session, result)
        )

    async def cancel(self, session_id: str, **_: Any) -> None:
        self._cancel_turn(session_id)

    def _cancel_turn(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        if not session.busy or session.turn is None:
            return
        session.cancelled.set()  # an open ask is deferred: the run pauses, durably
        if not session.asking:
            session.turn.cancel(OPERATOR_CANCEL)

    def cancel_request(self, method: str, params: Any) -> None:
        """The client's ``$/cancel_request`` for an open request: a prompt's is cancelled as
        ``session/cancel`` would (its answer is ``cancelled``); the other requests are short
        and are answered as they stand."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if method == "session/prompt" and isinstance(session_id, str):
            self._cancel_turn(session_id)

    def _meta(self, session: Session, result: RunResult | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {"run_id": session.run_id}
        if result is not None:
            data.update(status=result.status, outcome=result.outcome.value, error=result.error)
        return {"io-tui": data}

    async def _turn(self, session: Session, text: str) -> RunResult:
        runs = await self._runs(session.id)
        last = runs[-1] if runs else None
        if last is not None and last.status not in (*RESUMABLE, *ENDED):
            raise RequestError.invalid_request(
                {"details": f"run {last.id} of this session is {last.status} in another process"}
            )
        resumed = last.id if last is not None and last.status in RESUMABLE else None
        hub = await self._hub(session)
        if resumed is not None and hub is not None:
            await hub.wait_all()  # the call the run resumes with may need its tool now
        registry = self._registry(session, hub)
        approver = ClientApprover(self.client, session, self.store, self.client_name)
        sink = UpdateSink(session, self.store)
        session.usage = None
        try:
            if resumed is not None:
                result = await self._resume(session, resumed, text, approver, sink, registry)
            else:
                result = await self._start(session, text, last, approver, sink, registry, hub)
        finally:
            session.usage = sink.turn_usage()
        sink.send_observed()  # the last results first, then how the run stopped
        note = await run_note(self.store, await self.store.runs.get(result.run_id))
        if note:
            session.outbox.put(update_agent_message_text(note))
        return result

    async def _start(
        self,
        session: Session,
        text: str,
        last: Any,
        approver: ClientApprover,
        sink: UpdateSink,
        registry: ToolRegistry,
        hub: McpHub | None,
    ) -> RunResult:
        request = NewRunRequest(
            task=text, workspace=session.cwd, seed_run_id=last.id if last is not None else None
        )
        try:
            contract, provider, policy = await build_run(self.store, self.settings, request)
        except ValueError as exc:
            raise invalid(f"the run cannot start: {exc}") from None
        servers = await self._servers(session)
        harness = Harness(
            store=self.store,
            provider=provider,
            approver=approver,
            sink=sink,
            policy=policy,
            registry=registry,
            origin=RunOrigin.at_start(self.settings, servers, session=session.id),
            late_tools=hub,  # servers still starting: their tools join the run when ready
        )

        async def created(run_id: int) -> None:
            session.run_id = run_id
            if last is None:
                session.outbox.put(SessionInfoUpdate(session_update="session_info_update",
                                                     title=_title(text)))  # fmt: skip

        try:
            return await start_run(
                harness, contract, seed_run_id=request.seed_run_id, on_created=created
            )
        finally:
            await provider.aclose()

    async def _resume(
        self,
        session: Session,
        run_id: int,
        text: str,
        approver: ClientApprover,
        sink: UpdateSink,
        registry: ToolRegistry,
    ) -> RunResult:
        """A paused or interrupted run goes on with the prompt as an operator message: its
        pending ask is put to the client again, its calls in flight reconciled by the client."""
        session.run_id = run_id
        await self.store.runs.add_operator_message(run_id, text)
        try:
            return await resume(
                self.store,
                run_id,
                reconciler=ClientReconciler(self.client, session),
                approver=approver,
                sink=sink,
                registry=registry,
            )
        except DecideError as exc:
            raise RequestError.invalid_request({"details": str(exc)}) from None

    async def _servers(self, session: Session) -> dict[str, ServerSource]:
        """The config's MCP servers for the session's directory (read once per directory), and
        the client's over them. A workspace ``.mcp.json`` the operator has not trusted is put
        to the client first (``session/request_permission``): trusted, its digest is kept in
        the store; not, its servers stay off and the log says so."""
        if session.cwd not in self._configured:
            found = self.servers(session.cwd)
            if not isinstance(found, FoundServers):
                found = FoundServers(dict(found))
            try:
                policy = policy_for(self.settings)
            except ValueError as exc:  # a run cannot start either; the servers stay off
                admitted, said = found.untrusted(), [f"workspace MCP servers not started: {exc}"]
            else:
                admitted, said = await admit_workspace_servers(self.store, found, policy)
                if await self._untrusted(found) and await self._client_trusts(session, found):
                    admitted, said = await admit_workspace_servers(self.store, found, policy)
            for line in said:
                log.warning("%s", line)
            self._configured[session.cwd] = dict(admitted.servers)
        return {**self._configured[session.cwd], **session.servers}

    async def _untrusted(self, found: FoundServers) -> bool:
        """Whether ``found`` has a workspace ``.mcp.json`` whose content is not trusted."""
        if not found.from_workspace or found.workspace_file is None:
            return False
        workspace = str(found.workspace_file.parent.resolve())
        return await self.store.trust.get(workspace, found.workspace_digest) is None

    async def _client_trusts(self, session: Session, found: FoundServers) -> bool:
        """Ask the client whether to trust the workspace's ``.mcp.json`` as it is (its digest),
        showing what it starts; True once trusted (and kept in the store)."""
        assert found.workspace_file is not None
        try:
            text = await asyncio.to_thread(found.workspace_file.read_text, "utf-8", "replace")
        except OSError:
            return False
        digest = found.workspace_digest
        why = (
            f"{found.workspace_file} (digest {digest[:12]}) starts these MCP servers:"
            f" {', '.join(found.from_workspace)}. Trust this exact content? A changed file is"
            f" asked about again.\n\n{strip_escapes(text)}"
        )
        try:
            answer = await self.client.request_permission(
                session_id=session.id,
                tool_call=ToolCallUpdate(
                    tool_call_id=f"mcp-trust-{digest[:12]}",
                    title=f"Trust {found.workspace_file.name} in {session.cwd}",
                    kind="execute",
                    status="pending",
                    content=[tool_content(text_block(why))],
                    raw_input={"file": str(found.workspace_file), "digest": digest},
                ),
                options=[
                    PermissionOption(option_id="trust", name="Trust it", kind="allow_once"),
                    PermissionOption(option_id="no", name="Do not start them", kind="reject_once"),
                ],
            )
        except Exception as exc:  # a client that cannot ask: the servers stay off
            log.warning("could not ask the client to trust %s: %s", found.workspace_file, exc)
            return False
        outcome = getattr(answer.outcome, "option_id", None)
        if outcome != "trust":
            return False
        workspace = str(found.workspace_file.parent.resolve())
        await self.store.trust.trust(workspace, digest, f"{self.client_name} (ACP)")
        return True

    async def _hub(self, session: Session) -> McpHub | None:
        """The session's MCP servers (the config's for its directory, and the client's), started
        in the background at its first prompt: a run waits for them at most ``[mcp]
        ready_wait_s``, and the tools of one that is ready later join the run then."""
        hub = self._hubs.get(session.id)
        servers = await self._servers(session)
        if hub is None and servers:
            hub = build_hub(
                servers,
                ready_wait_s=self.settings.mcp.ready_wait_s,
                roots=(session.cwd,),  # the session's directory, their root
                watch=_log_arrival,
            )
            exit_stack = self._hub_exits[session.id] = contextlib.AsyncExitStack()
            await exit_stack.enter_async_context(hub)
            self._hubs[session.id] = hub
        return hub

    def _registry(self, session: Session, hub: McpHub | None) -> ToolRegistry:
        """The built-in tools (files and commands through the client where it offers them),
        with the MCP tools of the servers ready by now."""
        registry = harness_registry()
        if hub is not None:
            hub.register_into(registry)
        return client_tools(registry, Editor(self.client, session))


def _log_arrival(arrival: Any) -> None:  # the hub's Arrival
    """A server of a session's done starting: its problem a warning, its tools the log's."""
    if arrival.problem is not None:
        log.warning("MCP: %s", arrival.problem)
    elif arrival.tools and not arrival.replaces:
        names = ", ".join(tool.name for tool in arrival.tools)
        log.info("MCP: %s ready: %s", arrival.source, names)


def prompt_text(blocks: list[Any], cwd: Path) -> str:
    """A prompt's blocks as the run's text: text as it is, a linked or embedded file named by
    its path in ``cwd`` (else its URI), an embedded file's text after it."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[file: {_named(block.uri, cwd)}]")
        elif kind == "resource":
            resource = block.resource
            body = getattr(resource, "text", None)
            fenced = f"\n```\n{body}\n```" if body is not None else ""
            parts.append(f"[file: {_named(resource.uri, cwd)}]{fenced}")
    return "\n".join(parts)


def _named(uri: str, cwd: Path) -> str:
    """``file:///abs/src/a.py`` under ``cwd`` as ``src/a.py``, the path the tools take."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return uri
    path = Path(unquote(parts.path))
    return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else str(path)


def _directory(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise invalid(f"cwd must be an absolute path, not {cwd!r}", cwd=cwd)
    if not path.exists():
        raise invalid(f"cwd {cwd} does not exist", cwd=cwd)
    if not path.is_dir():
        raise invalid(f"cwd {cwd} is not a directory", cwd=cwd)
    return path.resolve()


def _title(goal: str) -> str:
    line = goal.strip().splitlines()[0] if goal.strip() else goal
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()
