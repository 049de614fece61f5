"""Gold facts of a transcript, extracted independently of Precis (this module imports nothing from precis).

The summarizers build their artifact trail with precis.core.summary.trail_coverage; grading them with the same code
would measure agreement with the trail's format. These rules are written separately, from the interchange
format alone (tests/data/transcripts/README.md), so a summary is graded by what it says, not how.

Kinds: files read, changed or named (in a command, the user's or the assistant's text), commands with their outcome,
error names (the errors the session hit: in the output of commands run; a file read, viewed or edited shows its
text, and a `rescue ArgumentError` there is not an error, whether a tool or `cat`, `grep` or `git diff` shows it),
the user's requests and corrections, and the state of the task at the cut (the last files touched and the last
command before it).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

KINDS = ("files", "commands", "errors", "requests", "state")
COMMAND_PREFIX = 40  # a command is kept when its first 40 characters (whitespace collapsed) are in the text
REQUEST_WORDS = 8  # a request is known by up to 8 of its distinctive words...
REQUEST_SHARE = 0.5  # ...and kept when half of them are in the text
FILE_KEYS = ("path", "file_path", "filename", "notebook_path")
PATH = re.compile(r"(?<![\w@:/])(?:[\w.-]+/)*[\w-]+\.(?:py|js|ts|tsx|jsx|ex|exs|md|json|toml|yaml|yml|txt|cfg|ini|sh|"
                  r"pl|rb|go|rs|c|h|cpp|java|html|css|sql|lock|log|heex|eex)\b")
ERROR = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception)|error TS\d{4}|E\d{4})\b")
# How the sessions report a command's exit code: Claude Code, SWE-agent, mini-swe-agent's harness.
# Programs that only show files or history: a command made of them views text, as a read does, and an exception
# name in what it shows was not hit by the session (harnesses with a shell alone read files with cat, grep, sed -n).
VIEWERS = {"cat", "head", "tail", "sed", "nl", "grep", "egrep", "rg", "less", "more", "find", "ls", "wc", "diff",
           "awk", "echo", "tree", "file", "stat", "sort", "uniq", "cut"}
VIEWING_GIT = {"diff", "show", "log", "status", "grep", "blame"}
SEGMENTS = re.compile(r"&&|\|\||;|\|")
EXIT = re.compile(r"(?:exit code:?\s*|PROCESS-DONE:|<returncode>)(-?\d+)", re.IGNORECASE)
WORD = re.compile(r"[a-z][a-z'-]{4,}")
STOP = frozenset("""about above after again against along already also although always among another around
because before being below between both cannot could doing during each either every first following found
further having however instead itself just least might more most much must never other otherwise over please
rather really same should since some still such than that their them then there these they thing things this
those though through under until using very what when where whether which while with within without would
your yours make sure like want need file files let's currently""".split())


@dataclass(frozen=True)
class Fact:
    kind: str
    label: str  # what the table lists when it is missing
    needles: tuple[str, ...]  # strings (already normalized) that must be in the text
    share: float = 1.0  # share of the needles that must be present

    def kept_in(self, text: str, words: set[str]) -> bool:
        if self.kind == "requests":
            return sum(n in words for n in self.needles) >= self.share * len(self.needles)
        return sum(n in text for n in self.needles) >= self.share * len(self.needles)


def squash(text: str) -> str:
    return " ".join(text.split())


def command_of(message: dict) -> str | None:
    args = message.get("tool_args") or {}
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    return squash(str(command)) if command else None


def views_only(command: str) -> bool:
    """Whether every part of a shell command only shows files (`cd repo && grep -n X a.py | head`)."""
    for part in SEGMENTS.split(command):
        words = [w for w in part.split() if "=" not in w or w.startswith("-")]  # without VAR=value
        if not words or words[0] == "cd":
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program == "git" and len(words) > 1 and words[1] in VIEWING_GIT:
            continue
        if program not in VIEWERS:
            return False
    return True


def files_of(message: dict) -> list[str]:
    args = message.get("tool_args") or {}
    found = [str(args[k]) for k in FILE_KEYS if isinstance(args.get(k), str) and args[k]]
    command = command_of(message)
    if command:
        found += PATH.findall(command)
    return [f.rstrip("/").rsplit("/", 1)[-1] for f in found]


def text_files(text: str) -> list[str]:
    """The file names (by their last part) a message's text names: paths with a known extension."""
    return [f.rsplit("/", 1)[-1] for f in PATH.findall(text)]


def request_words(text: str) -> tuple[str, ...]:
    seen: list[str] = []
    for word in WORD.findall(text[:400].lower()):
        word = word.strip("'-")
        if len(word) >= 5 and word not in STOP and word not in seen:
            seen.append(word)
    return tuple(seen[:REQUEST_WORDS])


def gold_facts(messages: list[dict]) -> list[Fact]:
    """The facts of these messages that a summary of them should keep, one per distinct thing."""
    facts: dict[tuple[str, str], Fact] = {}

    def add(fact: Fact) -> None:
        facts.setdefault((fact.kind, fact.label), fact)

    last_files: list[str] = []
    last_command: str | None = None
    ran_command = False  # whether the latest call ran a command (its result is that command's output)
    for n, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_args"):
            command = command_of(message)
            ran_command = command is not None and not views_only(command)
            for name in files_of(message):
                add(Fact("files", name, (name,)))
                last_files = [f for f in last_files if f != name][-2:] + [name]
            command = command_of(message)
            if command:
                last_command = command
                answer = next((m for m in messages[n + 1:n + 4] if m.get("role") == "tool"), None)
                code = EXIT.search(answer.get("content") or "") if answer else None
                prefix = command[:COMMAND_PREFIX]
                needles = (prefix,) if not code or code.group(1) == "0" else (prefix, code.group(1))
                add(Fact("commands", prefix + (f" (exit {code.group(1)})" if code else ""), needles))
        elif role == "tool" and ran_command:
            for name in ERROR.findall(message.get("content") or ""):
                add(Fact("errors", name, (name,)))
        if role in ("user", "assistant"):  # a file only named in the text is one the session knows of
            for name in text_files(message.get("content") or ""):
                add(Fact("files", name, (name,)))
        if role == "user":
            words = request_words(message.get("content") or "")
            if len(words) >= 2:
                add(Fact("requests", " ".join(words), words, REQUEST_SHARE))
    for name in last_files:
        add(Fact("state", f"last file {name}", (name,)))
    if last_command:
        add(Fact("state", f"last command {last_command[:COMMAND_PREFIX]}", (last_command[:COMMAND_PREFIX],)))
    return list(facts.values())


def normalized_words(text: str) -> set[str]:
    return {w.strip("'-") for w in WORD.findall(text.lower())}


def check(facts: list[Fact], text: str) -> tuple[dict[str, int], dict[str, int], dict[str, list[str]]]:
    """Kept and total per kind, and what is missing, of these facts in this text."""
    text = squash(text)
    words = normalized_words(text)
    kept, total = dict.fromkeys(KINDS, 0), dict.fromkeys(KINDS, 0)
    missing: dict[str, list[str]] = {k: [] for k in KINDS}
    for fact in facts:
        total[fact.kind] += 1
        if fact.kept_in(text, words):
            kept[fact.kind] += 1
        else:
            missing[fact.kind].append(fact.label)
    return kept, total, missing


_PUNCT = str.maketrans({c: " " for c in string.punctuation + "“”‘’"})


def normalize_answer(text: str) -> str:
    """Case- and punctuation-insensitive form, for the conversations' short answers."""
    return " " + " ".join(str(text).lower().translate(_PUNCT).split()) + " "


ARTICLES = frozenset({"a", "an", "the"})


def answer_words(text: str) -> set[str]:
    """The words of a text, case- and punctuation-insensitively, without articles."""
    return set(normalize_answer(text).split()) - ARTICLES


def reply_holds_answer(answer: str, reply: str) -> bool:
    """Whether a model's reply holds a short gold answer: every word of the answer (articles aside) is a word of
    the reply, in any order ("7 May 2023" in "It was on May 7, 2023.")."""
    needed = answer_words(answer)
    return bool(needed) and needed <= answer_words(reply)
