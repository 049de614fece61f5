"""Secret redaction: API keys, tokens, passwords and private keys never reach summaries, facets or logs.

Each secret becomes `[REDACTED:<kind>]`. Where a secret is the value of a named field (`password=...`,
`Authorization: Bearer ...`, `https://user:pass@host`) the name is kept and only the value is replaced, so the
summary still says *that* a credential was there. Ordinary text, paths, git SHAs, sha256 digests and UUIDs are left
alone: no pattern matches bare hex.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

_MARK = "[REDACTED:{}]"

# A token character run (base64url plus a few separators), used as the tail of several key formats.
_TOKEN = r"[A-Za-z0-9_\-]"

# Field names whose value is a secret: the name must END with one of these words (so `max_tokens=5` is not one).
_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key"
    r"|private[_\-]?key|auth[_\-]?key|client[_\-]?secret|secret[_\-]?key|credentials?)"
)
# A value worth hiding: not empty, not already redacted, not a variable reference ($VAR, ${VAR}, %VAR%, <placeholder>).
_VALUE_GUARD = r"(?!\[REDACTED)(?![$%<{])"


def _keep_group(kind: str, keep: int) -> Callable[[re.Match[str]], str]:
    """Replacement keeping groups 1..keep (the field name and separator) and hiding the rest of the match."""

    def replace(match: re.Match[str]) -> str:
        kept = "".join(match.group(i) or "" for i in range(1, keep + 1))
        return kept + _MARK.format(kind)

    return replace


_NAME_KINDS = (("pass", "password"), ("pw", "password"), ("api", "api_key"), ("apikey", "api_key"), ("token", "token"),
               ("secret", "secret"), ("credential", "credentials"), ("key", "key"))


def _named_value(keep: int) -> Callable[[re.Match[str]], str]:
    """Like _keep_group, with the kind taken from the field name (password, token, api_key, ...)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        kind = next((k for word, k in _NAME_KINDS if word in name), "secret")
        return "".join(match.group(i) or "" for i in range(1, keep + 1)) + _MARK.format(kind)

    return replace


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    replacement: str | Callable[[re.Match[str]], str]
    # Lower-case words one of which every match holds (its text lower-cased): a text with none of them is not
    # scanned at all. None: the pattern has no such word and scans every text.
    words: tuple[str, ...] | None
    # Where a match can lie, which says how much of a long text is scanned and how: the regex engine holds the
    # interpreter lock for a whole call, so the window's thread waits while one call runs.
    # "run": anywhere, without whitespace: a long text is scanned a window of PIECE_CHARS at a time;
    # "lines": from the line holding one of `words` on through at most REACH more lines that are not blank
    #   (`password:\n  hunter2`): only those lines are scanned, a window at a time;
    # "text": anywhere, spanning lines (a private key block); the pattern starts with its word, so the regex engine
    #   skips to it at once.
    scope: Literal["run", "lines", "text"] = "run"


# The window a long text is scanned in (twice this, overlapping by this): the slowest pattern takes a few ms on it.
PIECE_CHARS = 8192
REACH = 3  # the most whitespace gaps in a "lines" match (authorization ⎵ : ⎵ bearer ⎵ value)

_SECRET_WORDS = ("pass", "secret", "token", "key", "credential")
# What may lie between a command and its password flag: one command's arguments, not the rest of a long line (on a
# 30,000-character line `docker login host` took a `mysql -p appdb` far later as its password); and well under
# PIECE_CHARS, so a match never spans more than the overlap of the windows a long text is scanned in.
_COMMAND_GAP = r"[^\n|;&]{0,500}?"

# Words that name a credential in prose ("my password is", "use this token").
_PROSE_NAME = r"(?:passwords?|passphrase|passwd|secret|token|api[ _\-]?key|access[ _\-]?key|credentials?)"
_PROSE_WORDS = ("pass", "secret", "token", "key", "credential")
# What may stand between a credential's name and `is` in prose: one short phrase saying whose or for what
# ("the password for the staging db is ..."), not any words ("the token limit is 128000" is a setting).
_WHOSE = r"(?:\s+(?:for|to|of|on|at)\s+(?:(?:the|my|our|your|this|that)\s+)?[\w.@:/\-]+(?:\s+(?:db|server|box|account))?)?"
# detect-secrets' limit for hex strings (HexHighEntropyString): a random 32-hex string measures about 3.5.
HEX_ENTROPY_LIMIT = 3.0
# Words that say a hex or base64 run is a digest or an id, not a credential.
_DIGEST_WORDS = re.compile(
    r"(?i)\b(?:sha\d*(?:sum)?|md5(?:sum)?|hash(?:es)?|digests?|checksums?|commits?|integrity|uuid|revision|rev"
    r"|fingerprint)\b")


def _password_like(match: re.Match[str]) -> str:
    """The `password is` rule's replacement: a value of 6 characters or more with a digit or a symbol in it (a
    hyphen, dot or underscore between words is not one: `the token is re-issued`)."""
    value = match.group(2)
    if len(value) < 6 or not any(c.isdigit() or not (c.isalpha() or c in "-._") for c in value):
        return match.group(0)
    return _named_value(1)(match)


def _random_after_name(match: re.Match[str]) -> str:
    """The prose rule's replacement: the value hidden if it looks random and no digest word precedes it."""
    value = match.group(3)
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    if _DIGEST_WORDS.search(match.string, line_start, match.start(3)):
        return match.group(0)
    is_hex = all(c in "0123456789abcdefABCDEF" for c in value)
    if is_hex and len(value) < 32:
        return match.group(0)
    entropy = _entropy()
    limit = HEX_ENTROPY_LIMIT if is_hex else entropy.entropy_limit
    if entropy.calculate_shannon_entropy(value) <= limit:
        return match.group(0)
    return _named_value(2)(match)


# Order matters: specific formats first, so e.g. `api_key = sk-...` is reported as an OpenAI key, and the
# generic assignment rule then sees an already-redacted value and leaves it.
_RULES: list[_Rule] = [
    _Rule(re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                     r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), _MARK.format("private_key"),
          ("-----begin",), "text"),
    _Rule(re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'\"\[\]]+:)" + _VALUE_GUARD + r"([^\s@/'\"]+)(?=@)"),
          _keep_group("url_password", 1), ("://",)),
    _Rule(re.compile(r"(?<![A-Za-z0-9_\-])sk-ant-" + _TOKEN + r"{16,}"), _MARK.format("anthropic_key"), ("sk-ant-",)),
    # OpenAI keys (sk-..., sk-proj-...): require a digit so ordinary hyphenated words like sk-foo-bar are left alone.
    _Rule(re.compile(r"(?<![A-Za-z0-9_\-])sk-(?=" + _TOKEN + r"*\d)" + _TOKEN + r"{20,}"), _MARK.format("openai_key"),
          ("sk-",)),
    # Without a digit, only a long random-looking tail is a key (sk-some-hyphenated-name is not).
    _Rule(re.compile(r"(?<![A-Za-z0-9_\-])sk-" + _TOKEN + r"{32,}"), lambda m: _if_random(m, "openai_key"), ("sk-",)),
    _Rule(re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"), _MARK.format("stripe_key"), ("k_live_", "k_test_")),
    _Rule(re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), _MARK.format("huggingface_token"), ("hf_",)),
    _Rule(re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), _MARK.format("npm_token"), ("npm_",)),
    _Rule(re.compile(r"(?i)(AccountKey=)" + _VALUE_GUARD + r"([A-Za-z0-9+/]{20,}={0,2})"), _keep_group("azure_key", 1),
          ("accountkey=",)),
    _Rule(re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), _MARK.format("github_token"), ("github_pat_",)),
    _Rule(re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), _MARK.format("github_token"),
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _Rule(re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _MARK.format("aws_access_key"), ("akia", "asia")),
    _Rule(re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"), _MARK.format("slack_token"), ("xox",)),
    # A Slack incoming webhook's URL is its credential: the path after /services/ (workspace, channel, secret).
    _Rule(re.compile(r"(?i)(\bhooks\.slack\.com/services/)(T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)"),
          _keep_group("slack_webhook", 1), ("hooks.slack.com/services/",)),
    _Rule(re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}"), _MARK.format("google_oauth_secret"), ("gocspx-",)),
    _Rule(re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), _MARK.format("google_api_key"), ("aiza",)),
    _Rule(re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), _MARK.format("jwt"), ("eyj",)),
    _Rule(re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|bearer|token|digest)\s+)?)" + _VALUE_GUARD
                     + r"([A-Za-z0-9._~+/=\-]{8,})"), _keep_group("authorization", 1), ("authorization",), "lines"),
    _Rule(re.compile(r"(?i)\b(bearer\s+)" + _VALUE_GUARD + r"([A-Za-z0-9._~+/=\-]{8,})"),
          _keep_group("bearer_token", 1), ("bearer",), "lines"),
    # Passwords given to well-known commands: curl -u user:pass, mysql -pPASS, sshpass -p PASS, docker login -p PASS.
    _Rule(re.compile(r"(\bcurl\b" + _COMMAND_GAP + r"\s(?:-u|--user)[ =]?[\"']?[^\s:\"']+:)" + _VALUE_GUARD + r"([^\s\"']+)"),
          _keep_group("password", 1), ("curl",), "lines"),
    _Rule(re.compile(r"(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b" + _COMMAND_GAP + r"\s-p)" + _VALUE_GUARD
                     + r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)"), _keep_group("password", 1), ("mysql", "mariadb"), "lines"),
    _Rule(re.compile(r"(\b(?:sshpass|docker\s+login|podman\s+login)\b" + _COMMAND_GAP + r"\s-p\s*)" + _VALUE_GUARD
                     + r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)"), _keep_group("password", 1), ("sshpass", "docker", "podman"), "lines"),
    # `--password hunter2`, `--api-key abc123` on command lines.
    _Rule(re.compile(r"(?i)(--(?:password|passwd|token|api-key|apikey|secret|client-secret)[ =])" + _VALUE_GUARD
                     + r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']{3,})"), _named_value(1),
          ("--pass", "--token", "--api", "--secret", "--client-secret"), "lines"),
    # `pwd: hunter2x`; not PWD=/home/user (the working directory in `env`'s output) nor OLDPWD.
    _Rule(re.compile(r"(?i)(?<![A-Za-z0-9_])(pwd\s*[:=]\s*)(?![/~.\[])" + _VALUE_GUARD + r"([^\s,;&\"'(){}\[\]<>]{4,})"),
          _keep_group("password", 1), ("pwd",), "lines"),
    # Quoted values: "password": "x", api_key = 'x', token: "x".
    _Rule(re.compile(r"(?i)(?<![A-Za-z0-9])([\"']?" + _SECRET_NAME + r"[\"']?\s*[:=]\s*)([\"'])" + _VALUE_GUARD
                     + r"((?:(?!\2)[^\\\n]|\\.){3,})(?=\2)"), _named_value(2), _SECRET_WORDS, "lines"),
    # Unquoted values: password=hunter2, TOKEN: abc123, ?api_key=...&. A call or subscript (`os.environ[...]`,
    # `get_token()`) is code, not a literal secret.
    _Rule(re.compile(r"(?i)(?<![A-Za-z0-9])(" + _SECRET_NAME + r"\s*[:=]\s*)" + _VALUE_GUARD
                     + r"(?![\"'])([^\s,;&\"'(){}\[\]<>]{4,})(?![(\[\w.])"), _named_value(1), _SECRET_WORDS, "lines"),
]


# detect-secrets is loaded when the first text is redacted, not when Precis starts (its import takes a quarter of a
# second).

@functools.cache
def _entropy() -> Base64HighEntropyString:
    """detect-secrets' entropy measure and its default limit for base64 text."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def _if_random(match: re.Match[str], kind: str) -> str:
    token, entropy = match.group(0), _entropy()
    return _MARK.format(kind) if entropy.calculate_shannon_entropy(token) > entropy.entropy_limit else token


def _aws_secret(match: re.Match[str]) -> str:
    """An AWS secret access key on its own: mixed case and digits, random by detect-secrets' entropy measure (a hex
    commit id or a path of words stays well under it)."""
    token = match.group(0)
    if token.islower() or token.isupper() or not any(c.isdigit() for c in token):
        return token
    return _if_random(match, "aws_secret_key")


# 40 base64 characters standing alone (the case and digit checks are done on the few runs found: as lookaheads
# tried at every position they made this the slowest pattern).
_RULES.append(_Rule(re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), _aws_secret, None))

# Prose last: a value a specific rule names (an AWS secret key after `the secret part is`) keeps its kind.
_RULES += [
    # Prose: `my password is hunter2`, `the token was Zx9...`: the value must look like one (a digit or a symbol in
    # it), so `the password is required.` stays.
    _Rule(re.compile(r"(?i)(?<!REDACTED:)\b((?:" + _PROSE_NAME + r"|pwd?)" + _WHOSE + r"\s+(?:is|was):?\s+[\"'`]?)"
                     + _VALUE_GUARD + r"(?![/~])([^\s\"'`]*[^\s\"'`.,;:!?)])(?=[\"'`]?[.,;:!?)]*(?:\s|$))"),
          _password_like, _PROSE_WORDS + ("pw",), "lines"),
    # A key named in two words, which the field rules above do not take for a name: `API key: AbC123xyz789`,
    # `access key = ...`; its value must look like one (`API key: required` stays).
    _Rule(re.compile(r"(?i)(?<!REDACTED:)\b((?:api|access|private|secret|auth|signing|encryption)[ \t]+key\s*[:=]\s*"
                     r"[\"'`]?)" + _VALUE_GUARD + r"(?![/~])([^\s\"'`]*[^\s\"'`.,;:!?)])(?=[\"'`]?[.,;:!?)]*(?:\s|$))"),
          _password_like, ("key",), "lines"),
    # A password written straight after its name: `use password hunter22 to log in`. Only a value with a letter
    # and a digit or symbol: `the password field`, `password reset` and `password 123456` (a count?) stay.
    _Rule(re.compile(r"(?i)(?<![\w\-])((?:password|passwd|passphrase)\s+)" + _VALUE_GUARD
                     + r"(?=[^\s]*[A-Za-z])(?=[^\s]*[\d!@#$%^&*])([^\s\"'`,;()\[\]{}<>]*[^\s\"'`.,;:!?()\[\]{}<>])"
                     r"(?=[.,;:!?)]*(?:\s|$))"), _password_like, ("pass",), "lines"),
    # Prose naming a credential, its random-looking value a few words on in the same sentence: `use this token for the
    # staging box: 3f9a...`, `token 9c2e...`. A run of at least 32 hex digits or 20 base64 characters (letters and
    # digits both) whose entropy is a random string's, with no word for a digest or commit before it on its line: a
    # 40-hex git SHA or a 64-hex sha256 digest is ordinary in a coding session and stays; an unlabelled one stays too
    # (no rule can tell a pasted token from a checksum without its label).
    _Rule(re.compile(r"(?i)(?<!REDACTED:)\b(" + _PROSE_NAME + r")\b((?:[^\n.!?]|[.!?](?!\s)){0,60}?)"
                     r"(?<![A-Za-z0-9+/=_\-])(?=[A-Za-z+/_\-]*\d)(?=[0-9+/_\-]*[A-Za-z])([A-Za-z0-9+/_\-]{20,}={0,2})"
                     r"(?![A-Za-z0-9+/=_\-]|\.\w)"), _random_after_name, _PROSE_WORDS, "lines"),
]


# What every match of each detector's patterns holds (tests/core/test_redact.py checks it against the patterns).
_DETECTOR_WORDS: dict[str, tuple[str, ...]] = {
    "gitlab_token": ("gl", "gr1348941"), "pypi_token": ("pypi-",), "sendgrid_key": ("sg.",), "twilio_key": ("ac", "sk"),
    "mailchimp_key": ("-us",), "discord_token": (".",), "square_token": ("sq0csp-",), "azure_key": ("accountkey=",)}


@functools.cache
def _all_rules() -> list[_Rule]:
    """The rules above, then detect-secrets' token formats that none of them covers (each a run of non-space
    characters; their whole matches are replaced: the plugins' own findall yields only their groups)."""
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    detectors: list[tuple[RegexBasedDetector, str]] = [
        (GitLabTokenDetector(), "gitlab_token"), (PypiTokenDetector(), "pypi_token"),
        (SendGridDetector(), "sendgrid_key"), (TwilioKeyDetector(), "twilio_key"), (MailchimpDetector(), "mailchimp_key"),
        (DiscordBotTokenDetector(), "discord_token"), (SquareOAuthDetector(), "square_token"),
        (AzureStorageKeyDetector(), "azure_key")]
    return _RULES + [_Rule(pattern, _MARK.format(kind), _DETECTOR_WORDS[kind]) for detector, kind in detectors
                     for pattern in detector.denylist]


_WORDS = sorted({word for rule in _RULES for word in rule.words or ()} | {w for ws in _DETECTOR_WORDS.values() for w in ws})


@functools.cache
def _rules_for(words: frozenset[str]) -> list[_Rule]:
    """The rules, in order, that may match a text holding `words` (and no other rule's words)."""
    return [rule for rule in _all_rules() if rule.words is None or not words.isdisjoint(rule.words)]


def _folded(text: str) -> str:
    """`text` lower-cased for finding rules' words, position for position. The letters the patterns' (?i) matches to
    ASCII ones are folded to them (dotted capital I, which lower-cases to two characters; long s; dotless i)."""
    if text.isascii():
        return text.lower()
    return text.replace("İ", "i").lower().replace("ſ", "s").replace("ı", "i")


def _line_spans(text: str, low: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """The stretches of `text` a "lines" match can lie in: from the start of each line holding one of `words` to the
    end of the REACH-th line after it that is not blank; overlapping stretches joined."""
    spans = []
    for word in words:
        at = low.find(word)
        while at >= 0:
            start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
            reached = 0
            while end >= 0 and reached < REACH:
                following = text.find("\n", end + 1)
                if text[end + 1:following if following >= 0 else len(text)].strip():
                    reached += 1
                end = following
            end = len(text) if end < 0 else end
            spans.append((start, end))
            # The next line holding the word starts a span of its own, though this one covers it: its reach may
            # run past this one's end (`password:` on this span's last line, its value on the line after).
            next_line = text.find("\n", at)
            at = low.find(word, next_line + 1) if next_line >= 0 else -1
    spans.sort()
    joined: list[tuple[int, int]] = []
    for start, end in spans:
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def _matches(pattern: re.Pattern[str], text: str, pos: int, end: int) -> Iterator[re.Match[str]]:
    """The matches `pattern.sub` finds in text[pos:end], each call scanning at most 2 * PIECE_CHARS characters (a
    match longer than PIECE_CHARS may be missed: no secret is that long)."""
    while pos < end:
        limit = min(pos + 2 * PIECE_CHARS, end)
        match = pattern.search(text, pos, limit)
        if match is None:
            pos = limit if limit == end else limit - PIECE_CHARS
        elif match.start() >= pos + PIECE_CHARS and limit < end:  # seen whole from a window starting there
            pos = match.start()
        else:
            if match.end() == limit < end:  # cut by the window: as long as it runs on
                match = pattern.match(text, match.start(), end) or match
            yield match
            pos = match.end()


def _apply(rule: _Rule, text: str, low: str, replace: Callable[[re.Match[str]], str]) -> str:
    """`rule` applied to `text` (`low`: it folded); a long text a window at a time, or only near the rule's words."""
    if rule.scope == "text" or (rule.scope == "run" and len(text) <= 2 * PIECE_CHARS):
        return rule.pattern.sub(replace, text)
    if rule.scope == "run":
        spans = [(0, len(text))]
    else:
        assert rule.words is not None, "a 'lines' rule names the words its lines hold (RULES)"
        spans = _line_spans(text, low, rule.words)
    out: list[str] = []
    done = 0
    for start, end in spans:
        for match in _matches(rule.pattern, text, max(start, done), end):
            out += (text[done:match.start()], replace(match))
            done = match.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


class KnownSecrets:
    """Secret values found where they were labelled (`password=hunter2x`), to hide wherever they appear bare
    (`I used hunter2x`): a summary may repeat a value without the label that gave it away. Built by secrets_in."""

    def __init__(self, kinds: dict[str, str]):
        self.kinds = kinds
        alternatives = "|".join(re.escape(value) for value in sorted(kinds, key=len, reverse=True))
        # Anywhere, inside longer words too: `-pS3cret42` or `S3cret42x` still gives the value away.
        self.pattern = re.compile(alternatives) if kinds else None

    def hide(self, text: str) -> tuple[str, int]:
        if self.pattern is None:
            return text, 0
        return self.pattern.subn(lambda m: _MARK.format(self.kinds[m.group(0)]), text)


def _worth_remembering(value: str) -> bool:
    """A value distinctive enough to hide wherever it appears: not a short or ordinary word (`required`, `admin`)
    that would blank out ordinary text, nor a PEM armour line."""
    letters_only = value.isalpha()
    return (len(value) >= 6 and any(c.isalnum() for c in value) and not value.startswith("-")
            and (not letters_only or len(value) >= 12))


def _remember(found: dict[str, str], hidden: str, kind: str) -> None:
    hidden = hidden.strip().strip("\"'")
    # A multi-line secret (a private key block) is remembered line by line: a reply may quote one line of it.
    pieces = hidden.split() if "\n" in hidden else [hidden]
    for piece in pieces:
        if len(piece) >= 16 if len(pieces) > 1 else _worth_remembering(piece):
            found.setdefault(piece, kind)


def _redact(text: str, found: dict[str, str] | None) -> tuple[str, int]:
    if not text:
        return text, 0
    total = 0

    def counted(replacement: str | Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            nonlocal total
            out = replacement(match) if callable(replacement) else replacement
            if out != match.group(0):  # an entropy rule may leave a match as it was
                total += 1
                if found is not None:  # the mark ends the replacement; what it stands for follows the kept name
                    mark = out.rindex("[REDACTED:")
                    _remember(found, match.group(0)[mark:], out[mark + len("[REDACTED:"):-1])
            return out
        return replace

    low = _folded(text)
    # The words found decide the rules that scan the text: a replacement adds none that a rule could then match
    # (rules leave marks alone) and removes none that an unmatched rule needed.
    for rule in _rules_for(frozenset(word for word in _WORDS if word in low)):
        replaced = total
        text = _apply(rule, text, low, counted(rule.replacement))
        if total != replaced:
            low = _folded(text)
    return text, total


def redact(text: str, known: KnownSecrets | None = None) -> tuple[str, int]:
    """Replace every secret in `text` by `[REDACTED:<kind>]`; return the new text and how many were replaced.
    `known` secrets (from the messages a summary covers) are hidden too wherever they appear."""
    text, total = _redact(text, None)
    if known is not None:
        text, more = known.hide(text)
        total += more
    return text, total


def secrets_in(obj: Any) -> tuple[int, KnownSecrets]:
    """How many secrets the strings in `obj` hold (counted as redact_obj counts them), and their values."""
    found: dict[str, str] = {}
    count = _walk(obj, lambda text: _redact(text, found))[1]
    return count, KnownSecrets(found)


def redact_obj(obj: Any, known: KnownSecrets | None = None) -> tuple[Any, int]:
    """Redact every string inside lists, tuples, dicts (keys kept) and pydantic models; return (copy, count).

    A pydantic model comes back as the same model type, validated from its redacted dump.
    """
    return _walk(obj, lambda text: redact(text, known))


def _walk(obj: Any, redact_text: Callable[[str], tuple[str, int]]) -> tuple[Any, int]:
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        total = 0
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            out[key], n = _walk(value, redact_text)
            total += n
        return out, total
    if isinstance(obj, (list, tuple)):
        items = []
        total = 0
        for value in obj:
            new, n = _walk(value, redact_text)
            items.append(new)
            total += n
        return (tuple(items) if isinstance(obj, tuple) else items), total
    if hasattr(obj, "model_dump") and hasattr(type(obj), "model_validate"):
        dumped, total = _walk(obj.model_dump(), redact_text)
        return type(obj).model_validate(dumped), total
    return obj, 0
