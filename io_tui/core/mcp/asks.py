"""Which approval requests are an MCP server's own asks (sampling, forms), told by their call id
alone: light enough for the inbox and the rule suggestions to import without the run."""

from __future__ import annotations

from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.mcp.elicitation import ELICITATION
from io_tui.core.mcp.sampling import SAMPLING

SERVER_ASKS = (f":{SAMPLING}", f":{ELICITATION}")  # how a server request's call id ends


def is_server_ask(request: ApprovalRequest) -> bool:
    """Whether an approval request is an MCP server's sampling or form request, made inside one
    of its tool calls: it can be answered only while that call lasts, in that process."""
    return request.call_id.endswith(SERVER_ASKS)
