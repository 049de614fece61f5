"""The terminal chat's lines, as the user gives them: typed at a terminal (a prompt, GNU readline's editing, a paste
of many lines as one message, Ctrl-C and Ctrl-D) or read from a pipe or a file, one a turn."""

from __future__ import annotations

import sys
import textwrap
from typing import TYPE_CHECKING, TextIO

from .terminal import terminal_width

if TYPE_CHECKING:
    from .chat import TerminalChat

QUIT_COMMANDS = ("/quit", "/exit")
PROMPT = "you> "
# Said at the first Ctrl-C at the prompt: one meant for a reply that had just ended left the chat.
LEAVE_HINT = "[Ctrl-C again, Ctrl-D or /quit leaves]"


def read_turns(chat: TerminalChat, stdin: TextIO, out: TextIO, typed: bool) -> int:
    """Line after line until /quit or the end of input. Lines not `typed` at a terminal (`echo hi | precis chat`,
    `precis chat < turns.txt`) are read with no prompt shown, and the exit code is the first failed line's, so that a
    script sees a reply that failed; a typed chat ends with 0. At the prompt, Ctrl-C drops what was typed and a second
    one in a row leaves."""
    failed = 0
    interrupted = False
    while True:
        try:
            line = _typed_turn(stdin, out) if typed else stdin.readline() or None
        except KeyboardInterrupt:
            if typed and not interrupted:
                interrupted = True
                print(f"\n{LEAVE_HINT}", file=out, flush=True)
                continue
            out.write("\n")
            return 0 if typed else 130
        interrupted = False
        if line is None:
            if typed:
                out.write("\n")
            return failed
        text = line.strip()
        if text.lower() in QUIT_COMMANDS:
            return failed
        if text:
            code = chat.line(text, label="model> " if typed else "")
            failed = failed or (0 if typed else code)
            if text.lower() == "/help":  # the terminal chat's own way out, which the registry's commands lack
                print(textwrap.fill(f"{' or '.join(QUIT_COMMANDS)} leaves, as end of input (Ctrl-D) does",
                                    terminal_width()), file=out)


def _typed_turn(stdin: TextIO, out: TextIO) -> str | None:
    """The next line after the prompt, None at the end of input. A terminal's line is read with GNU readline where
    Python has it: it can be edited (arrows, history), a line pasted past the terminal's own limit of 4095 bytes comes
    whole, where the terminal driver drops the rest, and a paste of many lines is one message (bracketed paste)."""
    if stdin is sys.stdin and stdin.isatty() and out.isatty():
        try:
            import readline
        except ImportError:
            pass
        else:
            if "libedit" not in (readline.__doc__ or ""):  # libedit's settings are written otherwise
                # Python turns bracketed paste off (CPython bpo-42819), so a terminal sent a pasted block as typed
                # lines: each its own message, each answered. On, the paste comes as one line, its newlines kept,
                # and Enter sends it.
                readline.parse_and_bind("set enable-bracketed-paste on")
            try:
                return input(PROMPT)
            except EOFError:
                return None
    out.write(PROMPT)
    out.flush()
    return stdin.readline() or None
