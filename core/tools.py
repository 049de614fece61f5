"""The tool runs behind /run, /grep and attached files: each returns the tool messages that bring its output in.

A shell command runs only when the user explicitly types `/run`; nothing here runs on its own.
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import signal
import subprocess
import time
from pathlib import Path

from .model.messages import Message, ToolCall, new_id
from .providers.base import CancelToken
from .settings import RUN_TIMEOUT_SECONDS

MAX_TOOL_OUTPUT_CHARS = 200_000
KEPT_TAIL_CHARS = 2_000  # of a longer output, its last characters are kept with its start
# /run waits this long by default: a chat should not hang for minutes on a command that never ends.
# After the shell exits, how long output from processes it left behind is still read.
BACKGROUND_GRACE_SECONDS = 0.5
MAX_FILE_BYTES = 2_000_000
MAX_GREP_MATCHES = 500
SKIPPED_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".tox"}


class ToolInputError(ValueError):
    """A tool's argument cannot be used (a bad pattern, a missing folder); the message is a hint for the user."""


def tool_exchange(tool: str, arguments: dict, output: str) -> tuple[Message, Message]:
    """The assistant call and the tool result for one tool use, paired by call id."""
    call = ToolCall(id=new_id(), name=tool, arguments=arguments)
    asking = Message(role="assistant", content="", tool_calls=(call,))
    result = Message(role="tool", content=_cap(output), tool_call_id=call.id, name=tool)
    return asking, result


def _cap(text: str) -> str:
    """At most MAX_TOOL_OUTPUT_CHARS of a tool's output: the middle goes, so the end (why a command stopped, its
    exit code, /grep's count) is always kept."""
    if len(text) <= MAX_TOOL_OUTPUT_CHARS:
        return text
    dropped = len(text) - MAX_TOOL_OUTPUT_CHARS
    head = MAX_TOOL_OUTPUT_CHARS - KEPT_TAIL_CHARS
    return f"{text[:head]}\n[... {dropped} characters not kept ...]\n{text[-KEPT_TAIL_CHARS:]}"


def format_command_output(output: str, exit_code: int | None) -> str:
    """Shell output followed by its exit code on a last line: `[exit code: N]` (or `[cancelled]`)."""
    tail = "[cancelled]" if exit_code is None else f"[exit code: {exit_code}]"
    body = output.rstrip("\n")
    return f"{body}\n{tail}" if body else tail


def run_shell(command: str, cancel: CancelToken | None = None, cwd: str | Path | None = None,
              timeout: float = RUN_TIMEOUT_SECONDS) -> tuple[str, int | None]:
    """Run `command` in a shell; return (stdout+stderr, exit code), exit code None when it was stopped.

    Output is read as it comes and at most MAX_TOOL_OUTPUT_CHARS bytes are kept, so an endless producer costs no
    memory. The command runs in its own process group: a cancel, the timeout or the output cap kills everything it
    started, and what was captured is kept with a note saying why it stopped.
    """
    proc = subprocess.Popen(
        command, shell=True, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True)

    def kill() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    if cancel is not None:
        cancel.on_cancel(kill)
    kept = bytearray()
    stopped = ""
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    fd = proc.stdout.fileno()
    with proc.stdout, selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if cancel is not None and cancel.cancelled:
                kill()
                break
            now = time.monotonic()
            if now > deadline:
                kill()
                stopped = f"[timed out after {timeout:g} s; the command was stopped]"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > BACKGROUND_GRACE_SECONDS:
                # The shell is gone but something it left running (`setsid cmd &`) still holds the output open.
                stopped = ("[the command finished, but a process it started in the background still holds its "
                           "output and was left running]")
                break
            if not selector.select(0.1):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            kept += chunk[:MAX_TOOL_OUTPUT_CHARS - len(kept)]
            if len(kept) >= MAX_TOOL_OUTPUT_CHARS:
                kill()
                stopped = f"[output passed {MAX_TOOL_OUTPUT_CHARS:,} bytes; the command was stopped]"
                break
    code = proc.wait()
    output = kept.decode("utf-8", errors="replace")
    if stopped:
        return f"{output.rstrip(chr(10))}\n{stopped}" if output else stopped, None if exited_at is None else code
    if cancel is not None and cancel.cancelled:
        return output, None
    return output, code


def run_command_messages(command: str, cancel: CancelToken | None = None, cwd: str | Path | None = None,
                         timeout: float = RUN_TIMEOUT_SECONDS) -> tuple[Message, Message]:
    """`/run CMD`: the bash tool call and its result (output + exit code)."""
    output, code = run_shell(command, cancel=cancel, cwd=cwd, timeout=timeout)
    return tool_exchange("bash", {"command": command}, format_command_output(output, code))


def grep_argument(argument: str) -> tuple[str, str]:
    """Split `/grep PATTERN [PATH]`; the pattern may be quoted to contain spaces."""
    try:
        parts = shlex.split(argument)
    except ValueError as exc:
        raise ToolInputError(f"/grep: {exc}") from None
    if not parts or len(parts) > 2:
        raise ToolInputError("/grep needs PATTERN [PATH] (quote a pattern that contains spaces)")
    return parts[0], parts[1] if len(parts) == 2 else "."


def grep(pattern: str, path: str | Path = ".", cancel: CancelToken | None = None) -> str:
    """Lines matching a regular expression under `path`, as `file:line: text`, with a count line at the end."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolInputError(f"/grep: bad pattern {pattern!r}: {exc}") from None
    root = Path(path).expanduser()
    if not root.exists():
        raise ToolInputError(f"/grep: no such file or folder: {root}")
    files = [root] if root.is_file() else _walk(root)
    lines: list[str] = []
    matched_files = 0
    total = 0
    for file in files:
        if cancel is not None and cancel.cancelled:
            lines.append("[cancelled]")
            break
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:4096]:
            continue
        hit = False
        for number, text in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(text):
                total += 1
                hit = True
                if total <= MAX_GREP_MATCHES:
                    shown = file if root.is_file() else file.relative_to(root)
                    lines.append(f"{shown}:{number}: {text[:300]}")
        matched_files += hit
    if total > MAX_GREP_MATCHES:
        lines.append(f"[... {total - MAX_GREP_MATCHES} more matches not shown]")
    lines.append(f"{total} match{'' if total == 1 else 'es'} in {matched_files} file{'' if matched_files == 1 else 's'}")
    return "\n".join(lines)


def _walk(root: Path):
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            yield Path(folder) / name


def grep_messages(argument: str, cancel: CancelToken | None = None) -> tuple[Message, Message]:
    """`/grep PATTERN [PATH]`: the grep tool call and its result."""
    pattern, path = grep_argument(argument)
    return tool_exchange("grep", {"pattern": pattern, "path": path}, grep(pattern, path, cancel))


def read_file_messages(path: str | Path) -> tuple[Message, Message]:
    """An attached file as a read_file tool call and its result; raises OSError/ValueError with the path named."""
    file = Path(path)
    size = file.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{file}: too large to attach ({size:,} bytes; the limit is {MAX_FILE_BYTES:,})")
    data = file.read_bytes()
    if b"\0" in data[:4096]:
        raise ValueError(f"{file}: looks like a binary file; only text files can be attached")
    return tool_exchange("read_file", {"path": str(file)}, data.decode("utf-8", errors="replace"))
