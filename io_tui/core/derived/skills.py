"""Skills: folders holding a SKILL.md with a name and a one-line description.

The frame lists every available skill by name and description; the model reads one in full with
``read_skill(name)`` only when it needs it. Skills come from three places, later ones shadowing
earlier ones of the same name: the bundled ``skills/``, the user's config dir ``skills/``, and the
workspace's ``.io-tui/skills/``.

The catalogue is derived context (``core/derived/parts.py``): it depends on each folder's listing, each
SKILL.md's digest and the read policy's verdict on each skill (one the policy denies is left
out: the model could not read it), and is rebuilt, with an ``invalidated`` event, when one moves.
"""

from __future__ import annotations

import asyncio
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from io_tui.core.authority.policy import Act, Effect, Policy
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolError, ToolOutcome

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS = Path(".io-tui") / "skills"
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path
    origin: str  # bundled | user | workspace

    @property
    def target(self) -> str:
        """What the read policy is checked against."""
        return f"skills/{self.name}/{SKILL_FILE}"


def parse_front_matter(text: str) -> dict[str, str]:
    """The ``key: value`` lines between the leading ``---`` fences (no YAML dependency)."""
    match = _FRONT.match(text)
    if not match:
        return {}
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip().strip("\"'")
    return fields


def _scan(folder: Path, origin: str) -> list[Skill]:
    if not folder.is_dir():
        return []
    found = []
    for skill_file in sorted(folder.glob(f"*/{SKILL_FILE}")):
        if not skill_file.is_file():
            continue  # a FIFO in its place would block the run's start
        try:
            meta = parse_front_matter(skill_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue  # an unreadable skill is skipped, never fatal
        name = meta.get("name") or skill_file.parent.name
        description = meta.get("description", "")
        found.append(Skill(name, description, skill_file, origin))
    return found


def skill_folders(
    workspace: Path, *, bundled: Path | None, user: Path | None
) -> list[tuple[Path, str]]:
    """Where skills come from, each with its origin, later ones shadowing earlier ones."""
    return list(_folders(workspace, bundled, user))


@functools.lru_cache(maxsize=64)
def _folders(
    workspace: Path, bundled: Path | None, user: Path | None
) -> tuple[tuple[Path, str], ...]:
    """``skill_folders``, kept per workspace, bundled and user folder (asked every request)."""
    folders = ((bundled, "bundled"), (user, "user"), (workspace / WORKSPACE_SKILLS, "workspace"))
    return tuple((folder, origin) for folder, origin in folders if folder is not None)


def discover(workspace: Path, *, bundled: Path | None, user: Path | None) -> dict[str, Skill]:
    skills: dict[str, Skill] = {}
    for folder, origin in skill_folders(workspace, bundled=bundled, user=user):
        for skill in _scan(folder, origin):
            skills[skill.name] = skill
    return skills


def verdict(policy: Policy, skill: Skill) -> str:
    """The read policy's effect on ``skill`` (``unset``: a policy with no read default)."""
    return policy.read_effect(skill.target)


def readable(skills: dict[str, Skill], policy: Policy) -> dict[str, Skill]:
    """The skills whose SKILL.md the read policy does not deny: the ones the catalogue lists
    (``read_skill`` refuses the others, naming the rule)."""
    return {n: s for n, s in skills.items() if verdict(policy, s) != Effect.DENY.value}


async def discover_async(
    workspace: Path, *, bundled: Path | None, user: Path | None
) -> dict[str, Skill]:
    return await asyncio.to_thread(discover, workspace, bundled=bundled, user=user)


def catalogue(skills: dict[str, Skill]) -> str:
    """The frame's list of skills: one line each, read in full with read_skill."""
    if not skills:
        return ""
    lines = ["Skills you can read in full with read_skill(name) when they apply:"]
    lines += [f"- {s.name}: {s.description}" for s in skills.values()]
    return "\n".join(lines)


class ReadSkillArgs(ToolArgs):
    name: str = Field(
        min_length=1, description="The skill's name, as listed in the skills section."
    )


class ReadSkill(Tool):
    changes_files = False
    only_reads = True
    name = "read_skill"
    description = "Read one skill's full instructions (SKILL.md) by name."
    Args = ReadSkillArgs

    def __init__(self, skills: dict[str, Skill]) -> None:
        self.skills = skills

    def _find(self, name: str) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            known = ", ".join(sorted(self.skills)) or "none"
            raise ToolError(f"no skill named {name!r}; available: {known}")
        return skill

    async def gate(self, args: ReadSkillArgs, ctx: ToolContext) -> Gate:
        return Gate(Act.READ, self._find(args.name).target)

    async def run(self, args: ReadSkillArgs, ctx: ToolContext) -> ToolOutcome:
        skill = self._find(args.name)
        try:
            text = await asyncio.to_thread(skill.path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(f"cannot read skill {args.name!r}: {exc}") from None
        return ToolOutcome(text=text, kind=ObsKind.SKILL, target=skill.target)
