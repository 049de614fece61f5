"""What a tool call was about (its file, command or pattern, from its arguments) and the facts of its result that a
one-line summary shows, one rule per tool kind: `File: /app.ts | Lines: 100 | Type: TypeScript`,
`Command: npm test | Exit: 1 | Output: 3 lines`, `Pattern: "useState" | Matches: 15 | Files: 4 | Top files: ...`.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..model.messages import ToolCall
from .text_rules import FILE_ARGUMENT_KEYS, one_line_field

# Arguments

_COMMAND_KEYS = ("command", "cmd", "script", "code", "commands", "input")
_PATTERN_KEYS = ("pattern", "query", "regex", "search_term", "search", "file_name", "name", "q", "glob")
_WORD = re.compile(r"\w")
_JSON_CHARS = 200_000  # a tool's output is cut to this (bounded.MAX_TOOL_OUTPUT_CHARS); longer is not parsed
FILE_HEADER = re.compile(r"^\[File: (.+?) \((\d+) lines total\)\]", re.MULTILINE)


def call_arguments(call: ToolCall | None) -> dict[str, Any]:
    return call.arguments if call is not None and isinstance(call.arguments, dict) else {}


def _first_arg(args: dict[str, Any], keys: Iterable[str]) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return ""


def typed_command(tool: str, args: dict[str, Any]) -> str:
    """The line an agent typed when its tools are commands in its shell, its editor's too (SWE-agent: `open f.py
    100`, `create f.py`, `edit 1:1` and the new text): a `command` argument that starts with the tool's own name.
    '' otherwise (a shell tool's command is its subject anyway; an editor's `command` such as "view" is a verb)."""
    command = args.get("command")
    if not isinstance(command, str):
        return ""
    words = command.split(maxsplit=1)
    return command if words and words[0].lower() == tool.lower() else ""


def _argv(tool: str, args: dict[str, Any]) -> list[str]:
    """SWE-agent's command-line tools (`open f.py 100`, `search_dir foo src`): the words after the tool's name."""
    first_line = typed_command(tool, args).split("\n", 1)[0].strip()
    if not first_line:
        return []
    try:
        words = shlex.split(first_line)
    except ValueError:
        words = first_line.split()
    return words[1:]


def _call_path(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> str:
    if open_file:
        return open_file
    path = _first_arg(args, FILE_ARGUMENT_KEYS)
    if path:
        return path
    header = FILE_HEADER.search(output[:1000])
    if header:
        return header.group(1)
    argv = _argv(tool, args)
    return argv[0] if argv else ""



# Per-kind details

_LANGUAGES = {
    ".py": "Python", ".pyi": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
    ".jsx": "JavaScript (JSX)", ".ts": "TypeScript", ".tsx": "TypeScript (TSX)", ".ex": "Elixir", ".exs": "Elixir",
    ".go": "Go", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin", ".rb": "Ruby", ".php": "PHP", ".c": "C",
    ".h": "C header", ".cc": "C++", ".cpp": "C++", ".hpp": "C++ header", ".cs": "C#", ".swift": "Swift",
    ".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".pl": "Perl", ".lua": "Lua", ".r": "R", ".scala": "Scala",
    ".md": "Markdown", ".rst": "reStructuredText", ".txt": "Text", ".json": "JSON", ".jsonl": "JSON Lines",
    ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".ini": "INI", ".cfg": "Config", ".xml": "XML",
    ".html": "HTML", ".heex": "HEEx", ".eex": "EEx", ".css": "CSS", ".scss": "SCSS", ".sql": "SQL",
    ".ipynb": "Jupyter notebook", ".lock": "Lockfile", ".env": "Env file", ".csv": "CSV",
}
_NAMED_FILES = {"dockerfile": "Dockerfile", "makefile": "Makefile", "mix.lock": "Lockfile", ".env": "Env file"}

_NUMBERED_LINE = re.compile(r"^ *(\d+)(?:→|:)(.*)$", re.MULTILINE)
_SCAN_LIMIT = 200_000

# (language family, exports pattern, imports pattern); group 1 of each match is the name.
_PY_EXPORTS = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
_PY_IMPORTS = re.compile(r"^(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)
_JS_EXPORTS = re.compile(
    r"^export\s+(?:default\s+)?(?:async\s+)?(?:function\*?|class|const|let|var|interface|type|enum)\s+"
    r"([A-Za-z_$][\w$]*)",
    re.MULTILINE)
_JS_IMPORTS = re.compile(r"^import\s+(?:[^'\"\n]*?\s+from\s+)?['\"]([^'\"]+)['\"]|\brequire\(['\"]([^'\"]+)['\"]\)",
                         re.MULTILINE)
_EX_EXPORTS = re.compile(r"^\s*(?:defmodule\s+([\w.]+)|def\s+([a-z_]\w*[?!]?))", re.MULTILINE)
_EX_IMPORTS = re.compile(r"^\s*(?:alias|import|use|require)\s+([A-Z][\w.]*)", re.MULTILINE)
_GO_EXPORTS = re.compile(r"^func\s+(?:\([^)]*\)\s*)?([A-Z]\w*)|^type\s+([A-Z]\w*)", re.MULTILINE)
_GO_IMPORTS = re.compile(r"^\s*(?:import\s+)?\"([\w./\-]+)\"$", re.MULTILINE)
_RS_EXPORTS = re.compile(r"^pub\s+(?:async\s+)?(?:fn|struct|enum|trait|mod|type|const)\s+(\w+)", re.MULTILINE)
_RS_IMPORTS = re.compile(r"^use\s+([\w:]+)", re.MULTILINE)
_SYMBOLS = {
    "Python": (_PY_EXPORTS, _PY_IMPORTS), "JavaScript": (_JS_EXPORTS, _JS_IMPORTS),
    "JavaScript (JSX)": (_JS_EXPORTS, _JS_IMPORTS), "TypeScript": (_JS_EXPORTS, _JS_IMPORTS),
    "TypeScript (TSX)": (_JS_EXPORTS, _JS_IMPORTS), "Elixir": (_EX_EXPORTS, _EX_IMPORTS),
    "Go": (_GO_EXPORTS, _GO_IMPORTS), "Rust": (_RS_EXPORTS, _RS_IMPORTS),
}
_MAX_NAMES = 4


def _file_type(path: str) -> str:
    base = posixpath.basename(path.replace("\\", "/")).lower()
    if base in _NAMED_FILES:
        return _NAMED_FILES[base]
    return _LANGUAGES.get(posixpath.splitext(base)[1], "")


def _names(pattern: re.Pattern[str], code: str) -> str:
    seen: dict[str, None] = {}
    for match in pattern.finditer(code):
        name = next((g for g in match.groups() if g), None)
        if name:
            seen.setdefault(name, None)
    names = list(seen)
    if not names:
        return ""
    more = f" +{len(names) - _MAX_NAMES}" if len(names) > _MAX_NAMES else ""
    return ", ".join(names[:_MAX_NAMES]) + more


def _read_fields(use: ToolUse) -> list[str]:
    path, output = use.path, use.output
    fields = [f"File: {one_line_field(path or '?', 150)}"]
    header = FILE_HEADER.search(output[:1000])
    is_numbered = header is not None or _NUMBERED_LINE.match(output.lstrip("\n")) is not None
    numbered = _NUMBERED_LINE.findall(output[:_SCAN_LIMIT]) if is_numbered else []
    if header:
        fields.append(f"Lines: {header.group(2)}")
        if numbered:
            fields.append(f"Viewed: {numbered[0][0]}-{numbered[-1][0]}")
    elif numbered:
        first, last = int(numbered[0][0]), int(numbered[-1][0])
        fields.append(f"Lines: {last}" if first == 1 else f"Lines: {first}-{last}")
    else:
        fields.append(f"Lines: {len(output.splitlines())}")
    language = _file_type(path)
    if language:
        fields.append(f"Type: {language}")
    # Without a path, exports and imports as document 001 reads them, from the content alone (`export ...`,
    # `import ... from`): its own test reads a file with no path and expects them.
    symbols = _SYMBOLS.get(language or ("JavaScript" if not path else ""))
    if symbols:
        code = "\n".join(text for _, text in numbered) if numbered else output[:_SCAN_LIMIT]
        exports_re, imports_re = symbols
        exports, imports = _names(exports_re, code), _names(imports_re, code)
        if exports:
            fields.append(f"Exports: {one_line_field(exports, 80)}")
        if imports:
            fields.append(f"Imports: {one_line_field(imports, 80)}")
    return fields


_FOUND = re.compile(r"^Found (\d+) (?:matches|match|files?)\b", re.MULTILINE)
_NO_MATCHES = re.compile(r"\A\s*(?:No (?:files|matches) found|No matches for)", re.IGNORECASE)
_GREP_LINE = re.compile(r"^(.+?):(\d+)[:\-](.*)$")
_SWE_FILE_COUNT = re.compile(r"^(.+?) \((\d+) matches\)$")
_COUNT_LINE = re.compile(r"^(.+?):(\d+)$")
_BARE_MATCH = re.compile(r"^(?:Line )?\d+[:\-]")


def _short_path(path: str) -> str:
    parts = path.replace("\\", "/").rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def _search_fields(use: ToolUse) -> list[str]:
    tool, args, output = use.tool, use.args, use.output
    argv = _argv(tool, args)
    pattern = _first_arg(args, _PATTERN_KEYS) or (argv[0] if argv else "")
    fields = [f'Pattern: "{one_line_field(pattern or "?", 80)}"']
    if _NO_MATCHES.match(output) or not output.strip():
        return fields + ["Matches: 0"]
    found = _FOUND.search(output[:500])
    scope = _first_arg(args, ("path", "dir", "directory")) or (argv[1] if len(argv) > 1 else "")
    per_file: dict[str, int] = {}
    match_lines = 0
    for line in output.split("\n"):
        line = line.strip()
        if not line or line.startswith(("Found ", "End of matches", "[")):
            continue
        if (m := _SWE_FILE_COUNT.match(line)) or (m := _COUNT_LINE.match(line)):
            per_file[m.group(1)] = per_file.get(m.group(1), 0) + int(m.group(2))
        elif m := _GREP_LINE.match(line):
            per_file[m.group(1)] = per_file.get(m.group(1), 0) + 1
        elif _BARE_MATCH.match(line):
            match_lines += 1
            if scope:
                per_file[scope] = per_file.get(scope, 0) + 1
        elif " " not in line or "/" in line:
            per_file.setdefault(line, 1)
    matches = int(found.group(1)) if found else (sum(per_file.values()) if per_file else match_lines)
    fields.append(f"Matches: {matches}")
    if per_file:
        fields.append(f"Files: {len(per_file)}")
        top = sorted(per_file.items(), key=lambda item: -item[1])[:3]
        fields.append("Top files: " + one_line_field(", ".join(_short_path(p) for p, _ in top), 120))
    return fields


def _first_line(text: str) -> str:
    """The output's first line that has a word in it; a JSON answer made one line (its first line alone is `{`)."""
    if text.lstrip()[:1] in ("{", "[") and len(text) <= _JSON_CHARS:
        try:
            return json.dumps(json.loads(text), ensure_ascii=False)
        except ValueError:
            pass
    for line in text.split("\n", 50)[:50]:
        if _WORD.search(line):
            return line.strip()
    return ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _line_count(text: str) -> int:
    """Lines as an editor counts them: a final newline ends the last line, it does not start another."""
    return len(text.splitlines()) if text.strip() else 0


def _first_difference(old: str, new: str) -> tuple[str, str]:
    """The first line only in `old` and the first only in `new`: edits repeat context lines on both sides."""
    old_lines = [line.strip() for line in old.split("\n") if line.strip()]
    new_lines = [line.strip() for line in new.split("\n") if line.strip()]
    old_set, new_set = set(old_lines), set(new_lines)
    removed = next((line for line in old_lines if line not in new_set), "")
    added = next((line for line in new_lines if line not in old_set), "")
    return removed, added


def _edit_fields(use: ToolUse) -> list[str]:
    args, output, path = use.args, use.output, use.path
    # A whole file written over one that was there (create_file's "replaced FILE"): said, as the card says it.
    fields = [f"{'Replaced' if output.startswith('replaced ') else 'File'}: {one_line_field(path or '?', 150)}"]
    old = args.get("old_string", args.get("old_str", args.get("search")))
    new = args.get("new_string", args.get("new_str", args.get("replace", args.get("new_source"))))
    edits = args.get("edits")
    command = given if isinstance(given := args.get("command"), str) else ""
    swe_edit = re.match(r"edit\s+(\d+):(\d+)\n(.*?)\n?end_of_edit\s*\Z", command, re.DOTALL)
    if isinstance(edits, list):
        fields.append(f"Edits: {len(edits)}")
    elif swe_edit:
        start, end, text = swe_edit.groups()
        fields.append(f"Replaced lines {start}-{end} with {_count(_line_count(text), 'line')}")
    elif isinstance(old, str) and isinstance(new, str):
        removed, added = _first_difference(old, new)
        if removed and added:
            change = f"Changed: {one_line_field(removed, 50)!r} -> {one_line_field(added, 50)!r}"
        elif added or removed:
            change = f"Added: {one_line_field(added, 60)!r}" if added else f"Removed: {one_line_field(removed, 60)!r}"
        else:
            change = "Changed: whitespace"
        fields.append(f"{change} ({_line_count(old)} -> {_line_count(new)} lines)")
        if args.get("replace_all") is True:
            fields.append("All occurrences")
    elif isinstance(text_arg := args.get("text"), str) or (isinstance(new, str) and "insert_line" in args):
        inserted = text_arg if isinstance(text_arg, str) else str(new)
        where = f" at line {args['insert_line']}" if "insert_line" in args else ""
        fields.append(f"Inserted {_count(_line_count(inserted), 'line')}{where}")
    header = FILE_HEADER.search(output[:1000])
    if header:
        fields.append(f"Now: {header.group(2)} lines")
    return fields


def _write_fields(use: ToolUse) -> list[str]:
    args, output, path = use.args, use.output, use.path
    # A whole file written over one that was there (create_file's "replaced FILE"): said, as the card says it.
    fields = [f"{'Replaced' if output.startswith('replaced ') else 'File'}: {one_line_field(path or '?', 150)}"]
    content = args.get("content", args.get("file_text", args.get("contents")))
    if isinstance(content, str):
        fields.append(f"Lines written: {_line_count(content)}")
        language = _file_type(path)
        if language:
            fields.append(f"Type: {language}")
    else:
        header = FILE_HEADER.search(output[:1000])
        if header:
            fields.append(f"Lines: {header.group(2)}")
    return fields


def _describe_args(args: dict[str, Any]) -> str:
    for key in ("description", "command", "prompt", "url", "query", "skill", "subagent_type"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    if "todos" in args and isinstance(args["todos"], list):
        return f"{len(args['todos'])} todos"
    # A tool whose arguments have names of its own (an MCP server's `timezone`, `repo_path`): what it was asked.
    return ", ".join(f"{key}={value}" for key, value in args.items() if isinstance(value, (str, int, float)))


def _size(text: str) -> str:
    n = len(text)
    return f"{n} chars" if n < 1000 else f"{n / 1000:.1f}k chars"


def lines_of(text: str) -> list[str]:
    """The lines of `text` that are not blank."""
    return [line for line in text.split("\n") if line.strip()]


@dataclass(frozen=True)
class Subject:
    """What a call acted on: the file it read or wrote, the command it ran, and its target for display (the
    path, command, pattern or url)."""

    path: str = ""
    command: str = ""
    target: str = ""


@dataclass(frozen=True)
class ToolUse:
    """One call and its result, as the per-kind rules read it."""

    tool: str
    args: dict[str, Any]
    output: str
    subject: Subject
    exit_code: int | None
    failed: bool

    @property
    def path(self) -> str:
        return self.subject.path


def _file_subject(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> Subject:
    path = _call_path(tool, args, open_file, output)
    return Subject(path=path, target=path)


def _shell_subject(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> Subject:
    command = _first_arg(args, _COMMAND_KEYS)
    return Subject(command=command, target=command)


def _search_subject(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> Subject:
    # A search inside one file or folder reads it.
    return Subject(path=_first_arg(args, FILE_ARGUMENT_KEYS),
                   target=_first_arg(args, _PATTERN_KEYS + ("path", "dir")) or " ".join(_argv(tool, args)))


def _web_subject(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> Subject:
    return Subject(target=_first_arg(args, ("url", "query", "q")))


def _other_subject(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> Subject:
    return Subject(target=_describe_args(args))


def _shell_fields(use: ToolUse) -> list[str]:
    # The documents' bash line always has its exit code; "?" when the output does not say.
    exit_code = "?" if use.exit_code is None else use.exit_code
    fields = [f"Command: {one_line_field(use.subject.command or '?', 120)}", f"Exit: {exit_code}",
              f"Output: {_count(len(lines_of(use.output)), 'line')}"]
    if not use.failed and use.output.strip():
        fields.append(f"Last: {one_line_field(lines_of(use.output)[-1], 80)}")
    return fields


def _list_fields(use: ToolUse) -> list[str]:
    return [f"Path: {one_line_field(use.subject.target or '.', 150)}", f"Entries: {len(lines_of(use.output))}"]


def _web_fields(use: ToolUse) -> list[str]:
    return [f"{'URL' if 'url' in use.args else 'Query'}: {one_line_field(use.subject.target or '?', 120)}",
            f"Output: {_count(len(lines_of(use.output)), 'line')}",
            f"First: {one_line_field(_first_line(use.output), 80)}"]


def _other_fields(use: ToolUse) -> list[str]:
    target = use.subject.target
    return ([f"Input: {one_line_field(target, 80)}"] if target else []) + [
        f"First: {one_line_field(_first_line(use.output), 100)}", f"Size: {_size(use.output)}"]


@dataclass(frozen=True)
class KindRule:
    """How one kind of tool is summarized."""

    label: str  # the name of its subject on a failed call's line ("File: x | Error: ...")
    subject: Callable[[str, dict[str, Any], str | None, str], Subject]
    fields: Callable[[ToolUse], list[str]]
    runs_commands: bool = False  # its output reports an exit code and errors anywhere, not just up front


KIND_RULES: dict[str, KindRule] = {
    "read_file": KindRule("File", _file_subject, _read_fields),
    "write_file": KindRule("File", _file_subject, _write_fields),
    "edit_file": KindRule("File", _file_subject, _edit_fields),
    "shell": KindRule("Command", _shell_subject, _shell_fields, runs_commands=True),
    "search": KindRule("Pattern", _search_subject, _search_fields),
    "list_files": KindRule("Path", _search_subject, _list_fields),
    "web": KindRule("URL", _web_subject, _web_fields),
    "default": KindRule("Input", _other_subject, _other_fields),
}
