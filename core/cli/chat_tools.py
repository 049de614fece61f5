"""`precis chat --workspace DIR --allow … --mcp NAME`: the model calls tools in the terminal, through the chat core's
loop (core/chat/tool_loop.py, the window's too); each call that writes or runs is asked about, y/n, at a terminal, and
denied when the input is piped."""

from __future__ import annotations

import select
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from ..chat.commands import mcp_restart
from ..chat.tool_loop import ALLOW_IN_CHAT, ALLOW_ONCE, DENY, Ask, Decision, Step
from ..storage.paths import data_dir as data_folder
from ..summary.tool_output import one_line
from ..tools.mcp_config import MCP_CONFIG_NAME, read_mcp_config
from ..tools.mcp_servers import RUNNING, START_SECONDS, STARTING, McpServers, server_news, state_words
from ..tools.toolbox import Toolbox
from ..tools.workspace import Workspace
from .store import BAD_INPUT
from .terminal import fitted

# --allow: ask before every call, before those that write or run (the default), or never.
ALLOW_CHOICES = ("ask", "read", "all")
# What the model is told of a call that needed asking in a chat whose input is not a terminal.
NO_ONE_TO_ASK = ("no one at a terminal to ask (the chat's input is piped); `precis chat --allow all` runs such calls, "
                 "as do the tools allowed in this chat")
# Said at the start of a chat with tools whose model is not offered them (ChatSettings.offer_tools).
TOOLS_NOT_OFFERED = ("[precis: the model is not offered the tools with each message (the built-in 135M model calls "
                     "none by itself): /use TOOL MESSAGE calls one, --offer-tools yes offers them]")
# Asked after a call's question and preview; the answer is typed on its line.
ALLOW_QUESTION = "Allow it? y: this once, a: always in this chat, n: no [y/a/N]"
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
        _await_start(servers, list(mcp), err)
    try:
        yield Toolbox(folder, servers)
    finally:
        if servers is not None:
            servers.close()


def _await_start(servers: McpServers, names: list[str], err: TextIO) -> bool:
    """Wait for the servers `names` to start, saying what the wait is for when it is long (it may be the whole start
    limit), and naming each that did not start with why: the chat goes on without it. Whether all are running."""
    if not servers.wait_started(START_NOTICE_SECONDS):
        slow = [repr(status.name) for status in servers.statuses() if status.state == STARTING]
        print(f"[precis: waiting for MCP server{'s' if len(slow) > 1 else ''} {', '.join(slow)} to start (up to "
              f"{servers.start_seconds:g} s)]", file=err, flush=True)
        servers.wait_started(servers.start_seconds + START_SETTLE_SECONDS)  # its own limit, from its start, ends it
    down = [status for status in servers.statuses() if status.name in names and status.state != RUNNING]
    for status in down:
        why = status.detail or f"still {status.state} after {servers.start_seconds:g} s"
        print(f"[precis: MCP server {status.name!r} did not start: {why}; /mcp restart {status.name} tries again]",
              file=err, flush=True)
    return not down


def mcp_command(servers: McpServers | None, argument: str, out: TextIO, err: TextIO) -> int:
    """/mcp: this chat's servers, each with its state as Settings → Tools says it (and why it failed or ended); /mcp
    restart NAME starts one that failed or ended again, through the window's own McpServers.restart, and waits for it
    as the chat's start does. Returns the exit code of the line: 2 for a refusal, 1 for a server that did not start."""
    try:
        name = mcp_restart(argument)
        if servers is None:
            raise ValueError("this chat has no MCP servers: start precis chat with --mcp NAME (a server of "
                             f"{MCP_CONFIG_NAME} in the data folder)")
        if name is not None and name not in servers.configs:
            raise ValueError(f"/mcp restart: this chat has no MCP server {name!r} (it has: {', '.join(servers.configs)})")
    except ValueError as exc:
        print(fitted(str(exc)), file=err)
        return BAD_INPUT
    if name is None:
        for status in servers.statuses():
            print(f"{status.name}: {state_words(status, servers.start_seconds)}", file=out)
            if status.detail:
                print(f"  {status.detail}", file=out)
        return 0
    if not servers.restart(name):
        print(fitted(f"/mcp restart: {name!r} is {servers.status(name).state}; only a server that failed or ended is "
                     "started again"), file=err)
        return BAD_INPUT
    try:
        started = _await_start(servers, [name], err)
    except KeyboardInterrupt:  # the start goes on by itself; /mcp tells when it is done
        print(f"\n[precis: no longer waiting for {name!r}; /mcp shows its state]", file=err)
        return 0
    if started:
        print(f"{name}: {state_words(servers.status(name), servers.start_seconds)}", file=out)
    return 0 if started else 1


class ServerWatch:
    """Says, once each, a server of the chat that failed or ended since the user was last told (a server killed
    mid-chat otherwise showed only as a tool that went missing from the model's replies)."""

    def __init__(self, servers: McpServers) -> None:
        self.servers = servers
        self._told = {status.name: status.state for status in servers.statuses()}  # the start said its failures

    def news(self) -> str:
        statuses = self.servers.statuses()
        news = server_news(self._told, statuses, where="/mcp restart NAME starts it again")
        self._told = {status.name: status.state for status in statuses}
        return f"[precis: {news}]" if news else ""


def terminal_ask(toolbox: Toolbox, stdin: TextIO, out: TextIO, stopped: Callable[[], bool]) -> Ask:
    """Ask y/n on the terminal `stdin` before a call that writes or runs, in the consent card's words, showing what
    it would do. `stopped`: whether the user stopped the answer meanwhile (Ctrl-C), which denies the call."""

    def ask(call, preview: str) -> Decision:
        # Fitted as a whole, then the space the answer is typed after (wrapping drops a line's last space).
        out.write("\n" + fitted(f"[{toolbox.question(call)}]\n{preview}\n{ALLOW_QUESTION}") + " ")
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
        print("\n" + fitted(f"[{toolbox.question(call)}]\n{preview}"), file=out, flush=True)
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
