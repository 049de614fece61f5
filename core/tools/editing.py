"""The workspace tools that change files: create_file and edit_file. Each change is planned first, without writing:
the plan's unified diff is what the consent card shows, and what the model reads back once it is written.

edit_file replaces text that must match exactly once: none or several matches change nothing, and the error says
how many matched, so the model can quote more of the file.
"""

from __future__ import annotations

import difflib
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.tools import ToolOutcome, ToolSpec
from .bounded import MAX_FILE_BYTES, ToolInputError
from .workspace import _PATH, BINARY_PROBE_BYTES, Workspace, open_regular

EDITING_TOOLS = (
    ToolSpec("create_file", "Create a text file in the workspace with the given content, or replace the whole of an "
             "existing one (folders on the way are made).",
             {"type": "object", "properties": {"path": _PATH, "content": {"type": "string"}},
              "required": ["path", "content"], "additionalProperties": False}),
    ToolSpec("edit_file", "Replace text in a workspace file: `old_text` must match the file exactly (spaces and line "
             "breaks included) and exactly once; quote enough lines around it to make it unique. Returns the diff.",
             {"type": "object", "properties": {
                 "path": _PATH,
                 "old_text": {"type": "string", "description": "the exact text to replace"},
                 "new_text": {"type": "string", "description": "what replaces it"}},
              "required": ["path", "old_text", "new_text"], "additionalProperties": False}),
)


@dataclass(frozen=True)
class Change:
    """A file's content before (None: it does not exist yet) and after a planned change."""

    path: Path
    shown: str
    before: str | None
    after: str

    def diff(self) -> str:
        """The unified diff from before to after, as `diff -u` and git print it."""
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, "/dev/null" if self.before is None else f"a/{self.shown}",
                                     f"b/{self.shown}")
        return "".join(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines)


def plan(workspace: Workspace, name: str, arguments: dict[str, Any]) -> Change:
    """What create_file or edit_file would change, read from the file as it is now; nothing is written."""
    full = workspace.resolve(name, arguments["path"])
    shown = workspace.shown(full)
    if name == "create_file":
        content = arguments["content"]
        if len(content.encode("utf-8", errors="surrogatepass")) > MAX_FILE_BYTES:
            raise ToolInputError(f"create_file: the content is larger than {MAX_FILE_BYTES:,} bytes")
        return Change(full, shown, _current_text(name, full, shown, missing_ok=True), content)
    if name != "edit_file":
        raise ToolInputError(f"{name} changes no file")
    old, new = arguments["old_text"], arguments["new_text"]
    if not old:
        raise ToolInputError("edit_file: old_text is empty; quote the text to replace (create_file writes a whole file)")
    before = _current_text(name, full, shown, missing_ok=False)
    assert before is not None
    matches = before.count(old)
    if matches != 1:
        how = "was not found" if matches == 0 else f"matches {matches} places"
        hint = ("read the file and quote it exactly, spaces and line breaks included" if matches == 0
                else "quote more of the lines around it so that it matches once")
        raise ToolInputError(f"edit_file: old_text {how} in {shown}; nothing was changed: {hint}")
    return Change(full, shown, before, before.replace(old, new, 1))


def apply(workspace: Workspace, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    """Make the change (planned again from the file as it is now) and say what changed."""
    change = plan(workspace, name, arguments)
    _write(change)
    if change.before is None:
        lines = len(change.after.splitlines())
        return ToolOutcome(f"created {change.shown} ({lines} line{'' if lines == 1 else 's'})", ok=True)
    diff = change.diff()
    verb = "edited" if name == "edit_file" else "replaced"
    return ToolOutcome(f"{verb} {change.shown}\n{diff}" if diff else f"{change.shown} unchanged (the same content)",
                       ok=True)


def _current_text(tool: str, full: Path, shown: str, missing_ok: bool) -> str | None:
    """A file's text, None if it does not exist and `missing_ok`; refused if it is a folder, a special file,
    binary, not UTF-8 or larger than MAX_FILE_BYTES."""
    if full.is_dir():
        raise ToolInputError(f"{tool}: {shown} is a folder")
    if missing_ok and not os.path.lexists(full):
        return None
    with open_regular(tool, full, shown) as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ToolInputError(f"{tool}: {shown} is larger than {MAX_FILE_BYTES:,} bytes; it is not changed here")
    if b"\0" in data[:BINARY_PROBE_BYTES]:
        raise ToolInputError(f"{tool}: {shown} is a binary file; it is not changed here")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolInputError(f"{tool}: {shown} is not UTF-8 text (byte {exc.start}); it is not changed here") from None


def _write(change: Change) -> None:
    """Write the new content in one step (a new file renamed over the old): a crash leaves the old file or the new,
    never half of one. The file keeps its permissions; a new one gets the usual ones (the umask applied by open)."""
    change.path.parent.mkdir(parents=True, exist_ok=True)
    temporary = change.path.with_name(f".{change.path.name}.{uuid.uuid4().hex[:12]}.precis")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(change.after)
        if change.before is not None:
            os.chmod(temporary, stat.S_IMODE(change.path.stat().st_mode))
        os.replace(temporary, change.path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
