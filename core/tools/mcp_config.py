"""mcp.json in the data folder: the MCP servers Precis starts, in Claude desktop's form.

    {"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "Europe/Paris"], "env": {"KEY": "..."}},
        "remote": {"url": "https://example.com/mcp"}}}

A server started by command gets only the environment its entry names, over the MCP SDK's minimal default (PATH,
HOME, USER, LOGNAME, SHELL, TERM): never Precis's own (its API keys included). An error names the file, the server
and the field.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

MCP_CONFIG_NAME = "mcp.json"
EMPTY_CONFIG = '{"mcpServers": {}}\n'


class McpConfigError(ValueError):
    """mcp.json cannot be used; the message names the file, and the server and field when one is at fault."""


@dataclass(frozen=True)
class ServerConfig:
    """One server: a command to start (stdio) or the URL of a streamable HTTP endpoint."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None

    def describe(self) -> str:
        """The command line or URL, as a listing shows it."""
        return self.url or " ".join([self.command or "", *self.args])


def read_mcp_config(path: str | Path) -> list[ServerConfig]:
    """The servers `path` lists, in its order; none when the file does not exist."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot be read: {exc}") from None
    return parse_mcp_text(text, path)


def parse_mcp_text(text: str, path: str | Path) -> list[ServerConfig]:
    """The servers mcp.json's text lists; its JSON mistakes are told by line and column, not by quoting the text
    (which may hold a server's API key). Blank text lists none."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    return parse_mcp_config(data, path)


def write_mcp_config(path: str | Path, text: str) -> list[ServerConfig]:
    """Check `text` and write it as mcp.json, whole: a new file renamed over the old, so a crash leaves one or the
    other, and a mistake (McpConfigError) leaves the file as it was. Blank text means no servers."""
    path = Path(path)
    if not text.strip():
        text = EMPTY_CONFIG
    servers = parse_mcp_text(text, path)
    if not text.endswith("\n"):
        text += "\n"
    # mkstemp's file is the user's alone to read, as it should be: a server's entry may hold its API key.
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return servers


def parse_mcp_config(data: object, path: str | Path) -> list[ServerConfig]:
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise McpConfigError(f'{path}: expected an object with "mcpServers": {{"NAME": {{"command": ...}}}}')
    return [_server(name, entry, path) for name, entry in data["mcpServers"].items()]


def _server(name: str, entry: object, path: str | Path) -> ServerConfig:
    where = f"{path}: server {name!r}"
    if not name.strip():
        raise McpConfigError(f"{path}: a server has an empty name")
    if not isinstance(entry, dict):
        raise McpConfigError(f'{where}: expected an object with "command" or "url"')
    if ("command" in entry) == ("url" in entry):
        raise McpConfigError(f'{where}: give either "command" (a program to start) or "url" (an HTTP endpoint)')
    if "url" in entry:
        url = entry["url"]
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise McpConfigError(f'{where}: "url" must be an http:// or https:// address, not {url!r}')
        return ServerConfig(name, url=url)
    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f'{where}: "command" must be a non-empty string')
    args = entry.get("args", [])
    if not isinstance(args, list):
        raise McpConfigError(f'{where}: "args" must be a list of strings')
    for place, arg in enumerate(args):
        if not isinstance(arg, str):
            raise McpConfigError(f'{where}: "args" item {place + 1} is {json.dumps(arg)}, not a string')
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f'{where}: "cwd" must be a string (a folder)')
    return ServerConfig(name, command=command, args=tuple(args), env=_strings(entry, "env", where), cwd=cwd)


def _strings(entry: dict, key: str, where: str) -> dict[str, str]:
    """The entry's `key`, an object of names to strings (the environment a server gets)."""
    value = entry.get(key, {})
    if not isinstance(value, dict):
        raise McpConfigError(f'{where}: "{key}" must be an object of names to strings')
    for name, text in value.items():
        if not isinstance(text, str):
            raise McpConfigError(f'{where}: "{key}" {name!r} is {json.dumps(text)}, not a string')
    return dict(value)
