"""The artifact trail of a run of messages (files read, modified and only named, commands with exit codes, errors, tool usage,
the user's requests, identifiers), read the way the trail-coverage check reads them (trail_coverage.collect_facts) so that
what the trail shows is what that check counts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..model.messages import Message
from ..model.records import CommandRun, Facets, ToolUsage
from .decisions import extract_decisions
from .redact import redact_obj
from .text_rules import one_line_field
from .tool_output import ERROR_TAG, Analysis, analyze
from .trail_coverage import MAX_IDENTIFIERS, bounded, collect_facts, exception_lines, user_text

MAX_ENTITIES = MAX_IDENTIFIERS
MAX_ERRORS = 30
ERROR_LIMIT = 200  # characters of an error line
REQUEST_LIMIT = 300
ROLE_ORDER = ("system", "user", "assistant", "tool")
SKILL_FOLDER = re.compile(r"Base directory for this skill: (\S+)")
# How often a request was made, after it in the trail: "run the tests again (×3)".
REPEATS = re.compile(r" \(×(\d+)\)\Z")
NUMBER = re.compile(r"\d+")
# A text this long that differs from another only in its numbers is one message filled in again (a harness's
# "found 0 actions" after every malformed step); in a shorter one the number is what is asked ("use port 8080").
TEMPLATE_WORDS = 10


def analyze_calls(messages: list[Message]) -> list[tuple[int, Analysis]]:
    """Every tool call / result in `messages`, paired by call id, analysed once, in order of appearance. A run of
    messages keeps each error's telling line (the exception, the first error line), not its full text: the block
    lists many, and the originals stay in the store."""
    results: dict[str, Message] = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    called: set[str] = set()
    out: list[tuple[int, Analysis]] = []
    for index, message in enumerate(messages):
        for call in message.tool_calls:
            called.add(call.id)
            out.append((index, analyze(call, results.get(call.id), False)))
        if message.role == "tool" and (not message.tool_call_id or message.tool_call_id not in called):
            # A result whose call was summarized earlier (or never paired): still worth a line.
            out.append((index, analyze(None, message, False)))
    return out


def facets_of(messages: list[Message], pairs: list[tuple[int, Analysis]]) -> Facets:
    files_read: dict[str, None] = {}
    files_modified: dict[str, None] = {}
    commands: dict[tuple[str, int | None], int] = {}
    errors: dict[str, None] = {}
    usage: dict[str, list[Analysis]] = {}
    for _, a in pairs:
        usage.setdefault(a.tool, []).append(a)
        if a.has_result and not a.outcome.failed and a.subject.path:
            if a.kind in ("read_file", "search", "list_files"):
                files_read.setdefault(a.subject.path, None)
            elif a.kind in ("write_file", "edit_file"):
                files_modified.setdefault(a.subject.path, None)
        if a.subject.command:
            # As run, output plumbing and all (`mix test 2>&1 | tail -5`): it is what the agent typed and what a
            # reader searches for, and it says how much of the output the agent saw. The trail-coverage check, which
            # drops the plumbing, still finds it. Identical runs are one entry, counted.
            key = (one_line_field(a.subject.command, 300), a.outcome.exit_code if a.has_result else None)
            commands[key] = commands.get(key, 0) + 1
        if a.outcome.failed and len(errors) < MAX_ERRORS:
            error = one_line_field(ERROR_TAG.sub("", a.outcome.error), ERROR_LIMIT)
            if error and a.kind != "shell" and a.subject.target:
                # "File does not exist." says little without the file it is about.
                error = f"{one_line_field(a.subject.target, 200)}: {error}"
            if error:
                errors.setdefault(error, None)
    for message in messages:
        # A skill Claude Code loaded comes as a "user" message, which is not the user's words: what was read is the
        # skill's SKILL.md in the folder it names, where a resumed model can read it again.
        skill = SKILL_FOLDER.match(message.content) if message.role == "user" else None
        if skill:
            files_read.setdefault(skill.group(1).rstrip("/") + "/SKILL.md", None)
    tool_usage = []
    for tool, uses in sorted(usage.items(), key=lambda item: (-len(item[1]), item[0])):
        notable: dict[str, None] = {}
        for a in sorted(uses, key=lambda a: not a.outcome.failed):
            if len(notable) >= 3:
                break
            if a.subject.target:
                suffix = ""
                if a.outcome.failed:
                    suffix = f" (exit {a.outcome.exit_code})" if a.outcome.exit_code else " (failed)"
                notable.setdefault(one_line_field(a.subject.target, 100) + suffix, None)
        tool_usage.append(ToolUsage(tool=tool, count=len(uses), notable=list(notable)))
    # Exception names, compiler codes and failing tests anywhere in the outputs (an Elixir BadMapError is three
    # lines below the "** (Mix)" line that fails the command), unless an error line already names them; an exception
    # with the line that reported it, where an output has one (the message says what went wrong).
    facts = collect_facts(messages)
    reported = exception_lines(messages)
    for name in facts.errors:
        if not any(name in line for line in errors):
            errors.setdefault(one_line_field(reported[name], ERROR_LIMIT) if name in reported else name, None)
    files_named = named_only(facts.files, [*files_read, *files_modified])
    roles = {m.role for m in messages}
    requests = (user_text(m) for m in messages if m.role == "user")
    facets = Facets(
        decisions=extract_decisions(messages),
        entities=facts.identifiers[:MAX_ENTITIES],
        files_read=list(files_read),
        files_modified=list(files_modified),
        files_named=files_named,
        commands=[CommandRun(command=c, exit_code=code, count=n) for (c, code), n in commands.items()],
        errors=list(errors),
        tool_usage=tool_usage,
        participants=[role for role in ROLE_ORDER if role in roles],
        # What the user wrote, not what the client injected as a user message (skill bodies, reminders).
        user_requests=counted_requests(one_line_field(text, REQUEST_LIMIT) for text in requests if text),
    )
    redacted, _ = redact_obj(facets)
    return redacted


def counted_requests(requests: Iterable[str]) -> list[str]:
    """Each request once, in the place it was first made, in its newest wording (what now holds), with how many
    times it was made when more than once: a harness's complaint after every malformed step would otherwise push
    the user's own requests out of the trail. `requests` may be counted already (a merge's stretches): counts add."""
    made: dict[str, tuple[str, int]] = {}  # request, numbers masked in a long one -> (newest wording, times)
    for request in requests:
        repeats = REPEATS.search(request)
        text, times = (request[:repeats.start()], int(repeats[1])) if repeats else (request, 1)
        key = NUMBER.sub("#", text) if len(text.split()) >= TEMPLATE_WORDS else text
        made[key] = (text, times + made.get(key, ("", 0))[1])  # a dict keeps a key's first place
    return [text if times == 1 else f"{text} (×{times})" for text, times in made.values()]


def named_only(named: list[str], known: list[str]) -> list[str]:
    """The files of `named` (in commands or texts) that are none of the `known` (read or modified) nor named before:
    not the same path, nor the same file by a shorter or longer path ("lib/app.ex" and "/repo/lib/app.ex")."""
    seen, out = list(known), []
    for path in named:
        path = path.removeprefix("./")
        if not any(k == path or k.endswith("/" + path) or path.endswith("/" + k) for k in seen):
            seen.append(path)
            out.append(path)
    return out


def extract_facets(messages: list[Message]) -> Facets:
    """The artifact trail of `messages`: files, commands with exit codes, errors, tool usage, requests, entities."""
    return facets_of(messages, analyze_calls(messages))


def merge_facets(all_facets: list[Facets]) -> Facets:
    """Union of facets, earlier ones first: merging keeps what previous summaries recorded, up to MERGED_ENTRIES of
    each kind (the first and the newest), so that a merge costs the same however long the chat; `dropped` says how
    many entries each kind left out."""
    merged: dict[str, dict[str, Any]] = {}  # kind -> {its JSON: the entry (a command's dict, else a str)}
    dropped: dict[str, int] = {}
    for facets in all_facets:
        for name, count in facets.dropped.items():
            dropped[name] = dropped.get(name, 0) + count
        for name, values in facets.model_dump(exclude={"dropped"}).items():
            bucket = merged.setdefault(name, {})
            if name == "user_requests":  # one counted entry a request: the stretches' counts added
                values = counted_requests([*bucket.values(), *values])
                bucket.clear()
            for value in values:
                if name == "commands":  # the same command run in both stretches: one entry, counts added
                    key = json.dumps([value["command"], value["exit_code"]])
                    if key in bucket:
                        bucket[key]["count"] += value["count"]
                        continue
                else:
                    key = json.dumps(value, sort_keys=True)
                bucket.setdefault(key, value)
    kept: dict[str, list] = {}
    for name, bucket in merged.items():
        kept[name] = bounded(list(bucket.values()))
        if over := len(bucket) - len(kept[name]):
            dropped[name] = dropped.get(name, 0) + over
    return Facets.model_validate({**kept, "dropped": dropped})
