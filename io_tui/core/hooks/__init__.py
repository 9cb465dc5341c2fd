"""Hooks in Claude Code's shape: commands the operator (or a trusted workspace) configured for
a run's moments (``PreToolUse``, ``PostToolUse``, ``UserPromptSubmit``, ``Notification``,
``Stop``, ``SubagentStop``, ``PreCompact``, ``SessionStart``, ``SessionEnd``), each given the
moment as JSON on stdin and answering with its exit code (2 blocks) or JSON on stdout.

Why that shape: teams already have scripts for it. ``config`` holds the settings' form and the
workspace file's (``.claude/settings.json``), ``trust`` the digests of the workspace files the
operator approved (an unapproved file's hooks never run), ``runner`` one command's run (the
workspace's environment rules, a timeout that kills its process tree, redacted output) and
``moments`` what each moment sends and how its answers are read.

The package imports none of its modules (each name is imported from its own): the settings
read ``config`` (pure pydantic), and ``moments`` brings the workspace, the ledger and the
providers with it.
"""
