"""The core's face: the names the UI and the CLI take from ``io_tui.core``, pinned (as httpx
pins its own). A name joins or leaves the face here and in ``io_tui/core/__init__.py`` together."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import io_tui.core as core

PUBLIC = [  # sorted
    "Act",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApproveAll",
    "Approver",
    "CANCELLABLE",
    "CancelPlan",
    "CancelRefused",
    "Cancelled",
    "Changed",
    "ContextBudget",
    "DailyLogRepo",
    "DecideError",
    "Decision",
    "DecisionKind",
    "Effect",
    "EventKind",
    "EventSink",
    "ExecResult",
    "ExportRefused",
    "FIXED_APPROVERS",
    "FixedReconciler",
    "FormField",
    "GitSource",
    "HAND_BACK",
    "Harness",
    "InFlight",
    "KINDS",
    "Lifecycle",
    "LifecycleReport",
    "LogLine",
    "ManifestEntry",
    "MarkdownError",
    "McpConfigError",
    "McpHub",
    "McpHubs",
    "MemoryLimits",
    "MemoryNote",
    "NewRunRequest",
    "NoteKind",
    "NoteRepo",
    "NoticeStyle",
    "OPERATOR_CANCEL",
    "Offered",
    "Outcome",
    "PRESETS",
    "PatternChoice",
    "Policy",
    "ProbeResult",
    "ProgressLedger",
    "PromptRow",
    "Provenance",
    "Provider",
    "QueueWorker",
    "READER_GONE",
    "ROLES",
    "Recall",
    "ReconcileChoice",
    "ReconcileNeeded",
    "Reconciler",
    "RememberRule",
    "RememberedRule",
    "ResourceRow",
    "Review",
    "ReviewVerdict",
    "ReviewerSpec",
    "ReviewerSpecError",
    "RewriteCheck",
    "RuleScope",
    "RunEvent",
    "RunOrigin",
    "RunResult",
    "SCOPES",
    "SCOPE_LABELS",
    "SECTIONS",
    "SECTION_TITLES",
    "Scope",
    "ScriptedProvider",
    "Section",
    "ServerSource",
    "StepRequest",
    "StepSummary",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreLocation",
    "TaskContract",
    "TerminalReconciler",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "TraceNotFound",
    "WORKSPACE_HOOKS_FILE",
    "WorkerClient",
    "WorkerError",
    "WorkerOptions",
    "Workspace",
    "WorkspaceError",
    "WorkspaceHooksError",
    "audit_row",
    "audit_stats",
    "blast_radius",
    "build_hub",
    "build_run",
    "build_trace",
    "cache_prices_for",
    "cancel_run",
    "check_key",
    "check_reviewer",
    "check_rewrite",
    "check_value",
    "collapse_steps",
    "configured_servers",
    "contents_plain",
    "contents_text",
    "continue_contract",
    "decide",
    "decision_text",
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
    "is_result_of",
    "ledger_of",
    "lifecycles",
    "limits_notes",
    "load_mcp_file",
    "merge_draft",
    "operator",
    "parse_when",
    "pattern_choices",
    "plan_cancel",
    "policy_for",
    "prepare_run",
    "preview_matches",
    "probe_models",
    "provenance_label",
    "provider_for",
    "read_servers",
    "render_ledger",
    "request_notes",
    "resume",
    "run_settings_for",
    "servers_to_resume",
    "start_run",
    "step_request",
    "store_location",
    "store_trouble",
    "suggest_pattern",
    "summary_steps",
    "target_steps",
    "terminal_notice",
    "trust_workspace_hooks",
    "usage_hit_rate",
    "validate_pattern",
    "workspace_hooks",
    "workspace_hooks_trusted",
]


def test_the_public_names_are_pinned() -> None:
    assert sorted(core.__all__) == PUBLIC
    assert set(PUBLIC) <= set(dir(core))


def test_every_name_is_the_object_its_module_defines() -> None:
    homes = core._read_homes()
    assert sorted(homes) == PUBLIC
    for name, home in homes.items():
        value = getattr(core, name)
        assert not isinstance(value, ModuleType), name
        assert value is getattr(importlib.import_module(home), name), name


def test_every_name_is_re_exported_explicitly() -> None:
    """Each import of the table reads ``X as X``, so a strict type checker sees it exported."""
    tree = ast.parse(Path(core.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    aliases = [alias for node in block.body for alias in getattr(node, "names", ())]
    assert aliases
    assert [a.name for a in aliases if a.asname != a.name] == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchName"):
        core.NoSuchName  # noqa: B018


def test_importing_the_face_loads_nothing_behind_it() -> None:
    probe = "import sys; before = set(sys.modules); import io_tui.core; print(sorted(set(sys.modules) - before))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['io_tui', 'io_tui.core']"
