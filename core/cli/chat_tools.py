"""`precis chat --workspace DIR --allow … --mcp NAME`: the model calls tools in the terminal, through the chat core's
loop (core/chat/tool_loop.py, the window's too); each call that writes or runs is asked about, y/n, at a terminal, and
denied when the input is piped."""

from __future__ import annotations

import select
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from ..chat.tool_loop import ALLOW_IN_CHAT, ALLOW_ONCE, DENY, Ask, Decision, Step
from ..storage.paths import data_dir as data_folder
from ..summary.tool_output import one_line
from ..tools.mcp_config import MCP_CONFIG_NAME, read_mcp_config
from ..tools.mcp_servers import RUNNING, START_SECONDS, STARTING, McpServers
from ..tools.toolbox import Toolbox
from ..tools.workspace import Workspace

# --allow: ask before every call, before those that write or run (the default), or never.
ALLOW_CHOICES = ("ask", "read", "all")
# What the model is told of a call that needed asking in a chat whose input is not a terminal.
NO_ONE_TO_ASK = ("no one at a terminal to ask (the chat's input is piped); `precis chat --allow all` runs such calls, "
                 "as do the tools allowed in this chat")
START_NOTICE_SECONDS = 1.0  # a start slower than this is said while it is waited for
START_SETTLE_SECONDS = 5.0  # past the start limit, for a server's own limit (counted from its start) to end it


@contextmanager
def terminal_toolbox(workspace: str | None, mcp: Sequence[str], data_dir: str | None, err: TextIO,
                     start_seconds: float = START_SECONDS) -> Iterator[Toolbox | None]:
    """The tools of this run: the workspace's, and the named servers of mcp.json (started here, stopped at the
    end); None without either. ValueError names a folder or server that is not there."""
    if workspace is None and not mcp:
        yield None
        return
    folder = Workspace(workspace) if workspace is not None else None
    servers = None
    if mcp:
        path = data_folder(data_dir) / MCP_CONFIG_NAME
        configs = {config.name: config for config in read_mcp_config(path)}
        missing = [name for name in mcp if name not in configs]
        if missing:
            raise ValueError(f"no MCP server {', '.join(map(repr, missing))} in {path} "
                             f"(it names: {', '.join(configs) or 'none'})")
        servers = McpServers([configs[name] for name in mcp], start_seconds)
        servers.start()
        if not servers.wait_started(START_NOTICE_SECONDS):  # say what the wait is for: it may be the whole limit
            slow = [repr(status.name) for status in servers.statuses() if status.state == STARTING]
            print(f"[precis: waiting for MCP server{'s' if len(slow) > 1 else ''} {', '.join(slow)} to start (up to "
                  f"{start_seconds:g} s)]", file=err, flush=True)
            servers.wait_started(start_seconds + START_SETTLE_SECONDS)  # its own limit, counted from its start, ends it
        for status in servers.statuses():
            if status.state != RUNNING:  # the chat goes on without it
                why = status.detail or f"still {status.state} after {start_seconds:g} s"
                print(f"[precis: MCP server {status.name!r} did not start: {why}]", file=err)
    try:
        yield Toolbox(folder, servers)
    finally:
        if servers is not None:
            servers.close()


def terminal_ask(toolbox: Toolbox, stdin: TextIO, out: TextIO, stopped: Callable[[], bool]) -> Ask:
    """Ask y/n on the terminal `stdin` before a call that writes or runs, in the consent card's words, showing what
    it would do. `stopped`: whether the user stopped the answer meanwhile (Ctrl-C), which denies the call."""

    def ask(call, preview: str) -> Decision:
        out.write(f"\n[{toolbox.question(call)}]\n{preview}\n"
                  "Allow it? y: this once, a: always in this chat, n: no [y/a/N] ")
        out.flush()
        answer = _typed_line(stdin, stopped).strip().lower()
        if stopped():  # no Enter ended the question's line: what follows (the step denied) starts a line of its own
            out.write("\n")
        return ALLOW_ONCE if answer in ("y", "yes") else ALLOW_IN_CHAT if answer in ("a", "always") else DENY

    return ask


def unattended_ask(toolbox: Toolbox, out: TextIO) -> Ask:
    """Input that is not a terminal (piped, a file) holds messages, never answers: a scripted "y" or "yes please…"
    meant as the next message approved a call the script never saw. Each call that would be asked about is shown on
    `out` and denied (the step line and the model both say why: NO_ONE_TO_ASK)."""

    def deny(call, preview: str) -> Decision:
        print(f"\n[{toolbox.question(call)}]\n{preview}", file=out, flush=True)
        return DENY

    return deny


def _typed_line(stdin: TextIO, stopped: Callable[[], bool]) -> str:
    """The line typed at the terminal `stdin`, or "" once `stopped`. It is watched in slices: Ctrl-C stops the answer
    on the main thread while this one waits, and the question must end then, not at the next Enter. (A terminal hands
    over one line a read, so nothing typed waits unseen in stdin's buffer.)"""
    while not select.select([stdin], [], [], 0.1)[0]:
        if stopped():
            return ""
    return stdin.readline()


def step_line(step: Step) -> str:
    """A step as the terminal shows it: its one-line summary (as old outputs shrink to) and its time."""
    return f"{one_line(step.call, step.result)} {step.outcome.seconds:.1f} s"
