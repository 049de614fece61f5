"""Secret redaction: API keys, tokens, passwords and private keys never reach summaries, facets or logs.

Each secret becomes `[REDACTED:<kind>]`. Where a secret is the value of a named field (`password=...`,
`Authorization: Bearer ...`, `https://user:pass@host`) the name is kept and only the value is replaced, so the
summary still says *that* a credential was there. Ordinary text, paths, git SHAs, sha256 digests and UUIDs are left
alone: no pattern matches bare hex.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_MARK = "[REDACTED:{}]"

# A token character run (base64url plus a few separators), used as the tail of several key formats.
_TOKEN = r"[A-Za-z0-9_\-]"

# Field names whose value is a secret: the name must END with one of these words (so `max_tokens=5` is not one).
_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key"
    r"|private[_\-]?key|auth[_\-]?key|client[_\-]?secret|credentials?)"
)
# A value worth hiding: not empty, not already redacted, not a variable reference ($VAR, ${VAR}, %VAR%, <placeholder>).
_VALUE_GUARD = r"(?!\[REDACTED)(?![$%<{])"


def _keep_group(kind: str, keep: int) -> Callable[[re.Match[str]], str]:
    """Replacement keeping groups 1..keep (the field name and separator) and hiding the rest of the match."""

    def replace(match: re.Match[str]) -> str:
        kept = "".join(match.group(i) or "" for i in range(1, keep + 1))
        return kept + _MARK.format(kind)

    return replace


_NAME_KINDS = (("pass", "password"), ("api", "api_key"), ("apikey", "api_key"), ("token", "token"),
               ("secret", "secret"), ("credential", "credentials"), ("key", "key"))


def _named_value(keep: int) -> Callable[[re.Match[str]], str]:
    """Like _keep_group, with the kind taken from the field name (password, token, api_key, ...)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        kind = next((k for word, k in _NAME_KINDS if word in name), "secret")
        return "".join(match.group(i) or "" for i in range(1, keep + 1)) + _MARK.format(kind)

    return replace


# Order matters: specific formats first, so e.g. `api_key = sk-...` is reported as an OpenAI key, and the
# generic assignment rule then sees an already-redacted value and leaves it.
_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)"),
     _MARK.format("private_key")),
    (re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'\"\[\]]+:)" + _VALUE_GUARD + r"([^\s@/'\"]+)(?=@)"),
     _keep_group("url_password", 1)),
    (re.compile(r"(?<![A-Za-z0-9_\-])sk-ant-" + _TOKEN + r"{16,}"), _MARK.format("anthropic_key")),
    # OpenAI keys (sk-..., sk-proj-...): require a digit so ordinary hyphenated words like sk-foo-bar are left alone.
    (re.compile(r"(?<![A-Za-z0-9_\-])sk-(?=" + _TOKEN + r"*\d)" + _TOKEN + r"{20,}"), _MARK.format("openai_key")),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), _MARK.format("github_token")),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), _MARK.format("github_token")),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _MARK.format("aws_access_key")),
    (re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"), _MARK.format("slack_token")),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), _MARK.format("google_api_key")),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), _MARK.format("jwt")),
    (re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|bearer|token|digest)\s+)?)" + _VALUE_GUARD
                + r"([A-Za-z0-9._~+/=\-]{8,})"), _keep_group("authorization", 1)),
    (re.compile(r"(?i)\b(bearer\s+)" + _VALUE_GUARD + r"([A-Za-z0-9._~+/=\-]{8,})"), _keep_group("bearer_token", 1)),
    # `--password hunter2`, `--api-key abc123` on command lines.
    (re.compile(r"(?i)(--(?:password|passwd|token|api-key|apikey|secret|client-secret)[ =])" + _VALUE_GUARD
                + r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']{3,})"), _named_value(1)),
    # Quoted values: "password": "x", api_key = 'x', token: "x".
    (re.compile(r"(?i)(?<![A-Za-z0-9])([\"']?" + _SECRET_NAME + r"[\"']?\s*[:=]\s*)([\"'])" + _VALUE_GUARD
                + r"((?:(?!\2)[^\\\n]|\\.){3,})(?=\2)"), _named_value(2)),
    # Unquoted values: password=hunter2, TOKEN: abc123, ?api_key=...&. A call or subscript (`os.environ[...]`,
    # `get_token()`) is code, not a literal secret.
    (re.compile(r"(?i)(?<![A-Za-z0-9])(" + _SECRET_NAME + r"\s*[:=]\s*)" + _VALUE_GUARD
                + r"(?![\"'])([^\s,;&\"'(){}\[\]<>]{4,})(?![(\[\w.])"), _named_value(1)),
]


# One quick scan for anything any rule could match; most texts (paths, commands, prose) have none of these.
_MAYBE_SECRET = re.compile(
    r"-----BEGIN|://[^\s/@]*:[^\s/@]*@|sk-|gh[pousr]_|github_pat_|AKIA|ASIA|xox|AIza|eyJ|authorization|bearer"
    r"|pass|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?key|credential", re.IGNORECASE)


def redact(text: str) -> tuple[str, int]:
    """Replace every secret in `text` by `[REDACTED:<kind>]`; return the new text and how many were replaced."""
    if not text or not _MAYBE_SECRET.search(text):
        return text, 0
    total = 0
    for pattern, replacement in _RULES:
        text, n = pattern.subn(replacement, text)
        total += n
    return text, total


def redact_obj(obj: Any) -> tuple[Any, int]:
    """Redact every string inside lists, tuples, dicts (keys kept) and pydantic models; return (copy, count).

    A pydantic model comes back as the same model type, validated from its redacted dump.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        total = 0
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            out[key], n = redact_obj(value)
            total += n
        return out, total
    if isinstance(obj, (list, tuple)):
        items = []
        total = 0
        for value in obj:
            new, n = redact_obj(value)
            items.append(new)
            total += n
        return (tuple(items) if isinstance(obj, tuple) else items), total
    if hasattr(obj, "model_dump") and hasattr(type(obj), "model_validate"):
        dumped, total = redact_obj(obj.model_dump())
        return type(obj).model_validate(dumped), total
    return obj, 0
