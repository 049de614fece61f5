"""What reaches a terminal carries no control sequences: text from a server, a chat file or a stored chat (a reply, a
title, a search hit) could otherwise set the window title, write the clipboard (OSC 52) or clear the screen."""

from __future__ import annotations

import codecs
import io
import re
import shutil
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

# Terminal control no text from elsewhere may reach the terminal with: OSC (title, clipboard via OSC 52, links), CSI
# (clear screen, cursor moves, colours), DCS/PM/APC strings, other escapes, and C0/C1 controls but tab and newline.
_TERMINAL_CONTROL = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[ -/]*[0-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# An escape sequence still arriving at the end of a chunk: held back until its end comes (or the reply ends).
_UNFINISHED_ESCAPE = re.compile(r"\x9b[0-?]*[ -/]*\Z|\x1b(?:\][^\x07\x1b]*|\[[0-?]*[ -/]*|[PX^_][^\x1b]*|[ -/]*)?(?:\x1b)?\Z")


class TerminalText:
    """Text made safe to print, chunk by chunk: control sequences split across chunks are removed too."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        text = self._pending + text
        unfinished = _UNFINISHED_ESCAPE.search(text)
        cut = unfinished.start() if unfinished else len(text)
        self._pending = text[cut:]
        return _TERMINAL_CONTROL.sub("", text[:cut])

    def end(self) -> str:
        rest, self._pending = self._pending, ""
        return _TERMINAL_CONTROL.sub("", rest)


class TerminalStream:
    """A terminal's text stream that drops control sequences from everything written to it."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._text = TerminalText()

    def write(self, text: str) -> int:
        self._stream.write(self._text.feed(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def end(self) -> None:
        self._stream.write(self._text.end())
        self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def guarded_terminal() -> Iterator[None]:
    """While a command runs, its standard output and error, when they are a terminal, go through TerminalStream. A
    pipe or a file gets the text as it is (`precis export ID > chat.md` keeps the chat exactly). Either is written
    whatever the locale's encoding (_any_character)."""
    saved = sys.stdout, sys.stderr
    encodings = [had for stream in saved if (had := _any_character(stream)) is not None]
    guards = []
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and stream.isatty():
            guards.append(TerminalStream(stream))
            setattr(sys, name, guards[-1])
    try:
        yield
    finally:
        for guard in guards:
            guard.end()
        sys.stdout, sys.stderr = saved
        for stream, encoding, errors in encodings:
            stream.reconfigure(encoding=encoding, errors=errors)


def _any_character(stream: TextIO | None) -> tuple[io.TextIOWrapper, str, str | None] | None:
    """A stream in an encoding other than UTF-8 (a Latin-1 or ASCII locale) failed on the first character it lacks
    (a title's '…', a summary's '→'): the command ended in a traceback, after it had done its work. A terminal shows
    '?' for such a character; a pipe or a file gets UTF-8, the text kept exactly, as `export -o` writes it. Returns
    the stream with the encoding and error handling it had, None when it is left as it is."""
    if not isinstance(stream, io.TextIOWrapper) or codecs.lookup(stream.encoding).name == "utf-8":
        return None
    had = stream, stream.encoding, stream.errors
    if stream.isatty():
        stream.reconfigure(errors="replace")
    else:
        stream.reconfigure(encoding="utf-8")
    return had


# The width of output that goes to no terminal (a pipe, a file): its lines as long as they are, for a script to read
# each whole.
NO_TERMINAL = 10_000


def terminal_width() -> int:
    """The columns of the terminal `precis` writes to (COLUMNS, when set, says it; NO_TERMINAL when it writes to none),
    for what is laid out in columns: the commands' help, the context's bars."""
    return shutil.get_terminal_size((NO_TERMINAL, 24)).columns


def fitted(text: str, width: int | None = None) -> str:
    """`text` within `width` columns (None: the terminal's, terminal_width): each line longer than that broken between
    words, its continuation indented as the line is, so that a terminal does not cut a word at its edge; its own line
    breaks kept (a preview's, a diff's). A word wider than the terminal (a long path) stays whole, to be copied whole.
    Lines that fit, and all of them when no terminal is written to, as they are."""
    width = width or terminal_width()
    lines = []
    for line in text.split("\n"):
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip(" "))]
        indent = indent if len(indent) <= width // 2 else ""  # a deep line's continuation would have no room
        lines += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)
