"""Rules shared by the summaries and the trail-coverage check, defined once so the two read text the same way:
exit codes in command output, the tool arguments that name a file, sentence ends, and clipping text to a length.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .redact import redact

WHITESPACE = re.compile(r"\s+")
# Words that say nothing about what a text is about: recall leaves them out of its queries, digests out of their
# measure of how much a sentence tells.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both but
by can could did do does doing don down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just let like me more most my myself no nor not now of
off on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves yes oh hey hi really also got get
know think thing things much many one ever well going go did tell told said say
""".split())
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")

# Tool arguments that name the file a tool reads or writes.
FILE_ARGUMENT_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file", "absolute_path",
                      "filepath")

# An exit code mentioned in text, wherever it stands: `Exit code 1`, `[exit code: 1]`, `exit code: 1`, `exited with
# status 2`, `returncode=1`, `non-zero exit status 3`, `Process exited with code 1`. The trail-coverage check looks
# for these in a summary; a command's own exit code is read by exit_code_in, from where its harness reports it.
EXIT_CODE = re.compile(
    r"(?i)\bexit(?:ed with)? (?:status|code)[ :=]*(-?\d+)\b|\breturn ?code[\"']?\s*[:=]\s*(-?\d+)"
    r"|\bnon-zero exit status (-?\d+)")

# The forms in which coding harnesses report a command's exit code, always at the start or the end of the output
# (a code mentioned in the middle is the output's own: a script's `CalledProcessError: ... non-zero exit status 3`
# is not the exit code of the command that printed it):
# - mini-swe-agent: `<returncode>1</returncode>` before `<output>...</output>` (or before `<output_head>`,
#   `<elided_chars>`, `<output_tail>` for a long one), an `<exception>` before both; its tool-call template's JSON
#   `{"returncode": 1, "output": "..."}`; its SWE-bench template's `[exit code 1]` after the output, on the output's
#   last line when that has no newline;
# - OpenHands: `[The command completed with exit code 1.]` (`... 1. CTRL+C was sent.]`), `[Current working directory:
#   ...]`, `[Python interpreter: ...]`, `[Command finished with exit code 1]` as last lines;
# - Claude Code: `Exit code 1` as the first line (only when the code is not 0); Codex: `Exit code: 1`, `Wall time:
#   ...`, `Total output lines: ...`, `Output:` as the first lines, or its JSON `{"output": "...", "metadata":
#   {"exit_code": 1, "duration_seconds": 0.4}}`;
# - Gemini CLI: `Output: ...`, then `Error: ...`, `Exit Code: 1`, `Signal: ...`, `Background PIDs: ...`, `Process
#   Group PGID: ...` lines (older versions: every one of them, `(none)` where empty, after `Command:` and `Directory:`
#   lines; newer ones: only those that apply, `Exit Code` only when it is not 0);
# - Precis's /run: `[exit code: 1]` as the last line; a plain `exit code: 1`, `Exit code 1`, `exit status 1`,
#   `exited with code 1` or `[exit_code=1]` line first or last (document 001's own example ends so);
# - SWE-agent's `///PROCESS-DONE:1:PROCESS-DONE///` is read with its other trailers (tool_output).
# SWE-agent's observations otherwise, aider's "I ran this command ... And got this output" and OpenHands' timeouts
# report none: their code is unknown.
_MINI_TAGS = re.compile(r"\A\s*(?:<exception>(?P<exception>.*?)</exception>\s*)?<returncode>(?P<code>-?\d+)</returncode>"
                        r"\s*(?P<rest>.*)\Z", re.DOTALL)
_MINI_OUTPUT = re.compile(r"<(output|output_head|output_tail)>\n?(.*?)\n?</\1>", re.DOTALL)
_CODE_LINE = re.compile(
    r"(?i)\[?(?:the command completed with |command finished with |process )?"
    r"(?:exit(?:ed with)?[ _](?:status|code)|returncode)\s*[:=]?\s*(-?\d+)(?:\. CTRL\+\w was sent)?\.?\]?")
# What OpenHands and Codex write around the code (working directory, interpreter, time, line count, header).
_FRAME_LINE = re.compile(r"\[(?:Current working directory|Python interpreter): [^\n]*\]|Wall time: [^\n]*"
                         r"|Total output lines: \d+|Output:")


_MINI_OUTPUT_OPENING = re.compile(r"<(?:output|output_head)>[ \t]*\n?")
_MINI_OUTPUT_CLOSING = re.compile(r"\s*</output>\s*\Z")
# mini-swe-agent's SWE-bench marker, which may follow the output's last characters on the same line.
_MINI_MARKER = re.compile(r"\[exit code (-?\d+)\]\s*\Z")
# Gemini CLI's fields after the output (see above).
_GEMINI_FIELD = re.compile(r"(Error|Exit Code|Signal|Background PIDs|Process Group PGID): ([^\n]*)")
_GEMINI_HEAD = re.compile(r"(?:Command: [^\n]*\nDirectory: [^\n]*\n)?Output: ")


def _json_observation(output: str) -> tuple[int, str] | None:
    """mini-swe-agent's JSON observation (`returncode`) or Codex's (`metadata.exit_code`): the code and the output
    (head and tail of a long one)."""
    try:
        data = json.loads(output)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    code, metadata = data.get("returncode"), data.get("metadata")
    if type(code) is not int and isinstance(metadata, dict):
        code = metadata.get("exit_code")
    if type(code) is not int:
        return None
    parts = [data.get(key) for key in ("exception_info", "output", "output_head", "output_tail")]
    return code, "\n".join(part for part in parts if isinstance(part, str) and part)


def _gemini_cli(output: str) -> tuple[int | None, str] | None:
    """Gemini CLI's shell result: the code (0 where a newer version leaves the line out, None for `(none)` or a
    signal) and the output, with a process error (`Error: spawn ...`) as its last line."""
    head = _GEMINI_HEAD.match(output)
    if head is None:
        return None
    lines = output[head.end():].rstrip("\n").split("\n")
    fields: dict[str, str] = {}
    while len(lines) > 1 and (field := _GEMINI_FIELD.fullmatch(lines[-1].strip())):
        fields[field[1]] = field[2].strip()
        lines.pop()
    # `Error:` alone may be the output's own last line; the others are Gemini CLI's.
    if not fields.keys() - {"Error"}:
        return None
    body = "\n".join(lines)
    body = "" if body == "(empty)" else body
    if fields.get("Error", "(none)") != "(none)":
        body += f"\nError: {fields['Error']}"
    signal = fields.get("Signal", "(none)")
    code = fields.get("Exit Code", "0" if signal == "(none)" else "(none)")
    return (int(code) if re.fullmatch(r"-?\d+", code) else None), body


def exit_code_in(output: str) -> tuple[int | None, str]:
    """The exit code a command's harness reports with its output (see the forms above), and the output without
    what reports it (so neither the code nor its frame is taken for the output's content or its error); None when
    the output reports none."""
    stripped = output.strip()
    if stripped.startswith("{") and (found_json := _json_observation(stripped)) is not None:
        return found_json
    if (gemini := _gemini_cli(output)) is not None:
        return gemini
    if marker := _MINI_MARKER.search(output):
        return int(marker.group(1)), output[:marker.start()]
    tags = _MINI_TAGS.match(output)
    if tags:
        bodies = [m.group(2) for m in _MINI_OUTPUT.finditer(tags["rest"])]
        body = "\n".join(b for b in [tags["exception"] or ""] + bodies if b)
        return int(tags["code"]), body
    code, end = None, len(output)
    # The last lines: frame lines and code lines (OpenHands writes the code twice), blank lines between.
    while end > 0:
        start = output.rfind("\n", 0, end) + 1
        line = output[start:end].strip()
        found = _CODE_LINE.fullmatch(line)
        if line and not found and not _FRAME_LINE.fullmatch(line):
            break
        if code is None and found:
            code = int(found.group(1))
        end = max(start - 1, 0)
    if code is not None:
        return code, output[:end]
    # The first lines: a code line, then frame lines.
    body = output.lstrip()
    line_end = body.find("\n")
    found = _CODE_LINE.fullmatch(body[:line_end if line_end >= 0 else len(body)].strip())
    if found is None:
        return None, output
    rest = body[line_end + 1:] if line_end >= 0 else ""
    while (line_end := rest.find("\n")) >= 0 and _FRAME_LINE.fullmatch(rest[:line_end].strip()):
        rest = rest[line_end + 1:]
    return int(found.group(1)), rest


def without_harness_head(output: str) -> str:
    """The output from where its own text starts: after mini-swe-agent's `<returncode>0</returncode>` and `<output>`
    tags (a row showing an output's first line read "<returncode>0</returncode>"), without the closing tag (an empty
    output's row read "</output>"); an exception it reported first."""
    tags = _MINI_TAGS.match(output)
    if tags is None:
        return output
    rest = tags["rest"]
    opening = _MINI_OUTPUT_OPENING.match(rest)
    body = _MINI_OUTPUT_CLOSING.sub("", rest[opening.end():] if opening else rest)
    return f"{tags['exception']}\n{body}" if tags["exception"] else body


# What a download tool prints while it works (curl's table: "% Total % Received % Xferd ...", "Dload Upload ...",
# then rows of numbers and times): the first lines of its output, and none says what was fetched.
_PROGRESS_HEAD = re.compile(r"^\s*(?:%\s+Total\s+%\s+Received|Dload\s+Upload)\b")
_PROGRESS_FIELD = re.compile(r"[\d.:]+[kMG]?|-+(?::-+)*|--:--:--")


def is_progress_meter(line: str) -> bool:
    """Whether a line of output is a progress meter's: its header, or a row of six or more numbers and times."""
    fields = line.split()
    return bool(_PROGRESS_HEAD.match(line)) or (len(fields) >= 6 and all(_PROGRESS_FIELD.fullmatch(f) for f in fields))


def clip(text: str, limit: int) -> str:
    """Text cut to at most `limit` characters, the last one an ellipsis when anything was cut. The kept start is
    exact (not stripped), so a check that looks for a command's first characters still finds them."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def one_line_field(value: Any, limit: int) -> str:
    """A value as one redacted line of at most `limit` characters (redacted before clipping: no half-secrets)."""
    text, _ = redact(WHITESPACE.sub(" ", str(value)).strip())
    return clip(text, limit)
