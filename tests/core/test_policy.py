"""The policy matrix: deny > ask > allow > default across layers, globs, secrets, TOML files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from io_tui.core.authority.policy import (
    BUILTIN_SECRETS_LAYER,
    Act,
    Effect,
    Layer,
    Policy,
    PolicyError,
    Rule,
)


def layer(name: str, *rules: tuple[str, str, str]) -> Layer:
    return Layer(name, tuple(Rule(Act(a), Effect(e), p) for a, e, p in rules))


def policy(*layers: Layer) -> Policy:
    p = Policy()
    for extra in layers:
        p = p.with_layer(extra)
    return p


# -- defaults ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("act", "target", "effect"),
    [
        (Act.READ, "src/app.py", Effect.ALLOW),
        (Act.WRITE, "src/app.py", Effect.ASK),
        (Act.EXEC, "pytest", Effect.ASK),
        (Act.NET, "example.com", Effect.DENY),
    ],
)
def test_defaults_per_act(act: Act, target: str, effect: Effect) -> None:
    verdict = Policy().explain(act, target)
    assert verdict.effect is effect
    assert verdict.rule is None
    assert verdict.layer == "defaults"
    assert verdict.rule_text == f"default {act.value}"


def test_explain_accepts_the_act_as_a_string() -> None:
    assert Policy().explain("write", "a.txt").effect is Effect.ASK


# -- builtin secrets --------------------------------------------------------------------------


SECRETS = [
    ".env",
    "config/.env",
    ".env.production",
    "certs/server.pem",
    "deploy/prod.key",
    "id_rsa",
    "home/.ssh/id_rsa",
    ".ssh/id_ed25519",
    ".ssh/id_ecdsa",
    ".npmrc",
    "web/.npmrc",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    ".aws/credentials",
    "home/.aws/credentials",
    "certs/client.p12",
    "certs/client.pfx",
    ".kube/config",
    "ops/.kube/config",
    "ops/staging.kubeconfig",
    ".envrc",
]


@pytest.mark.parametrize("target", ["src/env.py", "docs/aws.md", ".kube/cache/x", "keys.txt"])
def test_files_merely_named_like_secrets_are_not_denied(target: str) -> None:
    assert Policy().explain(Act.READ, target).effect is Effect.ALLOW


@pytest.mark.parametrize("target", SECRETS)
@pytest.mark.parametrize("act", [Act.READ, Act.WRITE])
def test_builtin_secrets_are_denied(act: Act, target: str) -> None:
    verdict = Policy().explain(act, target)
    assert verdict.effect is Effect.DENY
    assert verdict.layer == BUILTIN_SECRETS_LAYER
    assert verdict.rule is not None and verdict.rule.effect is Effect.DENY


@pytest.mark.parametrize("target", SECRETS)
def test_secrets_stay_denied_when_a_later_layer_allows(target: str) -> None:
    p = policy(
        layer("project", ("read", "allow", "*"), ("read", "allow", target)),
        layer("remembered", ("read", "allow", target), ("write", "allow", "**")),
    )
    assert p.explain(Act.READ, target).effect is Effect.DENY
    assert p.explain(Act.READ, target).layer == BUILTIN_SECRETS_LAYER
    assert p.explain(Act.WRITE, target).effect is Effect.DENY


@pytest.mark.parametrize("target", ["env.py", "src/environment.md", "keys.txt", "id_rsa.pub"])
def test_look_alikes_are_not_secrets(target: str) -> None:
    assert Policy().explain(Act.READ, target).effect is Effect.ALLOW


# -- precedence across layers -----------------------------------------------------------------


@pytest.mark.parametrize("deny_first", [True, False])
def test_deny_beats_allow_across_layers_in_any_order(deny_first: bool) -> None:
    deny = layer("team", ("exec", "deny", "rm"))
    allow = layer("remembered", ("exec", "allow", "rm"))
    p = policy(deny, allow) if deny_first else policy(allow, deny)
    verdict = p.explain(Act.EXEC, "rm")
    assert verdict.effect is Effect.DENY
    assert (verdict.layer, verdict.rule_text) == ("team", "deny exec rm")


@pytest.mark.parametrize("ask_first", [True, False])
def test_ask_beats_allow(ask_first: bool) -> None:
    ask = layer("project", ("write", "ask", "src/*"))
    allow = layer("user", ("write", "allow", "*.py"))
    p = policy(ask, allow) if ask_first else policy(allow, ask)
    verdict = p.explain(Act.WRITE, "src/app.py")
    assert verdict.effect is Effect.ASK
    assert verdict.layer == "project"


def test_deny_beats_ask() -> None:
    p = policy(layer("a", ("write", "ask", "*.py")), layer("b", ("write", "deny", "src/*")))
    assert p.explain(Act.WRITE, "src/app.py").effect is Effect.DENY


def test_allow_beats_the_default() -> None:
    p = policy(layer("project", ("write", "allow", "src/*")))
    verdict = p.explain(Act.WRITE, "src/app.py")
    assert (verdict.effect, verdict.layer) == (Effect.ALLOW, "project")
    assert p.explain(Act.WRITE, "docs/a.md").effect is Effect.ASK


def test_a_policy_with_a_layer_more_explains_afresh() -> None:
    """A policy keeps its verdicts (it never changes); the one ``with_layer`` makes does not
    share them, and a layer replaced by name changes the verdict again."""
    p = policy(layer("project", ("write", "allow", "src/*")))
    assert p.explain(Act.WRITE, "src/app.py").effect is Effect.ALLOW
    assert p.explain("write", "src/app.py") is p.explain(Act.WRITE, "src/app.py")
    denied = p.with_layer(layer("remembered", ("write", "deny", "src/app.py")))
    assert denied.explain(Act.WRITE, "src/app.py").effect is Effect.DENY
    assert p.explain(Act.WRITE, "src/app.py").effect is Effect.ALLOW
    lifted = denied.with_layer(layer("remembered"))
    assert lifted.explain(Act.WRITE, "src/app.py").effect is Effect.ALLOW


def test_rules_only_apply_to_their_act() -> None:
    p = policy(layer("project", ("write", "deny", "*.py")))
    assert p.explain(Act.READ, "a.py").effect is Effect.ALLOW
    assert p.explain(Act.WRITE, "a.py").effect is Effect.DENY


_effects = st.sampled_from(list(Effect))


@given(effects=st.lists(_effects, min_size=1, max_size=6), data=st.data())
def test_property_strongest_matching_rule_wins_whatever_the_layer_order(
    effects: list[Effect], data: st.DataObject
) -> None:
    layers = [layer(f"l{i}", ("exec", e.value, "make")) for i, e in enumerate(effects)]
    shuffled = data.draw(st.permutations(layers))
    strongest = next(e for e in (Effect.DENY, Effect.ASK, Effect.ALLOW) if e in effects)
    assert policy(*layers).explain(Act.EXEC, "make").effect is strongest
    assert policy(*shuffled).explain(Act.EXEC, "make").effect is strongest


# -- glob matching ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "target", "matches"),
    [
        ("*.py", "app.py", True),
        ("*.py", "src/deep/app.py", True),  # slash-free: the basename is matched
        ("Makefile", "sub/dir/Makefile", True),
        ("src/*", "src/app.py", True),  # path patterns match the relative path
        ("src/*", "lib/src/app.py", False),  # ... anchored at the root
        ("docs/*.md", "README.md", False),
        ("docs/*.md", "docs/guide.md", True),
        ("*.py", "src/app.pyc", False),
        ("src/*.py", "src\\app.py", True),  # backslashes normalised
    ],
)
def test_glob_matching(pattern: str, target: str, matches: bool) -> None:
    rule = Rule(Act.WRITE, Effect.DENY, pattern)
    assert rule.matches(Act.WRITE, target) is matches
    expected = Effect.DENY if matches else Effect.ASK
    assert policy(Layer("p", (rule,))).explain(Act.WRITE, target).effect is expected


# -- explain ----------------------------------------------------------------------------------


def test_explain_names_effect_rule_and_layer() -> None:
    p = policy(layer("project", ("exec", "deny", "curl")))
    verdict = p.explain(Act.EXEC, "curl")
    assert verdict.effect is Effect.DENY
    assert verdict.rule == Rule(Act.EXEC, Effect.DENY, "curl")
    assert verdict.layer == "project"
    text = verdict.explain()
    assert text.startswith("deny: exec curl")
    assert "'deny exec curl'" in text and "'project'" in text


def test_explain_of_a_default_says_so() -> None:
    assert "rule 'default write' in layer 'defaults'" in Policy().explain(Act.WRITE, "x").explain()


# -- layers -----------------------------------------------------------------------------------


def test_with_layer_replaces_the_layer_of_the_same_name() -> None:
    p = policy(layer("remembered", ("exec", "allow", "make")))
    p = p.with_layer(layer("remembered", ("exec", "allow", "pytest")))
    assert [lay.name for lay in p.layers] == [BUILTIN_SECRETS_LAYER, "remembered"]
    assert p.explain(Act.EXEC, "make").effect is Effect.ASK
    assert p.explain(Act.EXEC, "pytest").effect is Effect.ALLOW
    assert p.layer("remembered") is not None and p.layer("missing") is None


def test_json_roundtrip_keeps_every_verdict() -> None:
    p = policy(layer("project", ("write", "allow", "src/*"), ("exec", "deny", "rm")))
    back = Policy.from_json(p.to_json())
    assert back.to_json() == p.to_json()
    for act, target in [(Act.WRITE, "src/a"), (Act.EXEC, "rm"), (Act.READ, ".env")]:
        assert back.explain(act, target) == p.explain(act, target)


# -- TOML files -------------------------------------------------------------------------------


DESIGN_EXAMPLE = """
[defaults]            # optional; read/write/exec/net = "allow" | "ask" | "deny"
write = "ask"
[[layers]]
name = "project"
[[layers.rules]]
act = "write"         # read | write | exec | net
effect = "allow"      # allow | ask | deny
pattern = "src/*"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def test_loads_the_design_format(tmp_path: Path) -> None:
    p = Policy.load(write(tmp_path, DESIGN_EXAMPLE))
    assert [lay.name for lay in p.layers] == [BUILTIN_SECRETS_LAYER, "project"]
    assert p.explain(Act.WRITE, "src/app.py").effect is Effect.ALLOW
    assert p.explain(Act.WRITE, "src/app.py").layer == "project"
    assert p.explain(Act.WRITE, "README.md").effect is Effect.ASK
    assert p.explain(Act.READ, ".env").effect is Effect.DENY


def test_file_defaults_change_the_fallback_but_not_the_secrets(tmp_path: Path) -> None:
    p = Policy.load(write(tmp_path, '[defaults]\nexec = "deny"\nread = "allow"\n'))
    assert p.explain(Act.EXEC, "ls").effect is Effect.DENY
    assert p.explain(Act.WRITE, "a").effect is Effect.ASK  # untouched defaults stay
    assert p.explain(Act.READ, "id_rsa").effect is Effect.DENY


def test_a_file_cannot_replace_the_secrets_layer(tmp_path: Path) -> None:
    text = (
        '[[layers]]\nname = "builtin-secrets"\n'
        '[[layers.rules]]\nact = "read"\neffect = "allow"\npattern = ".env"\n'
    )
    p = Policy.load(write(tmp_path, text))
    assert p.explain(Act.READ, ".env").effect is Effect.DENY


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            DESIGN_EXAMPLE.replace('effect = "allow"', 'effect = "alow"'),
            "layers[0].rules[0].effect",
        ),
        (DESIGN_EXAMPLE.replace('act = "write"', 'act = "wirte"'), "layers[0].rules[0].act"),
        (DESIGN_EXAMPLE.replace("pattern =", "patern ="), "unknown key(s) patern"),
        (DESIGN_EXAMPLE.replace('write = "ask"', 'wrte = "ask"'), "defaults"),
        (DESIGN_EXAMPLE.replace('write = "ask"', 'write = "maybe"'), "defaults.write"),
        (DESIGN_EXAMPLE.replace("[[layers]]", "[[layer]]"), "unknown key(s) layer"),
        (DESIGN_EXAMPLE.replace('name = "project"', 'nmae = "project"'), "layers[0]"),
    ],
)
def test_typos_are_policy_errors_naming_the_place(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        Policy.load(path)
    message = str(info.value)
    assert where in message
    assert str(path) in message


def test_typo_in_a_layer_key_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, DESIGN_EXAMPLE.replace("[[layers.rules]]", "[[layers.rule]]"))
    with pytest.raises(PolicyError, match="rule"):
        Policy.load(path)


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="not valid TOML"):
        Policy.load(write(tmp_path, "[[layers]\nname="))
    with pytest.raises(PolicyError, match="not found"):
        Policy.load(tmp_path / "absent.toml")


def test_a_rule_without_a_pattern_is_refused(tmp_path: Path) -> None:
    text = DESIGN_EXAMPLE.replace('pattern = "src/*"', "")
    with pytest.raises(PolicyError, match=r"layers\[0\]\.rules\[0\]: missing pattern"):
        Policy.load(write(tmp_path, text))


def test_exec_rules_name_a_program_or_a_subcommand() -> None:
    policy = Policy.from_json(
        {
            "layers": [
                {
                    "name": "p",
                    "rules": [
                        {"act": "exec", "effect": "allow", "pattern": "git status*"},
                        {"act": "exec", "effect": "allow", "pattern": "pytest"},
                        {"act": "exec", "effect": "deny", "pattern": "git push*"},
                    ],
                }
            ]
        }
    )
    assert policy.explain(Act.EXEC, "git status --short").effect is Effect.ALLOW
    assert policy.explain(Act.EXEC, "git push origin main").effect is Effect.DENY
    assert policy.explain(Act.EXEC, "git commit -m x").effect is Effect.ASK
    assert policy.explain(Act.EXEC, "pytest -q tests/test_a.py").effect is Effect.ALLOW
    assert policy.explain(Act.EXEC, "pytest-watch").effect is Effect.ASK


def test_a_rule_may_mark_commands_safe_to_repeat_after_a_crash(tmp_path: Path) -> None:
    """``idempotent = true`` on a rule: a call it matches that was in flight at a crash re-runs
    without the operator; a read always may; a deny beats the mark; anything else may not."""
    text = (
        '[defaults]\nexec = "allow"\n[[layers]]\nname = "project"\n'
        '[[layers.rules]]\nact = "exec"\neffect = "allow"\npattern = "pytest*"\n'
        "idempotent = true\n"
        '[[layers.rules]]\nact = "exec"\neffect = "deny"\npattern = "pytest --deploy*"\n'
    )
    p = Policy.load(write(tmp_path, text))
    assert p.safe_to_repeat(Act.EXEC, "pytest -q tests") == (
        "rule 'allow exec pytest* (idempotent)' in layer 'project' marks it idempotent"
    )
    assert p.safe_to_repeat(Act.READ, "src/app.py") == "it only reads"
    assert p.safe_to_repeat(Act.EXEC, "pytest --deploy prod") is None  # denied
    assert p.safe_to_repeat(Act.EXEC, "make install") is None
    assert p.safe_to_repeat(Act.WRITE, "pytest.ini") is None  # the mark is for its act only
    assert Policy.from_json(p.to_json()).safe_to_repeat(Act.EXEC, "pytest") is not None
    bad = text.replace("idempotent = true", 'idempotent = "yes"')
    with pytest.raises(PolicyError, match=r"rules\[0\]\.idempotent: expected true or false"):
        Policy.load(write(tmp_path, bad))
