"""A command's exit code, read from where each coding harness reports it: ❌ exactly when the reported code is not 0,
and `Exit: ?` (marked `?`, never ✓) when the output reports none and shows no error.

Each sample is a harness's real output format; where it comes from is said above it. Expected lines are written out
by hand in document 000's format `[${status} ${toolName}: ${facts joined by " | "}]`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.model.messages import Message, ToolCall
from precis.core.summary.text_rules import exit_code_in
from precis.core.summary.tool_output import one_line
from precis.core.summary.trail_coverage import collect_facts


def run(tool: str, command: str, output: str) -> str:
    call = ToolCall(id="call-1", name=tool, arguments={"command": command})
    return one_line(call, Message(role="tool", name=tool, tool_call_id="call-1", content=output))


# ----- mini-swe-agent (the SWE-bench harness) ------------------------------------------------------------------------
# Its observation template (src/minisweagent/config/mini.yaml @ 099497f, action_observation_template:
# `<returncode>...</returncode>` then `<output>...</output>`). The outputs are verbatim from SWE-agent/mini-swe-agent
# @ 01018ad, tests/test_data/github_issue.traj.json, messages 3, 15 and 17 (and 11's empty output).

MINI_CAT = "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py"


def test_mini_swe_agent_nonzero_returncode_is_a_failure():
    output = ("<returncode>1</returncode>\n<output>\ncat: /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/"
              "./missing_colon.py: No such file or directory\n</output>")
    assert run("bash", MINI_CAT, output) == (
        f"[❌ bash: Command: {MINI_CAT} | Exit: 1 | Output: 1 line | Error: cat: /Users/fuchur/Documents/24/git_sync/"
        "swe-agent-test-repo/tests/./missing_colon.py: No such file or directory]")


def test_mini_swe_agent_traceback_keeps_its_code_and_whole_error():
    command = 'python3 -c "from tests.missing_colon import division; print(division(23, 0))"'
    output = ('<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File "<string>", line 1, '
              'in <module>\n  File "/testbed/tests/missing_colon.py", line 5, in division\n    return a/b\n'
              "           ~^~\nZeroDivisionError: division by zero\n</output>")
    assert run("bash", command, output) == (
        f'[❌ bash: Command: {command} | Exit: 1 | Output: 6 lines | Error: Traceback (most recent call last): ⏎ '
        'File "<string>", line 1, in <module> ⏎ File "/testbed/tests/missing_colon.py", line 5, in division ⏎ '
        "return a/b ⏎ ~^~ ⏎ ZeroDivisionError: division by zero]")


def test_mini_swe_agent_zero_returncode_is_a_success_counting_only_the_output():
    output = "<returncode>0</returncode>\n<output>\n8.2\n</output>"
    assert run("bash", "python3 tests/missing_colon.py", output) == (
        "[✓ bash: Command: python3 tests/missing_colon.py | Exit: 0 | Output: 1 line | Last: 8.2]")


def test_mini_swe_agent_nonzero_returncode_without_an_error_line_is_still_a_failure():
    # An empty output (message 11's form) with code 1, as grep gives when nothing matches: before, read as
    # `✓ ... Exit: 0`, the "9 of 13 non-zero codes came out ✓".
    output = "<returncode>1</returncode>\n<output>\n</output>"
    assert run("bash", 'grep -rn "divide(" tests', output) == (
        '[❌ bash: Command: grep -rn "divide(" tests | Exit: 1 | Output: 0 lines | Error: failed]')


def test_mini_swe_agent_zero_returncode_with_an_error_word_in_the_output_is_a_success():
    # A command that exited 0 printing an error line (the "6 of 219 zero codes came out ❌").
    output = "<returncode>0</returncode>\n<output>\nValueError: bad input\n</output>"
    assert run("bash", 'grep -h "Error:" logs/run.log', output) == (
        '[✓ bash: Command: grep -h "Error:" logs/run.log | Exit: 0 | Output: 1 line | Last: ValueError: bad input]')


def test_mini_swe_agent_json_template():
    # src/minisweagent/config/mini_toolcall.yaml @ 1582df8's action_observation_template: {"returncode": ...,
    # "output": ...} (`output_head` and `output_tail` for a long one).
    output = '{\n  "returncode": 2,\n  "output": "make: *** No rule to make target \'tests\'.  Stop.\\n"\n}'
    assert run("bash", "make tests", output) == (
        "[❌ bash: Command: make tests | Exit: 2 | Output: 1 line | Error: make: *** No rule to make target 'tests'.  "
        "Stop.]")


def test_mini_swe_agent_swebench_marker_after_the_output():
    # src/minisweagent/config/benchmarks/swebench.yaml @ 00da4da's observation_template: the output, then
    # `[exit code N]`; its `-%}` strips the newline between them, so an output without a final newline (printf's,
    # an empty one) has the marker on its own last line.
    assert run("bash", "python -m pytest tests/test_x.py -q", "F.\n1 failed, 1 passed in 0.03s\n[exit code 1]") == (
        "[❌ bash: Command: python -m pytest tests/test_x.py -q | Exit: 1 | Output: 2 lines | Error: 1 failed, 1 passed "
        "in 0.03s]")
    assert run("bash", "printf ok", "ok[exit code 0]") == "[✓ bash: Command: printf ok | Exit: 0 | Output: 1 line | Last: ok]"
    assert run("bash", "test -f setup.py", "[exit code 1]") == (
        "[❌ bash: Command: test -f setup.py | Exit: 1 | Output: 0 lines | Error: failed]")


MINI_TOO_LONG = ("<warning>\nThe output of your last command was too long.\nPlease try a different command that produces "
                 "less output.\nIf you're looking at a file you can try use head, tail or sed to view a smaller number of "
                 "lines selectively.\nIf you're using grep or find and it produced too much output, you can use a more "
                 "selective search pattern.\nIf you really need to see something from the full command's output, you can "
                 "redirect output to a file and then search in that file.\n</warning>")


def test_mini_swe_agent_long_output_keeps_its_code():
    # A long output's form: a warning, then its head and tail (a SWE-bench Verified run of mini-swe-agent 1.15,
    # gruckion/mini-swe-agent @ d12a71a, swebench_results/20251118_gemini-3-pro-74pct/trajs/astropy__astropy-13033,
    # the middle of the output left out here).
    command = "python -m pytest astropy/timeseries/tests/test_sampled.py"
    output = ("<returncode>1</returncode>\n" + MINI_TOO_LONG + "<output_head>\n=============================== test session "
              "starts ==============================\nplatform linux -- Python 3.9.20, pytest-7.4.0, pluggy-1.3.0\n"
              "</output_head>\n<elided_chars>\n5210 characters elided\n</elided_chars>\n<output_tail>\nFAILED astropy/"
              "timeseries/tests/test_sampled.py::test_required_columns - asse...\n=================== 3 failed, 43 passed, "
              "3 skipped in 0.33s ====================\n\n</output_tail>")
    assert run("bash", command, output) == (
        f"[❌ bash: Command: {command} | Exit: 1 | Output: 4 lines | Error: FAILED astropy/timeseries/tests/test_sampled.py"
        "::test_required_columns - asse... ⏎ =================== 3 failed, 43 passed, 3 skipped in 0.33s "
        "====================]")
    # The same output with code 0 is a success: its "3 failed" is output, the code says how the command ended.
    assert run("bash", command, output.replace("<returncode>1<", "<returncode>0<")).startswith(
        f"[✓ bash: Command: {command} | Exit: 0 | Output: 4 lines | Last: =")


def test_mini_swe_agent_timeout_is_a_failure_without_a_code():
    # Its timeout_template (config/default.yaml): the command was killed, so it failed, but no code was reported. The
    # sample is verbatim from the same run, trajs/django__django-13809.
    command = "./tests/runtests.py user_commands.test_runserver_skip_checks"
    output = (f"The last command <command>{command}</command> timed out and has been killed.\nThe output of the command "
              "was:\n <output>\nTesting against Django installed in '/testbed/django' with up to 8 processes\nSystem "
              "check identified no issues (0 silenced).\n\n</output>\nPlease try another command and make sure to avoid "
              "those requiring interactive input.")
    assert run("bash", command, output) == (
        f"[❌ bash: Command: {command} | Exit: ? | Output: 2 lines | Error: timed out and has been killed]")


# ----- OpenHands -----------------------------------------------------------------------------------------------------
# CmdOutputObservation.to_agent_observation (All-Hands-AI/OpenHands @ c469110c, openhands/events/observation/
# commands.py) appends `[Current working directory: ...]`, `[Python interpreter: ...]` and `[Command finished with exit
# code N]` to the output, whose suffix the bash session (openhands/runtime/utils/bash.py) set to `[The command
# completed with exit code N.]`. The find output is that of a published OpenHands SWE-Gym trajectory (mui__material-ui).

OPENHANDS_FRAME = ("[The command completed with exit code {0}.]\n[Current working directory: /workspace/mui__material-ui"
                   "__0.1]\n[Python interpreter: /openhands/poetry/openhands-ai-5O4_aCHf-py3.12/bin/python]\n"
                   "[Command finished with exit code {0}]")


def test_openhands_success_counts_only_the_output():
    output = ("./packages/material-ui/src/DialogTitle/DialogTitle.d.ts\n./packages/material-ui/src/DialogTitle/"
              "DialogTitle.test.js\n./packages/material-ui/src/DialogTitle/DialogTitle.js\n" + OPENHANDS_FRAME.format(0))
    assert run("execute_bash", 'find . -type f -name "DialogTitle*"', output) == (
        '[✓ execute_bash: Command: find . -type f -name "DialogTitle*" | Exit: 0 | Output: 3 lines | '
        "Last: ./packages/material-ui/src/DialogTitle/DialogTitle.js]")


def test_openhands_failure_keeps_the_error_without_the_frame():
    output = "grep: src/missing.js: No such file or directory\n" + OPENHANDS_FRAME.format(2)
    assert run("execute_bash", "grep -n Dialog src/missing.js", output) == (
        "[❌ execute_bash: Command: grep -n Dialog src/missing.js | Exit: 2 | Output: 1 line | "
        "Error: grep: src/missing.js: No such file or directory]")


def test_openhands_timeout_reports_no_code():
    # The same trajectory's npm install: OpenHands' timeout notice, and no code.
    output = ("⠼\n[The command timed out after 300 seconds. You may wait longer to see additional output by sending "
              "empty command '', send other commands to interact with the current process, or send keys to "
              "interrupt/kill the command.]")
    line = run("execute_bash", "npm install react react-dom", output)
    assert line.startswith("[? execute_bash: Command: npm install react react-dom | Exit: ? | Output: 2 lines")


# ----- Claude Code and Codex -----------------------------------------------------------------------------------------

def test_claude_code_reports_a_code_only_when_it_is_not_zero():
    # tests/data/transcripts/claudecode_session.jsonl, message 229: `Exit code 1` first (from marot/spotter's fixture).
    assert run("Bash", "spotter_rand_hex 16", "Exit code 1\n(eval):1: permission denied:") == (
        "[❌ Bash: Command: spotter_rand_hex 16 | Exit: 1 | Output: 1 line | Error: (eval):1: permission denied:]")
    # A command that succeeded has no such line: Claude Code does not say 0, so its code is unknown, never ✓.
    assert run("Bash", "mix compile", "Compiling 3 files (.ex)\nGenerated spotter app") == (
        "[? Bash: Command: mix compile | Exit: ? | Output: 2 lines | Last: Generated spotter app]")


def test_codex_exec_header():
    # openai/codex's exec output (codex-rs/core/src/tools/mod.rs @ 019402a, format_exec_output_for_model_freeform):
    # `Exit code: N`, `Wall time: ... seconds`, `Output:`, then the output.
    output = "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nerror[E0425]: cannot find value `x` in this scope\n"
    assert run("shell", "cargo build", output) == (
        "[❌ shell: Command: cargo build | Exit: 1 | Output: 1 line | Error: error[E0425]: cannot find value `x` in this "
        "scope]")


def test_codex_structured_json():
    # The same file's format_exec_output_for_model_structured: {"output": ..., "metadata": {"exit_code": N,
    # "duration_seconds": ...}}.
    output = '{"output":"error: could not compile `app`\\n","metadata":{"exit_code":101,"duration_seconds":1.2}}'
    assert run("shell", "cargo build", output) == (
        "[❌ shell: Command: cargo build | Exit: 101 | Output: 1 line | Error: error: could not compile `app`]")


# ----- Gemini CLI ----------------------------------------------------------------------------------------------------
# run_shell_command's result (google-gemini/gemini-cli, packages/core/src/tools/shell.ts). Earlier versions wrote every
# field, `(none)` where empty, after `Command:` and `Directory:`; at 002a57e only those that apply, `Exit Code` only
# when it is not 0.

def test_gemini_cli_every_field():
    output = ("Command: go run .\nDirectory: (root)\nOutput: # plansmith/pkg/tui\npkg/tui/model.go:225:15: undefined: "
              "fmt\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 242657")
    assert run("run_shell_command", "go run .", output) == (
        "[❌ run_shell_command: Command: go run . | Exit: 1 | Output: 2 lines | Error: # plansmith/pkg/tui ⏎ "
        "pkg/tui/model.go:225:15: undefined: fmt]")


def test_gemini_cli_only_the_fields_that_apply():
    # No `Exit Code` line: the code was 0, and the output's own error word does not make it a failure.
    assert run("run_shell_command", "grep -c Error: app.log", "Output: 3\nProcess Group PGID: 5120") == (
        "[✓ run_shell_command: Command: grep -c Error: app.log | Exit: 0 | Output: 1 line | Last: 3]")
    assert run("run_shell_command", "npm test", "Output: (empty)\nExit Code: 2\nProcess Group PGID: 5121") == (
        "[❌ run_shell_command: Command: npm test | Exit: 2 | Output: 0 lines | Error: failed]")
    # Killed by a signal: no code.
    assert run("run_shell_command", "sleep 99", "Output: (empty)\nSignal: 9\nProcess Group PGID: 5122").startswith(
        "[? run_shell_command: Command: sleep 99 | Exit: ? |")


# ----- SWE-agent and aider: no code in the output --------------------------------------------------------------------

def test_swe_agent_without_a_code_is_unknown_unless_an_error_shows():
    # SWE-agent's observation with its state trailer (tests/data/transcripts/sweagent_1.jsonl's form) and its message
    # for an empty output, which it writes whatever the code was (next_step_no_output_template).
    trailer = "\n(Open file: n/a)\n(Current directory: /repo)\nbash-$"
    assert run("bash", "rm reproduce.py", "Your command ran successfully and did not produce any output." + trailer) == (
        "[? bash: Command: rm reproduce.py | Exit: ? | Output: 1 line | Last: Your command ran successfully and did "
        "not produce any output.]")
    assert run("bash", "python reproduce.py", "Traceback (most recent call last):\nNameError: name 'x' is not defined"
               + trailer).startswith("[❌ bash: Command: python reproduce.py | Exit: ? |")
    # SWE-agent's PROCESS-DONE marker, where a trajectory kept it.
    assert run("bash", "make", "boom\n///PROCESS-DONE:2:PROCESS-DONE///" + trailer).startswith(
        "[❌ bash: Command: make | Exit: 2 |")


def test_swe_agent_command_not_run_for_a_syntax_error_is_a_failure():
    # SWE-agent's shell_check_error_template (sweagent/agent/agents.py @ 3ea751c0): the command was never run, and
    # `bash -n`'s complaint follows.
    output = ("Your bash command contained syntax errors and was NOT executed. Please fix the syntax errors and try again. "
              "This can be the result of not adhering to the syntax for multi-line commands. Here is the output of "
              "`bash -n`:\n\nbash: line 1: syntax error: unexpected end of file\n(Open file: n/a)\n(Current directory: "
              "/testbed)\nbash-$")
    assert run("bash", "for f in *.py; do echo $f", output) == (
        "[❌ bash: Command: for f in *.py; do echo $f | Exit: ? | Output: 1 line | Error: syntax errors and was NOT "
        "executed ⏎ bash: line 1: syntax error: unexpected end of file]")


def test_swe_agent_cancelled_command_is_a_failure():
    # The same file's command_cancelled_timeout_template: the command was stopped, with no code and no output.
    output = ("The command 'python manage.py runserver' was cancelled because it took more than 1800 seconds. Please try a "
              "different command that completes more quickly. Note: A common source of this error is if the command is "
              "interactive or requires user input (it is impossible to receive user input in the current environment, so "
              "the command will never complete).")
    assert run("bash", "python manage.py runserver", output) == (
        "[❌ bash: Command: python manage.py runserver | Exit: ? | Output: 0 lines | Error: cancelled because it took "
        "more than 1800 seconds]")


def test_aider_run_output_has_no_code():
    # aider's /run and /test output as it enters the chat (aider/prompts.py, run_output): no exit code at all.
    output = "I ran this command:\n\npytest -q\n\nAnd got this output:\n\n3 passed in 0.12s\n"
    assert run("bash", "pytest -q", output).startswith("[? bash: Command: pytest -q | Exit: ? |")


# ----- plain shells: a code line first or last; a code inside the output is the output's ---------------------------

def test_plain_exit_code_lines_first_or_last():
    assert run("bash", "./deploy.sh", "uploading\nexited with code 3").startswith(
        "[❌ bash: Command: ./deploy.sh | Exit: 3 | Output: 1 line | Error: uploading]")
    assert run("bash", "go run .", "panic: boom\nexit status 2").startswith("[❌ bash: Command: go run . | Exit: 2 |")
    assert run("bash", "true", "ok\n[exit code: 0]") == "[✓ bash: Command: true | Exit: 0 | Output: 1 line | Last: ok]"


@pytest.mark.parametrize("output, code", [
    ("ls: cannot access 'x': No such file or directory\nExit code 2", 2),             # last line
    ("Exit code 2\nls: cannot access 'x': No such file or directory", 2),             # first line (Claude Code)
    ("ls: cannot access 'x': No such file or directory\nProcess exited with code 2", 2),
    ("ls: cannot access 'x': No such file or directory\nexit status 2", 2),
    ("ls: cannot access 'x': No such file or directory\n[exit code: 2]", 2),          # Precis's own /run
    ("a.txt\nExit code 0", 0),
    ("a.txt\nProcess exited with code 0", 0),
    ("exit status 0\na.txt", 0),
])
def test_plain_shell_forms(output: str, code: int):
    line = run("bash", "ls x", output)
    mark = "❌" if code else "✓"
    assert line.startswith(f"[{mark} bash: Command: ls x | Exit: {code} | Output: 1 line | ")


# Text that a command prints: any characters, lines too, but no line that is itself a harness's code line.
_printed = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200).filter(
    lambda text: exit_code_in(text)[0] is None)


@given(body=_printed, code=st.integers(min_value=-1, max_value=255))
def test_every_reported_code_decides_the_mark(body: str, code: int):
    """Whatever a command printed, a code its harness reported decides the line: ❌ exactly when it is not 0, and
    `Exit:` says it."""
    framed = [f"<returncode>{code}</returncode>\n<output>\n{body}\n</output>",                      # mini-swe-agent
              f"{body}\n" + OPENHANDS_FRAME.format(code),                                        # OpenHands
              f"{body}\nExit code {code}"]                                                       # a plain shell
    for output in framed:
        line = run("bash", "make", output)
        assert line.startswith(f"[{'❌' if code else '✓'} bash: Command: make | Exit: {code} | "), (output, line)


def test_a_code_inside_the_output_is_not_the_commands():
    # A script that caught a child's failure and went on: the code 2 in the middle is the child's.
    output = ("building\nsubprocess.CalledProcessError: Command '['make']' returned non-zero exit status 2.\n"
              "falling back to the cached build\ndone")
    line = run("bash", "python build.py", output)
    assert "| Exit: ? |" in line and line.startswith("[❌ ")
    assert exit_code_in(output) == (None, output)


def test_the_trail_reads_the_same_codes():
    # The trail-coverage check's command facts take their codes from the same reader.
    call = ToolCall(id="c", name="bash", arguments={"command": "grep -rn x tests"})
    facts = collect_facts([Message(role="assistant", tool_calls=(call,)),
                           Message(role="tool", tool_call_id="c", content="<returncode>1</returncode>\n<output>\n</output>")])
    assert [(f.command, f.exit_code) for f in facts.commands] == [("grep -rn x tests", 1)]


def test_a_unittest_report_is_summarized_by_its_exception_not_its_header():
    # Django's runner (`./tests/runtests.py`), as in SWE-bench sessions: two tests fail, each with its own report.
    output = ("<returncode>1</returncode>\n<output>\nTesting against Django installed in '/testbed/django'\nEF\n"
              "======================================================================\n"
              "ERROR: test_parse (utils_tests.test_text.TextTests.test_parse)\n"
              "----------------------------------------------------------------------\n"
              "Traceback (most recent call last):\n  File \"/testbed/tests/utils_tests/test_text.py\", line 12, in "
              "test_parse\n    int(\"abc\")\nValueError: invalid literal for int() with base 10: 'abc'\n\n"
              "======================================================================\n"
              "FAIL: test_slug (utils_tests.test_text.TextTests.test_slug)\n"
              "----------------------------------------------------------------------\n"
              "Traceback (most recent call last):\nAssertionError: 'a-b' != 'a_b'\n\n"
              "----------------------------------------------------------------------\nRan 2 tests in 0.003s\n\n"
              "FAILED (failures=1, errors=1)\n</output>")
    call = ToolCall(id="call-1", name="bash", arguments={"command": "./tests/runtests.py utils_tests.test_text"})
    line = one_line(call, Message(role="tool", name="bash", tool_call_id="call-1", content=output),
                    preserve_error_details=False)
    assert line.endswith("| Error: ValueError: invalid literal for int() with base 10: 'abc']"), line
