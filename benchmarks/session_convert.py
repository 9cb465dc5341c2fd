"""Converts a real coding agent's trajectory into a script for io-tui's scripted provider.

    .venv/bin/python benchmarks/session_convert.py mini|openhands TRAJECTORY.json OUT.json \
        --name NAME --meta PROVENANCE.json

``benchmarks/real_sessions.py`` replays the scripts this writes; the trajectories themselves
are not kept (``benchmarks/real_sessions/PROVENANCE.md`` says where each came from). Two
formats are read: mini-swe-agent's ``.traj.json`` (one bash command per turn, each in a fresh
shell at the repository root) and OpenHands' event stream (``execute_bash`` in one persistent
shell, ``str_replace_editor`` views and edits).

Each action becomes the io-tui tool a person would pick for it, and only when the two do the
same thing: a plain view of a file (``cat``, ``cat -n``, ``nl -ba F | sed -n 'a,bp'``,
``sed -n 'a,bp' F``, ``head -n N F``, an editor view) becomes ``read_file`` with offset and
limit; a recursive ``grep`` with simple flags becomes ``grep``; ``find DIR -name P`` becomes
``find``; a heredoc that only writes one file, or an editor ``create``, becomes ``write_file``;
an editor ``str_replace`` becomes ``edit_file``. Everything else (``sed -i``, Python scripts
that edit files, pipelines, test runs) stays a ``run_command`` of ``bash -c`` with the
original text, paths made relative to the workspace. A turn without an action (a format
error, a ``think``, a plan update) gives its text to the next turn, since a turn without a
tool call ends an io-tui run.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Call = dict[str, Any]

BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && "
THINK = re.compile(r"<think>\s*</think>\s*")


# -- one bash command as an io-tui tool call ------------------------------------------------


def relative(text: str, root: str) -> str:
    """``text`` with the agent's absolute repository root made relative to the workspace."""
    return text.replace(root + "/", "").replace(root, ".")


def bash(command: str) -> Call:
    return {"name": "run_command", "arguments": {"argv": ["bash", "-c", command]}}


def read(path: str, first: int | None = None, last: int | None = None) -> Call:
    """``read_file`` of lines ``first``..``last`` (1-based, inclusive; None: to the end)."""
    args: dict[str, Any] = {"path": path.removeprefix("./")}
    start = max(1, first or 1)
    if start > 1:
        args["offset"] = start
    if last is not None:
        args["limit"] = max(1, last - start + 1)
    return {"name": "read_file", "arguments": args}


SED_RANGE = re.compile(r"""^sed -n (['"])(\d+)(?:,(\d+))?p\1 (\S+)$""")
NL_SED = re.compile(r"""^(?:nl -ba|cat -n) (\S+) \| sed -n (['"])(\d+)(?:,(\d+))?p\2$""")
CAT = re.compile(r"^cat(?: -n)? ([\w./-]+)$")
HEAD = re.compile(r"^head (?:-n ?)?-?(\d+) ([\w./-]+)$")
HEREDOC = re.compile(r"^cat <<\s*(['\"]?)(\w+)\1 > ([\w./-]+)\n(.*)\n\2$", re.S)


def view_call(command: str) -> Call | None:
    """A plain view of one file as ``read_file``; None for anything else."""
    if m := SED_RANGE.match(command):
        first = int(m.group(2))
        return read(m.group(4), first, int(m.group(3) or first))
    if m := NL_SED.match(command):
        first = int(m.group(3))
        return read(m.group(1), first, int(m.group(4) or first))
    if m := CAT.match(command):
        return read(m.group(1))
    if m := HEAD.match(command):
        return read(m.group(2), 1, int(m.group(1)))
    return None


def write_call(command: str) -> Call | None:
    """A heredoc that only writes one file inside the workspace, as ``write_file``."""
    m = HEREDOC.match(command)
    if not m or m.group(3).startswith("/"):
        return None
    content = m.group(4)
    if not m.group(1) and re.search(r"[$`\\]", content):  # the shell would expand it
        return None
    return {"name": "write_file", "arguments": {"path": m.group(3), "content": content + "\n"}}


def bre_to_python(pattern: str) -> str:
    """A grep basic regular expression as a Python one (``\\|``, ``\\(`` are the operators;
    ``|``, ``(``, ``+``, ``?``, ``{`` are literal)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(nxt if nxt in "|(){}+?" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + c if c in "|(){}+?" else c)
        i += 1
    return "".join(out)


def grep_call(command: str) -> Call | None:
    """``grep [-rnRiEF] [--include=G] PATTERN PATH`` as the grep tool; None otherwise."""
    if any(ch in command for ch in "|;&><`$\n"):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] != "grep":
        return None
    flags, glob, rest = "", None, []
    for w in words[1:]:
        if w.startswith("--include="):
            glob = w.split("=", 1)[1]
        elif w.startswith("-") and not rest and re.fullmatch(r"-[rnRiEF]+", w):
            flags += w[1:]
        elif w.startswith("-") and not rest:
            return None
        else:
            rest.append(w)
    if len(rest) != 2:
        return None
    pattern, path = rest
    recursive = "r" in flags or "R" in flags
    if not recursive and not re.search(r"\.\w+$", path):
        return None  # grep without -r on a directory is an error, not a search
    if "F" in flags:
        pattern = re.escape(pattern)
    elif "E" not in flags:
        pattern = bre_to_python(pattern)
    if "i" in flags:
        pattern = "(?i)" + pattern
    args: dict[str, Any] = {"pattern": pattern}
    if path not in (".", "./"):
        args["path"] = path.removeprefix("./").rstrip("/")
    if glob:
        args["glob"] = glob
    return {"name": "grep", "arguments": args}


FIND = re.compile(r"""^find ([\w./-]+) (?:-type f )?-name (['"]?)([^'"\s]+)\2(?: -type f)?$""")


def find_call(command: str) -> Call | None:
    m = FIND.match(command)
    if not m:
        return None
    where, name = m.group(1).removeprefix("./").rstrip("/"), m.group(3)
    pattern = name if where in ("", ".") else f"{where}/**/{name}"
    return {"name": "find", "arguments": {"pattern": pattern}}


def command_call(command: str) -> Call:
    """A bash command (paths already relative) as the io-tui tool that does the same."""
    plain = re.sub(r"^cd \.?/? && ", "", command.strip())
    for convert in (view_call, write_call, grep_call, find_call):
        call = convert(plain)
        if call is not None:
            return call
    return bash(command)


# -- the two trajectory formats ---------------------------------------------------------------


@dataclass
class Script:
    """Turns being written; a turn without a call waits to be said with the next one."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    task: str = ""

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def say(self, text: str) -> None:
        if text.strip():
            self.pending.append(text.strip())

    def act(self, text: str, call: Call) -> None:
        self.say(text)
        self.turns.append({"text": "\n\n".join(self.pending), "tool_calls": [call]})
        self.pending = []
        self.count(f"call: {call['name']}")

    def finish(self, text: str) -> dict[str, Any]:
        self.say(text)
        self.turns.append({"text": "\n\n".join(self.pending) or "Done.", "tool_calls": []})
        self.pending = []
        counts = dict(sorted(self.counts.items()))
        return {"task": self.task, "turns": self.turns, "counts": counts}


def task_of(message: str, tag: str) -> str:
    """The issue the agent was given: the text inside ``<tag>`` of its first message."""
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", message, re.S)
    return found.group(1) if found else message


def from_mini(trajectory: dict[str, Any], root: str = "/testbed") -> dict[str, Any]:
    """mini-swe-agent: each assistant message holds one bash block, run in a fresh shell."""
    script = Script()
    first = next(m for m in trajectory["messages"] if m["role"] == "user")
    script.task = task_of(first["content"], "pr_description")
    for message in trajectory["messages"]:
        if message["role"] != "assistant":
            continue
        content = message["content"]
        blocks = BLOCK.findall(content)
        if len(blocks) != 1:
            script.count("format error (no action)")
            script.say(content)
            continue
        text = BLOCK.sub("", content).strip()
        command = relative(blocks[0], root)
        if command.startswith(SUBMIT):
            script.act(text, bash(command.removeprefix(SUBMIT)))
            return script.finish("Submitted the diff above.")
        script.act(text, command_call(command))
    return script.finish("(the trajectory ends here without a submission)")


def from_openhands(events: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenHands CodeActAgent: ``execute_bash`` in one persistent shell (its working
    directory carried from one command to the next), ``str_replace_editor`` views and edits."""
    first = next(e for e in events if e.get("source") == "user" and e.get("action") == "message")
    root = re.search(r"<uploaded_files>\n(\S+)", first["message"]).group(1).rstrip("/")
    script, cwd = Script(), "."
    script.task = task_of(first["message"], "issue_description")
    for event in events:
        action, args = event.get("action"), event.get("args") or {}
        if event.get("source") != "agent":
            continue
        if event.get("observation") == "error":
            script.count("rejected by the harness (no action)")
            continue
        if event.get("observation") == "run":
            where = (event.get("extras", {}).get("metadata") or {}).get("working_dir")
            if where:
                cwd = relative(where, root) or "."
            continue
        text = THINK.sub("", str(args.get("thought") or "")).strip()
        if action == "run":
            command = relative(args["command"], root)
            if cwd not in (".", ""):
                command = f"cd {shlex.quote(cwd)} && {command}"
            script.act(text, command_call(command) if cwd in (".", "") else bash(command))
        elif action == "read":
            script.act(text, editor_view(relative(args["path"], root), args.get("view_range")))
        elif action == "edit":
            script.act(text, editor_edit(relative(args["path"], root), args))
        elif action == "finish":
            return script.finish(text + "\n\n" + str(args.get("final_thought") or ""))
        elif action in ("think", "task_tracking", "message"):
            script.count(f"{action} (no action)")
            script.say(text or str(args.get("thought") or args.get("content") or ""))
    return script.finish("(the trajectory ends here without a finish)")


def editor_view(path: str, view_range: list[int] | None) -> Call:
    if path in (".", "") or not re.search(r"\.\w+$", path):  # a directory: two levels listed
        where = path or "."
        return bash(f"find {where} -maxdepth 2 -not -path '*/.*' | sort")
    if not view_range:
        return read(path)
    first, last = view_range
    return read(path, first, None if last == -1 else last)


def editor_edit(path: str, args: dict[str, Any]) -> Call:
    kind = args.get("command")
    if kind == "create":
        return {"name": "write_file", "arguments": {"path": path, "content": args["file_text"]}}
    if kind == "str_replace":
        edit = {"path": path, "old": args.get("old_str"), "new": args.get("new_str") or ""}
        if edit["old"] is None:  # the model left it out: io-tui refuses it, as OpenHands did
            del edit["old"]
        return {"name": "edit_file", "arguments": edit}
    raise SystemExit(f"editor command {kind!r} has no conversion yet")


# -- the command line -------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("format", choices=["mini", "openhands"])
    parser.add_argument("trajectory", type=Path)
    parser.add_argument("out", type=Path, help="the session.json to write")
    parser.add_argument("--meta", type=Path, required=True, help="provenance JSON to embed")
    args = parser.parse_args()
    raw = json.loads(args.trajectory.read_text())
    converted = from_mini(raw) if args.format == "mini" else from_openhands(raw["events"])
    meta = json.loads(args.meta.read_text())
    meta["conversion"] = {"steps": len(converted["turns"]), "counts": converted["counts"]}
    script = {"model": meta["model"], "turns": converted["turns"]}
    session = {"meta": meta, "task": converted["task"], "script": script}
    args.out.write_text(json.dumps(session, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(converted['turns'])} turns, {converted['counts']}", file=sys.stderr)


if __name__ == "__main__":
    main()
