"""`precis` in its own process on a pseudo-terminal that is its controlling terminal, as a user runs it: what it
prints is read as the user sees it, keys are typed (Ctrl-C is the terminal's SIGINT to the process, Ctrl-D its end of
input), and a typed line goes through the terminal driver's line discipline."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
CTRL_C, CTRL_D = b"\x03", b"\x04"


def _own_terminal() -> None:
    # A session of its own whose controlling terminal is the pseudo-terminal: Ctrl-C typed there reaches it.
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PseudoTerminal:
    def __init__(self, *argv: str, env: dict[str, str] | None = None, columns: int | None = None):
        """`columns`: the terminal's width, as a terminal window of that size reports it (else the pseudo-terminal
        reports none, and `precis` writes as to no terminal, lines unbroken)."""
        self.leader, follower = pty.openpty()
        if columns is not None:
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        self.process = subprocess.Popen([sys.executable, "-m", "precis.core.cli.main", *argv], cwd=ROOT,
                                        stdin=follower, stdout=follower, stderr=follower, env=env,
                                        preexec_fn=_own_terminal)
        os.close(follower)
        os.set_blocking(self.leader, False)
        self.seen = b""  # everything shown so far
        self._unread = b""  # what expect has not matched yet

    def _read(self, seconds: float) -> None:
        if select.select([self.leader], [], [], seconds)[0]:
            try:
                chunk = os.read(self.leader, 65536)
            except (BlockingIOError, OSError):  # EIO: the process closed its side
                time.sleep(seconds)
                return
            self.seen += chunk
            self._unread += chunk

    def expect(self, pattern: str, seconds: float = 60) -> str:
        """Wait until `pattern` (a regular expression) is shown; what was shown up to it. TimeoutError if it is not
        within `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            found = re.search(pattern.encode(), self._unread)
            if found:
                shown, self._unread = self._unread[:found.end()], self._unread[found.end():]
                return shown.decode(errors="replace")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{pattern!r} not shown in {seconds} s; the terminal shows:\n"
                                   f"{self.seen.decode(errors='replace')[-3000:]}")
            self._read(0.1)

    def type(self, keys: str | bytes) -> None:
        """Keys typed, as fast as the terminal takes them."""
        data = keys.encode() if isinstance(keys, str) else keys
        while data:
            try:
                data = data[os.write(self.leader, data[:1024]):]
            except BlockingIOError:
                self._read(0.01)  # the terminal is full until the process reads: show what it printed meanwhile

    def line(self, text: str) -> None:
        self.type(text + "\r")  # Enter sends a carriage return; the terminal driver makes it the line's end

    def wait(self, seconds: float = 60) -> int:
        deadline = time.monotonic() + seconds
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        self._read(0.1)
        return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.leader)

    def __enter__(self) -> PseudoTerminal:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


@contextmanager
def typed_at_a_terminal(text: str) -> Iterator[TextIO]:
    """Standard input that is a terminal (a pseudo-terminal), with `text` typed on it and then Ctrl-D: for a chat run
    in this process that must see a terminal, where it asks about tool calls. Each line reaches it whole, as typed."""
    leader, follower = pty.openpty()
    stdin = open(follower, encoding="utf-8")  # noqa: SIM115 - closed below, with the terminal
    try:
        os.write(leader, text.encode() + CTRL_D)
        yield stdin
    finally:
        stdin.close()
        os.close(leader)
