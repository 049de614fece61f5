"""MCP servers, through the official SDK (`mcp`), for callers that are not async: the SDK runs in a thread of its own
with its own asyncio loop; the window's worker threads and the terminal call in and wait.

Servers start in the background (start() returns at once) and each is reported on its own: starting, running (its
tools listed), failed (why, with the end of what it wrote to stderr), exited (it ended or was killed while running)
or stopped (closed by Precis). One that fails, hangs at `initialize` or dies mid-call does not hold up the others.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.counted import counted
from ..model.tools import ToolOutcome, ToolSpec
from ..providers.base import CancelToken
from .mcp_config import ServerConfig

# The SDK (about half a second to import) is imported where a server is started or answers: every `precis` command
# and the window's start imported it, for the few chats that use MCP.
if TYPE_CHECKING:
    import anyio
    import mcp_types
    from mcp import ClientSession

STARTING, RUNNING, FAILED, EXITED, STOPPED = "starting", "running", "failed", "exited", "stopped"
START_SECONDS = 30.0  # from starting a server to its tools listed
CALL_SECONDS = 120.0
STDERR_TAIL_CHARS = 1500  # of what a server wrote to stderr, the end shown with its failure
CLOSE_SECONDS = 10.0  # for all servers to stop (the SDK gives each 2 s to exit, then 2 s after SIGTERM)
TOOL_PAGES = 50  # of a tools/list that goes on page after page
EXIT_CODE_SECONDS = 1.0  # for a server whose output ended to be seen to exit, and its code read
NEWS_DETAIL_CHARS = 240  # of why a server failed, in the window's status bar (Settings → Tools has all of it)


@dataclass(frozen=True)
class ServerStatus:
    """Where a server is: its state, why it failed or ended (`detail`), its tools as the server names them (source:
    the server's name), the seconds from its start to its tools listed, when that was (`running_since`, a Unix
    time), and when its start began (`starting_since`, a time.monotonic())."""

    name: str
    state: str
    detail: str = ""
    tools: tuple[ToolSpec, ...] = ()
    seconds: float | None = None
    running_since: float | None = None
    starting_since: float | None = None


class McpServers:
    """The configured servers, started in a background thread; close() (or leaving a `with`) stops them all."""

    def __init__(self, servers: Sequence[ServerConfig], start_seconds: float = START_SECONDS) -> None:
        self.configs = {server.name: server for server in servers}
        self.start_seconds = start_seconds
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-servers", daemon=True)
        self._changed = threading.Condition()
        self._statuses = {name: ServerStatus(name, STARTING) for name in self.configs}
        self._sessions: dict[str, ClientSession] = {}
        self._processes: dict[str, Any] = {}  # name: its process (anyio's), for its exit code
        self._stoppers: dict[str, Any] = {}  # name: what ends its serving, called on the loop
        # name: the token of its latest start; a restarted server's old serving, still ending, changes nothing
        self._starts: dict[str, object] = {}
        self._serving: list[concurrent.futures.Future] = []
        self._stderr_folder = Path(tempfile.mkdtemp(suffix="-precis-mcp"))
        self._closing = False

    def __enter__(self) -> McpServers:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start every server; returns at once."""
        self._thread.start()
        for name in self.configs:
            self._serve_anew(name)

    def statuses(self) -> list[ServerStatus]:
        with self._changed:
            return list(self._statuses.values())

    def status(self, name: str) -> ServerStatus:
        with self._changed:
            return self._statuses[name]

    def wait_started(self, timeout: float) -> bool:
        """Wait until no server is starting (each running, failed or ended); False if some still are at `timeout`."""
        with self._changed:
            return self._changed.wait_for(lambda: all(s.state != STARTING for s in self._statuses.values()), timeout)

    def call(self, server: str, tool: str, arguments: dict[str, Any], timeout: float = CALL_SECONDS,
             cancel: CancelToken | None = None) -> ToolOutcome:
        """Call a tool of a running server and wait, up to `timeout` seconds or a cancel; every failure (the server
        not running, an error it answers, the server dying) is an outcome that says so, not an exception."""
        started = time.monotonic()
        with self._changed:
            session = self._sessions.get(server)
            status = self._statuses.get(server)
        if session is None:
            why = f"{status.state}{': ' + status.detail if status and status.detail else ''}" if status else "not configured"
            return ToolOutcome(f"the MCP server {server!r} is not running ({why})", ok=False)
        future = asyncio.run_coroutine_threadsafe(self._call(server, session, tool, arguments, timeout), self._loop)
        if cancel is not None:
            cancel.on_cancel(future.cancel)
        try:
            outcome = future.result(timeout + 5)  # the SDK's own time limit ends it first
        except concurrent.futures.CancelledError:
            outcome = ToolOutcome(f"[cancelled: the call to {tool} on {server!r} was stopped]", ok=False, cut=True)
        except concurrent.futures.TimeoutError:
            future.cancel()
            outcome = ToolOutcome(f"[timed out after {timeout:g} s: {server!r} did not answer {tool}]", ok=False,
                                  cut=True)
        return replace(outcome, seconds=time.monotonic() - started)

    def restart(self, name: str) -> bool:
        """Start again a server that failed, exited or was stopped (its tools listed anew, its old stderr gone);
        returns at once. False when it is starting or running, or Precis is closing."""
        with self._changed:
            if self._closing or self._statuses[name].state in (STARTING, RUNNING):
                return False
            self._stderr_path(name).unlink(missing_ok=True)
            self._serve_anew(name)
        return True

    def _serve_anew(self, name: str) -> None:
        start = object()
        with self._changed:
            self._starts[name] = start
            self._statuses[name] = ServerStatus(name, STARTING, starting_since=time.monotonic())
            self._changed.notify_all()
        self._serving.append(asyncio.run_coroutine_threadsafe(self._serve(self.configs[name], start), self._loop))

    def close(self) -> None:
        """Stop every server (stdin closed, then the SDK ends its process group) and the thread."""
        if not self._thread.is_alive():
            shutil.rmtree(self._stderr_folder, ignore_errors=True)
            return
        with self._changed:
            self._closing = True
            stoppers = list(self._stoppers.values())
        for stop in stoppers:
            self._loop.call_soon_threadsafe(stop)
        concurrent.futures.wait(self._serving, CLOSE_SECONDS)
        for future in self._serving:
            future.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_SECONDS)
        if not self._loop.is_running():
            self._loop.close()
        shutil.rmtree(self._stderr_folder, ignore_errors=True)

    def _set(self, name: str, state: str, **changes: Any) -> None:
        with self._changed:
            if self._statuses[name].state in (FAILED, EXITED) and state in (EXITED, STOPPED):
                return  # the first reason stands
            if self._closing and state == EXITED:
                state, changes["detail"] = STOPPED, ""
            self._statuses[name] = replace(self._statuses[name], state=state, **changes)
            self._changed.notify_all()

    def _stderr_tail(self, name: str) -> str:
        try:
            with open(self._stderr_path(name), "rb") as file:
                file.seek(0, 2)
                file.seek(max(0, file.tell() - STDERR_TAIL_CHARS))
                tail = file.read().decode("utf-8", errors="replace").strip()
        except OSError:
            return ""
        return f"; its stderr ends: {tail}" if tail else ""

    def _stderr_path(self, name: str) -> Path:
        return self._stderr_folder / f"{list(self.configs).index(name)}.log"  # a server's name may not fit a file's

    @asynccontextmanager
    async def _connect(self, config: ServerConfig) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's transport: the command started with only its entry's environment, or the HTTP endpoint."""
        from mcp import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        if config.url is not None:
            async with streamable_http_client(config.url) as streams:
                yield streams
            return
        parameters = StdioServerParameters(command=config.command, args=list(config.args), env=config.env,
                                           cwd=config.cwd)
        # Appended to, never read through this handle: its offset is the server's.
        with open(self._stderr_path(config.name), "a", encoding="utf-8") as errlog:
            client = stdio_client(parameters, errlog=errlog)
            async with client as streams:
                # The SDK keeps the process to itself; its exit code says why a server ended ("Connection closed"
                # alone did not). Read from the suspended generator's frame: None if a later SDK names it otherwise.
                self._processes[config.name] = client.gen.ag_frame.f_locals.get("process")  # type: ignore[attr-defined]
                yield streams

    async def _serve(self, config: ServerConfig, start: object) -> None:
        """Start one server, list its tools, keep its session until it ends or Precis closes. Once restarted
        (`start` no longer its latest), how this serving ends is no longer news."""
        import anyio
        from mcp import ClientSession
        name = config.name
        began = time.monotonic()
        wake = asyncio.Event()
        start_scope = anyio.CancelScope()

        def stop() -> None:
            start_scope.cancel()
            wake.set()

        with self._changed:
            if self._closing:
                return
            self._stoppers[name] = stop
        try:
            async with self._connect(config) as (read, write):
                # The server's messages pass through here so that its end (EOF: it exited or was killed) is seen
                # even while no call is waiting.
                to_session, session_read = anyio.create_memory_object_stream[Any](0)
                async with anyio.create_task_group() as group:
                    group.start_soon(_forward, read, to_session, wake)
                    try:
                        async with ClientSession(session_read, write) as session:
                            await self._session(name, session, start_scope, wake, began)
                    finally:
                        group.cancel_scope.cancel()  # the forwarder, so the SDK can stop the server
        except Exception as exc:  # noqa: BLE001 - whatever a server or its command does, it is reported, not raised
            if self._starts[name] is start:
                self._set(name, FAILED, detail=f"{_reason(exc)}{self._stderr_tail(name)}")
        finally:
            with self._changed:
                latest = self._starts[name] is start
                if latest:
                    self._sessions.pop(name, None)
            if latest:
                self._set(name, STOPPED)

    async def _session(self, name: str, session: ClientSession, start_scope: anyio.CancelScope, wake: asyncio.Event,
                       began: float) -> None:
        """Initialize and list the tools within the time limit, then serve calls until woken: by the server's end
        or by close(). A failure is reported here, at once; the SDK's stopping of the server takes seconds more."""
        import anyio
        try:
            with start_scope, anyio.fail_after(self.start_seconds):
                await session.initialize()
                tools = await _list_tools(name, session)
        except TimeoutError:
            self._set(name, FAILED, detail=f"no answer to initialize within {self.start_seconds:g} s"
                                           f"{self._stderr_tail(name)}")
            return
        except Exception as exc:  # noqa: BLE001 - reported, as in _serve
            why = _reason(exc)
            if _connection_closed(exc):
                why = f"the server {_ending(await self._exit_code(name))} before it was ready"
            self._set(name, FAILED, detail=f"{why}{self._stderr_tail(name)}")
            return
        if start_scope.cancelled_caught:
            return
        with self._changed:
            self._sessions[name] = session
        self._set(name, RUNNING, tools=tools, seconds=time.monotonic() - began, running_since=time.time())
        await wake.wait()
        with self._changed:
            self._sessions.pop(name, None)
            closing = self._closing
        if not closing:  # it ended by itself
            self._set(name, EXITED, detail=f"the server {_ending(await self._exit_code(name))}"
                                           f"{self._stderr_tail(name)}")

    async def _call(self, server: str, session: ClientSession, tool: str, arguments: dict[str, Any],
                    timeout: float) -> ToolOutcome:
        import mcp_types
        from mcp import MCPError
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                return ToolOutcome(f"[timed out after {timeout:g} s: {server!r} did not answer {tool}]", ok=False,
                                   cut=True)
            if exc.code == mcp_types.CONNECTION_CLOSED:
                return ToolOutcome(f"the MCP server {server!r} ended during the call to {tool} (it "
                                   f"{_ending(await self._exit_code(server))}){self._stderr_tail(server)}", ok=False)
            return ToolOutcome(f"{server!r} refused {tool}: {exc.error.message}", ok=False)
        except Exception as exc:  # noqa: BLE001 - an answer the SDK cannot read is the server's fault: reported
            return ToolOutcome(f"{server!r} gave {tool} an answer that cannot be read: {_reason(exc)}", ok=False)
        if not isinstance(result, mcp_types.CallToolResult):
            return ToolOutcome(f"{server!r} asked for input during {tool}, which Precis does not give", ok=False)
        return ToolOutcome(result_text(result), ok=not result.is_error)


    async def _exit_code(self, name: str) -> int | None:
        """The exit code of a server whose output has ended (a signal's as its negative), waited for a little; None
        when it is still running, or not known (a server over HTTP)."""
        import anyio
        process = self._processes.get(name)
        if process is None:
            return None
        with anyio.move_on_after(EXIT_CODE_SECONDS):
            while process.returncode is None:
                await anyio.sleep(0.01)
        return process.returncode


def _ending(code: int | None) -> str:
    """How a server ended, from its exit code: "exited with code 3", "was killed (SIGKILL)"."""
    if code is None:
        return "exited or was killed"
    if code < 0:
        try:
            return f"was killed ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed (signal {-code})"
    return f"exited with code {code}"


def _connection_closed(exc: BaseException) -> bool:
    import mcp_types
    from mcp import MCPError
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED


def server_news(told: Mapping[str, str], statuses: Sequence[ServerStatus],
                where: str = "Settings → Tools shows them") -> str:
    """One sentence for the servers that failed or ended since the user was last told (`told`: each server's state
    then), naming each and why, then `where` (how to see them and start them again); "" when none did. The window
    and the terminal chat say it wherever the user is: a server's failure otherwise showed only in Settings → Tools,
    and the chat went on without its tools unexplained."""
    news = [f"{status.name!r} {status.state}: {_clipped(status.detail or 'no reason given')}" for status in statuses
            if status.state in (FAILED, EXITED) and told.get(status.name) != status.state]
    if not news:
        return ""
    return f"MCP server{'s' if len(news) > 1 else ''} {'; '.join(news)} ({where})"


def state_words(status: ServerStatus, start_seconds: float) -> str:
    """A server's state as Settings → Tools and the terminal chat's /mcp say it; why it failed or ended is shown
    under it. A start counts its seconds against its limit (`start_seconds`): a server that hangs said "starting…"
    alone for the whole limit, the user not told how long it would be."""
    if status.state == RUNNING:
        since = time.strftime(" since %H:%M:%S", time.localtime(status.running_since)) if status.running_since else ""
        took = f" (started in {status.seconds:.1f} s)" if status.seconds is not None else ""
        return f"running{since}{took}, {counted(len(status.tools), 'tool')}"
    if status.state == STARTING:
        if status.starting_since is None:
            return "starting…"
        waited = max(0, int(time.monotonic() - status.starting_since))
        return f"starting… {waited} s (given up at {start_seconds:g} s)"
    return status.state


def _clipped(text: str, chars: int = NEWS_DETAIL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else f"{text[:chars - 1]}…"


async def _forward(read: Any, to_session: Any, ended: asyncio.Event) -> None:
    """Pass the server's messages on; at its end, close the session's side and say so."""
    import anyio
    try:
        async with to_session:
            async for message in read:
                await to_session.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        ended.set()


async def _list_tools(server: str, session: ClientSession) -> tuple[ToolSpec, ...]:
    import mcp_types
    found: list[ToolSpec] = []
    cursor = None
    for _ in range(TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        listing = await session.list_tools(params=params)
        for tool in listing.tools:
            read_only = bool(tool.annotations and tool.annotations.read_only_hint)
            found.append(ToolSpec(tool.name, tool.description or tool.title or "", dict(tool.input_schema),
                                  read_only=read_only, source=server))
        cursor = listing.next_cursor
        if not cursor:
            break
    return tuple(found)


def result_text(result: mcp_types.CallToolResult) -> str:
    """A tool's result as the text the model reads: its text blocks; other blocks named, not shown."""
    import mcp_types
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, (mcp_types.ImageContent, mcp_types.AudioContent)):
            parts.append(f"[{block.type}: {block.mime_type}, about {len(block.data) * 3 // 4:,} bytes; not shown]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            parts.append(getattr(block.resource, "text", None) or f"[resource {block.resource.uri}; not shown]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'unknown')} content; not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    return "\n".join(parts)


def _reason(exc: BaseException) -> str:
    """The first real error inside the task groups' exception groups, in words."""
    from mcp import MCPError
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"the server's connection failed: {exc.error.message}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"could not start: {exc.strerror}: {exc.filename or ''}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

