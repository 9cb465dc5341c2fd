"""What comes back from the world (files, commands, servers): secrets cut out, framed as data.

``redact`` runs on every tool result as it is made (``ToolOutcome``), so a secret never reaches
the store, the trace, the screen or the model. It cuts out, in this order:

1. the values of the harness's own secret-looking environment variables, wherever they appear
   (``[redacted $NAME]``);
2. each row of ``PATTERNS``: credentials known by their shape alone (private-key blocks, the
   token formats of the common providers, JWTs: ``[redacted NAME]``), and credentials known by
   what they are called (a URL's password, an ``Authorization`` header, the value assigned to a
   key that names a credential: only the value becomes ``[redacted]``).

The shapes follow the public rule sets of secret scanners (gitleaks' and detect-secrets'
token formats). The key rule is made for config, logs, ``env`` output and JSON as much as for
code, so it leaves alone what is code rather than a value: a name, an attribute, a call, a type,
a literal (``password_field = form.password``, ``def token(self)``, ``tokens: int``).

``frame`` heads each result with its source and says it is data: the system prompt tells the
model that nothing inside such a frame is an instruction, whatever it says.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from io_tui.core.text.heads import untrusted_head

REDACTED = "[redacted]"
# An environment variable is secret-looking when one of its ``_``-separated words is one of these.
SECRET_WORDS = frozenset(
    {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL",
     "CREDENTIALS", "AUTH", "PRIVATE", "DSN", "COOKIE"}
)  # fmt: skip
NOT_SECRET = frozenset({"PWD", "OLDPWD", "PATH", "XAUTHORITY"})
MIN_SECRET_CHARS = 6  # shorter values ("1", "true") would blank out unrelated text


Real = Callable[[re.Match[str], str], bool]  # (match, the original text): a secret after all?


@dataclass(frozen=True, slots=True)
class SecretPattern:
    """One row of ``PATTERNS``. ``regex`` finds a candidate; its ``secret`` group is cut out
    (replaced by ``[redacted]``), or the whole match (``[redacted NAME]``) when it has none;
    ``real`` may still say the match is not a secret (code, a placeholder). ``needles`` spare
    the regex a text that cannot hold a match (gitleaks' ``keywords``): most texts hold none.

    A case-blind row is written in lower case and searched in the text's lower-case copy (ten
    times faster than ``re.IGNORECASE``); ``real`` reads the original at the same places."""

    name: str
    needles: tuple[str, ...]  # it can match only where one of these is (in lower case)
    regex: re.Pattern[str]
    real: Real

    @property
    def folded(self) -> re.Pattern[str] | None:
        """The case-blind row as a case-sensitive regex for the lower-case copy."""
        if not self.regex.flags & re.IGNORECASE:
            return None
        return _case_sensitive(self.regex.pattern, self.regex.flags & ~re.IGNORECASE)

    def sub(self, text: str, low: str) -> str:
        folded = self.folded
        source, regex = (low, folded) if folded and len(low) == len(text) else (text, self.regex)
        marked = "secret" in regex.groupindex
        out: list[str] = []
        done = 0
        for m in regex.finditer(source):
            if self.real(m, text):
                start, end = m.span("secret") if marked else m.span()
                out += (text[done:start], REDACTED if marked else f"[redacted {self.name}]")
                done = end
        return "".join(out) + text[done:] if out else text


@functools.cache
def _case_sensitive(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _any(m: re.Match[str], text: str) -> bool:
    return True


def _random(m: re.Match[str], text: str) -> bool:
    """A generated key mixes letters and digits (``sk-loading-spinner-x`` is a CSS class)."""
    found = m[0]
    return any(c.isdigit() for c in found) and any(c.isalpha() for c in found)


# -- a value assigned to a key that names a credential ---------------------------------------

# The key's last word names a credential: db_password, dbPassword, "password", X-Auth-Token,
# aws_secret_access_key, client_secret, apiKey; not password_field, tokens, max_tokens_used.
_KEY_WORDS = (
    r"passw(?:or)?d|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|credentials?|authorization"
)
# Found by its last word, then read back to the key's start (``_key``): a regex that began at
# the key would try every length of every word in the text.
_KEY_NEEDLES = ("passw", "pwd", "passphrase", "secret", "token", "key", "credential", "authorization")  # fmt: skip
_KEYED = re.compile(
    r"(?:" + _KEY_WORDS + r")(?![\w.-])(?P<kq>[\"']?)"
    r"(?P<sep>[ \t]*(?:=>|:=|:|=)(?![=>])[ \t]*)"
    r"(?P<q>[\"'`])?"
    # a string literal's text, or a bare word not followed by a call or an index
    r"(?P<secret>(?(q)(?:(?!(?P=q))[^\n\\]|\\.)*|[^\s\"'`,;&()\[\]{}<>]++(?![(\[])))"
    r"(?(q)(?P=q))",
    re.IGNORECASE,
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
MAX_KEY_CHARS = 64


def _key(m: re.Match[str], text: str) -> str | None:
    """The whole key whose last word the match begins with (None: its quotes do not pair)."""
    start, end = m.start(), m.start("kq")
    while start > 0 and text[start - 1] in _KEY_CHARS and end - start < MAX_KEY_CHARS:
        start -= 1
    quote = m["kq"]
    if quote and (start == 0 or text[start - 1] != quote):
        return None
    return text[start:end]


_LITERALS = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "yes", "no", "on", "off", "required",
     "optional", "str", "string", "int", "bytes", "bool", "float", "any", "object", "secretstr",
     "await", "new", "function", "lambda", "async", "yield", "not", "typeof", "this", "self",
     "value", "val", "basic", "bearer", "password", "pass", "passwd", "secret"}
)  # fmt: skip
# $X, ${X}, {{ x }}, <yours>, ***, sk-..., %s, a comment; or already cut
_PLACEHOLDER = re.compile(r"^(?:\$|%|\{|<|#|\*+$)|\$\{|<\w[\w -]*>|(?:\.\.\.|…)$|\[redacted")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)+$")  # form.password, self._token, os.environ
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
_NUMBER = re.compile(r"^[-+]?\d[\d.]*$")


def _keyed_value(m: re.Match[str], text: str) -> bool:
    """Whether what is assigned to the credential-named key is a value (cut it) or code."""
    value, key = text[m.start("secret") : m.end("secret")], _key(m, text)
    low, after = value.lower(), text[m.end() : m.end() + 2]
    if key is None or key.upper() in NOT_SECRET or low in _LITERALS:
        return False
    if not any(c.isalnum() for c in value) or _PLACEHOLDER.search(value):
        return False
    digit = any(c.isdigit() for c in value)
    if m["q"]:  # a string literal: its text is the value, unless it names a key ("refresh_token")
        return digit or not (_IDENTIFIER.match(value) and re.search(_KEY_WORDS, low))
    if re.search(_KEY_WORDS, low) or _DOTTED.match(value) or _NUMBER.match(value):
        return False  # token = access_token, password = form.password, max_token: 4096
    if after[:1] in ("'", '"'):
        return False  # b"…", r"…", f"…": the prefix of a string literal
    if not _IDENTIFIER.match(value):
        return True
    # A bare word: a value in config, env output and logs, a name in code.
    sep = m["sep"]
    if sep.strip() == ":":
        if m["kq"] or after[:1] in (",", ")", "}") or (value[0].isupper() and not digit):
            return False  # {"token": tok} / {token: tok,} (code), a type (token: Token)
        return digit or not re.match(r"\s[A-Za-z]", after)  # prose: "token: the token it gave"
    if sep != sep.strip():  # spaced as code is: ``username, password = auth``
        return (digit and "_" not in value) or _config_line(m, text)
    # password=x: env output, .env files, query strings; code's keyword argument
    camel = value[0].islower() and not value.islower()
    return key.isupper() or not (after[:1] in (",", ")") or "_" in value or camel)


def _config_line(m: re.Match[str], text: str) -> bool:
    """``key = value`` alone on its line, unindented: an INI or properties file's."""
    line_start = text.rfind("\n", 0, m.start()) + 1
    line_end = text.find("\n", m.end())
    rest = text[m.end() : None if line_end < 0 else line_end].strip()
    head = text[line_start : m.start()]
    return (not rest or rest.startswith(("#", ";"))) and all(c in _KEY_CHARS for c in head)


# ``NAME=value`` as ``env``, ``export`` and ``.env`` files write it: an upper-case name, no spaces
_ENV_ASSIGNMENT = re.compile(
    r"""(?P<name>(?<!\w)[A-Z][A-Z0-9_]{0,80})=(?P<q>["'])?(?P<secret>(?(q)[^"'\n]*|[^\s"']+))(?(q)(?P=q))"""
)


def _env_value(m: re.Match[str], text: str) -> bool:
    value = m["secret"]
    if not secret_name(m["name"]) or len(value) < 3 or value.lower().rstrip(".,") in _LITERALS:
        return False  # KEY=VALUE in a help text
    return not _PLACEHOLDER.search(value)


def _url_password(m: re.Match[str], text: str) -> bool:
    """Not a placeholder: ``scheme://user:password@host``, ``user:<password>@``."""
    value = m["secret"]
    return value.lower() not in _LITERALS and not _PLACEHOLDER.search(value)


def _row(name: str, needles: str, regex: str, flags: int = 0, real: Real = _any) -> SecretPattern:
    return SecretPattern(name, tuple(needles.split()), re.compile(regex, flags), real)


# fmt: off
PATTERNS: tuple[SecretPattern, ...] = (
    #    name              needles (lower case)
    #    regex
    # a PEM block: to its END line (a key is under 10 kB, line numbers and all), or as much
    # body as there is (a key cut short)
    _row("private key",    "private",
         r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
         r"(?:[\s\S]{0,10000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
         r"|[A-Za-z0-9+/=\s:,.│-]{20,})"),
    # scheme://user:password@host, also redis://:password@host
    _row("url password",   "://",
         r"(?<![\w+.-])[a-zA-Z][\w+.-]{0,30}://[^\s:/@]*:(?P<secret>[^\s@/]+)(?=@)",
         real=_url_password),
    # Authorization: Bearer …, "authorization": "Basic …", Proxy-Authorization: …
    _row("authorization",  "authorization",
         r"\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
         r"(?:bearer|basic|token|digest|negotiate)\s+(?P<secret>[\w.~+/-]{6,}=*)", re.IGNORECASE),
    _row("bearer token",   "bearer",
         r"\bBearer\s+(?P<secret>[\w.~+/-]{16,}=*)"),
    _row("aws access key", "akia asia abia acca",
         r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    _row("github token",   "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
         r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_\w{22,}"),
    _row("gitlab token",   "glpat-",
         r"\bglpat-[\w-]{20,}"),
    # OpenAI's sk-… and sk-proj-…, Anthropic's sk-ant-api03-…; a CSS class has no digit
    _row("api key",        "sk-",
         r"\bsk-(?:[a-z0-9]+-){0,2}[\w-]{20,}", real=_random),
    _row("stripe key",     "k_live_ k_test_ k_prod_",
         r"\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    _row("slack token",    "xox xapp-",
         r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}|\bxapp-[\w-]{10,}"),
    _row("slack webhook",  "hooks.slack.com",
         r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}"),
    _row("google api key", "aiza",
         r"\bAIza[\w-]{35}"),
    _row("npm token",      "npm_",
         r"\bnpm_[A-Za-z0-9]{36}\b"),
    _row("pypi token",     "pypi-",
         r"\bpypi-AgEIcHlwaS5vcmc[\w-]{50,}"),
    _row("hugging face token", "hf_",
         r"\bhf_[A-Za-z0-9]{34}\b"),
    # header.payload.signature, each base64url; the first two are JSON objects ("eyJ")
    _row("jwt",            "eyj",
         r"\beyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]*"),
    # password: x, "password": "x", secret=x, X-Auth-Token: x, aws_secret_access_key = x
    SecretPattern("keyed value", _KEY_NEEDLES, _KEYED, _keyed_value),
    # AWS_SECRET_ACCESS_KEY=x, export GITHUB_TOKEN='x' (env output, .env files)
    SecretPattern("environment value", ("=",), _ENV_ASSIGNMENT, _env_value),
)
# fmt: on


def secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    upper = name.upper()
    if upper in NOT_SECRET:
        return False
    words = upper.split("_")
    return any(w in SECRET_WORDS for w in words) or upper.endswith(("PASSWORD", "TOKEN", "SECRET"))


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """(value, name) of the secret-looking variables in ``environ`` (the process's), longest
    value first so one that contains another is replaced whole. Found once per environment:
    every tool outcome is redacted, and the names are checked again only when it changes."""
    if environ is None:
        return _process_secrets()
    return _secrets_among(tuple(environ.items()))


# the process's environment as last scanned (its raw bytes dict, copied) and what it holds:
# comparing the copy with ``os.environ``'s own dict is one C-level compare, where listing its
# items decodes every name and value again
_scanned: tuple[dict[bytes, bytes], tuple[tuple[str, str], ...]] | None = None


def _process_secrets() -> tuple[tuple[str, str], ...]:
    global _scanned
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):  # not CPython's os._Environ: scan it as any mapping
        return _secrets_among(tuple(os.environ.items()))
    scanned = _scanned
    if scanned is not None and scanned[0] == raw:
        return scanned[1]
    copy = dict(raw)
    found = _secrets_among(tuple(os.environ.items()))
    _scanned = (copy, found)
    return found


@functools.lru_cache(maxsize=8)
def _secrets_among(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    found = [(v, k) for k, v in items if secret_name(k) and len(v) >= MIN_SECRET_CHARS]
    return tuple(sorted(found, key=lambda pair: -len(pair[0])))


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret it shows replaced by a marker naming what it was."""
    if not text:
        return text
    for value, name in secret_values(environ):
        if value in text:
            text = text.replace(value, f"[redacted ${name}]")
    low = text.lower()
    for pattern in PATTERNS:
        for needle in pattern.needles:  # (a loop, not ``any`` over a generator: every outcome)
            if needle in low:
                cut = pattern.sub(text, low)
                if cut is not text:
                    text, low = cut, cut.lower()
                break
    return text


def frame(tool: str, target: str, text: str, named: bool = False) -> str:
    """A tool's result headed with where it came from, as data (the system prompt's terms).
    ``named``: the result's own first line names ``target`` (a command's echoed argv), so the
    header names the tool alone rather than say it twice."""
    source = f"{tool} {target}" if target and target != tool and not named else tool
    return f"{untrusted_head(source)}\n{text}"
