"""The OS sandbox an approved command runs in: bubblewrap, from the distribution.

A command the operator approved still runs code the workspace chose (its tests, its build, its
scripts). In the sandbox it can write only the workspace and a private ``/tmp``, reads the rest
of the filesystem read-only with the secrets directories (``~/.ssh``, ``~/.aws``, credential
files, io-tui's own config and data) hidden, and has no network (a network namespace of its own:
not even this machine's 127.0.0.1) unless the policy allows it. bubblewrap (``bwrap``) is what
Claude Code uses on Linux and Flatpak everywhere; it needs unprivileged user namespaces (or
root). ``probe`` tries it once per process and says why not when it cannot run.

A command that fails because of the sandbox says so: ``denials`` reads its output for a write
the read-only filesystem refused, a hidden secret it looked for, a file of the caller's /tmp it
did not find in its own, or a connection the missing network refused, and names the path or
host.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MECHANISM = "bubblewrap"
PROBE_TIMEOUT_S = 10.0

# Hidden from every sandboxed command, relative to $HOME: keys, cloud and registry credentials.
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
    ".git-credentials", ".pypirc", ".npmrc", ".config/gh", ".config/hub", ".password-store",
    ".local/share/keyrings", ".cargo/credentials", ".cargo/credentials.toml",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands can be sandboxed here, and if not, why (one line)."""

    available: bool
    reason: str = ""
    mechanism: str = MECHANISM


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    """What one sandboxed command may touch: the workspace read-write, ``network`` or none,
    ``hidden`` paths (secrets: an empty directory or file in their place)."""

    workspace: Path
    network: bool = False
    hidden: tuple[Path, ...] = field(default_factory=tuple)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as the bubblewrap command line that runs it in this sandbox."""
        out = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if not self.network:
            out.append("--unshare-net")
        out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in self.hidden:
            if path.is_dir():
                out += ["--tmpfs", str(path)]
            elif path.exists():
                out += ["--ro-bind", "/dev/null", str(path)]
        root = str(self.workspace)
        out += ["--bind", root, root, "--chdir", root, "--setenv", "TMPDIR", "/tmp", "--"]
        return out + list(argv)


def plan(workspace: Path, *, network: bool, extra_hidden: Sequence[Path] = ()) -> SandboxPlan:
    """The sandbox for a command in ``workspace``: the home secrets and ``extra_hidden`` (io-tui's
    own config and data) hidden, unless the workspace lies inside one of them."""
    home = Path(os.path.expanduser("~"))
    candidates = [home / rel for rel in HOME_SECRETS] + [Path(p) for p in extra_hidden]
    hidden = tuple(
        p
        for p in candidates
        if p.exists() and not workspace.is_relative_to(p) and not p.is_relative_to(workspace)
    )
    return SandboxPlan(workspace, network, hidden)


@functools.cache
def probe() -> SandboxStatus:
    """Whether bubblewrap runs a command here (once per process): found on PATH, and able to
    make its namespaces (user namespaces, or root)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxStatus(
            False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
        )
    trial = SandboxPlan(Path("/"), network=False).wrap(["true"])
    try:
        done = subprocess.run(
            trial, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(False, f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        return SandboxStatus(
            False, f"bubblewrap cannot make its namespaces here ({why}); user namespaces off?"
        )
    return SandboxStatus(True)


@dataclass(frozen=True, slots=True)
class Denial:
    """What the sandbox refused a command: ``kind`` (write, read, net) and the path or host."""

    kind: str  # write, read, tmp (the caller's /tmp, which the sandbox's own hides), net
    what: str

    def describe(self) -> str:
        if self.kind == "write":
            return f"write to {self.what} (outside the workspace and /tmp)"
        if self.kind == "read":
            return f"read of {self.what} (a secret the sandbox hides)"
        if self.kind == "tmp":
            return f"use of {self.what} (the caller's /tmp: the sandbox has one of its own)"
        return f"connection to {self.what} (the sandbox has no network)"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "what": self.what}


_READ_ONLY = re.compile(
    r"(?:(?P<a>[^\s:'\"]+)['\"]?: Read-only file system"
    r"|Read-only file system: ['\"](?P<b>[^'\"]+)['\"]"
    r"|cannot (?:create|touch|remove|open)[^']*'(?P<c>[^']+)'[^\n]*Read-only file system)"
)
# a /tmp path on a line saying it is missing: the caller's, when it exists outside the sandbox
_MISSING_TMP = re.compile(r"(?P<p>/tmp/[^\s:'\"]+)['\"]?[^\n]*No such file or directory")
_NET = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Could not resolve host"
    r"|Name or service not known|No address associated with hostname|Connection refused"
    r"|getaddrinfo failed|ENETUNREACH|EAI_AGAIN|ECONNREFUSED",
    re.IGNORECASE,
)
_HOST = re.compile(
    r"(?:https?|ftp|wss?|ssh|git)://(?:[^@/\s]+@)?(?P<url>\[[0-9a-fA-F:]+\]|[^/:\s'\"]+)(?::(?P<port>\d+))?"
    r"|(?P<hp>(?:\d{1,3}\.){3}\d{1,3}|localhost)['\"]?[:, ]+(?:port )?(?P<hport>\d{1,5})"
)


def denials(output: str, argv: Sequence[str], plan: SandboxPlan) -> list[Denial]:
    """What in ``output`` shows the sandbox refused the command, each naming the path or host;
    [] when nothing does (the command failed on its own)."""
    found: list[Denial] = []
    for match in _READ_ONLY.finditer(output):
        path = match["a"] or match["b"] or match["c"]
        if path and not _under(path, plan.workspace):
            found.append(Denial("write", path))
    for match in _MISSING_TMP.finditer(output):
        path = match["p"].rstrip(".,;")
        if _hidden_tmp(path, plan.workspace):
            found.append(Denial("tmp", path))
    text = output + "\n" + " ".join(argv)
    for hidden in plan.hidden:
        if str(hidden) in text and re.search(
            r"No such file or directory|Permission denied|not found|cannot open|Is a directory",
            output,
        ):
            found.append(Denial("read", str(hidden)))
    if not plan.network and _NET.search(output):
        hosts = [_host(m) for m in _HOST.finditer(text)]
        found += [Denial("net", h) for h in dict.fromkeys(hosts)] or [Denial("net", "a host")]
    return list(dict.fromkeys(found))


def _host(match: re.Match[str]) -> str:
    host = match["url"] or match["hp"] or ""
    port = match["port"] or match["hport"]
    return f"{host}:{port}" if port else host


def _hidden_tmp(path: str, workspace: Path) -> bool:
    """Whether the command missed ``path`` because it is in the caller's /tmp: not in the
    workspace (bound in), and it, or the directory it would go in, exists out here."""
    if _under(path, workspace):
        return False
    there = Path(path)
    return there.exists() or (there.parent != Path("/tmp") and there.parent.exists())


def _under(path: str, root: Path) -> bool:
    try:
        return Path(path).is_absolute() and Path(path).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False
