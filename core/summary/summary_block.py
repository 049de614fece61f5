"""One block summarizing a run of old messages within a token cap: a header, the user's requests, key points, and
the artifact trail (files by folder, commands with exit codes, errors, identifiers). When the cap is tight, the
least needed parts go first (see rule_summary)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..model.counted import counted
from ..model.messages import Message
from ..model.records import MAX_KEY_POINTS, CommandRun, Facets
from .facets import MAX_ENTITIES, ROLE_ORDER, analyze_calls, facets_of, named_only
from .redact import redact
from .text_rules import SENTENCE_END, clip, one_line_field
from .tool_output import Analysis
from .trail_coverage import COMMAND_MATCH_CHARS, LEADING_EXCEPTION, project_root

_DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|instead of|root cause|the (?:fix|problem|issue|cause|bug) (?:is|was)|turns out"
    r"|because|will use|switch(?:ed)? to|going with|conclusion|must|should not|won't|don't)\b", re.IGNORECASE)
_MARKDOWN_PREFIX = re.compile(r"^[#>*\-\s]+")
MIN_SUMMARY_TOKENS = 50
MAX_REQUESTS = 60
COMMAND_LIMIT = 120

# A narrative's sentences drop after the key points and before any part of the trail (commands turn dense at 0.5).
NARRATIVE_DROP_RANK = 0.25
TRAIL_RANK = 3.0

# Key point priorities: what a reader most needs when the originals are gone.
_FAILED, _DECISION_POINT, _CHANGE, _STATEMENT, _ROUTINE = 4, 3, 2, 2, 1


def _assistant_points(text: str) -> list[tuple[int, str]]:
    sentences = [s for s in (_MARKDOWN_PREFIX.sub("", part).strip() for part in SENTENCE_END.split(text[:4000])) if s]
    # The first sentence that says something: "Perfect!" or "Done." alone does not.
    first = next((s for s in sentences if len(s.split()) >= 4), None)
    if first is None:
        return []
    points = [(_DECISION_POINT if _DECISION.search(first) else _STATEMENT, one_line_field(first, 200))]
    decision = next((s for s in sentences if s is not first and _DECISION.search(s)), None)
    if decision:
        points.append((_DECISION_POINT, one_line_field(decision, 200)))
    return points


def key_points_of(messages: list[Message], pairs: list[tuple[int, Analysis]]) -> list[str]:
    """Up to 30 key points, the most important first chosen, then put back in conversation order."""
    candidates: list[tuple[int, int, str]] = []  # (priority, position, text)
    for index, message in enumerate(messages):
        if message.role == "assistant" and message.content.strip():
            for priority, text in _assistant_points(message.content):
                candidates.append((priority, index, text))
    for index, a in pairs:
        if a.outcome.failed:
            priority = _FAILED
        elif a.kind in ("write_file", "edit_file"):
            priority = _CHANGE
        else:
            priority = _ROUTINE
        candidates.append((priority, index, a.line))
    # Identical points (the same command run again and again) become one, counted.
    counts: dict[str, int] = {}
    best: dict[str, tuple[int, int]] = {}
    for priority, index, text in candidates:
        counts[text] = counts.get(text, 0) + 1
        old = best.get(text)
        best[text] = (max(priority, old[0]) if old else priority, index)
    chosen = sorted(best.items(), key=lambda item: (-item[1][0], -item[1][1]))[:MAX_KEY_POINTS]
    chosen.sort(key=lambda item: item[1][1])
    return [text if counts[text] == 1 else f"{text} ×{counts[text]}" for text, _ in chosen]


def _grouped(paths: list[str], root: str) -> list[str]:
    """Paths grouped by folder, one line per folder: `lib/spotter/: application.ex, otel.ex` (relative to root)."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        shown = path[len(root):] if root and path.startswith(root) else path
        folder, name = posixpath.split(shown)
        folders.setdefault(folder + "/" if folder else "./", []).append(name or shown)
    # A folder with one file is shown as the plain path: as short, and the path stays greppable.
    return [f"{'' if folder == './' else folder}{names[0]}" if len(names) == 1 else f"{folder}: {', '.join(names)}"
            for folder, names in folders.items()]


def _run_suffix(run: CommandRun) -> str:
    # Success is the default: only a count and a non-zero exit code are worth their tokens.
    return (f" ×{run.count}" if run.count > 1 else "") + (f" (exit {run.exit_code})" if run.exit_code else "")


def _command_line(run: CommandRun) -> str:
    return f"`{clip(run.command, COMMAND_LIMIT + 1)}`{_run_suffix(run)}"


def _command_starts(runs: list[CommandRun]) -> list[str]:
    """The dense form of the command list: each command's start, the part a reader (and a search) knows it by,
    without the code marks: `grep -rn "foo" lib/some/long/folder/… ×2 (exit 1)`. Grouping by program saved only
    a few percent more and broke the commands apart."""
    return [clip(run.command, COMMAND_MATCH_CHARS + 1) + _run_suffix(run) for run in runs]


@dataclass
class _Section:
    title: str
    items: list[Any]
    # Lower drops first; within a section items drop from `drop_from` ("start" = oldest first, "end").
    drop_rank: float
    drop_from: str = "start"
    inline: bool = False  # items joined on the title line instead of one per line
    keep_first: bool = False  # the first item goes last (the conversation's opening request)
    show: Callable[[Any], str] = str  # one item as text
    # A denser rendering of all items, switched to (at `dense_rank`) before any item of the section is dropped.
    dense: Callable[[list[Any]], list[str]] | None = None
    dense_rank: float = 0.5
    is_dense: bool = False
    # Called with an item dropped: the items it adds to other sections (a command's files), to count what they cost.
    on_drop: Callable[[Any], list[str]] | None = None
    total: int = field(init=False)

    def __post_init__(self) -> None:
        self.total = len(self.items)

    def kept_share(self) -> float:
        return len(self.items) / self.total if self.total else 1.0

    def lines(self) -> list[str]:
        if self.is_dense and self.dense is not None:
            return self.dense(self.items)
        return [self.show(item) for item in self.items]


def _render(header: str, sections: list[_Section]) -> str:
    lines = [header] if header else []
    for section in sections:
        if not section.items:
            continue
        if section.inline:
            lines.append(f"{section.title}: {', '.join(section.lines())}")
        else:
            lines.append(f"{section.title}:")
            lines.extend(f"- {line}" for line in section.lines())
    return "\n".join(lines)


_NAME_CHAR = re.compile(r"\w")


def _is_error_name(error: str) -> bool:
    # Names (BadMapError, TS2345, tests/a.py::test_b) are single words; error lines are sentences.
    return not any(c.isspace() for c in error)


def _trail_sections(facets: Facets) -> list[_Section]:
    """The user's requests, then the artifact trail: files by folder, commands with exit codes, errors, entities."""
    # A merge's facets may name a file another of its stretches read or modified: it is listed there.
    named = named_only(facets.files_named, facets.files_read + facets.files_modified)
    paths = list(dict.fromkeys(facets.files_read + facets.files_modified + named))
    # The folder most files are in, as the trail-coverage check finds it; one file is simply shown whole.
    root = (project_root(paths) or "") if len(paths) > 1 else ""
    modified = set(facets.files_modified)
    only_read = [path for path in facets.files_read if path not in modified]
    commands = _Section("Commands", list(facets.commands), drop_rank=TRAIL_RANK, show=_command_line,
                        dense=_command_starts)
    # A file a listed command names is seen there; when the command goes, the file's name stays (folded into its
    # folder's line), a few tokens where the command took a dozen. Files named outlast commands and files read.
    files_named = _Section("Files named", [p for p in named if not any(p in run.command for run in commands.items)],
                           drop_rank=TRAIL_RANK + 0.5, dense=lambda items: _grouped(items, root), is_dense=True)

    def keep_files_of(run: CommandRun) -> list[str]:
        freed = [p for p in named if p in run.command and p not in files_named.items
                 and not any(p in other.command for other in commands.items)]
        files_named.items.extend(freed)
        files_named.total += len(freed)
        return freed

    commands.on_drop = keep_files_of
    # An error line goes before the names; its exception's name stays with them (a few tokens where the line took a
    # dozen): the error the session hit is still known.
    errors = _Section("Errors", [e.removeprefix(root) for e in facets.errors if not _is_error_name(e)], drop_rank=2.5)
    error_names = _Section("Error names", [e for e in facets.errors if _is_error_name(e)], drop_rank=5, inline=True)

    def keep_name_of(line: str) -> list[str]:
        found = LEADING_EXCEPTION.match(line)
        if not found or found.group(1) in error_names.items:
            return []
        error_names.items.append(found.group(1))
        error_names.total += 1
        return [found.group(1)]

    errors.on_drop = keep_name_of
    return [
        _Section("User requests", list(facets.user_requests[:MAX_REQUESTS]), drop_rank=6, keep_first=True),
        _Section("Decisions", list(facets.decisions), drop_rank=4.5),
        _Section("Files under", [root.rstrip("/")] if root else [], drop_rank=5, inline=True),
        _Section("Files modified", _grouped(facets.files_modified, root), drop_rank=4),
        # Files read and commands share a rank: of the two, the one that has lost the smaller share loses next, so
        # a long command list does not wipe out every file read (nor the reverse).
        _Section("Files read", _grouped(only_read, root), drop_rank=TRAIL_RANK),
        files_named,
        commands,
        errors,
        error_names,
        # A model's entities can be empty or punctuation: only names are shown.
        _Section("Identifiers", [f"`{e}`" for e in facets.entities[:MAX_ENTITIES] if _NAME_CHAR.search(e)],
                 drop_rank=1, drop_from="end", inline=True),
    ]


def render_artifact_trail(facets: Facets, max_tokens: int | None = None,
                          count_tokens: Callable[[str], int] | None = None) -> str:
    """The user's requests and the artifact trail of `facets` as text; with a cap, the least needed parts go
    first (identifiers, then error lines, then files only read and commands (made dense first) by turns, ...;
    requests last)."""
    sections = _trail_sections(facets)
    if max_tokens is None or count_tokens is None:
        text = _render("", sections)
    else:
        text = _fit("", sections, max_tokens, count_tokens) or ""
    return redact(text)[0]


def _shrink_one(sections: list[_Section], count_tokens: Callable[[str], int]) -> int | None:
    """Take the cheapest loss: make a section dense or drop its least needed item. Returns the estimated tokens
    saved, or None when nothing is left to remove."""
    steps: list[tuple[float, float, int, _Section, bool]] = []
    for position, section in enumerate(sections):
        if not section.items:
            continue
        steps.append((section.drop_rank, -section.kept_share(), position, section, False))
        if section.dense is not None and not section.is_dense:
            steps.append((section.dense_rank, 0.0, position, section, True))
    if not steps:
        return None
    *_, section, densify = min(steps, key=lambda step: step[:3])
    if densify:
        before = count_tokens("\n".join(section.lines()))
        section.is_dense = True
        return before - count_tokens("\n".join(section.lines()))
    if section.keep_first and len(section.items) > 1:
        item = section.items.pop(1)
    else:
        item = section.items.pop(0 if section.drop_from == "start" else -1)
    added = section.on_drop(item) if section.on_drop is not None else []
    return count_tokens(f"- {section.show(item)}\n") - sum(count_tokens(f"{path}, ") for path in added)


def _fit(header: str, sections: list[_Section], max_tokens: int, count_tokens: Callable[[str], int]) -> str | None:
    """Drop items until the rendered block fits; None if even the bare header does not."""
    text = _render(header, sections)
    total = count_tokens(text)
    while total > max_tokens:
        # Shrink by estimated savings (one count per step, not one per re-render), then re-measure: token counts
        # of joined text are close to, but not exactly, additive, so another round may drop a little more.
        estimate, shrunk = total, False
        while estimate > max_tokens:
            saved = _shrink_one(sections, count_tokens)
            if saved is None:
                break
            shrunk = True
            estimate -= saved
        if not shrunk:
            return None
        text = _render(header, sections)
        total = count_tokens(text)
    return text


def rule_summary(
    messages: list[Message],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    narrative: list[str] | None = None,
) -> tuple[str, list[str], Facets]:
    """One block summarizing `messages`, at most `max_tokens` as counted by `count_tokens`.

    Returns (text, key points present in the text, facets). Under budget pressure key points go first (oldest
    side), then the narrative's sentences (hybrid: a model's story of the stretch, its last sentences first), then
    the commands are made dense, then identifiers, error lines, files only read and commands (by turns), files
    modified and error names drop; user requests go last. So a narrative only ever takes room the trail does not need.
    Below 50 tokens of room the block is a one-line marker.
    """
    pairs = analyze_calls(messages)
    facets = facets_of(messages, pairs)
    n = len(messages)
    if max_tokens < MIN_SUMMARY_TOKENS:
        for marker in (f"[{counted(n, 'earlier message')} summarized; no room for details]",
                       f"[{counted(n, 'message')} summarized]"):
            if count_tokens(marker) <= max_tokens:
                return marker, [], facets
        return "", [], facets

    roles = {role: sum(1 for m in messages if m.role == role) for role in ROLE_ORDER}
    header = (f"Summary of {counted(n, 'earlier message')} ({roles['user']} user, {roles['assistant']} assistant, "
              f"{roles['tool']} tool results" + (f", {roles['system']} system" if roles["system"] else "") + ")")
    key_points = key_points_of(messages, pairs)
    key_point_section = _Section("Key points", list(key_points), drop_rank=0)
    story = _Section("What happened", list(narrative or []), drop_rank=NARRATIVE_DROP_RANK, drop_from="end")
    requests, *trail = _trail_sections(facets)
    sections = [requests, key_point_section, *trail, story]  # the documents' hybrid: the rules' sections, then the story
    text = _fit(header, sections, max_tokens, count_tokens)
    if text is None:
        marker = f"[{counted(n, 'earlier message')} summarized; no room for details]"
        return (marker if count_tokens(marker) <= max_tokens else ""), [], facets
    return text, list(key_point_section.items), facets
