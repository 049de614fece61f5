"""One toolbox over a chat's tools: the workspace's (when the chat has a workspace folder) and the enabled MCP
servers'. The chat's loop asks it for the specs to send, whether a call can run at all, whether it needs the user's
consent, what the consent card shows, and runs the calls. The model's mistakes (an unknown tool, arguments that are
not JSON or do not fit the schema, a path outside the folder) are outcomes with ok=False saying what to change,
never exceptions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..model.messages import ToolCall
from ..model.tools import ToolOutcome, ToolSpec, unknown_tool
from ..providers.base import CancelToken
from ..settings import RUN_TIMEOUT_SECONDS
from . import editing
from .bounded import MAX_TOOL_OUTPUT_CHARS, ToolInputError, cap_output
from .mcp_servers import CALL_SECONDS, RUNNING, McpServers, ServerStatus
from .workspace import WORKSPACE_TOOLS, Workspace

UNPARSED = "_unparsed"  # the arguments the model sent, when they were not a JSON object
NAME_CHARS = 64  # the longest tool name the providers accept
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class _Entry:
    """A tool as the model names it, and where it runs: the workspace, or a server under the server's own name."""

    spec: ToolSpec
    server: str | None = None
    tool: str = ""


class Toolbox:
    """The tools of one chat. `servers` is the app's running MCP servers; `enabled_servers` those this chat uses
    (None: all)."""

    def __init__(self, workspace: Workspace | None = None, servers: McpServers | None = None,
                 enabled_servers: Collection[str] | None = None, call_seconds: float = CALL_SECONDS,
                 disabled: Collection[str] = ()) -> None:
        self.workspace = workspace
        self.servers = servers
        self.enabled_servers = enabled_servers
        self.call_seconds = call_seconds
        # Switched off in Settings → Tools (ToolSettings.disabled): never offered, a call to one is refused.
        self.disabled = frozenset(disabled)

    def specs(self) -> list[ToolSpec]:
        """The tools to offer the model now: a server's appear once it is running."""
        return [entry.spec for entry in self._entries().values()]

    def needs_consent(self, name: str) -> bool:
        """Whether the user is asked before this call: anything not read-only, and any tool not known."""
        entry = self._entries().get(name)
        return entry is None or not entry.spec.read_only

    def problem(self, call: ToolCall) -> str:
        """Why the call cannot run as sent ('' when it can): an unknown (or switched-off) tool, arguments that are not
        JSON or do not fit the tool's schema, a path outside the workspace folder, a change that cannot be made. Such
        a call is answered with this at once, without asking the user."""
        entry = self._entries().get(call.name)
        problem = self._problem(entry, call)
        if problem or entry is None or entry.server is not None or self.workspace is None:
            return problem
        try:
            if call.name in ("create_file", "edit_file"):
                editing.plan(self.workspace, call.name, call.arguments)
            elif isinstance(path := call.arguments.get("path"), str):
                self.workspace.resolve(call.name, path)
        except (ToolInputError, OSError) as exc:
            return str(exc)
        return ""

    def question(self, call: ToolCall) -> str:
        """What the user is asked before the call, in the window and the terminal alike: "The model wants to replace
        notes.txt (3 lines), in /folder." (create_file over a file that is there replaces it whole), "… create
        notes.txt (3 lines), …", else "… run TOOL, …", ending "from the MCP server 'NAME'." for a server's tool."""
        entry = self._entries()[call.name]
        if entry.server:
            where = f"from the MCP server {entry.server!r}"
        else:
            assert self.workspace is not None  # a tool not from a server is the workspace's
            where = f"in {self.workspace.root}"
        return f"The model wants to {self._intent(entry, call)}, {where}."

    def _intent(self, entry: _Entry, call: ToolCall) -> str:
        if call.name == "create_file" and self.workspace is not None and entry.server is None:
            try:
                change = editing.plan(self.workspace, call.name, call.arguments)
            except (ToolInputError, OSError):  # the file changed since `problem` looked: the preview says how
                return f"run {call.name}"
            lines = len(change.after.splitlines())
            verb = "create" if change.before is None else "replace"
            return f"{verb} {change.shown} ({lines} line{'' if lines == 1 else 's'})"
        return f"run {call.name}"

    def preview(self, call: ToolCall) -> str:
        """What the consent card shows for a call that can run (see `problem`): the command for execute_bash, the
        diff for create_file and edit_file (made without writing), else the tool and its arguments."""
        entry = self._entries()[call.name]
        if entry.server is None and self.workspace is not None:
            if call.name == "execute_bash":
                timeout = call.arguments.get("timeout", RUN_TIMEOUT_SECONDS)
                limit = f"; stopped after {timeout:g} s, not the usual {RUN_TIMEOUT_SECONDS:g}" \
                    if timeout != RUN_TIMEOUT_SECONDS else ""
                return f"$ {call.arguments['command']}\n(in {self.workspace.root}{limit})"
            if call.name in ("create_file", "edit_file"):
                try:
                    change = editing.plan(self.workspace, call.name, call.arguments)
                except (ToolInputError, OSError) as exc:  # the file changed since `problem` looked
                    return str(exc)
                return cap_output(change.diff() or f"{change.shown}: no change")
        server = f"{entry.server}: " if entry.server else ""
        arguments = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
        return cap_output(f"{server}{entry.tool or call.name}({arguments})")

    def run(self, call: ToolCall, cancel: CancelToken | None = None) -> ToolOutcome:
        """Run one call; every result, failures included, is an outcome for the model to read."""
        started = time.monotonic()
        entry = self._entries().get(call.name)
        problem = self._problem(entry, call)
        if problem:
            return ToolOutcome(problem, ok=False)
        assert entry is not None
        if entry.server is not None and self.servers is not None:
            outcome = self.servers.call(entry.server, entry.tool, call.arguments, self.call_seconds, cancel)
        else:
            outcome = self._run_workspace(call, cancel)
        capped = cap_output(outcome.output)
        return replace(outcome, output=capped, seconds=time.monotonic() - started,
                       cut=outcome.cut or len(outcome.output) > MAX_TOOL_OUTPUT_CHARS)

    def _run_workspace(self, call: ToolCall, cancel: CancelToken | None) -> ToolOutcome:
        assert self.workspace is not None
        try:
            if call.name in ("create_file", "edit_file"):
                return editing.apply(self.workspace, call.name, call.arguments)
            return self.workspace.run(call.name, call.arguments, cancel)
        except (ToolInputError, OSError, UnicodeError) as exc:
            return ToolOutcome(str(exc), ok=False)

    def _problem(self, entry: _Entry | None, call: ToolCall) -> str:
        """Why no tool could take the call: an unknown tool, arguments that are not JSON or do not fit the tool's
        schema ('' when they do)."""
        if entry is None:
            known = ", ".join(self._entries()) or "none"
            return f"{self._gone(call.name) or f'there is no tool called {call.name!r}'}; the tools are: {known}"
        if UNPARSED in call.arguments:
            raw = str(call.arguments[UNPARSED])
            shown = raw if len(raw) <= 300 else f"{raw[:300]}..."
            return (f"the arguments for {call.name} were not valid JSON: {shown}\nsend them again as one JSON object "
                    "that fits the tool's schema")
        try:
            errors = sorted(Draft202012Validator(entry.spec.parameters).iter_errors(call.arguments),
                            key=lambda error: list(error.path))
        except SchemaError:
            return ""  # a server's own schema that is not valid: the server judges the arguments
        if not errors:
            return ""
        reasons = "; ".join(f"{'/'.join(map(str, error.path)) or 'arguments'}: {error.message}" for error in errors[:5])
        return f"bad arguments for {call.name}: {reasons}"

    def unknown(self, name: str) -> str | None:
        """Why a call of `name` cannot be asked for (/use): its server failed or ended (see gone_server), or no tool
        has that name; None when one does."""
        if name in self._entries():
            return None
        return self._gone(name) or unknown_tool(name, self.specs())

    def gone_server(self, name: str) -> ServerStatus | None:
        """The server, failed or ended, that had the tool `name` (as the server or the model names it); None for a
        tool no server that is down had."""
        if self.servers is None:
            return None
        return next((status for status in self.servers.statuses() if status.state != RUNNING
                     and any(name in (spec.name, f"{status.name}_{spec.name}") for spec in status.tools)), None)

    def _gone(self, name: str) -> str:
        """Why a tool the model had from a server is no longer offered: the server failed or ended (a crash mid-chat
        read as "there is no tool", with no word of the server or of how to get it back). "" for any other name."""
        status = self.gone_server(name)
        if status is None:
            return ""
        why = f": {status.detail}" if status.detail else ""
        return f"{name} is not available: the MCP server {status.name!r} that has it {status.state}{why}"

    def _entries(self) -> dict[str, _Entry]:
        """Every tool by the name the model calls it. A server's tool whose name is already taken (by a workspace
        tool, another server's, or a name the providers refuse) is called `server_tool` instead."""
        entries: dict[str, _Entry] = {}
        if self.workspace is not None:
            for spec in (*WORKSPACE_TOOLS, *editing.EDITING_TOOLS):
                if spec.name not in self.disabled:
                    entries[spec.name] = _Entry(spec)
        if self.servers is None:
            return entries
        offered = [(status.name, spec) for status in self.servers.statuses()
                   if (self.enabled_servers is None or status.name in self.enabled_servers)
                   and f"{status.name}/*" not in self.disabled
                   for spec in status.tools if status.state == RUNNING and f"{status.name}/{spec.name}" not in self.disabled]
        counts: dict[str, int] = {}
        for _server, spec in offered:
            counts[spec.name] = counts.get(spec.name, 0) + 1
        for server, spec in offered:
            name = spec.name
            if counts[name] > 1 or name in entries or _NOT_IN_A_NAME.search(name) or len(name) > NAME_CHARS:
                name = _unique(_NOT_IN_A_NAME.sub("_", f"{server}_{spec.name}")[:NAME_CHARS], entries)
            entries[name] = _Entry(replace(spec, name=name), server, spec.name)
        return entries


def _unique(name: str, taken: dict[str, Any]) -> str:
    """`name`, or with a number after it when that is taken too."""
    if name not in taken:
        return name
    number = 2
    while f"{name[:NAME_CHARS - 4]}_{number}" in taken:
        number += 1
    return f"{name[:NAME_CHARS - 4]}_{number}"
