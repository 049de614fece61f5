"""The kind of a tool, from its name: the tool names of real agents (Claude Code, SWE-agent, mini-swe-agent,
OpenAI-style function tools) mapped onto a few kinds that the summaries treat alike."""

from __future__ import annotations

import re
from typing import Any

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
# Unknown names: the first word that says what the tool does wins (web before search: "web_search" is web). Whole
# words only: "truncate" holds "cat" and "frobnicate" holds "cat", yet neither reads a file.
_NAME_HINTS: tuple[tuple[frozenset[str], str], ...] = tuple(
    (frozenset(words.split()), kind) for words, kind in (
        ("web fetch browse http url", "web"),
        ("grep search find glob", "search"),
        ("edit replace patch insert", "edit_file"),
        ("write create save", "write_file"),
        ("read view open cat", "read_file"),
        ("bash shell exec command terminal run cmd", "shell"),
        ("ls list dir tree", "list_files"),
    ))


def canonical_tool(name: str) -> str:
    """The kind of a tool by its name: read_file, shell, search, write_file, edit_file, list_files, web, default."""
    words_apart = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name or "")  # camelCase: readFile is read_file
    key = re.sub(r"[^a-z0-9]+", "_", words_apart.lower()).strip("_")
    key = key.rsplit("__", 1)[-1]  # MCP tools: mcp__server__tool
    kind = _KIND_OF.get(key) or _KIND_OF.get(key.replace("_", ""))
    if kind:
        return kind
    words = set(key.split("_"))
    for hints, hinted in _NAME_HINTS:
        if words & hints:
            return hinted
    return "default"


# A tool whose name says nothing (an MCP server's "get_contents", "lookup"): its arguments do, first match wins.
_ARGUMENT_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("url", "uri"), "web"),
    (("command", "cmd", "script"), "shell"),
    (("pattern", "regex", "query"), "search"),
    (("path", "file_path", "filepath", "filename", "file"), "read_file"),
)


def refined_kind(tool: str, args: dict[str, Any]) -> str:
    """The kind, refined by arguments where one tool does several things (str_replace_editor view/create), or
    read from them where its name says nothing."""
    kind = canonical_tool(tool)
    if kind == "default":
        return next((hinted for names, hinted in _ARGUMENT_HINTS if any(name in args for name in names)), kind)
    sub = args.get("command")
    if kind == "edit_file" and isinstance(sub, str):
        if sub == "view":
            return "read_file"
        if sub == "create":
            return "write_file"
    return kind
