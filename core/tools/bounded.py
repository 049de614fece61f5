"""The tool runs behind /run, /grep and attached files: each returns the tool messages that bring its output in.

A shell command runs only when the user explicitly types `/run`; nothing here runs on its own.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import selectors
import shlex
import signal
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..model.messages import Message, ToolCall, new_id
from ..providers.base import CancelToken
from ..settings import RUN_MEMORY_MB, RUN_PROCESSES, RUN_TIMEOUT_SECONDS

MAX_TOOL_OUTPUT_CHARS = 200_000
KEPT_TAIL_CHARS = 2_000  # of a longer output, its last characters are kept with its start
# How often the processes of a running /run command are counted (a look through /proc).
PROCESS_COUNT_SECONDS = 0.5
# After the shell exits, how long output from processes it left behind is still read before they are ended.
BACKGROUND_GRACE_SECONDS = 0.5
# The environment variable that marks a /run command's processes, so those that leave its session are found.
RUN_MARK = "PRECIS_RUN"
MAX_FILE_BYTES = 2_000_000
MAX_GREP_MATCHES = 500
SKIPPED_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".tox"}


class ToolInputError(ValueError):
    """A tool's argument cannot be used (a bad pattern, a missing folder); the message is a hint for the user."""


def tool_exchange(tool: str, arguments: dict, output: str) -> tuple[Message, Message]:
    """The assistant call and the tool result for one tool use, paired by call id."""
    call = ToolCall(id=new_id(), name=tool, arguments=arguments)
    asking = Message(role="assistant", content="", tool_calls=(call,))
    result = Message(role="tool", content=cap_output(output), tool_call_id=call.id, name=tool)
    return asking, result


def cap_output(text: str) -> str:
    """At most MAX_TOOL_OUTPUT_CHARS of a tool's output: the middle goes, so the end (why a command stopped, its
    exit code, /grep's count) is always kept."""
    if len(text) <= MAX_TOOL_OUTPUT_CHARS:
        return text
    dropped = len(text) - MAX_TOOL_OUTPUT_CHARS
    head = MAX_TOOL_OUTPUT_CHARS - KEPT_TAIL_CHARS
    return f"{text[:head]}\n[... {dropped} characters not kept ...]\n{text[-KEPT_TAIL_CHARS:]}"


@dataclass(frozen=True)
class RunResult:
    """What a /run command printed (stdout and stderr, capped), its exit code (None when it was stopped before it
    finished) and notes on why it stopped and which of its processes were ended."""

    output: str
    exit_code: int | None
    notes: tuple[str, ...] = ()
    cancelled: bool = False


def format_command_output(result: RunResult) -> str:
    """The output, the notes, and the exit code on a last line: `[exit code: N]`; `[cancelled]` when the user
    stopped it. A command stopped at a limit says why first (its first note), where the chat's one-line view of the
    result and the model's reading start: after 200,000 bytes of output it would be a screenful away."""
    tail = [f"[exit code: {result.exit_code}]"] if result.exit_code is not None else []
    if result.cancelled:
        tail = ["[cancelled]"]
    at_limit = result.exit_code is None and not result.cancelled
    head, notes = (result.notes[:1], result.notes[1:]) if at_limit else ((), result.notes)
    body = result.output.rstrip("\n")
    return "\n".join([*head, *([body] if body else []), *notes, *tail])


def _processes(session: int, mark: bytes | None = None) -> dict[int, str]:
    """{pid: command line} of the running processes in `session`, and with `mark` also of those whose environment
    holds it (a process that left the session, `setsid cmd &`, keeps its environment). Empty without /proc."""
    found: dict[int, str] = {}
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no /proc (macOS): the session's process group is still killed
        return found
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                # After the command name: state, ppid, pgrp, session. A zombie has ended already.
                state, _ppid, _group, in_session = file.read().rsplit(b")", 1)[1].split()[:4]
            if state == b"Z":
                continue
            if int(in_session) != session:
                if mark is None:
                    continue
                with open(f"/proc/{pid}/environ", "rb") as file:
                    if mark not in file.read():
                        continue
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command = file.read().replace(b"\0", b" ").strip()
        except (OSError, ValueError):  # gone meanwhile, or another user's
            continue
        found[int(pid)] = command.decode(errors="replace")[:80]
    return found


def _end(session: int, mark: bytes) -> dict[int, str]:
    """Kill every process of a /run command still running (its session's, and those carrying its mark); returns
    them with their command lines as first seen. Looked for again until no new one is found: one may have started
    another meanwhile (one killed already may still be listed while it dies, its command line gone)."""
    ended: dict[int, str] = {}
    for _ in range(10):
        running = _processes(session, mark)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(session, signal.SIGKILL)
        new = {pid: command for pid, command in running.items() if pid not in ended}
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        ended.update(new)
        time.sleep(0.02)
    return ended


def _ended_note(ended: dict[int, str], shell: int, what: str) -> tuple[str, ...]:
    """'[ended 2 processes the command left running: sleep 97 (pid 41), ...]', the shell itself not counted."""
    others = [f"{command or '?'} (pid {pid})" for pid, command in sorted(ended.items()) if pid != shell]
    if not others:
        return ()
    shown = ", ".join(others[:10]) + (f" and {len(others) - 10} more" if len(others) > 10 else "")
    return (f"[ended {len(others)} process{'' if len(others) == 1 else 'es'} {what}: {shown}]",)


# The shell that runs a /run command: it sets the memory limit of every process to come (RLIMIT_DATA: what a process
# allocates, not the address space it reserves, which Java and V8 reserve by gigabytes), then becomes the shell of
# the command as typed. In the shell, not in a preexec_fn: that would make Python fork rather than vfork, and the
# child's copy-on-write faults took 2.2 s before the command started on a loaded machine. A hard limit already
# lower is left as it is.
_LIMITED_SHELL = 'ulimit -d "$1" 2>/dev/null; exec /bin/sh -c "$2"'


def run_shell(command: str, cancel: CancelToken | None = None, cwd: str | Path | None = None,
              timeout: float = RUN_TIMEOUT_SECONDS, memory_mb: int = RUN_MEMORY_MB,
              processes: int = RUN_PROCESSES, env: Mapping[str, str] | None = None) -> RunResult:
    """Run `command` in a shell, in a session of its own, within limits: `timeout` seconds, `memory_mb` megabytes
    for each process, `processes` running at once, MAX_TOOL_OUTPUT_CHARS bytes of output (read as it comes, so an
    endless producer costs no memory). At a limit or a cancel, the command and everything it started are killed;
    when the shell ends, what it left running is killed too (also what left its session with setsid). What was
    captured is kept, with notes saying why it stopped and what was ended. `env` replaces Precis's environment."""
    token = new_id()
    environment = {**(os.environ if env is None else env), RUN_MARK: token}
    proc = subprocess.Popen(
        ["/bin/sh", "-c", _LIMITED_SHELL, "sh", str(memory_mb * 1024), command], cwd=cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=environment)
    mark = f"{RUN_MARK}={token}\0".encode()
    kept = bytearray()
    stopped = ""
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    counted_at = 0.0
    reading = True  # until the output is closed (the shell may close it and go on)
    pipe = proc.stdout
    assert pipe is not None, "the command's stdout is piped (above)"
    fd = pipe.fileno()
    with pipe, selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if cancel is not None and cancel.cancelled:
                break
            now = time.monotonic()
            if now > deadline:
                stopped = f"[timed out after {timeout:g} s; the command was stopped]"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and (not reading or now - exited_at > BACKGROUND_GRACE_SECONDS):
                break  # done; or something it left running (`setsid cmd &`) still holds the output
            if exited_at is None and now - counted_at > PROCESS_COUNT_SECONDS:
                counted_at = now
                if len(_processes(proc.pid)) > processes:
                    stopped = f"[more than {processes:,} processes at once; the command was stopped]"
                    break
            if not reading:
                time.sleep(0.05)
                continue
            if not selector.select(0.1):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                reading = False
                continue
            kept += chunk[:MAX_TOOL_OUTPUT_CHARS - len(kept)]
            if len(kept) >= MAX_TOOL_OUTPUT_CHARS:
                stopped = f"[output passed {MAX_TOOL_OUTPUT_CHARS:,} bytes; the command was stopped]"
                break
    finished = exited_at is not None
    ended = _end(proc.pid, mark)
    code = proc.wait()
    output = kept.decode("utf-8", errors="replace")
    cancelled = cancel is not None and cancel.cancelled and not stopped
    if finished and not stopped and not cancelled:
        return RunResult(output, code, _ended_note(ended, proc.pid, "the command left running"))
    notes = ((stopped,) if stopped else ()) + _ended_note(ended, proc.pid, "it started")
    return RunResult(output, None, notes, cancelled)


def run_command_messages(command: str, cancel: CancelToken | None = None, cwd: str | Path | None = None,
                         timeout: float = RUN_TIMEOUT_SECONDS, memory_mb: int = RUN_MEMORY_MB,
                         processes: int = RUN_PROCESSES) -> tuple[Message, Message]:
    """`/run CMD`: the bash tool call and its result (output, notes, exit code), within the limits run_shell takes."""
    result = run_shell(command, cancel=cancel, cwd=cwd, timeout=timeout, memory_mb=memory_mb, processes=processes)
    return tool_exchange("bash", {"command": command}, format_command_output(result))


def grep_argument(argument: str) -> tuple[str, str]:
    """Split `/grep PATTERN [PATH]`; the pattern may be quoted to contain spaces."""
    try:
        parts = shlex.split(argument)
    except ValueError as exc:
        raise ToolInputError(f"/grep: {exc}") from None
    if not parts or len(parts) > 2:
        raise ToolInputError("/grep needs PATTERN [PATH] (quote a pattern that contains spaces)")
    return parts[0], parts[1] if len(parts) == 2 else "."


@dataclass(frozen=True)
class GrepLimits:
    """How far one search may go: past any of these it stops, and its last line says where and why."""

    seconds: float = 10.0
    bytes: int = 100_000_000  # read in all
    file_bytes: int = MAX_FILE_BYTES  # a larger file is skipped
    matches: int = MAX_GREP_MATCHES  # listed; the rest are counted


def grep(pattern: str, path: str | Path = ".", cancel: CancelToken | None = None,
         limits: GrepLimits = GrepLimits(), include: str | None = None, shown_under: Path | None = None,
         who: str = "/grep") -> str:
    """Lines matching a regular expression under `path`, as `file:line: text`, with a count line at the end.

    Only regular files are read (a FIFO would wait for a writer forever, a device such as /dev/zero never ends), no
    symbolic link is followed out of `path`, and the search stops at `limits` (time, bytes read) saying so.
    `include` is a glob the files' names (or paths under `path`) must match when `path` is a folder; with `shown_under` (a resolved folder
    holding `path`) files are named relative to it; `who` names the tool in errors."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolInputError(f"{who}: bad pattern {pattern!r}: {exc}") from None
    named = Path(path).expanduser()
    if not named.exists():
        raise ToolInputError(f"{who}: no such file or folder: {named}")
    root = named.resolve()
    if not (root.is_dir() or root.is_file()):
        raise ToolInputError(f"{who}: {named} is not a file or folder (a device, a FIFO or a socket)")
    if root.is_file():
        # A file named outright is searched whatever `include` says: the glob picks files out of a folder.
        files: Iterable[tuple[str, Path]] = [(str(root.relative_to(shown_under) if shown_under else named), root)]
    else:
        files = _walk(root)
        if shown_under is not None:
            files = ((str((root / shown).relative_to(shown_under)), file) for shown, file in files)
        if include:
            files = ((shown, file) for shown, file in files
                     if fnmatch.fnmatch(Path(shown).name, include) or fnmatch.fnmatch(shown, include))
    deadline = time.monotonic() + limits.seconds
    lines: list[str] = []
    matched_files = total = read = 0
    stopped = ""
    for shown, file in files:
        if cancel is not None and cancel.cancelled:
            stopped = "[cancelled]"
            break
        if time.monotonic() > deadline:
            stopped = f"[stopped after {limits.seconds:g} s, before {shown}: the files from there on were not searched]"
            break
        if read >= limits.bytes:
            stopped = (f"[stopped after reading {limits.bytes:,} bytes, before {shown}: the files from there on were "
                       "not searched]")
            break
        data = _read_regular(file, limits.file_bytes)
        if data is None or b"\0" in data[:4096]:
            continue
        read += len(data)
        hit = False
        for number, text in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(text):
                total += 1
                hit = True
                if total <= limits.matches:
                    lines.append(f"{shown}:{number}: {text[:300]}")
        matched_files += hit
    if total > limits.matches:
        lines.append(f"[... {total - limits.matches} more matches not shown]")
    if stopped:
        lines.append(stopped)
    lines.append(f"{total} match{'' if total == 1 else 'es'} in {matched_files} file{'' if matched_files == 1 else 's'}")
    return "\n".join(lines)


def _read_regular(file: Path, most: int) -> bytes | None:
    """The bytes of a regular file of at most `most` bytes, else None (larger, gone, unreadable, or not a regular
    file). Opened without waiting (a FIFO put in its place would block the open) and checked once open."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > most:
            return None
        try:
            data = handle.read(most + 1)  # a file that grew past its size is still read no further
        except OSError:
            return None
    return None if len(data) > most else data


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    """(name relative to `root`, path to read) of the files under `root` (itself resolved), in order: a symbolic
    link to a file inside it is read, one out of it is not, and links to folders are not walked (each folder is
    walked once, where it is)."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            file = Path(folder) / name
            target = file.resolve() if file.is_symlink() else file
            if target.is_relative_to(root):
                yield str(file.relative_to(root)), target


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
