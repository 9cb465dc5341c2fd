"""Deny-first policy over named layers of glob rules (DESIGN §3.4).

``Policy.explain(act, target)`` is the very function enforcement uses: what it says is what
happens. Evaluation runs across the whole stack: deny > ask > allow > the act's default.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import shlex
import stat
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from io_tui.core.authority.acts import Act as Act, Effect as Effect  # re-exported
from io_tui.core.authority.review import ReviewerSpec, ReviewerSpecError

_E = TypeVar("_E", bound=StrEnum)

_STRENGTH = {Effect.DENY: 3, Effect.ASK: 2, Effect.ALLOW: 1}

DEFAULT_EFFECTS: dict[Act, Effect] = {
    Act.READ: Effect.ALLOW,
    Act.WRITE: Effect.ASK,
    Act.EXEC: Effect.ASK,
    Act.NET: Effect.DENY,
}

# Credential files, denied to read and write whatever a policy file says. A pattern without '/'
# matches the basename anywhere; ``*/`` forms catch the same file in a subdirectory.
SECRET_PATTERNS = (
    ".env", ".env.*", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
    ".npmrc", ".netrc", "_netrc", ".pypirc", ".git-credentials",
    ".aws/credentials", "*/.aws/credentials", ".kube/config", "*/.kube/config", "kubeconfig",
    "*.kubeconfig", ".docker/config.json", "*/.docker/config.json",
)  # fmt: skip
BUILTIN_SECRETS_LAYER = "builtin-secrets"
REMEMBERED_LAYER = "remembered"


class PolicyError(ValueError):
    """A policy file or rule that does not validate; the message names what and where."""


@dataclass(frozen=True, slots=True)
class Rule:
    act: Act
    effect: Effect
    pattern: str
    # the act is safe to repeat (``pytest*``, ``ruff check*``): a call of it that was in flight
    # at a crash is re-run without the operator (``Policy.safe_to_repeat``)
    idempotent: bool = False

    def matches(self, act: Act, target: str) -> bool:
        if act is not self.act:
            return False
        if act is Act.EXEC:
            return _command_match(self.pattern, target)
        return _glob_match(self.pattern, target)

    def describe(self) -> str:
        repeat = " (idempotent)" if self.idempotent else ""
        return f"{self.effect.value} {self.act.value} {self.pattern}{repeat}"


@functools.lru_cache(maxsize=16_384)
def _glob_match(pattern: str, target: str) -> bool:
    """Match against the workspace-relative path, or its basename for slash-free patterns; a
    leading ``/`` anchors a pattern at the workspace root (``/README.md`` is that file alone).
    Kept per (pattern, target): every call and every request's derived parts ask again of the
    same few paths, each against every rule."""
    normalized = target.replace("\\", "/")
    if pattern.startswith("/"):
        return fnmatch.fnmatchcase(normalized, pattern[1:])
    if fnmatch.fnmatchcase(normalized, pattern):
        return True
    if "/" not in pattern:
        return fnmatch.fnmatchcase(PurePosixPath(normalized).name, pattern)
    return False


# Programs that run a script named among their arguments: given one from the workspace
# (``python3 ./tools/x.py``), the script is what runs, and a rule for the interpreter alone
# (``python3``) does not allow it.
INTERPRETERS = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|ruby|perl|php|lua|Rscript|tclsh"
    r"|sh|bash|dash|zsh|ksh|fish|osascript|pwsh)"
)


# an interpreter's options that take the next word as their value; those that end the search
# (the code or module comes next, not a script file)
_VALUED = frozenset({"-W", "-X", "-r", "--require", "-o", "-O", "-I", "--import", "--loader"})
_INLINE = frozenset({"-c", "-e", "-m", "--eval", "-p", "--print", "-E"})


def script_index(args: list[str]) -> int | None:
    """Where an interpreter's script is among its arguments: the first word that is not an
    option (nor an option's value); None when the code comes inline (``-c``, ``-m``, ``-e``)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in _INLINE:
            return None
        if word == "--":
            return i + 1 if i + 1 < len(args) else None
        if word.startswith("-"):
            i += 2 if word in _VALUED else 1
            continue
        return i
    return None


def runs_workspace_script(command: str) -> bool:
    """Whether ``command`` is an interpreter given a script from the workspace: its script a
    ``./`` path (``python3 ./tools/x.py``), as ``tools.command.command_line`` writes it."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 2 or INTERPRETERS.fullmatch(words[0]) is None:
        return False
    at = script_index(words[1:])
    return at is not None and words[1 + at].startswith("./")


def _command_match(pattern: str, command: str) -> bool:
    """An exec target is a command line (``git status --short``) or a tool name (MCP).

    A pattern with a space matches the whole line (``git status*``); one without matches the
    program alone (``pytest``, ``python3``), as well as the whole line. The program is what
    really runs (``tools.command.command_line``): a bare name is a program found on PATH outside
    the workspace, a program inside the workspace is its ``./`` path (``./tools/ls``), and an
    interpreter given a workspace script is not matched by its name alone.
    """
    if fnmatch.fnmatchcase(command, pattern):
        return True
    program = command.split(" ", 1)[0]
    if " " in pattern or runs_workspace_script(command):
        return False
    return fnmatch.fnmatchcase(program, pattern)


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of ``explain``: the effect, and the rule and layer that decided it."""

    act: Act
    target: str
    effect: Effect
    rule: Rule | None
    layer: str

    @property
    def rule_text(self) -> str:
        return self.rule.describe() if self.rule else f"default {self.act.value}"

    def explain(self) -> str:
        return f"{self.effect.value}: {self.act.value} {self.target} (rule '{self.rule_text}' in layer '{self.layer}')"


def builtin_secrets_layer() -> Layer:
    rules = tuple(
        Rule(act, Effect.DENY, p) for p in SECRET_PATTERNS for act in (Act.READ, Act.WRITE)
    )
    return Layer(BUILTIN_SECRETS_LAYER, rules)


@dataclass(frozen=True, slots=True)
class SandboxRules:
    """The policy file's ``[sandbox]``: whether approved commands run in the OS sandbox
    (``enabled``, where the machine has one), whether a command may run without one
    (``require``: refused where none is available), and whether it gets the network."""

    enabled: bool = True
    require: bool = False
    network: bool = False

    def to_json(self) -> dict[str, bool]:
        return {"enabled": self.enabled, "require": self.require, "network": self.network}

    @classmethod
    def from_json(cls, data: object, source: str) -> SandboxRules:
        if not isinstance(data, dict):
            raise PolicyError(f"{source}: sandbox: expected a table")
        unknown = set(data) - {"enabled", "require", "network"}
        if unknown:
            raise PolicyError(f"{source}: sandbox: unknown key(s) {', '.join(sorted(unknown))}")
        for key, value in data.items():
            if not isinstance(value, bool):
                raise PolicyError(f"{source}: sandbox.{key}: expected true or false")
        return cls(**data)


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules, and who reviews what they leave to a human: ``reviewer`` (a policy file's
    ``[reviewer]`` table, or ``--approver model:…``) is asked first, and escalates to the human."""

    layers: tuple[Layer, ...] = field(default_factory=lambda: (builtin_secrets_layer(),))
    defaults: dict[Act, Effect] = field(default_factory=lambda: dict(DEFAULT_EFFECTS))
    reviewer: ReviewerSpec | None = None
    sandbox: SandboxRules = field(default_factory=SandboxRules)
    # ``explain``'s verdicts: a policy is never changed (``with_layer`` makes another), and a
    # run keeps one while its rules stay the same, asking it of the same few targets each step
    _explained: dict[tuple[Act, str], Verdict] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def explain(self, act: Act | str, target: str) -> Verdict:
        act = Act(act)
        known = self._explained.get((act, target))
        if known is None:
            known = self._explained[act, target] = self._explain(act, target)
        return known

    def _explain(self, act: Act, target: str) -> Verdict:
        best: tuple[Rule, str] | None = None
        for layer in self.layers:
            for rule in layer.rules:
                if rule.matches(act, target) and (
                    best is None or _STRENGTH[rule.effect] > _STRENGTH[best[0].effect]
                ):
                    best = (rule, layer.name)
        if best is None:
            return Verdict(act, target, self.defaults[act], None, "defaults")
        return Verdict(act, target, best[0].effect, best[0], best[1])

    def read_verdict(self, target: str) -> Verdict | None:
        """``explain`` of a read the harness makes on the model's behalf (a skill listed, an
        instruction file sent); None when no rule matches and the policy has no read default."""
        try:
            return self.explain(Act.READ, target)
        except KeyError:
            return None

    def read_effect(self, target: str) -> str:
        """The effect of ``read_verdict`` in a word (``unset``: no rule, no read default): what
        a derived part records it was built under (``core/derived/parts.py``)."""
        said = self.read_verdict(target)
        return said.effect.value if said else "unset"

    def safe_to_repeat(self, act: Act | str, target: str) -> str | None:
        """Why a call of ``act`` on ``target`` may run again without the operator's word (it
        was in flight at a crash): it only reads, or a rule not beaten by a deny marks it
        ``idempotent``. None: it may have changed something, and the operator decides."""
        if act in ("", Act.READ):
            return "it only reads"
        if self.explain(act, target).effect is Effect.DENY:
            return None
        for layer in self.layers:
            for rule in layer.rules:
                if rule.idempotent and rule.matches(Act(act), target):
                    return f"rule '{rule.describe()}' in layer '{layer.name}' marks it idempotent"
        return None

    def with_layer(self, layer: Layer) -> Policy:
        """A copy with ``layer`` added, or replacing the layer of the same name."""
        kept = tuple(existing for existing in self.layers if existing.name != layer.name)
        return replace(self, layers=(*kept, layer))

    def layer(self, name: str) -> Layer | None:
        return next((layer for layer in self.layers if layer.name == name), None)

    def with_reviewer(self, reviewer: ReviewerSpec | None) -> Policy:
        return replace(self, reviewer=reviewer)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sandbox": self.sandbox.to_json(),
            "defaults": {act.value: eff.value for act, eff in self.defaults.items()},
            "layers": [
                {
                    "name": layer.name,
                    "rules": [
                        {"act": r.act.value, "effect": r.effect.value, "pattern": r.pattern}
                        | ({"idempotent": True} if r.idempotent else {})
                        for r in layer.rules
                    ],
                }
                for layer in self.layers
            ],
        }
        if self.reviewer is not None:
            out["reviewer"] = self.reviewer.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], *, source: str = "policy") -> Policy:
        """Build a policy from parsed TOML/JSON. The builtin secrets layer is always kept."""
        if not isinstance(data, dict):
            raise PolicyError(f"{source}: expected a table at the top level")
        unknown = set(data) - {"defaults", "layers", "reviewer", "sandbox"}
        if unknown:
            raise PolicyError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
        defaults = dict(DEFAULT_EFFECTS)
        for act_name, effect_name in (data.get("defaults") or {}).items():
            defaults[_parse(Act, act_name, f"{source}: defaults")] = _parse(
                Effect, effect_name, f"{source}: defaults.{act_name}"
            )
        layers: list[Layer] = [builtin_secrets_layer()]
        for i, raw_layer in enumerate(data.get("layers") or []):
            where = f"{source}: layers[{i}]"
            if not isinstance(raw_layer, dict) or not raw_layer.get("name"):
                raise PolicyError(f"{where}: every layer needs a name")
            name = str(raw_layer["name"])
            extra_keys = set(raw_layer) - {"name", "rules"}
            if extra_keys:
                raise PolicyError(f"{where}: unknown key(s) {', '.join(sorted(extra_keys))}")
            if name == BUILTIN_SECRETS_LAYER:
                continue  # always present; a file cannot weaken it
            rules = []
            for j, raw in enumerate(raw_layer.get("rules") or []):
                rwhere = f"{where}.rules[{j}]"
                if not isinstance(raw, dict):
                    raise PolicyError(f"{rwhere}: expected a table")
                extra = set(raw) - {"act", "effect", "pattern", "idempotent"}
                if extra:
                    raise PolicyError(f"{rwhere}: unknown key(s) {', '.join(sorted(extra))}")
                if not raw.get("pattern"):
                    raise PolicyError(f"{rwhere}: missing pattern")
                idempotent = raw.get("idempotent", False)
                if not isinstance(idempotent, bool):
                    raise PolicyError(f"{rwhere}.idempotent: expected true or false")
                rules.append(
                    Rule(
                        _parse(Act, raw.get("act"), f"{rwhere}.act"),
                        _parse(Effect, raw.get("effect"), f"{rwhere}.effect"),
                        str(raw["pattern"]),
                        idempotent,
                    )
                )
            layers.append(Layer(name, tuple(rules)))
        reviewer = None
        if data.get("reviewer") is not None:
            try:
                reviewer = ReviewerSpec.from_json(data["reviewer"], source=source)
            except ReviewerSpecError as exc:
                raise PolicyError(str(exc)) from None
        sandbox = SandboxRules.from_json(data.get("sandbox") or {}, source)
        return cls(tuple(layers), defaults, reviewer, sandbox)

    @classmethod
    def load(cls, path: Path) -> Policy:
        import tomllib  # only a policy file needs the parser: the inbox and the trace do not

        try:
            if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read
                raise PolicyError(f"{path}: the policy file is not a regular file")
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PolicyError(f"policy file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise PolicyError(f"{path}: not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise PolicyError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise PolicyError(
                f"{path}: cannot read the policy file: {exc.strerror or exc}"
            ) from None
        return cls.from_json(data, source=str(path))


def _parse(enum: type[_E], value: object, where: str) -> _E:
    try:
        return enum(str(value))
    except ValueError:
        choices = " | ".join(m.value for m in enum)
        raise PolicyError(f"{where}: '{value}' is not one of {choices}") from None
