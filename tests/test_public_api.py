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
    "Answer",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApproveAll",
    "Approver",
    "Baseline",
    "Batch",
    "CANCELLABLE",
    "CancelPlan",
    "CancelRefused",
    "Cancelled",
    "Changed",
    "CheckpointError",
    "CheckpointLimits",
    "CheckpointRow",
    "ContextBudget",
    "DailyLogRepo",
    "DecideError",
    "Decision",
    "DecisionKind",
    "EXEC_TAG_VAR",
    "Effect",
    "Ending",
    "EventKind",
    "EventSink",
    "ExecResult",
    "ExportRefused",
    "FIXED_APPROVERS",
    "FileChange",
    "FileChoice",
    "FixedReconciler",
    "ForkError",
    "ForkPlace",
    "ForkPlan",
    "FormField",
    "FoundServers",
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
    "OutputDoesNotFit",
    "PRESETS",
    "PatternChoice",
    "Policy",
    "Probe",
    "ProbeError",
    "ProbeResult",
    "ProbeRow",
    "ProgressLedger",
    "PromptRow",
    "Provenance",
    "Provider",
    "Pruned",
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
    "RewindError",
    "RewindPlan",
    "RewindResult",
    "RewriteCheck",
    "RuleScope",
    "RunEvent",
    "RunOrigin",
    "RunResult",
    "SCOPES",
    "SCOPE_LABELS",
    "SECTIONS",
    "SECTION_TITLES",
    "SandboxPlan",
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
    "Variant",
    "WORKSPACE_HOOKS_FILE",
    "WorkerClient",
    "WorkerError",
    "WorkerOptions",
    "Workspace",
    "WorkspaceError",
    "WorkspaceHooksError",
    "admit_workspace_servers",
    "apply_rewind",
    "audit_row",
    "audit_stats",
    "baseline",
    "blast_radius",
    "build_hub",
    "build_run",
    "build_trace",
    "cache_prices_for",
    "cancel_run",
    "change_summary",
    "check_key",
    "check_output_fit",
    "check_reviewer",
    "check_rewrite",
    "check_value",
    "checkpoint_before",
    "collapse_steps",
    "configured_servers",
    "contents_plain",
    "contents_text",
    "continue_contract",
    "cost_line",
    "create_fork",
    "decide",
    "decision_text",
    "describe_change",
    "discover_mcp_files",
    "ended_line",
    "ending_of",
    "enqueue_request",
    "enqueue_run",
    "export_memory",
    "fork_line",
    "form_fields",
    "form_problems",
    "grant_text",
    "harness_registry",
    "history_notes",
    "import_memory",
    "in_flight_calls",
    "invalidation_line",
    "is_elicitation",
    "is_outside_sandbox",
    "is_result_of",
    "json_safe",
    "keep_sgr",
    "kill_tree",
    "ledger_of",
    "lifecycles",
    "limits_notes",
    "lineage_lines",
    "load_mcp_file",
    "merge_draft",
    "operator",
    "parse_when",
    "pattern_choices",
    "plan_cancel",
    "plan_fork",
    "plan_rewind",
    "policy_for",
    "prepare_run",
    "preview_matches",
    "probe_models",
    "provenance_label",
    "provider_for",
    "prune_checkpoints",
    "read_servers",
    "render_ledger",
    "reopen_probe",
    "request_notes",
    "resume",
    "rewind_line",
    "rewrite_line",
    "run_provider",
    "run_settings_for",
    "send_batch",
    "send_probe",
    "server_command_line",
    "servers_to_resume",
    "shown_name",
    "start_run",
    "step_request",
    "store_location",
    "store_trouble",
    "strip_escapes",
    "suggest_pattern",
    "summary_steps",
    "target_steps",
    "terminal_notice",
    "trust_workspace_hooks",
    "usage_hit_rate",
    "validate_pattern",
    "visible_escapes",
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


def test_the_table_is_read_as_its_syntax_says() -> None:
    """``_read_homes`` scans the block line by line (cheaper than ``ast`` for every command):
    what it finds is what the parsed block imports, name for name."""
    tree = ast.parse(Path(core.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    parsed = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert core._read_homes() == parsed


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
