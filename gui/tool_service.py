"""The window's tools: the MCP servers of mcp.json (in the data folder), started in the background when the window
opens and stopped when it closes, and each chat's toolbox (its workspace folder, the servers' tools, what Settings →
Tools switched off)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from ..core.settings import TOOLS_KEY, ChatSettings, ToolSettings
from ..core.storage.store import Store
from ..core.tools.mcp_config import MCP_CONFIG_NAME, McpConfigError, read_mcp_config, write_mcp_config
from ..core.tools.mcp_servers import McpServers, ServerStatus
from ..core.tools.toolbox import Toolbox
from ..core.tools.workspace import Workspace

log = logging.getLogger("precis.gui")


class ToolService:
    """`problem`: why the servers are not running (mcp.json cannot be read), "" when they are (or there are none).

    start() and stop() may be called from a worker thread (Settings → Tools restarts the servers off the GUI thread:
    stopping them takes seconds); one at a time, and nothing starts once the window has stopped them for good."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.config_path = Path(store.path).parent / MCP_CONFIG_NAME
        self.servers: McpServers | None = None
        self.problem = ""
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        """(Re)start the servers mcp.json names; returns once the old ones are stopped (the new ones start on their
        own thread)."""
        with self._lock:
            if self._stopped:
                return
            self._stop_servers()
            try:
                configs = read_mcp_config(self.config_path)
            except McpConfigError as exc:
                self.problem = str(exc)
                log.warning("MCP servers not started: %s", exc)
                return
            self.problem = ""
            if configs:
                servers = McpServers(configs)
                servers.start()
                self.servers = servers

    def save_config(self, text: str) -> None:
        """Write mcp.json (raises McpConfigError, writing nothing, if `text` is not a valid one), then restart the
        servers on it."""
        write_mcp_config(self.config_path, text)
        self.start()

    def config_text(self) -> str:
        """mcp.json as it is written ("" when there is none yet)."""
        try:
            return self.config_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def statuses(self) -> list[ServerStatus]:
        servers = self.servers
        return servers.statuses() if servers is not None else []

    def stop(self) -> None:
        """Stop the servers for good (the window closes)."""
        with self._lock:
            self._stopped = True
            self._stop_servers()

    def _stop_servers(self) -> None:
        if self.servers is not None:
            servers, self.servers = self.servers, None
            servers.close()

    def settings(self) -> ToolSettings:
        return ToolSettings.model_validate(self.store.get_setting(TOOLS_KEY) or {})

    def toolbox_for(self, chat: ChatSettings) -> Toolbox | None:
        """The chat's tools: its workspace's (when it names a folder) and the running servers'; None without any.
        A workspace folder that is not there raises ToolInputError, naming it."""
        workspace = Workspace(chat.workspace) if chat.workspace.strip() else None
        servers = self.servers
        if workspace is None and servers is None:
            return None
        return Toolbox(workspace, servers, disabled=self.settings().disabled)
