"""The one-line summary of a tool call and its result, which replaces an old tool output in the prompt:
`[✓ Read: File: /app.ts | Lines: 100 | Type: TypeScript]`, `[❌ Bash: Command: npm test | Exit: 1 | ... | Error: ...]`.

Whether the call failed is read from its output (exit codes and error lines of commands; an error up front for
other tools); the rest comes from the rule of the tool's kind (tool_fields). Everything passes through redaction:
secrets in outputs or arguments never reach a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..model.messages import Message, ToolCall
from ..model.tools import NOT_RUN, SAYS_ERROR
from .redact import redact
from .text_rules import exit_code_in, one_line_field
from .tool_fields import KIND_RULES, Subject, ToolUse, call_arguments, lines_of, typed_command
from .tool_kinds import refined_kind

# SWE-agent appends its state after every observation.
_SWE_STATUS = re.compile(r"\n?\(Open file: ([^\n)]*)\)\s*\n\(Current directory: [^\n]*\)\s*(?:\n?bash-\$\s*)?\Z")
_PROCESS_DONE = re.compile(r"///PROCESS-DONE:(-?\d+):PROCESS-DONE///")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b\x0c\x0e-\x1f]")
# A line that reports a failure in command output. Anchored at line starts so prose that merely mentions errors
# (a task description, a log line with a timestamp) does not count.
_ERROR_LINE = re.compile(
    r"(?m)^[ \t]*(?:"
    r"Traceback \(most recent call last\):"
    r"|\*\* \(\w[\w.]*\)"                                          # Elixir raise
    r"|[\w.]*[A-Z]\w*(?:Error|Exception)(?::|$)"                     # Python / JS exception line
    r"|(?:error|fatal|panic|ERROR|FATAL|Error)(?:\[\w+\])?:"         # error: / fatal: / error[E0432]:
    r"|npm ERR!|FAILED\b|FAIL\b|<tool_use_error>"
    r"|Error executing tool\b"                                       # the MCP SDK's servers' failed call
    r"|EXECUTION TIMED OUT|Pre-commit validation failed|Segmentation fault"
    r").*$"
    r"|^.*(?:: command not found|No such file or directory|[Pp]ermission denied"
    r"|\b[1-9]\d* (?:failed|failures?)\b|==+ .*\b[1-9]\d* errors?\b).*$")
_EXCEPTION_LINE = re.compile(r"(?m)^[ \t]*[\w.]*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b.*$")
# unittest's (and Django's test runner's) report of one test, "ERROR: test_x (tests.T.test_x)", whose traceback
# follows up to the next rule of "=" or "-".
_TEST_REPORT = re.compile(r"(?:ERROR|FAIL): \w+ \(")
_REPORT_END = re.compile(r"(?m)^(?:=+|-+)\s*$")
# Outputs of non-shell tools fail only if they say so up front (a file's own content may contain "Error:").
_HEAD_ERROR = re.compile(
    r"\A\s*(?:<tool_use_error>|Error\b|ERROR\b|error:|File does not exist|No such file|Permission denied"
    r"|Your proposed edit has introduced|No replacement was performed|Failed to|Request failed|Usage: )",
    re.IGNORECASE)
ERROR_TAG = re.compile(r"</?tool_use_error>")
# An error's own "Error:" label: the one-line summary labels the field already ("Error: Error: ..." otherwise, as
# Precis's own tool loop marks a failed tool's output for the model). A compiler's "error:" is its own wording.
ERROR_LABEL = re.compile(r"^\s*Error:\s*")
# Harnesses that report no exit code say so when a command did not run or was killed, in place of its output:
# SWE-agent (sweagent/agent/agents.py @ 3ea751c0, TemplateConfig's shell_check_error_template and
# command_cancelled_timeout_template) and mini-swe-agent (config/default.yaml, timeout_template). Group `why` says
# which, in the harness's words; `output` is what the command printed before it was killed, where given.
_NOT_RUN = re.compile(
    r"\A\s*(?:Your bash command contained (?P<syntax>syntax errors and was NOT executed)\..*?`bash -n`:\n"
    r"|The command '.*?' was (?P<cancelled>cancelled because it took more than \d+ seconds)\."
    r"|The last command <command>.*?</command> (?P<killed>timed out and has been killed)\.)"
    r"(?P<rest>.*)\Z", re.DOTALL)
# A call Precis's own tool loop did not run (denied, stopped, past the step limit): no exit code, no output.
_PRECIS_NOT_RUN = re.compile(rf"\A(?:Error: )?{re.escape(NOT_RUN)}(?P<why>[^\n]+)\Z")
_KILLED_OUTPUT = re.compile(r"<(output|output_head|output_tail)>\n?(.*?)\n?</\1>", re.DOTALL)

LINE_LIMIT = 300
ERROR_DETAIL_LIMIT = 2000


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


@dataclass(frozen=True)
class Outcome:
    failed: bool
    exit_code: int | None
    error: str  # first error line, raw
    error_text: str  # the full error, raw


def _shell_outcome(text: str, exit_code: int | None) -> tuple[Outcome, str]:
    """The outcome of a command and its output without what reports its exit code (exit_code_in).

    Where the harness reports the code, the command failed exactly when it is not 0: an error line in the output of
    a command that exited 0 (`grep -r "Error:"`, a test run piped through `tail`) is output, and a failed command's
    output need not have one. Where it reports none, the command failed if its output has an error line (document
    000's own test: `Error: Module not found...` alone is an error); otherwise its outcome is unknown (exit_code None,
    not failed), which the line says (`?`, `Exit: ?`) rather than claiming success."""
    reported, body = exit_code_in(text)
    if exit_code is None:
        exit_code = reported
    if exit_code is None and (not_run := _NOT_RUN.match(body)):
        # No code, but the harness says the command never ran (bash -n's complaint follows) or was killed.
        why = not_run["syntax"] or not_run["cancelled"] or not_run["killed"]
        if not_run["syntax"]:
            body = not_run["rest"]
        else:
            body = "\n".join(m.group(2) for m in _KILLED_OUTPUT.finditer(not_run["rest"]))
        lines = lines_of(body) if not_run["syntax"] else []
        return Outcome(True, None, why, "\n".join([why, *lines])), body
    error = _ERROR_LINE.search(body) if exit_code != 0 else None
    failed = exit_code is not None and exit_code != 0 or error is not None
    if not failed:
        return Outcome(False, exit_code, "", ""), body
    if error is None:
        lines = lines_of(body)
        return Outcome(True, exit_code, lines[0] if lines else "", "\n".join(lines)), body
    line = error.group(0).strip()
    start = error.start()
    if line.startswith("Traceback") or _TEST_REPORT.match(line):
        # The exception line at the end of the traceback (of this test's report) says what went wrong.
        end = len(body)
        if not line.startswith("Traceback"):
            end = next((m.start() for m in _REPORT_END.finditer(body, error.end())
                        if body[error.end():m.start()].strip()), end)
        exceptions = [m for m in _EXCEPTION_LINE.finditer(body, error.end(), end)]
        if exceptions:
            line = exceptions[-1].group(0).strip()
    return Outcome(True, exit_code, line, body[start:].strip()), body


def _head_outcome(text: str) -> Outcome:
    if not _HEAD_ERROR.match(text):
        return Outcome(False, None, "", "")
    clean = ERROR_TAG.sub("", text).strip()
    lines = lines_of(clean)
    return Outcome(True, None, lines[0] if lines else "error", clean)


def error_detail(text: str) -> str:
    """The full error as one line, capped: head and tail kept (a traceback's last line names the exception)."""
    joined = " ⏎ ".join(line.strip() for line in lines_of(text))
    joined, _ = redact(joined)
    if len(joined) <= ERROR_DETAIL_LIMIT:
        return joined
    head = ERROR_DETAIL_LIMIT * 3 // 4
    return joined[:head] + " … " + joined[-(ERROR_DETAIL_LIMIT - head - 3):]


@dataclass(frozen=True)
class Analysis:
    """What rules can tell about one tool call and its result."""

    tool: str
    kind: str
    subject: Subject
    outcome: Outcome
    line: str
    has_result: bool
    mark: str  # ✓, ❌, ? (a command whose exit code is unknown) or ⋯ (no result yet)


_NO_RESULT = Outcome(False, None, "", "")


def analyze(call: ToolCall | None, result: Message | None, preserve_error_details: bool) -> Analysis:
    """The facts of one call and its result, and its one-line summary."""
    tool = (call.name if call is not None else None) or (result.name if result is not None else None) or "tool"
    args = call_arguments(call)
    kind = refined_kind(tool, args)
    rule = KIND_RULES[kind]
    output, open_file, process_exit = _split_status(result.content if result is not None else "")
    subject = rule.subject(tool, args, open_file, output)
    if not subject.command and (typed := typed_command(tool, args)):
        subject = replace(subject, command=typed)  # an editor command typed in the agent's shell was run too

    if result is None:
        outcome = _NO_RESULT
        fields = [one_line_field(subject.target, 120) if subject.target else "", "no result"]
        mark = "⋯"
    elif not_run := _PRECIS_NOT_RUN.match(output):
        outcome = Outcome(True, None, not_run["why"], not_run["why"])
        fields = [f"{rule.label}: {one_line_field(subject.target, 150)}" if subject.target else "",
                  f"Not run: {one_line_field(not_run['why'], 150)}"]
        mark = "❌"
    else:
        if rule.runs_commands:
            outcome, output = _shell_outcome(output, process_exit)
        else:
            outcome = _head_outcome(output)
        # A command whose exit code is unknown and whose output shows no error is neither ✓ nor ❌.
        mark = "❌" if outcome.failed else "?" if rule.runs_commands and outcome.exit_code is None else "✓"
        if outcome.failed and not rule.runs_commands:
            # The output is the error: only what the call was about, then the error.
            fields = [f"{rule.label}: {one_line_field(subject.target, 150)}"] if subject.target else []
        else:
            fields = rule.fields(ToolUse(tool, args, output, subject, outcome.exit_code, outcome.failed))
        if outcome.failed:
            if preserve_error_details and outcome.error_text:
                error = error_detail(ERROR_LABEL.sub('', outcome.error_text))
            else:
                error = one_line_field(ERROR_LABEL.sub("", ERROR_TAG.sub("", outcome.error)) or "failed", 150)
            fields.append(error if SAYS_ERROR.match(error) else f"Error: {error}")
    body = " | ".join(f for f in fields if f)
    line = f"[{mark} {one_line_field(tool, 40)}: {body}]"
    limit = LINE_LIMIT + (ERROR_DETAIL_LIMIT if preserve_error_details and outcome.failed else 0)
    if len(line) > limit:
        line = line[: limit - 2].rstrip() + "…]"
    return Analysis(tool, kind, subject, outcome, line, result is not None, mark)


def result_mark(result: Message) -> str:
    """✓ or ❌ (? for a command whose exit code is unknown) for a tool's result, as its one-line summary marks it."""
    return analyze(None, result, preserve_error_details=False).mark


def one_line(call: ToolCall | None, result: Message, *, preserve_error_details: bool = True) -> str:
    """The one-line rule-based summary of a tool call and its result (✓ / ❌, or ? for a command whose exit code
    is unknown; original tool name, key facts).

    Always a single line without newlines, at most ~300 characters (plus up to 2,000 characters of a failed
    command's error text, kept in full unless `preserve_error_details` is off), with secrets redacted.
    """
    return analyze(call, result, preserve_error_details).line
