"""Design document 000 (rule-based tool summaries) and the tool-summary part of 001, checked literally.

Every expected line is written out by hand from the document's format `[${status} ${toolName}: ${facts}]` with its
key facts (`File:`, `Lines:`, `Type:`; `Command:`, `Exit:`, `Output: N lines`, `Error:`; `Pattern: "q"`,
`Matches:`, `Files:`, `Top files:`), never produced by the code under test. See tests/spec/README.md.
"""

from __future__ import annotations

from precis.core.model.messages import Message, ToolCall
from precis.core.summary.facets import extract_facets
from precis.core.summary.tool_kinds import canonical_tool
from precis.core.summary.tool_output import one_line
from precis.core.tools.bounded import run_command_messages


def tool(name: str, output: str, **arguments) -> tuple[ToolCall, Message]:
    call = ToolCall(id=f"call-{name}", name=name, arguments=arguments)
    return call, Message(role="tool", name=name, tool_call_id=call.id, content=output)


# ----- 000 "read_file": File, Lines, Type; its test "summarizes file read with line count" --------------------

def test_000_read_file_line_has_file_lines_and_type():
    assert one_line(*tool("read_file", "line1\nline2\nline3", path="/app.ts")) == (
        "[✓ read_file: File: /app.ts | Lines: 3 | Type: TypeScript]")


def test_000_inline_read_example_has_its_facts_in_the_format():
    # 000's inline output for read_file, "[read_file: /src/app.ts (245 lines, TypeScript, has exports)]": the same
    # facts in the document's own formatSummary shape, the export named.
    content = "import { useState } from 'react';\n" + "// layout\n" * 243 + "export function App() { return null; }"
    assert one_line(*tool("read_file", content, path="/src/app.ts")) == (
        "[✓ read_file: File: /src/app.ts | Lines: 245 | Type: TypeScript | Exports: App | Imports: react]")


def test_001_formats_summary_concisely():
    # 001's test "formats summary concisely": File /app.ts, 100 lines, `[✓ read_file: File: /app.ts | Lines: 100]`;
    # the read_file rule of both documents adds its `Type:`.
    content = "\n".join(f"const line{n} = {n};" for n in range(1, 101))
    assert one_line(*tool("read_file", content, path="/app.ts")) == (
        "[✓ read_file: File: /app.ts | Lines: 100 | Type: TypeScript]")


def test_001_read_file_without_a_path_still_notes_exports():
    # 001's test "summarizes file read with metadata", verbatim: a message with no path, whose content has exports
    # (`t.true(summary.metadata.hasExports)`). No file to name or type: `File: ?`; the exports and the import are read
    # from the content (`export ...`, `import ... from` are JavaScript's and TypeScript's forms).
    message = Message(role="tool", name="read_file",
                      content="export function hello() {}\nexport const world = 42;\nimport { foo } from 'bar';")
    assert one_line(None, message) == "[✓ read_file: File: ? | Lines: 3 | Exports: hello, world | Imports: bar]"


def test_001_read_file_notes_exports_and_imports():
    content = "export function hello() {}\nexport const world = 42;\nimport { foo } from 'bar';"
    assert one_line(*tool("read_file", content, path="/src/app.ts")) == (
        "[✓ read_file: File: /src/app.ts | Lines: 3 | Type: TypeScript | Exports: hello, world | Imports: bar]")


# ----- 000/001 "execute_bash": Command, Exit, Output lines, the first error line -----------------------------

def test_001_bash_error_before_its_exit_code_is_kept():
    # 001's test "summarizes bash with error detection", verbatim: the error line precedes "exit code: 1".
    line = one_line(*tool("execute_bash", "npm test\nError: Module not found\nexit code: 1", command="npm test"))
    # The output's own "Error:" is the field's label: the line holds "Error: Module not found" as said, once.
    assert line == "[❌ execute_bash: Command: npm test | Exit: 1 | Output: 2 lines | Error: Module not found]"


def test_000_error_output_is_an_error():
    # 000's test "preserves full error output", verbatim: `summarizeBash('Error: Module not found...', {command:
    # 'npm test'})` has status error. No exit code is reported, so the line says `Exit: ?`; the error line makes it ❌
    # and is kept whole, its "Error:" as the field's label.
    assert one_line(*tool("execute_bash", "Error: Module not found...", command="npm test")) == (
        "[❌ execute_bash: Command: npm test | Exit: ? | Output: 1 line | Error: Module not found...]")


def test_000_bash_success_has_exit_zero_and_line_count():
    # 000's "[bash: npm test | exit 0 | 42 lines output]": 42 lines, and the harness's code line after them (the
    # app's /run writes `[exit code: 0]`), which is neither output nor counted.
    output = "\n".join(f"ok {i}" for i in range(1, 43)) + "\n[exit code: 0]"
    assert one_line(*tool("execute_bash", output, command="npm test")) == (
        "[✓ execute_bash: Command: npm test | Exit: 0 | Output: 42 lines | Last: ok 42]")
    # The same output with no code: its outcome is unknown, neither ✓ nor ❌ (`extractExitCode` finds nothing).
    assert one_line(*tool("execute_bash", output.rsplit("\n", 1)[0], command="npm test")) == (
        "[? execute_bash: Command: npm test | Exit: ? | Output: 42 lines | Last: ok 42]")


def test_001_bash_line_always_has_exit_even_when_unknown():
    line = one_line(*tool("execute_bash", "fatal: not a git repository", command="git status"))
    assert line == ("[❌ execute_bash: Command: git status | Exit: ? | Output: 1 line | "
                    "Error: fatal: not a git repository]")


def test_000_preserve_errors_keeps_the_full_error_by_default():
    # The app's own /run output, from a real shell: the traceback, then "[exit code: 1]" on the last line.
    assistant, result = run_command_messages('python3 -c "import nosuchmodule_xyz"')
    call = assistant.tool_calls[0]
    assert result.content.endswith("\n[exit code: 1]")
    assert one_line(call, result) == (
        '[❌ bash: Command: python3 -c "import nosuchmodule_xyz" | Exit: 1 | Output: 3 lines | '
        'Error: Traceback (most recent call last): ⏎ File "<string>", line 1, in <module> ⏎ '
        "ModuleNotFoundError: No module named 'nosuchmodule_xyz']")
    assert one_line(call, result, preserve_error_details=False) == (
        '[❌ bash: Command: python3 -c "import nosuchmodule_xyz" | Exit: 1 | Output: 3 lines | '
        "Error: ModuleNotFoundError: No module named 'nosuchmodule_xyz']")
    facets = extract_facets([assistant, result])
    assert facets.errors == ["ModuleNotFoundError: No module named 'nosuchmodule_xyz'"]


# ----- 000/001 "search": Pattern quoted, Matches, Files, Top files (3) ---------------------------------------

def test_001_search_line_quotes_the_pattern_and_names_top_files():
    hits = {"src/App.tsx": 6, "src/Hook.ts": 4, "src/Form.tsx": 3, "src/Nav.tsx": 2}
    output = "\n".join(f"{path}:{n}: const [a, b] = useState()" for path, count in hits.items()
                       for n in range(1, count + 1))
    assert one_line(*tool("search_files", output, pattern="useState")) == (
        '[✓ search_files: Pattern: "useState" | Matches: 15 | Files: 4 | '
        "Top files: src/App.tsx, src/Hook.ts, src/Form.tsx]")


def test_000_search_without_matches_is_not_an_error():
    assert one_line(*tool("grep", "No matches found", pattern="nothing")) == (
        '[✓ grep: Pattern: "nothing" | Matches: 0]')


# ----- 000 formatSummary: the status mark and the one-line shape -------------------------------------------

def test_000_format_is_status_tool_name_and_facts_joined_by_bars():
    line = one_line(*tool("write_file", "ok", path="/app.ts", content="a\nb\n"))
    assert line == "[✓ write_file: File: /app.ts | Lines written: 2 | Type: TypeScript]"


def test_000_summarizer_is_chosen_by_the_tool_name_in_whole_words():
    assert [canonical_tool(n) for n in ("read_file", "execute_bash", "search_files", "grep", "write_file")] == [
        "read_file", "shell", "search", "search", "write_file"]
    # "truncate" and "frobnicate" contain "cat", yet neither reads a file.
    assert canonical_tool("truncate") == "default"
    assert canonical_tool("frobnicate") == "default"
    assert canonical_tool("readConfig") == "read_file"
    assert canonical_tool("mcp__files__read_text") == "read_file"
