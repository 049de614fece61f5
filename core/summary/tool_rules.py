"""Rule-based (no LLM), deterministic summaries of tool calls and of runs of old messages.

- `canonical_tool` maps the tool names of real agents (Claude Code, SWE-agent, mini-swe-agent, OpenAI-style
  function tools) onto a few kinds.
- `one_line` is the one-line summary that replaces an old tool output in the prompt, e.g.
  `[✓ Read: File: /app.ts | Lines: 100 | Type: TypeScript]` or `[❌ Bash: Command: npm test | Exit: 1 | Error: ...]`.
- `extract_facets` pulls the artifact trail (files, commands, errors, tool usage, user requests) out of messages,
  reading commands, error names, identifiers and the user's own words as `core.retention` does, so that what the
  trail shows is what the retention check counts.
- `rule_summary` writes one block summarizing many dropped messages, within a token cap.

Everything that leaves this module passes through `core.redact`: secrets in tool outputs or arguments never reach a
summary line, a summary block or the facets.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..model.messages import Message, ToolCall
from ..model.records import MAX_KEY_POINTS, CommandRun, Facets, ToolUsage
from .redact import redact, redact_obj
from .retention import (
    COMMAND_MATCH_CHARS,
    MAX_IDENTIFIERS,
    collect_facts,
    command_parts,
    normalize_command,
    project_root,
    user_text,
)

KINDS = ("read_file", "shell", "search", "write_file", "edit_file", "list_files", "web", "default")

_NAMES: dict[str, tuple[str, ...]] = {
    "read_file": ("read", "read_file", "readfile", "view", "view_file", "open", "open_file", "goto", "scroll_up",
                  "scroll_down", "cat", "read_many_files", "notebookread", "get_file_contents", "fs_read"),
    "shell": ("bash", "shell", "sh", "zsh", "execute_bash", "execute_command", "run_command", "run_shell_command",
              "run_terminal_cmd", "terminal", "exec", "local_shell", "powershell", "bashoutput", "killshell",
              "python", "python3", "curl", "wget", "file", "decompile", "disassemble", "debug_start", "connect_start",
              "netcat", "nc"),
    "search": ("grep", "glob", "search", "search_dir", "search_file", "find_file", "find", "search_files",
               "file_search", "codebase_search", "grep_search", "ripgrep", "rg", "find_files", "glob_files"),
    "write_file": ("write", "write_file", "writefile", "create", "create_file", "write_to_file", "save_file",
                   "new_file"),
    "edit_file": ("edit", "multiedit", "multi_edit", "edit_file", "editfile", "notebookedit", "str_replace_editor",
                  "str_replace_based_edit_tool", "str_replace", "insert", "apply_patch", "patch", "replace",
                  "replace_in_file", "search_replace", "apply_diff"),
    "list_files": ("ls", "list_files", "list_dir", "list_directory", "listdir", "dir", "tree"),
    "web": ("webfetch", "websearch", "web_fetch", "web_search", "fetch", "browse", "browser", "open_url",
            "http_request", "fetch_url", "search_web"),
    "default": ("task", "agent", "todowrite", "todoread", "skill", "submit", "exit_command", "think",
                "exitplanmode", "slashcommand"),
}
_KIND_OF: dict[str, str] = {name: kind for kind, names in _NAMES.items() for name in names}
# Unknown names: the first word that says what the tool does wins (web before search: "web_search" is web).
_NAME_HINTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind) for pattern, kind in (
        (r"web|fetch|browse|http|url", "web"),
        (r"grep|search|find|glob", "search"),
        (r"edit|replace|patch|insert", "edit_file"),
        (r"write|create|save", "write_file"),
        (r"read|view|open|cat", "read_file"),
        (r"bash|shell|exec|command|terminal|run|cmd", "shell"),
        (r"^ls$|list|dir|tree", "list_files"),
    ))


def canonical_tool(name: str) -> str:
    """The kind of a tool by its name: read_file, shell, search, write_file, edit_file, list_files, web, default."""
    key = re.sub(r"[^a-z0-9]+", "_", (name or "").lower()).strip("_")
    key = key.rsplit("__", 1)[-1]  # MCP tools: mcp__server__tool
    kind = _KIND_OF.get(key) or _KIND_OF.get(key.replace("_", ""))
    if kind:
        return kind
    for pattern, hinted in _NAME_HINTS:
        if pattern.search(key):
            return hinted
    return "default"


# ---------------------------------------------------------------------------------------------------------------
# Reading outputs

# SWE-agent appends its state after every observation.
_SWE_STATUS = re.compile(r"\n?\(Open file: ([^\n)]*)\)\s*\n\(Current directory: [^\n]*\)\s*(?:\n?bash-\$\s*)?\Z")
_PROCESS_DONE = re.compile(r"///PROCESS-DONE:(-?\d+):PROCESS-DONE///")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b\x0c\x0e-\x1f]")
_EXIT_CODE = re.compile(
    r"(?im)^\s*exit code:?\s*(-?\d+)\b|\bexit(?:ed with)? (?:status|code)[ :=]*(-?\d+)\b"
    r"|\breturn ?code[\"']?\s*[:=]\s*(-?\d+)"
    r"|\bprocess exited with code (-?\d+)")
# A line that reports a failure in command output. Anchored at line starts so prose that merely mentions errors
# (a task description, a log line with a timestamp) does not count.
_ERROR_LINE = re.compile(
    r"(?m)^[ \t]*(?:"
    r"Traceback \(most recent call last\):"
    r"|\*\* \(\w[\w.]*\)"                                          # Elixir raise
    r"|[\w.]*[A-Z]\w*(?:Error|Exception)(?::|$)"                     # Python / JS exception line
    r"|(?:error|fatal|panic|ERROR|FATAL|Error)(?:\[\w+\])?:"         # error: / fatal: / error[E0432]:
    r"|npm ERR!|FAILED\b|FAIL\b|<tool_use_error>"
    r"|EXECUTION TIMED OUT|Pre-commit validation failed|Segmentation fault"
    r").*$"
    r"|^.*(?:: command not found|No such file or directory|[Pp]ermission denied"
    r"|\b[1-9]\d* (?:failed|failures?)\b|==+ .*\b[1-9]\d* errors?\b).*$")
_EXCEPTION_LINE = re.compile(r"(?m)^[ \t]*[\w.]*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b.*$")
# Outputs of non-shell tools fail only if they say so up front (a file's own content may contain "Error:").
_HEAD_ERROR = re.compile(
    r"\A\s*(?:<tool_use_error>|Error\b|ERROR\b|error:|File does not exist|No such file|Permission denied"
    r"|Your proposed edit has introduced|No replacement was performed|Failed to|Request failed|Usage: )",
    re.IGNORECASE)
_TAG = re.compile(r"</?tool_use_error>")

_WHITESPACE = re.compile(r"\s+")

LINE_LIMIT = 300
ERROR_DETAIL_LIMIT = 2000


def _field(value: Any, limit: int) -> str:
    """A value as one redacted line, clipped to `limit` characters (redacted before clipping: no half-secrets)."""
    text = _WHITESPACE.sub(" ", str(value)).strip()
    text, _ = redact(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _split_status(text: str) -> tuple[str, str | None, int | None]:
    """Output without SWE-agent's trailers; the open file it reports; its PROCESS-DONE exit code."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    open_file = None
    status = _SWE_STATUS.search(text)
    if status:
        text = text[: status.start()]
        if status.group(1).strip() not in ("", "n/a"):
            open_file = status.group(1).strip()
    exit_code = None
    done = _PROCESS_DONE.search(text)
    if done:
        exit_code = int(done.group(1))
        text = _PROCESS_DONE.sub("", text)
    return text, open_file, exit_code


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


@dataclass(frozen=True)
class _Outcome:
    failed: bool
    exit_code: int | None
    error: str  # first error line, raw
    error_text: str  # the full error, raw


def _shell_outcome(text: str, exit_code: int | None) -> _Outcome:
    found = _EXIT_CODE.search(text[:2000])
    if found and exit_code is None:
        exit_code = int(next(g for g in found.groups() if g is not None))
    body = text[found.end():] if found and found.start() < 200 else text
    error = _ERROR_LINE.search(body)
    failed = (exit_code is not None and exit_code != 0) or error is not None
    if not failed:
        return _Outcome(False, exit_code if exit_code is not None else 0, "", "")
    if error is None:
        lines = _lines(body)
        return _Outcome(True, exit_code, lines[0] if lines else "", "\n".join(lines))
    line = error.group(0).strip()
    start = error.start()
    if line.startswith("Traceback"):
        # The exception line at the end of the traceback says what went wrong.
        exceptions = [m for m in _EXCEPTION_LINE.finditer(body, error.end())]
        if exceptions:
            line = exceptions[-1].group(0).strip()
    return _Outcome(True, exit_code, line, body[start:].strip())


def _head_outcome(text: str) -> _Outcome:
    if not _HEAD_ERROR.match(text):
        return _Outcome(False, None, "", "")
    clean = _TAG.sub("", text).strip()
    lines = _lines(clean)
    return _Outcome(True, None, lines[0] if lines else "error", clean)


def _error_detail(text: str) -> str:
    """The full error as one line, capped: head and tail kept (a traceback's last line names the exception)."""
    joined = " ⏎ ".join(line.strip() for line in _lines(text))
    joined, _ = redact(joined)
    if len(joined) <= ERROR_DETAIL_LIMIT:
        return joined
    head = ERROR_DETAIL_LIMIT * 3 // 4
    return joined[:head] + " … " + joined[-(ERROR_DETAIL_LIMIT - head - 3):]


# ---------------------------------------------------------------------------------------------------------------
# Arguments

_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file", "absolute_path", "filepath")
_COMMAND_KEYS = ("command", "cmd", "script", "code", "commands", "input")
_PATTERN_KEYS = ("pattern", "query", "regex", "search_term", "search", "file_name", "name", "q", "glob")
_FILE_HEADER = re.compile(r"^\[File: (.+?) \((\d+) lines total\)\]", re.MULTILINE)


def _args(call: ToolCall | None) -> dict[str, Any]:
    return call.arguments if call is not None and isinstance(call.arguments, dict) else {}


def _first_arg(args: dict[str, Any], keys: Iterable[str]) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return ""


def _argv(tool: str, args: dict[str, Any]) -> list[str]:
    """SWE-agent's command-line tools (`open f.py 100`, `search_dir foo src`): the words after the tool's name."""
    command = args.get("command")
    if not isinstance(command, str):
        return []
    first_line = command.split("\n", 1)[0].strip()
    if not first_line.split(maxsplit=1) or first_line.split(maxsplit=1)[0].lower() != tool.lower():
        return []
    try:
        words = shlex.split(first_line)
    except ValueError:
        words = first_line.split()
    return words[1:]


def _call_path(tool: str, args: dict[str, Any], open_file: str | None, output: str) -> str:
    if open_file:
        return open_file
    path = _first_arg(args, _PATH_KEYS)
    if path:
        return path
    header = _FILE_HEADER.search(output[:1000])
    if header:
        return header.group(1)
    argv = _argv(tool, args)
    return argv[0] if argv else ""


def _refined_kind(tool: str, args: dict[str, Any]) -> str:
    """The kind, refined by arguments where one tool does several things (str_replace_editor view/create)."""
    kind = canonical_tool(tool)
    sub = args.get("command")
    if kind == "edit_file" and isinstance(sub, str):
        if sub == "view":
            return "read_file"
        if sub == "create":
            return "write_file"
    return kind


# ---------------------------------------------------------------------------------------------------------------
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


def _read_fields(path: str, output: str) -> list[str]:
    fields = [f"File: {_field(path or '?', 150)}"]
    header = _FILE_HEADER.search(output[:1000])
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
    if language in _SYMBOLS:
        code = "\n".join(text for _, text in numbered) if numbered else output[:_SCAN_LIMIT]
        exports_re, imports_re = _SYMBOLS[language]
        exports, imports = _names(exports_re, code), _names(imports_re, code)
        if exports:
            fields.append(f"Exports: {_field(exports, 80)}")
        if imports:
            fields.append(f"Imports: {_field(imports, 80)}")
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


def _search_fields(tool: str, args: dict[str, Any], output: str) -> list[str]:
    argv = _argv(tool, args)
    pattern = _first_arg(args, _PATTERN_KEYS) or (argv[0] if argv else "")
    fields = [f"Pattern: {_field(pattern or '?', 80)}"]
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
        fields.append("Top: " + _field(", ".join(_short_path(p) for p, _ in top), 120))
    return fields


def _first_line(text: str) -> str:
    for line in text.split("\n", 50)[:50]:
        if line.strip():
            return line.strip()
    return ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _line_count(text: str) -> int:
    return text.count("\n") + 1 if text.strip() else 0


def _first_difference(old: str, new: str) -> tuple[str, str]:
    """The first line only in `old` and the first only in `new`: edits repeat context lines on both sides."""
    old_lines = [line.strip() for line in old.split("\n") if line.strip()]
    new_lines = [line.strip() for line in new.split("\n") if line.strip()]
    old_set, new_set = set(old_lines), set(new_lines)
    removed = next((line for line in old_lines if line not in new_set), "")
    added = next((line for line in new_lines if line not in old_set), "")
    return removed, added


def _edit_fields(args: dict[str, Any], output: str, path: str) -> list[str]:
    fields = [f"File: {_field(path or '?', 150)}"]
    old = args.get("old_string", args.get("old_str", args.get("search")))
    new = args.get("new_string", args.get("new_str", args.get("replace", args.get("new_source"))))
    edits = args.get("edits")
    command = args.get("command") if isinstance(args.get("command"), str) else ""
    swe_edit = re.match(r"edit\s+(\d+):(\d+)\n(.*?)\n?end_of_edit\s*\Z", command, re.DOTALL)
    if isinstance(edits, list):
        fields.append(f"Edits: {len(edits)}")
    elif swe_edit:
        start, end, text = swe_edit.groups()
        fields.append(f"Replaced lines {start}-{end} with {_count(_line_count(text), 'line')}")
    elif isinstance(old, str) and isinstance(new, str):
        removed, added = _first_difference(old, new)
        if removed and added:
            change = f"Changed: {_field(removed, 50)!r} -> {_field(added, 50)!r}"
        elif added or removed:
            change = f"Added: {_field(added, 60)!r}" if added else f"Removed: {_field(removed, 60)!r}"
        else:
            change = "Changed: whitespace"
        fields.append(f"{change} ({_line_count(old)} -> {_line_count(new)} lines)")
        if args.get("replace_all") is True:
            fields.append("All occurrences")
    elif isinstance(args.get("text"), str) or (isinstance(new, str) and "insert_line" in args):
        inserted = args.get("text") if isinstance(args.get("text"), str) else new
        where = f" at line {args['insert_line']}" if "insert_line" in args else ""
        fields.append(f"Inserted {_count(_line_count(inserted), 'line')}{where}")
    header = _FILE_HEADER.search(output[:1000])
    if header:
        fields.append(f"Now: {header.group(2)} lines")
    return fields


def _write_fields(args: dict[str, Any], output: str, path: str) -> list[str]:
    fields = [f"File: {_field(path or '?', 150)}"]
    content = args.get("content", args.get("file_text", args.get("contents")))
    if isinstance(content, str):
        fields.append(f"Lines written: {_line_count(content.rstrip(chr(10)))}")
        language = _file_type(path)
        if language:
            fields.append(f"Type: {language}")
    else:
        header = _FILE_HEADER.search(output[:1000])
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
    return ""


def _size(text: str) -> str:
    n = len(text)
    return f"{n} chars" if n < 1000 else f"{n / 1000:.1f}k chars"


@dataclass(frozen=True)
class _Analysis:
    """What rules can tell about one tool call and its result."""

    tool: str
    kind: str
    path: str
    command: str
    target: str  # what the call acted on: path, command, pattern or url
    outcome: _Outcome
    line: str
    has_result: bool


def _analyze(call: ToolCall | None, result: Message | None, preserve_error_details: bool) -> _Analysis:
    tool = (call.name if call is not None else None) or (result.name if result is not None else None) or "tool"
    args = _args(call)
    kind = _refined_kind(tool, args)
    raw = result.content if result is not None else ""
    output, open_file, process_exit = _split_status(raw)
    path = command = target = ""
    if kind in ("read_file", "write_file", "edit_file"):
        path = _call_path(tool, args, open_file, output)
        target = path
    elif kind == "shell":
        command = _first_arg(args, _COMMAND_KEYS)
        target = command
    elif kind in ("search", "list_files"):
        path = _first_arg(args, _PATH_KEYS)  # a search inside one file or folder reads it
        target = _first_arg(args, _PATTERN_KEYS + ("path", "dir")) or " ".join(_argv(tool, args))
    elif kind == "web":
        target = _first_arg(args, ("url", "query", "q"))
    else:
        target = _describe_args(args)

    if result is None:
        outcome = _Outcome(False, None, "", "")
        fields = [f"{_field(target, 120)}" if target else "", "no result"]
        mark = "⋯"
    else:
        outcome = _shell_outcome(output, process_exit) if kind == "shell" else _head_outcome(output)
        mark = "❌" if outcome.failed else "✓"
        if outcome.failed and kind != "shell":
            fields = [f"{_label(kind)}: {_field(target, 150)}"] if target else []
        elif kind == "read_file":
            fields = _read_fields(path, output)
        elif kind == "shell":
            fields = [f"Command: {_field(command or '?', 120)}"]
            if outcome.exit_code is not None:
                fields.append(f"Exit: {outcome.exit_code}")
            body = output
            if raw.lstrip().lower().startswith("exit code"):
                body = output.split("\n", 1)[1] if "\n" in output else ""
            fields.append(f"Output: {_count(len(_lines(body)), 'line')}")
            if not outcome.failed and body.strip():
                last = _lines(body)[-1]
                fields.append(f"Last: {_field(last, 80)}")
        elif kind == "search":
            fields = _search_fields(tool, args, output)
        elif kind == "edit_file":
            fields = _edit_fields(args, output, path)
        elif kind == "write_file":
            fields = _write_fields(args, output, path)
        elif kind == "list_files":
            fields = [f"Path: {_field(target or '.', 150)}", f"Entries: {len(_lines(output))}"]
        elif kind == "web":
            fields = [f"{'URL' if 'url' in args else 'Query'}: {_field(target or '?', 120)}",
                      f"Output: {_count(len(_lines(output)), 'line')}", f"First: {_field(_first_line(output), 80)}"]
        else:
            fields = ([f"Input: {_field(target, 80)}"] if target else []) + [
                f"First: {_field(_first_line(output), 100)}", f"Size: {_size(output)}"]
        if outcome.failed:
            if preserve_error_details and outcome.error_text:
                fields.append(f"Error: {_error_detail(outcome.error_text)}")
            else:
                fields.append(f"Error: {_field(_TAG.sub('', outcome.error) or 'failed', 150)}")
    body = " | ".join(f for f in fields if f)
    line = f"[{mark} {_field(tool, 40)}: {body}]"
    limit = LINE_LIMIT + (ERROR_DETAIL_LIMIT if preserve_error_details and outcome.failed else 0)
    if len(line) > limit:
        line = line[: limit - 2].rstrip() + "…]"
    return _Analysis(tool, kind, path, command, target, outcome, line, result is not None)


def _label(kind: str) -> str:
    return {"read_file": "File", "write_file": "File", "edit_file": "File", "shell": "Command",
            "search": "Pattern", "list_files": "Path", "web": "URL"}.get(kind, "Input")


def one_line(call: ToolCall | None, result: Message, *, preserve_error_details: bool = False) -> str:
    """The one-line rule-based summary of a tool call and its result (✓ / ❌, original tool name, key facts).

    Always a single line without newlines, at most ~300 characters (plus up to 2,000 characters of error text
    with `preserve_error_details`), with secrets redacted.
    """
    return _analyze(call, result, preserve_error_details).line


# ---------------------------------------------------------------------------------------------------------------
# Facets

MAX_ENTITIES = MAX_IDENTIFIERS
MAX_ERRORS = 30
REQUEST_LIMIT = 300
_ROLE_ORDER = ("system", "user", "assistant", "tool")


def _pairs(messages: list[Message], preserve: bool) -> list[tuple[int, _Analysis]]:
    """Every tool call / result in `messages`, paired by call id, analysed once, in order of appearance."""
    results: dict[str, Message] = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    called: set[str] = set()
    out: list[tuple[int, _Analysis]] = []
    for index, message in enumerate(messages):
        for call in message.tool_calls:
            called.add(call.id)
            out.append((index, _analyze(call, results.get(call.id), preserve)))
        if message.role == "tool" and (not message.tool_call_id or message.tool_call_id not in called):
            # A result whose call was summarized earlier (or never paired): still worth a line.
            out.append((index, _analyze(None, message, preserve)))
    return out


def _facets(messages: list[Message], pairs: list[tuple[int, _Analysis]], preserve: bool) -> Facets:
    files_read: dict[str, None] = {}
    files_modified: dict[str, None] = {}
    commands: dict[tuple[str, int | None], int] = {}
    errors: dict[str, None] = {}
    usage: dict[str, list[_Analysis]] = {}
    for _, a in pairs:
        usage.setdefault(a.tool, []).append(a)
        if a.has_result and not a.outcome.failed and a.path:
            if a.kind in ("read_file", "search", "list_files"):
                files_read.setdefault(a.path, None)
            elif a.kind in ("write_file", "edit_file"):
                files_modified.setdefault(a.path, None)
        if a.kind == "shell" and a.command:
            # Normalized as the retention check reads commands: `mix test 2>&1 | tail -5` is `mix test`.
            key = (_field(normalize_command(a.command), 300), a.outcome.exit_code if a.has_result else None)
            commands[key] = commands.get(key, 0) + 1
        if a.outcome.failed and len(errors) < MAX_ERRORS:
            error = (_error_detail(a.outcome.error_text) if preserve and a.outcome.error_text
                     else _field(_TAG.sub("", a.outcome.error), 200))
            if error and a.kind != "shell" and a.target:
                # "File does not exist." says little without the file it is about.
                error = f"{_field(a.target, 200)}: {error}"
            if error:
                errors.setdefault(error, None)
    tool_usage = []
    for tool, uses in sorted(usage.items(), key=lambda item: (-len(item[1]), item[0])):
        notable: dict[str, None] = {}
        for a in sorted(uses, key=lambda a: not a.outcome.failed):
            if len(notable) >= 3:
                break
            if a.target:
                suffix = ""
                if a.outcome.failed:
                    suffix = f" (exit {a.outcome.exit_code})" if a.outcome.exit_code else " (failed)"
                notable.setdefault(_field(a.target, 100) + suffix, None)
        tool_usage.append(ToolUsage(tool=tool, count=len(uses), notable=list(notable)))
    # Exception names, compiler codes and failing tests anywhere in the outputs (an Elixir BadMapError is three
    # lines below the "** (Mix)" line that fails the command), unless an error line already names them.
    facts = collect_facts(messages)
    for name in facts.errors:
        if not any(name in line for line in errors):
            errors.setdefault(name, None)
    roles = {m.role for m in messages}
    requests = (user_text(m) for m in messages if m.role == "user")
    facets = Facets(
        entities=facts.identifiers[:MAX_ENTITIES],
        files_read=list(files_read),
        files_modified=list(files_modified),
        commands=[CommandRun(command=c, exit_code=code, count=n) for (c, code), n in commands.items()],
        errors=list(errors),
        tool_usage=tool_usage,
        participants=[role for role in _ROLE_ORDER if role in roles],
        # What the user wrote, not what the client injected as a user message (skill bodies, reminders).
        user_requests=[_field(text, REQUEST_LIMIT) for text in requests if text],
    )
    redacted, _ = redact_obj(facets)
    return redacted


def extract_facets(messages: list[Message], *, preserve_error_details: bool = False) -> Facets:
    """The artifact trail of `messages`: files, commands with exit codes, errors, tool usage, requests, entities."""
    return _facets(messages, _pairs(messages, preserve_error_details), preserve_error_details)


# ---------------------------------------------------------------------------------------------------------------
# The summary block

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|instead of|root cause|the (?:fix|problem|issue|cause|bug) (?:is|was)|turns out"
    r"|because|will use|switch(?:ed)? to|going with|conclusion|must|should not|won't|don't)\b", re.IGNORECASE)
_MARKDOWN_PREFIX = re.compile(r"^[#>*\-\s]+")
MIN_SUMMARY_TOKENS = 50
MAX_REQUESTS = 60
COMMAND_LIMIT = 120

# Key point priorities: what a reader most needs when the originals are gone.
_FAILED, _DECISION_POINT, _CHANGE, _STATEMENT, _ROUTINE = 4, 3, 2, 2, 1


def _assistant_points(text: str) -> list[tuple[int, str]]:
    sentences = [s for s in (_MARKDOWN_PREFIX.sub("", part).strip() for part in _SENTENCE_END.split(text[:4000])) if s]
    # The first sentence that says something: "Perfect!" or "Done." alone does not.
    first = next((s for s in sentences if len(s.split()) >= 4), None)
    if first is None:
        return []
    points = [(_DECISION_POINT if _DECISION.search(first) else _STATEMENT, _field(first, 200))]
    decision = next((s for s in sentences if s is not first and _DECISION.search(s)), None)
    if decision:
        points.append((_DECISION_POINT, _field(decision, 200)))
    return points


def _key_points(messages: list[Message], pairs: list[tuple[int, _Analysis]]) -> list[str]:
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


def _clip(text: str, limit: int) -> str:
    """Text cut to `limit` characters plus a mark; unlike _field it keeps the first `limit` characters exactly."""
    return text if len(text) <= limit + 1 else text[:limit] + "…"


def _run_suffix(run: CommandRun) -> str:
    # Success is the default: only a count and a non-zero exit code are worth their tokens.
    return (f" ×{run.count}" if run.count > 1 else "") + (f" (exit {run.exit_code})" if run.exit_code else "")


def _command_line(run: CommandRun) -> str:
    return f"`{_clip(run.command, COMMAND_LIMIT)}`{_run_suffix(run)}"


def _command_groups(runs: list[CommandRun]) -> list[str]:
    """The dense form of the command list: one line per program, each command's start kept (the part a reader
    needs to recognize it): `grep: -r "foo" src/; -n bar x.py ×2 (exit 1)`."""
    groups: dict[str, list[CommandRun]] = {}
    for run in runs:
        program, rest = command_parts(run.command)
        groups.setdefault(program if rest else run.command + " ", []).append(run)
    lines = []
    for key, members in groups.items():
        if len(members) == 1:
            run = members[0]
            lines.append(_clip(run.command, COMMAND_MATCH_CHARS) + _run_suffix(run))
            continue
        program = key.strip()
        room = max(COMMAND_MATCH_CHARS - len(program) - 1, 1)
        parts = [_clip(command_parts(run.command)[1], room) + _run_suffix(run) for run in members]
        lines.append(f"{program}: " + "; ".join(parts))
    return lines


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
    paths = list(dict.fromkeys(facets.files_read + facets.files_modified))
    # The folder most files are in, as the retention check finds it; one file is simply shown whole.
    root = (project_root(paths) or "") if len(paths) > 1 else ""
    modified = set(facets.files_modified)
    only_read = [path for path in facets.files_read if path not in modified]
    return [
        _Section("User requests", list(facets.user_requests[:MAX_REQUESTS]), drop_rank=6, keep_first=True),
        _Section("Files under", [root.rstrip("/")] if root else [], drop_rank=5, inline=True),
        _Section("Files modified", _grouped(facets.files_modified, root), drop_rank=4),
        _Section("Files read", _grouped(only_read, root), drop_rank=2),
        _Section("Commands", list(facets.commands), drop_rank=3, show=_command_line, dense=_command_groups),
        _Section("Errors", [e.removeprefix(root) for e in facets.errors if not _is_error_name(e)], drop_rank=2.5),
        _Section("Error names", [e for e in facets.errors if _is_error_name(e)], drop_rank=5, inline=True),
        # A model's entities can be empty or punctuation: only names are shown.
        _Section("Identifiers", [f"`{e}`" for e in facets.entities[:MAX_ENTITIES] if _NAME_CHAR.search(e)],
                 drop_rank=1, drop_from="end", inline=True),
    ]


def render_artifact_trail(facets: Facets, max_tokens: int | None = None,
                          count_tokens: Callable[[str], int] | None = None) -> str:
    """The user's requests and the artifact trail of `facets` as text; with a cap, the least needed parts go
    first (identifiers, then error lines, files only read, commands (made dense first), ...; requests last)."""
    sections = _trail_sections(facets)
    if max_tokens is None or count_tokens is None:
        text = _render("", sections)
    else:
        text = _fit("", sections, max_tokens, count_tokens) or ""
    return redact(text)[0]


def _shrink_one(sections: list[_Section], count_tokens: Callable[[str], int]) -> int | None:
    """Take the cheapest loss: make a section dense or drop its least needed item. Returns the estimated tokens
    saved, or None when nothing is left to remove."""
    steps: list[tuple[float, int, _Section, bool]] = []
    for position, section in enumerate(sections):
        if not section.items:
            continue
        steps.append((section.drop_rank, position, section, False))
        if section.dense is not None and not section.is_dense:
            steps.append((section.dense_rank, position, section, True))
    if not steps:
        return None
    _, _, section, densify = min(steps, key=lambda step: step[:2])
    if densify:
        before = count_tokens("\n".join(section.lines()))
        section.is_dense = True
        return before - count_tokens("\n".join(section.lines()))
    if section.keep_first and len(section.items) > 1:
        item = section.items.pop(1)
    else:
        item = section.items.pop(0 if section.drop_from == "start" else -1)
    return count_tokens(f"- {section.show(item)}\n")


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
    preserve_error_details: bool = False,
) -> tuple[str, list[str], Facets]:
    """One block summarizing `messages`, at most `max_tokens` as counted by `count_tokens`.

    Returns (text, key points present in the text, facets). Under budget pressure key points go first (oldest
    side), then the commands are grouped by program, then identifiers, files only read, error lines, commands,
    files modified and error names drop; user requests go last. Below 50 tokens of room the block is a one-line
    marker.
    """
    pairs = _pairs(messages, preserve_error_details)
    facets = _facets(messages, pairs, preserve_error_details)
    n = len(messages)
    if max_tokens < MIN_SUMMARY_TOKENS:
        for marker in (f"[{n} earlier messages summarized; no room for details]", f"[{n} messages summarized]"):
            if count_tokens(marker) <= max_tokens:
                return marker, [], facets
        return "", [], facets

    roles = {role: sum(1 for m in messages if m.role == role) for role in _ROLE_ORDER}
    header = (f"Summary of {n} earlier messages ({roles['user']} user, {roles['assistant']} assistant, "
              f"{roles['tool']} tool results" + (f", {roles['system']} system" if roles["system"] else "") + ")")
    key_points = _key_points(messages, pairs)
    key_point_section = _Section("Key points", list(key_points), drop_rank=0)
    requests, *trail = _trail_sections(facets)
    sections = [requests, key_point_section, *trail]
    text = _fit(header, sections, max_tokens, count_tokens)
    if text is None:
        marker = f"[{n} earlier messages summarized; no room for details]"
        return (marker if count_tokens(marker) <= max_tokens else ""), [], facets
    return text, list(key_point_section.items), facets
