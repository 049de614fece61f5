"""The tools the model calls in a chat's workspace folder: read_file, list_files, search_files and execute_bash here,
create_file and edit_file in editing.py.

Every path is resolved (symbolic links followed) and refused unless it ends inside the folder: `../../etc/passwd`,
an absolute path elsewhere and a link pointing out all are. Reads, listings and searches stop at a size, a count
and a time, and say where; only regular files are read (a FIFO would wait for a writer forever, a device may never
end). execute_bash runs its command in the folder with /run's limits, without Precis's API keys in its environment;
it is a shell, not a sandbox: the user's consent before each command is what guards it.
"""

from __future__ import annotations

import difflib
import itertools
import os
import stat
import time
from pathlib import Path
from typing import Any, BinaryIO

from ..model.tools import ToolOutcome, ToolSpec
from ..providers.base import CancelToken
from ..providers.registry import KEY_ENV
from ..settings import RUN_TIMEOUT_SECONDS
from .bounded import SKIPPED_DIRS, GrepLimits, ToolInputError, format_command_output, grep, run_shell

WORKSPACE = "workspace"
READ_LINES = 2000  # read_file's lines at once, unless the call asks for fewer
READ_BYTES = 100_000  # of text read_file returns at once
LINE_CHARS = 2000  # a longer line is cut, and marked
READ_SECONDS = 10.0  # to skip to a far `offset` in a huge file
LIST_ENTRIES = 1000
NEAR_NAMES = 3  # names like a missing file's, offered in its error
LIST_SECONDS = 5.0
SEARCH_LIMITS = GrepLimits(seconds=10.0, matches=200)
COMMAND_SECONDS_LEAST = 1  # the shortest timeout a call may ask for
COMMAND_SECONDS_MOST = 600  # the longest
BINARY_PROBE_BYTES = 4096  # a NUL in these and the file is taken for binary

_PATH = {"type": "string", "description": "a path relative to the workspace folder (or absolute, inside it)"}

WORKSPACE_TOOLS = (
    ToolSpec("read_file", "Read a text file in the workspace. Lines come numbered (`N→text`); a long file comes in "
             f"parts of up to {READ_LINES} lines: read on with `offset`.",
             {"type": "object", "properties": {
                 "path": _PATH,
                 "offset": {"type": "integer", "minimum": 1, "description": "the first line to read (1 = the first)"},
                 "limit": {"type": "integer", "minimum": 1, "maximum": READ_LINES, "description": "how many lines"}},
              "required": ["path"], "additionalProperties": False}, read_only=True),
    ToolSpec("list_files", f"List the files and folders under a folder of the workspace, recursively (folders end in "
             f"`/`; {', '.join(sorted(SKIPPED_DIRS))} are not entered), up to {LIST_ENTRIES} entries.",
             {"type": "object", "properties": {"path": {**_PATH, "description": "the folder (default: the workspace)"}},
              "additionalProperties": False}, read_only=True),
    ToolSpec("search_files", "Search the workspace's text files for a regular expression (Python syntax); lists "
             f"`file:line: text`, up to {SEARCH_LIMITS.matches} matches, then counts the rest.",
             {"type": "object", "properties": {
                 "pattern": {"type": "string", "description": "a regular expression"},
                 "path": {**_PATH, "description": "a folder or file to search (default: the workspace)"},
                 "glob": {"type": "string", "description": "in a folder, only files whose name or path matches, e.g. `*.py`"}},
              "required": ["pattern"], "additionalProperties": False}, read_only=True),
    ToolSpec("execute_bash", "Run a shell command in the workspace folder; returns its output (stdout and stderr) and "
             f"exit code. Stopped after `timeout` seconds (default {RUN_TIMEOUT_SECONDS:g}); no input is given to it.",
             {"type": "object", "properties": {
                 "command": {"type": "string", "description": "the command, as typed in a shell"},
                 # Whole seconds, bounded: as a free number SmolLM2 wrote `1.0000000122000000183514237…` until the
                 # reply's limit, and 0.001 s stopped a command before it could start.
                 "timeout": {"type": "integer", "minimum": COMMAND_SECONDS_LEAST, "maximum": COMMAND_SECONDS_MOST,
                             "description": "seconds"}},
              "required": ["command"], "additionalProperties": False}),
)


def workspace_problem(folder: str) -> str:
    """Why `folder` cannot be a chat's workspace folder, in words naming it; "" when it can (or is empty: none).
    A relative path is refused: it would mean a different folder depending on where Precis was started."""
    if not folder.strip():
        return ""
    path = Path(folder).expanduser()
    if not path.is_absolute():
        return f"{folder} is not a whole path: give the folder's full path (e.g. {Path.home() / folder})"
    try:
        if not path.exists():
            return f"there is no folder {folder}"
        if not path.is_dir():
            return f"{folder} is a file, not a folder"
    except OSError as exc:
        return f"{folder} cannot be reached: {exc.strerror or exc}"
    return ""


class Workspace:
    """A folder the model's tools work in; made for a chat that has one. Each tool's arguments are assumed valid
    against its schema (the toolbox checks them); a path outside, a missing file or a bad pattern raise
    ToolInputError with a message the model can act on."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        root = Path(folder).expanduser().resolve()
        if not root.is_dir():  # a missing folder was 'not a folder', as if it were a file
            raise ToolInputError(f"workspace folder {folder}: " + ("a file, not a folder" if root.exists()
                                                                   else "there is no such folder"))
        self.root = root

    def resolve(self, tool: str, path: str) -> Path:
        """`path` (relative to the folder, or absolute) resolved; refused unless it is in the folder."""
        if not path or "\0" in path:
            raise ToolInputError(f"{tool}: the path is empty or holds a NUL character")
        named = Path(path).expanduser()
        try:
            full = (named if named.is_absolute() else self.root / named).resolve()
        except (OSError, RuntimeError) as exc:  # a loop of symbolic links
            raise ToolInputError(f"{tool}: {path}: {exc}") from None
        if not full.is_relative_to(self.root):
            raise ToolInputError(f"{tool}: {path} is outside the workspace folder {self.root} (paths, and the "
                                 "symbolic links in them, must stay inside it)")
        return full

    def shown(self, full: Path) -> str:
        """How the model sees a path: relative to the folder."""
        return str(full.relative_to(self.root)) if full != self.root else "."

    def run(self, name: str, arguments: dict[str, Any], cancel: CancelToken | None = None) -> ToolOutcome:
        if name == "read_file":
            return self.read_file(arguments["path"], arguments.get("offset", 1), arguments.get("limit", READ_LINES))
        if name == "list_files":
            return self.list_files(arguments.get("path", "."))
        if name == "search_files":
            return self.search_files(arguments["pattern"], arguments.get("path", "."), arguments.get("glob"), cancel)
        if name == "execute_bash":
            return self.execute_bash(arguments["command"], arguments.get("timeout", RUN_TIMEOUT_SECONDS), cancel)
        raise ToolInputError(f"no workspace tool is called {name!r}")

    def read_file(self, path: str, offset: int = 1, limit: int = READ_LINES) -> ToolOutcome:
        full = self.resolve("read_file", path)
        shown = self.shown(full)
        if full.is_dir():
            raise ToolInputError(f"read_file: {shown} is a folder (list_files lists it)")
        with open_regular("read_file", full, shown) as handle:
            size = os.fstat(handle.fileno()).st_size
            if b"\0" in handle.read(BINARY_PROBE_BYTES):
                return ToolOutcome(f"[{shown}: a binary file of {size:,} bytes; not shown]", ok=True)
            handle.seek(0)
            return _numbered_lines(handle, shown, size, offset, min(limit, READ_LINES))

    def list_files(self, path: str = ".") -> ToolOutcome:
        full = self.resolve("list_files", path)
        if not full.is_dir():
            raise ToolInputError(f"list_files: {self.shown(full)} is not a folder")
        deadline = time.monotonic() + LIST_SECONDS
        entries: list[str] = []
        stopped = ""
        for folder, dirs, names in os.walk(full):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            here = Path(folder)
            for name in [*(f"{d}/" for d in dirs), *sorted(names)]:
                entry = here / name.rstrip("/")
                if not name.endswith("/") and not _listable(entry):
                    continue  # a FIFO, socket or device
                entries.append(f"{self.shown(entry)}{'/' if name.endswith('/') else ''}")
                if len(entries) >= LIST_ENTRIES:
                    stopped = f"[stopped at {LIST_ENTRIES} entries: list a folder further down to see more]"
                    break
            if stopped:
                break
            if time.monotonic() > deadline:
                stopped = f"[stopped after {LIST_SECONDS:g} s: list a folder further down to see more]"
                break
        entries.sort()
        if stopped:
            entries.append(stopped)
        if not entries:
            entries.append(f"[{self.shown(full)} is empty]")
        return ToolOutcome("\n".join(entries), ok=True, cut=bool(stopped))

    def search_files(self, pattern: str, path: str = ".", glob: str | None = None,
                     cancel: CancelToken | None = None) -> ToolOutcome:
        full = self.resolve("search_files", path)
        output = grep(pattern, full, cancel, SEARCH_LIMITS, include=glob, shown_under=self.root, who="search_files")
        # Before grep's count line: a note that it stopped early, and one that it listed only some matches.
        cut = any(line.startswith(("[stopped", "[cancelled", "[... ")) for line in output.split("\n")[-3:-1])
        return ToolOutcome(output, ok=True, cut=cut)

    def execute_bash(self, command: str, timeout: float = RUN_TIMEOUT_SECONDS,
                     cancel: CancelToken | None = None) -> ToolOutcome:
        result = run_shell(command, cancel=cancel, cwd=self.root, timeout=min(timeout, COMMAND_SECONDS_MOST),
                           env=environment_without_keys())
        stopped = result.exit_code is None
        return ToolOutcome(format_command_output(result), ok=result.exit_code == 0, cut=stopped)


def environment_without_keys() -> dict[str, str]:
    """Precis's environment less the API keys it holds for its providers: a command the model runs gets none."""
    return {name: value for name, value in os.environ.items() if name not in KEY_ENV.values()}


def near_names(missing: Path) -> str:
    """What the folder of a missing file holds under a name like it ("; in that folder: notes.txt"), or that the
    folder itself is missing: a model that guessed "notes" for notes.txt, or the wrong case, corrects its next call
    from it rather than guessing again."""
    try:
        with os.scandir(missing.parent) as entries:  # a huge folder: its first LIST_ENTRIES names
            names = [entry.name for entry in itertools.islice(entries, LIST_ENTRIES)]
    except FileNotFoundError:
        return f"; no folder {missing.parent.name} either"
    except OSError:
        return ""
    # Alike by the name before its extension: whole names would match on a shared ".txt".
    stems = {name: os.path.splitext(name.lower())[0] for name in names}
    wanted = os.path.splitext(missing.name.lower())[0]
    close = set(difflib.get_close_matches(wanted, set(stems.values()), n=NEAR_NAMES, cutoff=0.75))
    near = [name for name, stem in stems.items() if stem == wanted] + [n for n, stem in stems.items() if stem in close]
    near = list(dict.fromkeys(near))[:NEAR_NAMES]
    return f"; in that folder: {', '.join(near)}" if near else ""


def open_regular(tool: str, full: Path, shown: str) -> BinaryIO:
    """`full` opened for reading if it is a regular file; refused if it is a FIFO, a device or a socket. Opened
    without waiting (a FIFO would block the open) and checked once open, so nothing swapped in meanwhile is read."""
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise ToolInputError(f"{tool}: {shown}: no such file{near_names(full)}") from None
    except OSError as exc:
        raise ToolInputError(f"{tool}: {shown}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolInputError(f"{tool}: {shown} is not a regular file (a FIFO, a device or a socket): not read")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _listable(entry: Path) -> bool:
    """A regular file, or a symbolic link (shown, whether or not it is followed later)."""
    try:
        mode = entry.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def _numbered_lines(handle: BinaryIO, shown: str, size: int, offset: int, limit: int) -> ToolOutcome:
    """Lines `offset` on of an open text file, numbered, until `limit` lines or READ_BYTES; each line at most
    LINE_CHARS (a single line of gigabytes is read no further). The last line says where to read on."""
    deadline = time.monotonic() + READ_SECONDS
    number = 0
    while number < offset - 1:  # skipped a piece at a time: a line may be longer than memory allows
        piece = handle.readline(65536)
        if not piece:
            return ToolOutcome(f"[{shown} has {number:,} lines; there is no line {offset:,}]", ok=False)
        number += piece.endswith(b"\n")
        if time.monotonic() > deadline:
            return ToolOutcome(f"[{shown}: gave up skipping to line {offset:,} after {READ_SECONDS:g} s (at line "
                               f"{number + 1:,}); read from a nearer offset]", ok=False, cut=True)
    shown_lines: list[str] = []
    used = 0
    end_note = ""
    while True:
        piece = handle.readline(LINE_CHARS * 4 + 1)
        if not piece:
            break
        if len(shown_lines) >= limit or used + len(piece) > READ_BYTES:
            end_note = (f"[{len(shown_lines)} lines shown, {offset:,}-{offset + len(shown_lines) - 1:,}; the file goes "
                        f"on ({size:,} bytes in all): read on with offset={offset + len(shown_lines)}]")
            break
        text = piece.decode("utf-8", errors="replace").rstrip("\n")
        if not piece.endswith(b"\n") and len(piece) > LINE_CHARS * 4:
            while (rest := handle.readline(65536)) and not rest.endswith(b"\n") and time.monotonic() < deadline:
                pass  # the rest of a very long line
            text += " [... the rest of this line not shown]"
        elif len(text) > LINE_CHARS:
            text = text[:LINE_CHARS] + " [... the rest of this line not shown]"
        used += len(piece)
        shown_lines.append(f"{offset + len(shown_lines):>6}→{text}")
    if not shown_lines and offset > 1:
        return ToolOutcome(f"[{shown} has {offset - 1:,} lines; there is no line {offset:,}]", ok=False)
    if not shown_lines:
        return ToolOutcome(f"[{shown} is empty]", ok=True)
    return ToolOutcome("\n".join([*shown_lines, *([end_note] if end_note else [])]), ok=True, cut=bool(end_note))
