"""Rules shared by the summaries and the trail-coverage check, defined once so the two read text the same way:
exit codes in command output, the tool arguments that name a file, sentence ends, and clipping text to a length.
"""

from __future__ import annotations

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

# An exit code reported in a command's output, wherever it stands: `Exit code 1` (Claude Code, first line),
# `[exit code: 1]` (Precis's /run, last line), `exit code: 1`, `exited with status 2`, `returncode=1`,
# `non-zero exit status 3`, `Process exited with code 1`.
EXIT_CODE = re.compile(
    r"(?i)\bexit(?:ed with)? (?:status|code)[ :=]*(-?\d+)\b|\breturn ?code[\"']?\s*[:=]\s*(-?\d+)"
    r"|\bnon-zero exit status (-?\d+)")
# How far into an output an exit code is looked for (they are reported at its start or its end).
EXIT_CODE_SCAN = 2000


def exit_code_in(output: str) -> tuple[int | None, str]:
    """The exit code an output reports, and the output without the line that reports it (so that line is never
    taken for the output's content or its error). Looked for in the head and the tail of long outputs."""
    head, tail = output[:EXIT_CODE_SCAN], output[-EXIT_CODE_SCAN:]
    for part, offset in ((head, 0), (tail, max(len(output) - EXIT_CODE_SCAN, 0))):
        found = EXIT_CODE.search(part)
        if found is None:
            continue
        code = int(next(g for g in found.groups() if g is not None))
        start, end = offset + found.start(), offset + found.end()
        line_start = output.rfind("\n", 0, start) + 1
        line_end = output.find("\n", end)
        line = output[line_start: line_end if line_end >= 0 else len(output)]
        # A line that only reports the code goes; one that says more ("make: *** Error 2 ... exit status 2") stays.
        if len(line.strip()) <= len(found.group(0).strip()) + 4:
            output = output[:line_start] + (output[line_end + 1:] if line_end >= 0 else "")
        return code, output
    return None, output


def clip(text: str, limit: int) -> str:
    """Text cut to at most `limit` characters, the last one an ellipsis when anything was cut. The kept start is
    exact (not stripped), so a check that looks for a command's first characters still finds them."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def one_line_field(value: Any, limit: int) -> str:
    """A value as one redacted line of at most `limit` characters (redacted before clipping: no half-secrets)."""
    text, _ = redact(WHITESPACE.sub(" ", str(value)).strip())
    return clip(text, limit)
