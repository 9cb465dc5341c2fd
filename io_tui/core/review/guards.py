"""Deterministic guards the harness applies before a reviewer model is asked: an ask one of them
holds is escalated to a human without the model's say, whatever the model would answer.

A small model can be talked into anything and a large one sometimes is, so what is plainly
risky never rests on a model's word: deleting files, reaching the network, printing the
environment, changing permissions, installing packages, running inline code, a shell, a script
or a project task (whose code, not the ask, says what it does; test runs and the usual
checkers excepted), git beyond reading and committing, writing git's own files, CI or hook configuration, or shell and
editor startup files, any ask whose data addresses the reviewer (an injected instruction), a
command a tool result told the agent to run (one that is not a test run), and an ask too long
to show whole. A guard never denies: the operator decides what it holds.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

from io_tui.core.authority.policy import Act
from io_tui.core.checks import is_test_command
from io_tui.core.review.material import ReviewAsk

DELETERS = frozenset({
    "rm", "rmdir", "unlink", "shred", "srm", "dd", "truncate", "wipefs", "fdisk", "parted",
    "mkfs", "mke2fs", "mkswap",
})  # fmt: skip
NETWORK = frozenset({
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "ftp",
    "tftp", "telnet", "http", "https", "httpie", "aria2c", "lynx", "links", "w3m", "ping",
    "dig", "nslookup", "host", "gh", "aws", "gcloud", "az", "kubectl", "docker", "podman",
    "heroku", "vercel", "netlify", "fly", "twine", "openssl",
})  # fmt: skip
SYSTEM = frozenset({
    "sudo", "su", "doas", "pkexec", "chmod", "chown", "chgrp", "chattr", "setfacl", "mount",
    "umount", "systemctl", "service", "crontab", "at", "launchctl", "kill", "pkill",
    "killall", "reboot", "shutdown", "halt", "poweroff", "iptables", "useradd", "usermod",
    "passwd", "ln", "install",
})  # fmt: skip
ENVIRONMENT = frozenset({"env", "printenv", "set", "export", "declare", "compgen"})
RUNS_ANOTHER = frozenset({
    "xargs", "nohup", "timeout", "nice", "ionice", "stdbuf", "time", "exec", "eval",
    "command", "builtin", "watch", "parallel", "script", "expect", "setsid", "unshare",
    "chroot", "busybox", "strace", "ltrace", "gdb",
})  # fmt: skip
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
INTERPRETERS = frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl",
    "ruby", "php", "lua", "tclsh", "Rscript", "osascript", "powershell", "pwsh",
})  # fmt: skip
INLINE_FLAGS = frozenset({"-c", "-e", "-E", "--eval", "-r", "-p", "--print", "-"})
INSTALLERS = {
    "pip": {"install", "uninstall", "download", "wheel"},
    "pip3": {"install", "uninstall", "download", "wheel"},
    "npm": {"install", "i", "ci", "add", "publish", "exec", "x", "uninstall", "update", "link"},
    "yarn": {"add", "install", "publish", "dlx", "remove", "upgrade"},
    "pnpm": {"add", "install", "i", "dlx", "publish", "remove", "update", "exec"},
    "cargo": {"install", "publish", "uninstall"},
    "go": {"install", "get"},
    "gem": {"install", "uninstall", "push"},
    "poetry": {"add", "publish", "install", "remove", "update"},
    "uv": {"add", "pip", "tool", "publish", "sync"},
    "conda": {"install", "remove", "update", "create"},
    "composer": {"require", "install", "update"},
}
ALWAYS_INSTALLERS = frozenset({
    "npx", "pipx", "apt", "apt-get", "yum", "dnf", "brew", "apk", "pacman", "zypper", "snap",
    "port", "choco", "winget",
})  # fmt: skip
FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fls"})
# ``python -m NAME`` of a checker reads code rather than running it
CHECKER_MODULES = frozenset({
    "pytest", "mypy", "ruff", "black", "flake8", "pylint", "pyflakes", "isort", "pycodestyle",
    "pydocstyle", "bandit", "coverage", "unittest", "doctest", "compileall", "py_compile",
})  # fmt: skip
SYSTEM_BIN = ("/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/")
TASK_RUNNERS = frozenset({"make", "just", "rake", "invoke", "task", "poe", "gradle", "mvn", "ant"})
SCRIPT_RUNS = {"npm": {"run", "start", "exec"}, "yarn": {"run", "start", "exec"},
               "pnpm": {"run", "start", "exec"}, "bun": {"run", "x"}}  # fmt: skip
GIT_READ_AND_COMMIT = frozenset({
    "status", "diff", "log", "show", "add", "commit", "rev-parse", "blame", "grep", "ls-files",
    "shortlog", "describe", "whatchanged", "cat-file", "ls-tree", "merge-base",
})  # fmt: skip

# paths that run code or grant access when something else reads them: git's own files and
# hooks, CI and hook configuration, shell and editor startup files, credentials
GUARDED_PATHS = (
    (re.compile(r"(^|/)\.git(/|$)"), "git's own files (hooks, config)"),
    (re.compile(r"(^|/)\.(github|gitlab|circleci|buildkite|husky|woodpecker|forgejo|gitea)(/|$)"),
     "CI or hook configuration"),
    (re.compile(r"(^|/)(\.gitlab-ci\.ya?ml|\.travis\.ya?ml|azure-pipelines\.ya?ml|"
                r"bitbucket-pipelines\.ya?ml|\.drone\.ya?ml|appveyor\.ya?ml|cloudbuild\.ya?ml|"
                r"Jenkinsfile|\.pre-commit-config\.ya?ml|lefthook\.ya?ml|\.gitmodules|"
                r"\.gitattributes|\.gitconfig)$"),
     "CI or hook configuration"),
    (re.compile(r"(^|/)(\.bashrc|\.bash_profile|\.bash_login|\.profile|\.zshrc|\.zprofile|"
                r"\.zshenv|\.envrc|\.inputrc|\.vimrc|\.exrc)$"),
     "a shell or editor startup file"),
    (re.compile(r"(^|/)\.(vscode|idea|devcontainer|direnv)(/|$)"), "editor or container setup"),
    (re.compile(r"(^|/)(\.ssh|\.aws|\.gnupg|\.kube|\.docker|\.config)(/|$)|id_rsa|id_ed25519|"
                r"\.netrc|\.npmrc|\.pypirc|credentials"),
     "credentials"),
)  # fmt: skip

# what in a file being written does what a guarded command would
RISKY_CONTENT = (
    (re.compile(r"\b(curl|wget)\s"), "fetches or sends over the network (curl, wget)"),
    (re.compile(r"/dev/(tcp|udp)/|\bnc\s+-|\bnetcat\b|\bsocat\b"), "opens a network socket"),
    (re.compile(r"\brequests\.(post|put)\(|urllib\.request|http\.client|\bsocket\.socket\(|"
                r"\bsmtplib\b|\bparamiko\b|\bftplib\b"),
     "sends data over the network"),
    (re.compile(r"\|\s*(ba|z|da|k)?sh\b|\bbase64\s+(-d|--decode)\b|\beval\s+\"?\$\("),
     "pipes text into a shell"),
    (re.compile(r"\brm\s+-[a-zA-Z]*[rRf]"), "deletes files (rm -r/-f)"),
    (re.compile(r"\bchmod\s+(\+x|[0-7]*[1357]\b)|\bsudo\s"), "changes permissions"),
    (re.compile(r"~/\.ssh|id_rsa|\.aws/credentials|/etc/(passwd|shadow)"), "reads credentials"),
)  # fmt: skip

# text in the data that speaks to the reviewer (or any model) rather than describing the work
INJECTION = re.compile(
    r"ignore\s+(all\s+|any\s+|the\s+|your\s+)*(previous|prior|above|earlier|preceding|other)"
    r"\s+(instructions|rules|directions|prompts?|messages?)"
    r"|disregard\s+(all\s+|any\s+|the\s+|your\s+)*(previous|prior|above|earlier|instructions)"
    r"|\bverdict\s*:"
    r"|\b(as|dear|attention|hey|note\s+to)\s+(the\s+)?(ai|reviewer|assistant|model|agent|llm)\b"
    r"|\breviewers?\b[^.\n]{0,40}\b(approve|allow|accept)"
    r"|\b(approve|allow)\s+(this|it|all|everything|the\s+(request|action|command|change))\b"
    r"|\byou\s+(are|must|should|will)\s+(now\s+)?(approve|allow|ignore|obey|comply)"
    r"|\bnew\s+instructions\b|\bsystem\s+prompt\b|\bjailbreak\b"
    r"|<\|(im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|<</?SYS>>"
    r"|^\s*#+\s*(system|instructions?)\b",
    re.IGNORECASE | re.MULTILINE,
)


def held(ask: ReviewAsk) -> str | None:
    """Why a guard holds ``ask`` for a human (the model is not asked), or None."""
    if not ask.shown_whole:
        return "the request is too long to show the reviewer whole"
    injected = INJECTION.search("\n".join((ask.shown, ask.steps)))
    if injected:
        return f"the ask's data addresses the reviewer ({_quote(injected.group(0))})"
    request = ask.request
    if request.act is Act.NET:
        return "it reaches the network"
    if request.act is Act.EXEC and ask.argv:
        return _command(ask.argv) or _told_by_a_result(ask.argv, ask.results)
    if request.act is Act.EXEC:
        return _exec_tool(request.tool, ask.shown)
    if request.act is Act.WRITE:
        return _path(request.target) or _content(request.content)
    return None


def _command(argv: tuple[str, ...]) -> str | None:
    program = PurePosixPath(argv[0]).name
    args = argv[1:]
    words = [a for a in args if not a.startswith("-")]
    first = words[0] if words else ""
    if program in DELETERS or program.startswith("mkfs."):
        return f"it deletes or overwrites files ({program})"
    if program in NETWORK:
        return f"it reaches the network ({program})"
    if program in SYSTEM:
        return f"it changes permissions, processes or the system ({program})"
    if program in ENVIRONMENT:
        return f"it prints or changes the environment, secrets included ({program})"
    if program in RUNS_ANOTHER:
        return f"it runs another command ({program})"
    if program in SHELLS:
        return f"it runs a shell ({program})"
    if _interpreter(program) and any(a in INLINE_FLAGS for a in args):
        return f"it runs inline code ({program} {next(a for a in args if a in INLINE_FLAGS)})"
    if program in ALWAYS_INSTALLERS or (_interpreter(program) and args[:2] == ("-m", "pip")):
        return f"it installs packages, which run their own code ({program})"
    if first in INSTALLERS.get(program, ()):
        return f"it installs or publishes packages ({program} {first})"
    if not is_test_command(" ".join(argv)):
        runs = _runs_code(argv[0], args, first)
        if runs is not None:
            return runs
    if program == "git" and first not in GIT_READ_AND_COMMIT:
        return f"git {first or '(no subcommand)'} goes beyond reading and committing"
    if program == "find" and any(a in FIND_ACTIONS for a in args):
        return "find runs a command or deletes files"
    return _arguments(args)


def _runs_code(path: str, args: tuple[str, ...], first: str) -> str | None:
    """A script, a module, a program of the workspace's or a project task: its own code
    decides what it does."""
    program = PurePosixPath(path).name
    if "/" in path and not path.startswith(SYSTEM_BIN):
        return f"it runs a program from the workspace ({path})"
    if _interpreter(program):
        module = args[args.index("-m") + 1] if "-m" in args[:-1] else None
        if module is not None and module.split(".")[0] not in CHECKER_MODULES:
            return f"it runs a module whose code decides what it does ({program} -m {module})"
        if module is None and first:
            return f"it runs a script whose code decides what it does ({program} {first})"
    if program in TASK_RUNNERS:
        return f"it runs a project task whose recipe decides what it does ({program})"
    if first in SCRIPT_RUNS.get(program, ()):
        return f"it runs a project script ({program} {first})"
    return None


def _told_by_a_result(argv: tuple[str, ...], results: Iterable[str]) -> str | None:
    """A command line that a tool result spells out (a README, a web page, a command's output
    telling the agent what to run) is an instruction from the world: a human decides. A test
    run, and a command's own ``$ argv`` echo, do not count."""
    line = " ".join(argv)
    if len(argv) < 2 or is_test_command(line):
        return None
    spelled = {line, shlex.join(argv)}
    for text in results:
        said = "\n".join(row for row in text.splitlines() if not row.lstrip().startswith("$ "))
        if any(form in said for form in spelled):
            return f"a tool result told the agent to run it ({_quote(line)})"
    return None


def _interpreter(program: str) -> bool:
    base = program.rstrip("0123456789.")
    return program in INTERPRETERS or base in INTERPRETERS


def _arguments(args: Iterable[str]) -> str | None:
    for arg in args:
        if re.search(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://|^[\w.-]+@[\w.-]+:", arg):
            return f"an argument names a remote address ({_quote(arg)})"
        if arg.startswith(("/", "~")) or ".." in PurePosixPath(arg.split("=", 1)[-1]).parts:
            return f"an argument points outside the workspace ({_quote(arg)})"
        for pattern, what in GUARDED_PATHS:
            if pattern.search(arg):
                return f"an argument names {what} ({_quote(arg)})"
    return None


def _exec_tool(tool: str, shown: str) -> str | None:
    """An exec that is not a command (an MCP tool): its arguments, read as text."""
    for pattern, what in RISKY_CONTENT:
        if pattern.search(shown):
            return f"the call's arguments hold what {what}"
    return None


def _path(target: str) -> str | None:
    normalized = target.replace("\\", "/")
    if normalized.startswith(("/", "~")) or ".." in PurePosixPath(normalized).parts:
        return "it writes outside the workspace"
    for pattern, what in GUARDED_PATHS:
        if pattern.search(normalized):
            return f"it writes {what} ({target})"
    return None


def _content(content: str) -> str | None:
    for pattern, what in RISKY_CONTENT:
        found = pattern.search(content)
        if found:
            return f"the written text {what} ({_quote(found.group(0))})"
    return None


def _quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "…")
