"""How a request's action is shown, in the approval modal and in the inbox's preview: a diff
against the file as it is now for a write, argv and cwd for an exec, the arguments for an MCP or
other tool."""

from __future__ import annotations

import json
from collections.abc import Iterator

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Label, Static

from io_tui.core import (
    Act,
    ApprovalRequest,
    Workspace,
    WorkspaceError,
    is_elicitation,
    is_outside_sandbox,
)
from io_tui.ui.terminal_text import file_name, plain
from io_tui.ui.widgets.diff_view import DiffView

MAX_DIFF_FILE_BYTES = 2_000_000


def is_mcp(request: ApprovalRequest) -> bool:
    return request.tool.startswith("mcp__")


def is_file_write(request: ApprovalRequest) -> bool:
    return request.act is Act.WRITE and request.tool in ("write_file", "edit_file")


def read_current(request: ApprovalRequest) -> str | None:
    """The file a write would change, as it is now, read through the workspace's containment
    (``Workspace.current_text``): None when it is outside the workspace, missing, too large or
    not text. Blocking: call it from a thread."""
    try:
        workspace = Workspace(request.workspace)
    except WorkspaceError:  # the workspace is gone
        return None
    return workspace.current_text(request.target, max_bytes=MAX_DIFF_FILE_BYTES)


def request_body(request: ApprovalRequest, current: str | None) -> Iterator[Widget]:
    """The action itself: a diff against ``current`` for a file write, argv and cwd for an exec,
    the arguments for an MCP or other tool (the modal's body and the inbox's preview)."""
    req = request
    if is_file_write(req):
        state = "new file" if current is None else "against the current file"
        view = DiffView(current, req.content, req.target, classes="approval-diff")
        label = f"{file_name(req.target)} — {state} · {view.stats.describe()}"
        yield Label(Content(plain(label)), classes="approval-diff-label")
        yield view
    elif is_elicitation(req):  # the server's message and its form's fields, as asked
        yield Label(
            "approve opens the form · deny declines · defer cancels", classes="approval-field"
        )
        yield _code(req.content)
    elif is_mcp(req):
        yield Label(f"MCP tool {req.tool}", classes="approval-field")
        yield _code(json.dumps(req.arguments, indent=2, ensure_ascii=False))
    elif is_outside_sandbox(req):  # the same command again, without the sandbox's limits
        refused = "\n".join(
            f"  {d.get('kind')}: {d.get('what')}" for d in req.arguments.get("denied") or []
        )
        yield Label(
            "the sandbox refused this command; approving runs it again OUTSIDE the sandbox,"
            " with this user's full access",
            classes="approval-field",
        )
        yield _code(f"refused:\n{refused}")
        yield Label("argv", classes="approval-field")
        yield _code(json.dumps(req.arguments.get("argv") or [], ensure_ascii=False))
        yield Label(Content(plain(f"working directory  {req.workspace}")), classes="approval-field")
    elif req.act is Act.EXEC:
        argv = req.arguments.get("argv") or json.loads(req.content or "[]")
        yield Label("argv", classes="approval-field")
        yield _code(json.dumps(argv, ensure_ascii=False))
        yield Label(Content(plain(f"working directory  {req.workspace}")), classes="approval-field")
        timeout = req.arguments.get("timeout_s")
        if timeout is not None:
            yield Label(f"timeout  {timeout:g}s", classes="approval-field")
    else:
        yield Label(f"{req.tool} arguments", classes="approval-field")
        yield _code(json.dumps(req.arguments, indent=2, ensure_ascii=False))


def _code(text: str) -> Static:
    return Static(plain(text), classes="approval-code", markup=False)  # "[/]" is an argument
