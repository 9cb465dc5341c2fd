"""What a tool call does (``Act``) and what a rule says of it (``Effect``): the words an
approval request and a remembered rule are stored and read back with, apart from the policy
that weighs them (``policy.py``), so reading approvals (``io-tui trace``, ``approvals``,
``rules``) loads no policy."""

from __future__ import annotations

from enum import StrEnum


class Act(StrEnum):
    READ = "read"
    WRITE = "write"
    EXEC = "exec"
    NET = "net"


class Effect(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
