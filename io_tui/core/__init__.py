"""The harness: runs agent tasks headless. Never imports textual, rich or io_tui.ui.

This is the core's face: what the UI and the CLI use, by name (``from io_tui.core import Store``).
The modules behind it are the core's own business and may move; the names here stay.

The ``TYPE_CHECKING`` block below is the face's one table. Type checkers read it as imports
(``X as X``: an explicit re-export); at run time ``__getattr__`` reads the same block as text
on first use, so each name is loaded from its module when it is first asked for (PEP 562) and
``import io_tui.core`` loads nothing else. A name is added to the face by adding its import
here; ``tests/test_public_api.py`` pins the list, so a name joins or leaves deliberately.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy reads it the same
if TYPE_CHECKING:
    from io_tui.core.authority.acts import (
        Act as Act,
        Effect as Effect,
    )
    from io_tui.core.authority.approvals import (
        FIXED_APPROVERS as FIXED_APPROVERS,
        ApprovalRequest as ApprovalRequest,
        ApproveAll as ApproveAll,
        Approver as Approver,
        Decision as Decision,
        DecisionKind as DecisionKind,
        RememberRule as RememberRule,
        RuleScope as RuleScope,
        is_outside_sandbox as is_outside_sandbox,
        operator as operator,
    )
    from io_tui.core.authority.policy import Policy as Policy
    from io_tui.core.authority.review import (
        Review as Review,
        ReviewerSpec as ReviewerSpec,
        ReviewerSpecError as ReviewerSpecError,
        ReviewVerdict as ReviewVerdict,
    )
    from io_tui.core.boundary.notice import (
        NoticeStyle as NoticeStyle,
        terminal_notice as terminal_notice,
    )
    from io_tui.core.boundary.safe_text import (
        json_safe as json_safe,
        keep_sgr as keep_sgr,
        shown_name as shown_name,
        strip_escapes as strip_escapes,
        visible_escapes as visible_escapes,
    )
    from io_tui.core.boundary.sandbox import SandboxPlan as SandboxPlan
    from io_tui.core.boundary.workspace import (
        EXEC_TAG_VAR as EXEC_TAG_VAR,
        ExecResult as ExecResult,
        Workspace as Workspace,
        kill_tree as kill_tree,
    )
    from io_tui.core.checkpoints.git import CheckpointError as CheckpointError
    from io_tui.core.checkpoints.pruning import (
        Pruned as Pruned,
        prune_checkpoints as prune_checkpoints,
    )
    from io_tui.core.checkpoints.rewind import (
        FileChoice as FileChoice,
        RewindError as RewindError,
        RewindPlan as RewindPlan,
        RewindResult as RewindResult,
        apply_rewind as apply_rewind,
        change_summary as change_summary,
        checkpoint_before as checkpoint_before,
        describe_change as describe_change,
        plan_rewind as plan_rewind,
    )
    from io_tui.core.checkpoints.shadow import FileChange as FileChange
    from io_tui.core.context.cache import usage_hit_rate as usage_hit_rate
    from io_tui.core.context.labels import ROLES as ROLES
    from io_tui.core.context.manifest import ManifestEntry as ManifestEntry
    from io_tui.core.contract import (
        CheckpointLimits as CheckpointLimits,
        ContextBudget as ContextBudget,
        MemoryLimits as MemoryLimits,
        TaskContract as TaskContract,
    )
    from io_tui.core.derived.parts import invalidation_line as invalidation_line
    from io_tui.core.errors import (
        ToolError as ToolError,
        WorkspaceError as WorkspaceError,
    )
    from io_tui.core.events import (
        HAND_BACK as HAND_BACK,
        OPERATOR_CANCEL as OPERATOR_CANCEL,
        READER_GONE as READER_GONE,
        EventKind as EventKind,
        EventSink as EventSink,
        RunEvent as RunEvent,
    )
    from io_tui.core.hooks.config import (
        WORKSPACE_HOOKS_FILE as WORKSPACE_HOOKS_FILE,
        WorkspaceHooksError as WorkspaceHooksError,
        workspace_hooks as workspace_hooks,
    )
    from io_tui.core.hooks.trust import (
        trust_workspace_hooks as trust_workspace_hooks,
        workspace_hooks_trusted as workspace_hooks_trusted,
    )
    from io_tui.core.hosts.process.client import (
        WorkerClient as WorkerClient,
        WorkerError as WorkerError,
    )
    from io_tui.core.hosts.queue_worker import (
        QueueWorker as QueueWorker,
        WorkerOptions as WorkerOptions,
        enqueue_request as enqueue_request,
        enqueue_run as enqueue_run,
    )
    from io_tui.core.mcp.config import (
        FoundServers as FoundServers,
        McpConfigError as McpConfigError,
        discover_mcp_files as discover_mcp_files,
        load_mcp_file as load_mcp_file,
        read_servers as read_servers,
    )
    from io_tui.core.mcp.connection import ServerSource as ServerSource
    from io_tui.core.mcp.elicitation import (
        FormField as FormField,
        form_fields as form_fields,
        form_problems as form_problems,
        is_elicitation as is_elicitation,
    )
    from io_tui.core.mcp.hub import McpHub as McpHub
    from io_tui.core.mcp.offered import (
        Offered as Offered,
        PromptRow as PromptRow,
        ResourceRow as ResourceRow,
    )
    from io_tui.core.mcp.resources import (
        contents_plain as contents_plain,
        contents_text as contents_text,
    )
    from io_tui.core.memory.daily_log import LogLine as LogLine
    from io_tui.core.memory.markdown import (
        MarkdownError as MarkdownError,
        parse_when as parse_when,
    )
    from io_tui.core.memory.notes import (
        KINDS as KINDS,
        SECTION_TITLES as SECTION_TITLES,
        SECTIONS as SECTIONS,
        MemoryNote as MemoryNote,
        NoteKind as NoteKind,
        Scope as Scope,
        Section as Section,
        check_key as check_key,
        check_value as check_value,
        merge_draft as merge_draft,
        provenance_label as provenance_label,
    )
    from io_tui.core.progress.keeper import ledger_of as ledger_of
    from io_tui.core.progress.model import ProgressLedger as ProgressLedger
    from io_tui.core.progress.render import render_ledger as render_ledger
    from io_tui.core.providers.base import Provider as Provider
    from io_tui.core.providers.presets import (
        PRESETS as PRESETS,
        ProbeResult as ProbeResult,
        probe_models as probe_models,
    )
    from io_tui.core.providers.scripted import ScriptedProvider as ScriptedProvider
    from io_tui.core.review.reviewer import check_reviewer as check_reviewer
    from io_tui.core.run.harness import (
        Harness as Harness,
        harness_registry as harness_registry,
    )
    from io_tui.core.run.launch import (
        build_run as build_run,
        cache_prices_for as cache_prices_for,
        continue_contract as continue_contract,
        prepare_run as prepare_run,
        provider_for as provider_for,
        run_settings_for as run_settings_for,
    )
    from io_tui.core.run.loop import start_run as start_run
    from io_tui.core.run.mcp_hubs import (
        McpHubs as McpHubs,
        admit_workspace_servers as admit_workspace_servers,
        build_hub as build_hub,
        server_command_line as server_command_line,
    )
    from io_tui.core.run.origin import (
        RunOrigin as RunOrigin,
        configured_servers as configured_servers,
        servers_to_resume as servers_to_resume,
    )
    from io_tui.core.run.outcome import (
        Outcome as Outcome,
        RunResult as RunResult,
    )
    from io_tui.core.run.output_fit import (
        OutputDoesNotFit as OutputDoesNotFit,
        check_output_fit as check_output_fit,
    )
    from io_tui.core.run.reconcile import (
        FixedReconciler as FixedReconciler,
        InFlight as InFlight,
        ReconcileChoice as ReconcileChoice,
        ReconcileNeeded as ReconcileNeeded,
        Reconciler as Reconciler,
        TerminalReconciler as TerminalReconciler,
        in_flight_calls as in_flight_calls,
    )
    from io_tui.core.run.request import NewRunRequest as NewRunRequest
    from io_tui.core.run.settings import policy_for as policy_for
    from io_tui.core.steering.audit import (
        audit_row as audit_row,
        audit_stats as audit_stats,
    )
    from io_tui.core.steering.cancel import (
        Cancelled as Cancelled,
        CancelPlan as CancelPlan,
        CancelRefused as CancelRefused,
        cancel_run as cancel_run,
        plan_cancel as plan_cancel,
    )
    from io_tui.core.steering.decisions import (
        DecideError as DecideError,
        decide as decide,
        resume as resume,
    )
    from io_tui.core.steering.fork import (
        ForkError as ForkError,
        ForkPlace as ForkPlace,
        ForkPlan as ForkPlan,
        create_fork as create_fork,
        plan_fork as plan_fork,
    )
    from io_tui.core.steering.lifecycle import (
        Lifecycle as Lifecycle,
        LifecycleReport as LifecycleReport,
        lifecycles as lifecycles,
    )
    from io_tui.core.steering.memory_sync import (
        ExportRefused as ExportRefused,
        export_memory as export_memory,
        import_memory as import_memory,
    )
    from io_tui.core.steering.remember import (
        SCOPE_LABELS as SCOPE_LABELS,
        SCOPES as SCOPES,
        PatternChoice as PatternChoice,
        blast_radius as blast_radius,
        grant_text as grant_text,
        pattern_choices as pattern_choices,
        preview_matches as preview_matches,
        suggest_pattern as suggest_pattern,
        validate_pattern as validate_pattern,
    )
    from io_tui.core.steering.rewrite import (
        RewriteCheck as RewriteCheck,
        check_rewrite as check_rewrite,
    )
    from io_tui.core.steering.trace import (
        StepRequest as StepRequest,
        TraceNotFound as TraceNotFound,
        build_trace as build_trace,
        cost_line as cost_line,
        decision_text as decision_text,
        fork_line as fork_line,
        history_notes as history_notes,
        limits_notes as limits_notes,
        lineage_lines as lineage_lines,
        request_notes as request_notes,
        rewind_line as rewind_line,
        rewrite_line as rewrite_line,
        step_request as step_request,
    )
    from io_tui.core.steering.whatif.edits import Variant as Variant
    from io_tui.core.steering.whatif.probe import (
        Answer as Answer,
        Baseline as Baseline,
        Batch as Batch,
        Probe as Probe,
        ProbeError as ProbeError,
        baseline as baseline,
        reopen_probe as reopen_probe,
        run_provider as run_provider,
        send_batch as send_batch,
        send_probe as send_probe,
    )
    from io_tui.core.store import (
        Store as Store,
        StoreDamaged as StoreDamaged,
        StoreError as StoreError,
        StoreLocation as StoreLocation,
        store_location as store_location,
        store_trouble as store_trouble,
    )
    from io_tui.core.store.approvals import (
        ApprovalRecord as ApprovalRecord,
        RememberedRule as RememberedRule,
    )
    from io_tui.core.store.cancel import CANCELLABLE as CANCELLABLE
    from io_tui.core.store.checkpoints import CheckpointRow as CheckpointRow
    from io_tui.core.store.daily_log import DailyLogRepo as DailyLogRepo
    from io_tui.core.store.live import Changed as Changed
    from io_tui.core.store.notes import (
        NoteRepo as NoteRepo,
        Provenance as Provenance,
    )
    from io_tui.core.store.probes import ProbeRow as ProbeRow
    from io_tui.core.store.queue import GitSource as GitSource
    from io_tui.core.store.recalls import Recall as Recall
    from io_tui.core.store.trace import StepSummary as StepSummary
    from io_tui.core.text.endings import (
        Ending as Ending,
        ended_line as ended_line,
        ending_of as ending_of,
    )
    from io_tui.core.text.heads import (
        collapse_steps as collapse_steps,
        is_result_of as is_result_of,
        summary_steps as summary_steps,
        target_steps as target_steps,
    )
    from io_tui.core.tools.base import (
        Tool as Tool,
        ToolContext as ToolContext,
    )
    from io_tui.core.tools.registry import ToolRegistry as ToolRegistry


def _read_homes() -> dict[str, str]:
    """Each public name → its module, read off this file's ``TYPE_CHECKING`` block line by line:
    ``from MODULE import …`` names the module of each ``NAME as NAME`` after it. Parsing the
    file with ``ast`` took 7 times as long, in every command that takes a name from here."""
    with open(__file__, encoding="utf-8") as source:
        text = source.read()
    homes: dict[str, str] = {}
    module = ""
    for line in text.split("\nif TYPE_CHECKING:\n", 1)[1].splitlines():
        if line[:1] not in ("", " "):
            break  # the block's end
        words = line.replace(",", " ").split()
        if words[:1] == ["from"]:
            module, words = words[1], words[3:]  # from MODULE import [NAME as NAME | (]
        if len(words) == 3 and words[1] == "as" and words[0] == words[2]:
            homes[words[0]] = module
    return homes


_HOMES: dict[str, str] = {}


def __getattr__(name: str) -> object:
    """Load ``name`` from its module on first use, and keep it here for the next."""
    if not _HOMES:
        _HOMES.update(_read_homes())
    if name == "__all__":
        value: object = sorted(_HOMES)
    elif name in _HOMES:
        from importlib import import_module

        value = getattr(import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})  # type: ignore[misc]
