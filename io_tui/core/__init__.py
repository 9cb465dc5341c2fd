"""The harness: runs agent tasks headless. Never imports textual, rich or io_tui.ui.

This is the core's face: what the UI and the CLI use, by name (``from io_tui.core import Store``).
The modules behind it are the core's own business and may move; the names here stay. Each name
is loaded from its module on first use (PEP 562), so ``import io_tui.core`` loads nothing else.
``tests/test_public_api.py`` pins the list; a name joins it when a caller outside the core needs it.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy reads it the same
if TYPE_CHECKING:
    from io_tui.core.authority.approvals import (
        FIXED_APPROVERS,
        ApprovalRequest,
        ApproveAll,
        Approver,
        Decision,
        DecisionKind,
        RememberRule,
        RuleScope,
        TerminalApprover,
        operator,
    )
    from io_tui.core.authority.policy import Act, Effect, Policy
    from io_tui.core.context.cache import usage_hit_rate
    from io_tui.core.context.labels import ROLES
    from io_tui.core.contract import ContextBudget, MemoryLimits, TaskContract
    from io_tui.core.derived.parts import invalidation_line
    from io_tui.core.errors import WorkspaceError
    from io_tui.core.events import (
        HAND_BACK,
        OPERATOR_CANCEL,
        READER_GONE,
        EventKind,
        EventSink,
        RunEvent,
    )
    from io_tui.core.hosts.process.client import WorkerClient, WorkerError
    from io_tui.core.hosts.queue_worker import (
        QueueWorker,
        WorkerOptions,
        enqueue_request,
        enqueue_run,
    )
    from io_tui.core.mcp import (
        McpConfigError,
        McpHub,
        ServerSource,
        contents_plain,
        contents_text,
        discover_mcp_files,
        load_mcp_file,
        user_servers,
    )
    from io_tui.core.mcp.config import read_servers
    from io_tui.core.mcp.elicitation import FormField, form_fields, form_problems, is_elicitation
    from io_tui.core.memory.daily_log import LogLine
    from io_tui.core.memory.markdown import MarkdownError, parse_when
    from io_tui.core.memory.notes import (
        KINDS,
        SECTION_TITLES,
        SECTIONS,
        MemoryNote,
        NoteKind,
        Scope,
        Section,
        check_key,
        check_value,
        merge_draft,
        provenance_label,
    )
    from io_tui.core.progress import ProgressLedger, ledger_of, render_ledger
    from io_tui.core.providers.base import Provider
    from io_tui.core.providers.presets import PRESETS, ProbeResult, probe_models
    from io_tui.core.providers.scripted import ScriptedProvider
    from io_tui.core.run.harness import Harness, harness_registry, registry_with
    from io_tui.core.run.launch import (
        build_run,
        cache_prices_for,
        continue_contract,
        policy_for,
        prepare_run,
        provider_for,
        run_settings_for,
    )
    from io_tui.core.run.loop import start_run
    from io_tui.core.run.origin import RunOrigin, configured_servers, servers_to_resume
    from io_tui.core.run.outcome import Outcome, RunResult
    from io_tui.core.run.reconcile import (
        FixedReconciler,
        InFlight,
        ReconcileChoice,
        ReconcileNeeded,
        Reconciler,
        TerminalReconciler,
        in_flight_calls,
    )
    from io_tui.core.run.request import NewRunRequest
    from io_tui.core.steering.audit import audit_row, audit_stats
    from io_tui.core.steering.cancel import (
        CANCELLABLE,
        Cancelled,
        CancelPlan,
        CancelRefused,
        cancel_run,
        plan_cancel,
    )
    from io_tui.core.steering.decisions import DecideError, decide, resume
    from io_tui.core.steering.lifecycle import Lifecycle, LifecycleReport, lifecycles
    from io_tui.core.steering.memory_sync import ExportRefused, export_memory, import_memory
    from io_tui.core.steering.remember import (
        SCOPE_LABELS,
        SCOPES,
        blast_radius,
        command_examples,
        grant_text,
        preview_matches,
        suggest_pattern,
        validate_pattern,
    )
    from io_tui.core.steering.rewrite import RewriteCheck, check_rewrite
    from io_tui.core.steering.trace import TraceNotFound, build_trace, limits_notes, request_notes
    from io_tui.core.store import (
        ApprovalRecord,
        Changed,
        GitSource,
        Recall,
        RememberedRule,
        StepSummary,
        Store,
        StoreDamaged,
        StoreError,
        StoreLocation,
        store_location,
    )
    from io_tui.core.store.memory import MemoryRepo, Provenance
    from io_tui.core.tools.base import Tool, ToolContext, ToolError
    from io_tui.core.tools.registry import ToolRegistry
    from io_tui.core.workspace import ExecResult, Workspace

_HOME = {  # name → the module (under io_tui.core) that it is loaded from
    # starting, resuming and describing runs
    **dict.fromkeys(("Harness", "harness_registry", "registry_with"), "run.harness"),
    "start_run": "run.loop",
    **dict.fromkeys(
        (
            "build_run",
            "cache_prices_for",
            "continue_contract",
            "policy_for",
            "prepare_run",
            "provider_for",
            "run_settings_for",
        ),
        "run.launch",
    ),
    **dict.fromkeys(("ProgressLedger", "ledger_of", "render_ledger"), "progress"),
    "NewRunRequest": "run.request",
    **dict.fromkeys(("RunOrigin", "configured_servers", "servers_to_resume"), "run.origin"),
    **dict.fromkeys(("Outcome", "RunResult"), "run.outcome"),
    **dict.fromkeys(("DecideError", "decide", "resume"), "steering.decisions"),
    **dict.fromkeys(
        ("CANCELLABLE", "CancelPlan", "CancelRefused", "Cancelled", "cancel_run", "plan_cancel"),
        "steering.cancel",
    ),
    **dict.fromkeys(
        (
            "FixedReconciler",
            "InFlight",
            "ReconcileChoice",
            "ReconcileNeeded",
            "Reconciler",
            "TerminalReconciler",
            "in_flight_calls",
        ),
        "run.reconcile",
    ),
    **dict.fromkeys(("ContextBudget", "MemoryLimits", "TaskContract"), "contract"),
    **dict.fromkeys(
        ("HAND_BACK", "OPERATOR_CANCEL", "READER_GONE", "EventKind", "EventSink", "RunEvent"),
        "events",
    ),
    **dict.fromkeys(("TraceNotFound", "build_trace"), "steering.trace"),
    **dict.fromkeys(("Lifecycle", "LifecycleReport", "lifecycles"), "steering.lifecycle"),
    **dict.fromkeys(
        ("QueueWorker", "WorkerOptions", "enqueue_request", "enqueue_run"), "hosts.queue_worker"
    ),
    **dict.fromkeys(
        ("TraceNotFound", "build_trace", "limits_notes", "request_notes"), "steering.trace"
    ),
    "invalidation_line": "derived.parts",
    "usage_hit_rate": "context.cache",
    "ToolRegistry": "tools.registry",
    **dict.fromkeys(("Tool", "ToolContext", "ToolError"), "tools.base"),
    **dict.fromkeys(("ExecResult", "Workspace"), "workspace"),
    "WorkspaceError": "errors",
    **dict.fromkeys(("WorkerClient", "WorkerError"), "hosts.process.client"),
    # approvals, the policy and remembered rules
    **dict.fromkeys(
        (
            "FIXED_APPROVERS",
            "ApprovalRequest",
            "ApproveAll",
            "Approver",
            "Decision",
            "DecisionKind",
            "RememberRule",
            "RuleScope",
            "TerminalApprover",
            "operator",
        ),
        "authority.approvals",
    ),
    **dict.fromkeys(("Act", "Effect", "Policy"), "authority.policy"),
    **dict.fromkeys(
        (
            "SCOPE_LABELS",
            "SCOPES",
            "blast_radius",
            "command_examples",
            "grant_text",
            "preview_matches",
            "suggest_pattern",
            "validate_pattern",
        ),
        "steering.remember",
    ),
    **dict.fromkeys(("RewriteCheck", "check_rewrite"), "steering.rewrite"),
    **dict.fromkeys(("audit_row", "audit_stats"), "steering.audit"),
    # memory and the store
    **dict.fromkeys(
        (
            "KINDS",
            "SECTIONS",
            "SECTION_TITLES",
            "MemoryNote",
            "NoteKind",
            "Scope",
            "Section",
            "check_key",
            "check_value",
            "merge_draft",
            "provenance_label",
        ),
        "memory.notes",
    ),
    "LogLine": "memory.daily_log",
    **dict.fromkeys(("MarkdownError", "parse_when"), "memory.markdown"),
    **dict.fromkeys(("ExportRefused", "export_memory", "import_memory"), "steering.memory_sync"),
    **dict.fromkeys(
        (
            "ApprovalRecord",
            "Changed",
            "GitSource",
            "Recall",
            "RememberedRule",
            "StepSummary",
            "Store",
            "StoreDamaged",
            "StoreError",
            "StoreLocation",
            "store_location",
        ),
        "store",
    ),
    **dict.fromkeys(("MemoryRepo", "Provenance"), "store.memory"),
    # providers and MCP servers
    "Provider": "providers.base",
    **dict.fromkeys(("PRESETS", "ProbeResult", "probe_models"), "providers.presets"),
    "ROLES": "context.labels",
    "ScriptedProvider": "providers.scripted",
    **dict.fromkeys(
        (
            "McpConfigError",
            "McpHub",
            "ServerSource",
            "contents_plain",
            "contents_text",
            "discover_mcp_files",
            "load_mcp_file",
            "user_servers",
        ),
        "mcp",
    ),
    "read_servers": "mcp.config",
    **dict.fromkeys(
        ("FormField", "form_fields", "form_problems", "is_elicitation"), "mcp.elicitation"
    ),
}

__all__ = [
    "CANCELLABLE",
    "FIXED_APPROVERS",
    "HAND_BACK",
    "KINDS",
    "OPERATOR_CANCEL",
    "PRESETS",
    "READER_GONE",
    "ROLES",
    "SCOPES",
    "SCOPE_LABELS",
    "SECTIONS",
    "SECTION_TITLES",
    "Act",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApproveAll",
    "Approver",
    "CancelPlan",
    "CancelRefused",
    "Cancelled",
    "Changed",
    "ContextBudget",
    "DecideError",
    "Decision",
    "DecisionKind",
    "Effect",
    "EventKind",
    "EventSink",
    "ExecResult",
    "ExportRefused",
    "FixedReconciler",
    "FormField",
    "GitSource",
    "Harness",
    "InFlight",
    "Lifecycle",
    "LifecycleReport",
    "LogLine",
    "MarkdownError",
    "McpConfigError",
    "McpHub",
    "MemoryLimits",
    "MemoryNote",
    "MemoryRepo",
    "NewRunRequest",
    "NoteKind",
    "Outcome",
    "Policy",
    "ProbeResult",
    "ProgressLedger",
    "Provenance",
    "Provider",
    "QueueWorker",
    "Recall",
    "ReconcileChoice",
    "ReconcileNeeded",
    "Reconciler",
    "RememberRule",
    "RememberedRule",
    "RewriteCheck",
    "RuleScope",
    "RunEvent",
    "RunOrigin",
    "RunResult",
    "Scope",
    "ScriptedProvider",
    "Section",
    "ServerSource",
    "StepSummary",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreLocation",
    "TaskContract",
    "TerminalApprover",
    "TerminalReconciler",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "TraceNotFound",
    "WorkerClient",
    "WorkerError",
    "WorkerOptions",
    "Workspace",
    "WorkspaceError",
    "audit_row",
    "audit_stats",
    "blast_radius",
    "build_run",
    "build_trace",
    "cache_prices_for",
    "cancel_run",
    "check_key",
    "check_rewrite",
    "check_value",
    "command_examples",
    "configured_servers",
    "contents_plain",
    "contents_text",
    "continue_contract",
    "decide",
    "discover_mcp_files",
    "enqueue_request",
    "enqueue_run",
    "export_memory",
    "form_fields",
    "form_problems",
    "grant_text",
    "harness_registry",
    "import_memory",
    "in_flight_calls",
    "invalidation_line",
    "is_elicitation",
    "ledger_of",
    "lifecycles",
    "limits_notes",
    "load_mcp_file",
    "merge_draft",
    "operator",
    "parse_when",
    "plan_cancel",
    "policy_for",
    "prepare_run",
    "preview_matches",
    "probe_models",
    "provenance_label",
    "provider_for",
    "read_servers",
    "registry_with",
    "render_ledger",
    "request_notes",
    "resume",
    "run_settings_for",
    "servers_to_resume",
    "start_run",
    "store_location",
    "suggest_pattern",
    "usage_hit_rate",
    "user_servers",
    "validate_pattern",
]


def __getattr__(name: str) -> object:
    """Load ``name`` from its module on first use, and keep it here for the next."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
