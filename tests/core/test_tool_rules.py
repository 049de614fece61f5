"""Rule-based tool summaries: one-liners for old tool outputs, facets, and the capped summary block.

Most inputs are the real outputs of the shared Claude Code and SWE-agent transcripts.
"""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.storage.interchange import read_transcript
from precis.core.summary.facets import extract_facets
from precis.core.summary.summary_block import render_artifact_trail, rule_summary
from precis.core.summary.tool_kinds import canonical_tool, refined_kind
from precis.core.summary.tool_output import one_line
from precis.core.summary.trail_coverage import check_coverage

from tests.conftest import TRANSCRIPTS, TRANSCRIPTS_DIR

COUNT = TokenCounter().count_text


def document_line(tool_name: str, facts: list[str], error: bool = False) -> str:
    """Design document 000's formatSummary written out: `[${status} ${toolName}: ${facts.join(" | ")}]`."""
    return f"[{'❌' if error else '✓'} {tool_name}: {' | '.join(facts)}]"


@lru_cache(maxsize=None)
def transcript(name: str) -> tuple[Message, ...]:
    return tuple(read_transcript(TRANSCRIPTS_DIR / name))


def pairs(messages) -> list[tuple[ToolCall | None, Message]]:
    calls = {c.id: c for m in messages for c in m.tool_calls}
    return [(calls.get(m.tool_call_id or ""), m) for m in messages if m.role == "tool"]


def tool(name: str, output: str, **arguments) -> tuple[ToolCall, Message]:
    call = ToolCall(id=f"call-{name}", name=name, arguments=arguments)
    return call, Message(role="tool", name=name, tool_call_id=call.id, content=output)


def conversation(*items: tuple[ToolCall, Message] | Message) -> list[Message]:
    messages = []
    for item in items:
        if isinstance(item, Message):
            messages.append(item)
        else:
            call, result = item
            messages += [Message(role="assistant", tool_calls=(call,)), result]
    return messages


# ----- tool names ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kind", [
    ("Read", "read_file"), ("Bash", "shell"), ("Grep", "search"), ("Glob", "search"), ("Edit", "edit_file"),
    ("MultiEdit", "edit_file"), ("Write", "write_file"), ("NotebookEdit", "edit_file"), ("WebFetch", "web"),
    ("WebSearch", "web"), ("Task", "default"), ("TodoWrite", "default"), ("LS", "list_files"),
    ("open", "read_file"), ("goto", "read_file"), ("scroll_down", "read_file"), ("edit", "edit_file"),
    ("insert", "edit_file"), ("str_replace_editor", "edit_file"), ("create", "write_file"),
    ("search_dir", "search"), ("search_file", "search"), ("find_file", "search"), ("bash", "shell"),
    ("python", "shell"), ("curl", "shell"), ("decompile", "shell"), ("file", "shell"), ("submit", "default"),
    ("read_file", "read_file"), ("write_file", "write_file"), ("execute_bash", "shell"),
    ("run_shell_command", "shell"), ("grep", "search"), ("mcp__github__search_code", "search"),
    ("something_else", "default"),
])
def test_real_tool_names_map_onto_kinds(name, kind):
    assert canonical_tool(name) == kind


@pytest.mark.parametrize("name, args, kind", [
    # MCP servers' tools whose names say nothing: their arguments tell what they do (issue 23).
    ("get_contents", {"path": "src/app.py"}, "read_file"), ("lookup", {"query": "cache"}, "search"),
    ("get_page", {"url": "http://localhost/"}, "web"), ("do", {"command": "make"}, "shell"),
    ("get_current_time", {"timezone": "UTC"}, "default"),
    # Named kinds stay as named; str_replace_editor's commands still refine it.
    ("Read", {"query": "x"}, "read_file"), ("str_replace_editor", {"command": "view", "path": "a"}, "read_file"),
])
def test_a_tool_named_nothing_known_is_known_by_its_arguments(name, args, kind):
    assert refined_kind(name, args) == kind


# ----- one-liners on real transcripts ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_every_tool_result_gets_a_bounded_one_line_naming_what_it_acted_on(path):
    for call, result in pairs(transcript(path.name)):
        line = one_line(call, result, preserve_error_details=False)
        # ? where a command's exit code is unknown (its harness reports none).
        assert "\n" not in line and line.startswith(("[✓ ", "[❌ ", "[? ")) and line.endswith("]")
        assert len(line) <= 300
        # By default a failed call keeps its error in full, up to 2,000 more characters.
        assert len(one_line(call, result)) <= 2300
        name = call.name if call else result.name
        assert line.startswith((f"[✓ {name}:", f"[❌ {name}:", f"[? {name}:"))
        if call is None:
            continue
        args = call.arguments
        kind = canonical_tool(call.name)
        if kind in ("read_file", "edit_file", "write_file") and "file_path" in args:
            assert args["file_path"] in line
        if kind == "shell":
            assert " ".join(args["command"].split("\n")[0].split())[:60] in line


def test_claude_code_read_shows_path_lines_type_and_symbols():
    messages = transcript("claudecode_session.jsonl")
    call, result = next((c, r) for c, r in pairs(messages) if c and c.arguments.get("file_path", "").endswith("mix.exs")
                        and c.name == "Read")
    line = one_line(call, result)
    assert line.startswith("[✓ Read: File: /home/USER/projects/spotter-worktrees/spotter-4te/mix.exs | Lines: 93")
    assert "Type: Elixir" in line and "Spotter.MixProject" in line


def test_sweagent_open_uses_the_open_file_status_and_total_lines():
    call, result = next((c, r) for c, r in pairs(transcript("sweagent_3.jsonl"))
                        if c and c.name == "open" and "fields" in c.arguments["path"])
    line = one_line(call, result)
    assert "File: /testbed/src/marshmallow/fields.py" in line and "Lines: 1997" in line
    assert "Viewed: 1457-1556" in line and "Open file" not in line


def test_read_detects_python_and_typescript_exports_and_imports():
    py = ("     1→import os\n     2→from pathlib import Path\n     3→\n     4→class Loader:\n"
          "     5→    def load(self): ...\n     6→def parse_config(p):\n")
    line = one_line(*tool("Read", py, file_path="/app/loader.py"))
    assert "Type: Python" in line and "Exports: Loader, parse_config" in line and "Imports: os, pathlib" in line
    ts = ("import { useState } from 'react'\nimport api from './api'\n"
          "export function App() {}\nexport const VERSION = 1\n")
    line = one_line(*tool("read_file", ts, path="/web/app.ts"))
    # Four lines; two `export`s; imports of 'react' and './api'.
    assert line == document_line("read_file", ["File: /web/app.ts", "Lines: 4", "Type: TypeScript",
                                               "Exports: App, VERSION", "Imports: react, ./api"])


# ----- success and failure -----------------------------------------------------------------------------------

def test_claude_code_exit_code_prefix_is_a_failure_with_its_first_error_line():
    line = one_line(*tool("Bash", "Exit code 1\n(eval):1: permission denied: ./run.sh", command="./run.sh"))
    # Claude Code's "Exit code 1" prefix is the exit code, not output; the one line left is the error.
    assert line == document_line("Bash", ["Command: ./run.sh", "Exit: 1", "Output: 1 line",
                                          "Error: (eval):1: permission denied: ./run.sh"], error=True)


def test_test_run_with_failures_is_a_failure_even_when_piped_through_tail():
    messages = transcript("claudecode_session.jsonl")
    outcomes = [one_line(c, r) for c, r in pairs(messages) if c and c.name == "Bash"
                and c.arguments["command"].startswith("mix test")]
    failing = [line for line in outcomes if "11 failures" in line]
    assert failing and all(line.startswith("[❌ Bash") for line in failing)
    # Claude Code writes no exit code for a command that succeeded: a passing run's code is unknown, never ❌.
    passing = [line for line in outcomes if "0 failures" in line]
    assert passing and all(line.startswith("[? Bash") and "| Exit: ? |" in line for line in passing)


def test_prose_mentioning_failures_is_not_an_error():
    messages = transcript("claudecode_session.jsonl")
    call, result = next((c, r) for c, r in pairs(messages) if c and c.arguments.get("command") == "bd show spotter-4te")
    assert "failure" in result.content
    assert one_line(call, result).startswith("[? Bash: Command: bd show spotter-4te | Exit: ?")


def test_sweagent_exit_codes_and_timeouts():
    output = "boom\n///PROCESS-DONE:2:PROCESS-DONE///\n(Open file: n/a)\n(Current directory: /x)\nbash-$"
    line = one_line(*tool("bash", output, command="make"))
    assert line.startswith("[❌ bash: Command: make | Exit: 2")
    call, result = pairs(transcript("sweagent_2.jsonl"))[-1]
    assert one_line(call, result).endswith("| Error: EXECUTION TIMED OUT]")
    call, result = next((c, r) for c, r in pairs(transcript("sweagent_3.jsonl")) if r.content.startswith("344"))
    # The transcript's result is the single line "344": SWE-agent reports no exit code, so it is unknown.
    assert one_line(call, result) == "[? bash: Command: python reproduce.py | Exit: ? | Output: 1 line | Last: 344]"


TRACEBACK = """Traceback (most recent call last):
  File "/repo/app/main.py", line 3, in <module>
    from app.loader import parse_config
  File "/repo/app/loader.py", line 1, in <module>
    import tomllib
ModuleNotFoundError: No module named 'tomllib'"""


def test_traceback_reports_the_exception_and_preserve_keeps_the_whole_error():
    call, result = tool("execute_bash", TRACEBACK, command="python -m app.main")
    short = one_line(call, result, preserve_error_details=False)
    assert short.startswith("[❌ execute_bash: Command: python -m app.main | Exit: ?")
    assert short.endswith("| Error: ModuleNotFoundError: No module named 'tomllib']")
    assert "/repo/app/loader.py" not in short
    full = one_line(call, result)  # errors are kept in full by default
    assert "\n" not in full
    for frame in ('File "/repo/app/main.py", line 3', 'File "/repo/app/loader.py", line 1', "import tomllib",
                  "ModuleNotFoundError: No module named 'tomllib'"):
        assert frame in full
    # A summary block of many messages lists the exception line, not every frame.
    facets = extract_facets(conversation((call, result)))
    assert facets.errors[0] == "ModuleNotFoundError: No module named 'tomllib'"


def test_preserved_error_details_are_capped():
    huge = "Traceback (most recent call last):\n" + "".join(f'  File "/f{i}.py", line {i}\n' for i in range(2000)) \
        + "RuntimeError: deep"
    line = one_line(*tool("Bash", huge, command="x"), preserve_error_details=True)
    assert len(line) < 2500 and line.endswith("RuntimeError: deep]")


def test_tool_use_errors_fail_file_tools():
    messages = transcript("claudecode_session.jsonl")
    edits = [one_line(c, r) for c, r in pairs(messages) if "<tool_use_error>" in r.content]
    assert edits and all(line.startswith("[❌ ") for line in edits)
    assert any("Error: String to replace not found in file." in line for line in edits)
    assert any(line.startswith("[❌ Read: File: ") and "File does not exist." in line for line in edits)


# ----- search, edit, write, web, default -------------------------------------------------------------------------

def test_search_counts_matches_and_files():
    messages = transcript("claudecode_session.jsonl")
    call, result = next((c, r) for c, r in pairs(messages) if c and c.name == "Grep")
    # The transcript's Grep searched one file (router.ex, its `path`) and printed four `NN:` lines.
    assert one_line(call, result) == document_line("Grep", ['Pattern: "hooks|session_hook|tool.call"', "Matches: 4",
                                                            "Files: 1", "Top files: spotter_web/router.ex"])
    call, result = next((c, r) for c, r in pairs(messages)
                        if c and c.name == "Glob" and "live/**" in c.arguments["pattern"])
    assert "Files: 8" in one_line(call, result)
    assert one_line(*tool("Glob", "No files found", pattern="*.zig")).endswith("| Matches: 0]")
    call, result = next((c, r) for c, r in pairs(transcript("sweagent_3.jsonl")) if c and c.name == "find_file")
    # 'Found 1 matches for "fields.py"': the one path, under the repository's src/ root.
    assert one_line(call, result) == document_line("find_file", ['Pattern: "fields.py"', "Matches: 1", "Files: 1",
                                                                 "Top files: marshmallow/fields.py"])
    swe = ('Found 3 matches for "TimeDelta" in /testbed/src:\n/testbed/src/a.py (2 matches)\n'
           '/testbed/src/b.py (1 matches)\nEnd of matches for "TimeDelta" in /testbed/src')
    line = one_line(*tool("search_dir", swe, command="search_dir TimeDelta src"))
    assert "Pattern: \"TimeDelta\" | Matches: 3 | Files: 2 | Top files: src/a.py, src/b.py" in line


def test_edits_say_what_changed_and_writes_how_much():
    line = one_line(*tool("Edit", "The file /a/b.py has been updated successfully.", file_path="/a/b.py",
                          old_string="def f():\n    return 1\n", new_string="def f():\n    return 2\n"))
    # The one line that differs, and the lines of the old and new text (two each: `def f():` and its return).
    assert line == document_line("Edit", ["File: /a/b.py", "Changed: 'return 1' -> 'return 2' (2 -> 2 lines)"])
    call, result = next((c, r) for c, r in pairs(transcript("sweagent_1.jsonl")) if c and c.name == "edit")
    assert "printenv.pl | Replaced lines 1-1 with 5 lines | Now: 5 lines" in one_line(call, result)
    line = one_line(*tool("Write", "File created successfully at: /a/new.ts", file_path="/a/new.ts",
                          content="a\nb\nc\n"))
    assert line == document_line("Write", ["File: /a/new.ts", "Lines written: 3", "Type: TypeScript"])


def test_web_and_default_tools():
    line = one_line(*tool("WebFetch", "# Title\nbody\n", url="https://example.com/doc", prompt="x"))
    assert line == document_line("WebFetch", ["URL: https://example.com/doc", "Output: 2 lines", "First: # Title"])
    line = one_line(*tool("Task", "Found it.\nMore", description="Find the config loader"))
    # "Found it.\nMore" is 14 characters.
    assert line == document_line("Task", ["Input: Find the config loader", "First: Found it.", "Size: 14 chars"])
    assert one_line(None, Message(role="tool", content="ok")).startswith("[✓ tool: ")


@given(name=st.text(max_size=30), output=st.text(max_size=3000), command=st.text(max_size=400))
def test_one_line_is_always_one_bounded_line(name, output, command):
    call, result = tool(name or "x", output, command=command, file_path=command)
    line = one_line(call, result)
    assert "\n" not in line and "\r" not in line and len(line) <= 300


# ----- facets ----------------------------------------------------------------------------------------------------

def test_facets_of_a_sweagent_run():
    facets = extract_facets(list(transcript("sweagent_3.jsonl")))
    assert facets.files_read == ["/testbed/setup.py", "/testbed/src/marshmallow/fields.py"]
    assert facets.files_modified == ["/testbed/reproduce.py", "/testbed/src/marshmallow/fields.py"]
    runs = {c.command: c for c in facets.commands}
    assert runs["python reproduce.py"].count == 2 and runs["python reproduce.py"].exit_code is None  # unreported
    assert runs["ls -F"].count == 2
    usage = {u.tool: u for u in facets.tool_usage}
    assert usage["bash"].count == 6 and len(usage["bash"].notable) == 3
    assert facets.participants == ["system", "user", "assistant", "tool"]
    assert facets.user_requests[0].startswith("We're currently solving the following issue")
    assert all(len(r) <= 300 for r in facets.user_requests)


def test_commands_typed_in_a_sweagent_shell_are_commands_run_editor_commands_too():
    facets = extract_facets(list(transcript("sweagent_1.jsonl")))
    commands = [c.command for c in facets.commands]
    assert "create printenv.pl" in commands  # SWE-agent's editor commands are lines typed in its shell
    assert any(c.startswith('edit 1:1 #!/usr/bin/perl print "Content-type') for c in commands)
    assert "printenv.pl" in " ".join(facets.files_modified)  # and still the files they changed
    # An editor tool's `command` argument is a verb, not a command line.
    view = tool("str_replace_editor", "1\tprint(1)", command="view", path="/p/a.py")
    assert extract_facets(conversation(view)).commands == []


def test_a_skill_the_client_loaded_is_a_file_read_not_a_request():
    messages = list(transcript("claudecode_session.jsonl")[26:30])  # Skill call, "Base directory for this skill: ..."
    facets = extract_facets(messages)
    assert "/home/USER/.claude/plugins/cache/elixir/elixir/1.2.0/skills/hex-docs-search/SKILL.md" in facets.files_read
    assert not any(r.startswith("Base directory") for r in facets.user_requests)


def test_facets_of_a_claude_code_session():
    facets = extract_facets(list(transcript("claudecode_session.jsonl")[:405]))
    runs = {c.command: c for c in facets.commands}
    assert runs["git status"].count == 4 and runs["git status"].exit_code is None  # Claude Code reports only failures
    assert any(c.exit_code == 1 for c in facets.commands)
    # A failed file operation names its file.
    assert ("/home/USER/projects/spotter-worktrees/spotter-4te/lib/spotter/telemetry/otel.ex: "
            "String to replace not found in file.") in facets.errors
    assert any(e.startswith("** (Mix) Could not start application opentelemetry") for e in facets.errors)
    assert "/home/USER/projects/spotter-worktrees/spotter-4te/lib/spotter/telemetry/otel.ex" in facets.files_modified
    assert "SpotterWeb.OtelTraceHelpers" in facets.entities and len(facets.entities) <= 60
    assert facets.user_requests[0].startswith("Work on bead spotter-4te.")
    # A failed edit modified nothing.
    failed = tool("Edit", "<tool_use_error>String to replace not found in file.</tool_use_error>",
                  file_path="/x/y.py", old_string="a", new_string="b")
    failed_only = extract_facets(conversation(failed))
    assert failed_only.files_modified == [] and failed_only.errors == ["/x/y.py: String to replace not found in file."]


# ----- the summary block ----------------------------------------------------------------------------------------

def test_rule_summary_keeps_requests_key_points_and_artifact_trail():
    messages = list(transcript("sweagent_3.jsonl"))
    text, key_points, facets = rule_summary(messages, max_tokens=2000, count_tokens=COUNT)
    assert text.startswith("Summary of 28 earlier messages (1 user, 13 assistant, 13 tool results, 1 system)")
    assert facets.user_requests[0][:200] in text
    assert 0 < len(key_points) <= 30 and all(k in text for k in key_points)
    assert "/testbed/src/marshmallow/fields.py" in text or "marshmallow/: fields.py" in text
    assert "`python reproduce.py` ×2\n" in text  # success is the default: no "(exit 0)"
    assert COUNT(text) <= 2000
    assert rule_summary(messages, max_tokens=2000, count_tokens=COUNT)[0] == text  # deterministic


def test_rule_summary_key_points_favor_failures_and_stay_at_most_30():
    messages = list(transcript("claudecode_session.jsonl")[:405])
    text, key_points, _ = rule_summary(messages, max_tokens=100_000, count_tokens=COUNT)
    assert len(key_points) == 30
    assert sum(k.startswith("[❌") for k in key_points) >= 8
    assert "Files modified:" in text and "Commands:" in text and "Errors:" in text


def claude_slice() -> list[Message]:
    return list(transcript("claudecode_session.jsonl")[:300])


@given(max_tokens=st.integers(min_value=0, max_value=3000))
def test_rule_summary_never_exceeds_its_cap(max_tokens):
    text, key_points, _ = rule_summary(claude_slice(), max_tokens=max_tokens, count_tokens=COUNT)
    assert COUNT(text) <= max_tokens
    assert len(key_points) <= 30
    if max_tokens < 50:
        assert text in ("", "[300 earlier messages summarized; no room for details]", "[300 messages summarized]")
    else:
        assert text.startswith("Summary of 300 earlier messages")


def test_user_requests_are_the_last_thing_dropped():
    text, key_points, _ = rule_summary(claude_slice(), max_tokens=120, count_tokens=COUNT)
    assert "Work on bead spotter-4te." in text
    assert key_points == [] and "Commands:" not in text


def test_small_room_gives_a_marker():
    text, key_points, facets = rule_summary(claude_slice(), max_tokens=49, count_tokens=COUNT)
    assert text == "[300 earlier messages summarized; no room for details]" and key_points == []
    assert facets.files_modified  # the facts are still extracted for the record


# ----- what the summary keeps (the facts the trail-coverage check counts) ------------------------------------------

def bash(index: int, command: str, output: str) -> list[Message]:
    call = ToolCall(id=f"bash-{index}", name="Bash", arguments={"command": command})
    return [Message(role="assistant", tool_calls=(call,)),
            Message(role="tool", name="Bash", tool_call_id=call.id, content=output)]


def test_exception_name_deep_in_a_covered_output_is_in_the_rule_summary():
    # Message 110 fails with "** (Mix) Could not start application"; the BadMapError is three lines further down.
    messages = list(transcript("claudecode_session.jsonl")[:120])
    text, _, facets = rule_summary(messages, max_tokens=1500, count_tokens=COUNT)
    assert "BadMapError" in facets.errors
    assert "BadMapError" in text
    assert check_coverage(messages, text).missing["errors"] == []


def test_every_distinct_command_of_a_stretch_is_in_the_summary_with_its_count():
    messages = list(transcript("claudecode_session.jsonl")[:405])
    commands = {" ".join(c.arguments["command"].split()) for m in messages for c in m.tool_calls if c.name == "Bash"}
    assert len(commands) > 40
    text, _, facets = rule_summary(messages, max_tokens=4000, count_tokens=COUNT)
    assert {run.command[:200] for run in facets.commands} == {c[:200] for c in commands}
    coverage = check_coverage(messages, text)
    assert coverage.missing["commands"] == [] and coverage.kept["commands"] == coverage.total["commands"]
    assert "`git status` ×4\n" in text
    # Success is the default: only a non-zero exit code is written.
    assert "(exit 0)" not in text and "(exit 1)" in text


def test_commands_are_kept_as_run_and_identical_runs_counted():
    # The output plumbing stays: it is what the agent typed (and how much output it saw); only spacing is collapsed.
    messages = [*bash(1, "mix test 2>&1 | tail -50", "ok"), *bash(2, "mix  test 2>&1  | tail -50", "ok"),
                *bash(3, "mix test | head -20", "ok"), *bash(4, "mix test", "Exit code 2\n1 test, 1 failure")]
    facets = extract_facets(messages)
    assert [(c.command, c.count, c.exit_code) for c in facets.commands] == [
        ("mix test 2>&1 | tail -50", 2, None), ("mix test | head -20", 1, None), ("mix test", 1, 2)]
    trail = render_artifact_trail(facets)
    assert "`mix test 2>&1 | tail -50` ×2\n- `mix test | head -20`\n- `mix test` (exit 2)" in trail
    assert check_coverage(messages, trail).missing["commands"] == []


def test_short_of_room_a_long_command_list_and_the_files_read_lose_alike():
    # Forty commands and four files read in folders of their own: cut to half, both lists keep most of theirs
    # (before, every file read went before the first command).
    messages = [m for i in range(40) for m in bash(i, f"grep -rn pattern_{i} lib/", "x")]
    for i in range(4):
        call = ToolCall(id=f"read-{i}", name="Read", arguments={"file_path": f"/p/dir_{i}/module_{i}.ex"})
        messages += [Message(role="assistant", tool_calls=(call,)),
                     Message(role="tool", name="Read", tool_call_id=call.id, content="defmodule X do\nend")]
    facets = extract_facets(messages)
    room = COUNT(render_artifact_trail(facets)) // 2
    trail = render_artifact_trail(facets, room, COUNT)
    assert COUNT(trail) <= room
    files_kept = sum(f"module_{i}.ex" in trail for i in range(4))
    commands_kept = sum(f"pattern_{i} " in trail for i in range(40))
    assert files_kept >= 2 and 0 < commands_kept < 40
    assert abs(files_kept / 4 - commands_kept / 40) <= 0.25


def test_short_of_room_commands_keep_their_starts_before_any_is_dropped():
    messages = [m for i in range(12)
                for m in bash(i, f"grep -rn pattern_{i} lib/some/long/folder/name_{i}/" + "deeper/" * 12, "x")]
    messages += bash(99, "mix compile --warnings-as-errors", "Exit code 1\nerror: undefined function")
    roomy = render_artifact_trail(extract_facets(messages))
    room = COUNT(roomy) * 3 // 4
    dense = render_artifact_trail(extract_facets(messages), room, COUNT)
    assert COUNT(dense) <= room
    # Each command by its first 60 characters, whole from its program on: it can still be found as written.
    assert "- grep -rn pattern_0 lib/some/long/folder/name_0/deeper/deeper…\n- grep -rn pattern_1 " in dense
    assert "mix compile --warnings-as-errors (exit 1)" in dense
    assert check_coverage(messages, dense).missing["commands"] == []


def test_short_of_room_an_error_line_leaves_its_exception_name_behind():
    """Error lines go before commands when room is short; the exception's name stays among the error names, so the
    error the session hit is still known (IndentationError was lost from held-out SWE-bench sessions at 8k)."""
    messages = [m for i in range(30) for m in bash(i, f"python check_{i}.py", "ok")]
    messages += bash(90, "python reproduce.py", "Exit code 1\nTraceback (most recent call last):\n"
                     "  File \"numbers.py\", line 3225\n    x\n    ^\nIndentationError: expected an indented block")
    facets = extract_facets(messages)
    assert any(e.startswith("IndentationError: expected") for e in facets.errors)
    roomy = render_artifact_trail(facets)
    short = render_artifact_trail(facets, COUNT(roomy) * 2 // 3, COUNT)
    assert "expected an indented block" not in short
    assert "Error names: IndentationError" in short


def test_a_search_inside_a_file_reads_it():
    call, result = tool("Grep", "22:    post(\"/hooks/session-start\")", pattern="hooks", path="/p/lib/router.ex")
    assert extract_facets(conversation((call, result))).files_read == ["/p/lib/router.ex"]


def test_injected_user_messages_are_not_requests():
    facets = extract_facets(list(transcript("claudecode_session.jsonl")[:405]))
    assert facets.user_requests == [facets.user_requests[0]]
    assert facets.user_requests[0].startswith("Work on bead spotter-4te.")


def test_a_pasted_issues_html_comments_are_not_part_of_the_request():
    # A SWE-bench task as mini-swe-agent sends it (astropy__astropy-13398): the issue template's hidden comments
    # came first and took the request's line.
    task = ("<pr_description>\nConsider the following PR description:\n<!-- This comments are hidden when you submit "
            "the issue,\nso you do not need to remove them! -->\n<!-- Please be sure to check out our contributing "
            "guidelines -->\n### Description\nA direct approach to ITRS to Observed transformations that stays "
            "within the ITRS.\n</pr_description>")
    requests = extract_facets([Message(role="user", content=task)]).user_requests
    assert len(requests) == 1 and "<!--" not in requests[0] and "hidden" not in requests[0]
    assert "A direct approach to ITRS to Observed transformations" in requests[0]


def test_a_slash_command_the_user_typed_is_a_request_with_its_arguments():
    # Message 407: `/compact` typed with instructions, as Claude Code records it (tags around the user's words).
    facets = extract_facets(list(transcript("claudecode_session.jsonl")[405:410]))
    assert "/compact and continue with the reamining tasks" in facets.user_requests


def test_a_capped_trail_drops_identifiers_and_error_lines_before_error_names_and_requests():
    messages = list(transcript("claudecode_session.jsonl")[:405])
    facets = extract_facets(messages)
    trail = render_artifact_trail(facets, 300, COUNT)
    assert COUNT(trail) <= 300
    assert "Work on bead spotter-4te." in trail and "BadMapError" in trail
    assert "Identifiers:" not in trail and "Files modified:" in trail


# ----- secrets ----------------------------------------------------------------------------------------------------

SECRET = "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0" * 2


def test_secrets_in_tool_calls_and_outputs_never_reach_summaries():
    messages = conversation(
        Message(role="user", content=f"deploy with OPENAI_API_KEY={SECRET} and password: hunter2hunter2"),
        tool("Bash", f"Exit code 1\nerror: token {SECRET} rejected\nTraceback (most recent call last):\n"
             f"ValueError: bad key {SECRET}", command=f"curl -H 'Authorization: Bearer {SECRET}' https://api.x/v1"),
        tool("Read", f"     1→API_KEY = '{SECRET}'\n", file_path="/app/.env"),
        tool("Task", f"{SECRET} is the key", description=f"check key {SECRET}"),
        Message(role="assistant", content=f"I used `{SECRET}` for the call because it is the key."),
    )
    lines = [one_line(c, r, preserve_error_details=p) for c, r in pairs(messages) for p in (False, True)]
    text, key_points, facets = rule_summary(messages, max_tokens=3000, count_tokens=COUNT)
    everything = "\n".join([text, *key_points, facets.model_dump_json(), render_artifact_trail(facets), *lines])
    assert SECRET not in everything and "hunter2hunter2" not in everything
    assert "[REDACTED:" in text


def test_a_file_only_named_is_in_the_trail_once():
    messages = conversation(
        Message(role="user", content="The crash is in lib/app/router.ex, see also docs/routing.md"),
        tool("Read", "defmodule Router do\nend", file_path="/p/lib/app/router.ex"),
        Message(role="assistant", content="The plug is set up in lib/app/endpoint.ex; I'll leave config/prod.exs."),
        *bash(0, "grep -n plug mix.lock", "plug 1.15"))
    facets = extract_facets(messages)
    # router.ex was read (named by the user too), the others only named: in the user's, the assistant's text or a
    # command.
    assert facets.files_read == ["/p/lib/app/router.ex"]
    assert facets.files_named == ["docs/routing.md", "lib/app/endpoint.ex", "config/prod.exs", "mix.lock"]
    trail = render_artifact_trail(facets)
    named = trail.split("Files named:\n")[1].split("Commands:")[0]
    # Listed once: router.ex where it was read, mix.lock in its command.
    assert named == "- docs/routing.md\n- lib/app/endpoint.ex\n- config/prod.exs\n"
    assert "`grep -n plug mix.lock`" in trail
    assert check_coverage(messages, trail).missing["files"] == []


def test_short_of_room_a_dropped_commands_files_stay_named():
    # Thirty commands, each on a file of its own: cut to half, commands drop but every file stays, by name in its
    # folder's line.
    messages = [m for i in range(30) for m in bash(i, f"python -m pytest -q tests/unit/test_module_{i}.py -k case_{i}", "ok")]
    facets = extract_facets(messages)
    roomy = render_artifact_trail(facets)
    assert "Files named" not in roomy  # each file is in its command while the command is shown
    room = COUNT(roomy) // 2
    trail = render_artifact_trail(facets, room, COUNT)
    assert COUNT(trail) <= room
    assert 0 < sum(f"-k case_{i}" in trail for i in range(30)) < 30
    assert all(f"test_module_{i}.py" in trail for i in range(30))
    assert "Files named:\n- tests/unit/: test_module_0.py, test_module_1.py, " in trail
    assert check_coverage(messages, trail).missing["files"] == []


def test_an_mcp_tool_with_a_json_answer_keeps_what_it_was_asked_and_what_it_answered():
    """mcp-server-time's answer shrank to `[✓ get_current_time: First: { | Size: 119 chars]`: neither the time zone
    asked about nor the time answered was left for the model."""
    answer = ('{\n  "timezone": "Asia/Tokyo",\n  "datetime": "2026-11-29T01:49:26+09:00",\n'
              '  "day_of_week": "Sunday",\n  "is_dst": false\n}')
    line = one_line(*tool("get_current_time", answer, timezone="Asia/Tokyo"))
    assert line == document_line("get_current_time", [
        "Input: timezone=Asia/Tokyo",
        'First: {"timezone": "Asia/Tokyo", "datetime": "2026-11-29T01:49:26+09:00", "day_of_week": "Sunday", "is_ds…',
        "Size: 119 chars"])
    # Output that is not JSON: its first line with a word in it.
    line = one_line(*tool("git_log", "---\nCommit: 1a2b3c\nAuthor: Ada", repo_path="/src", max_count=1))
    assert "Input: repo_path=/src, max_count=1 | First: Commit: 1a2b3c |" in line
