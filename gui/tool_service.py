"""The window's tools: the MCP servers of mcp.json (in the data folder), started in the background when the window
opens and stopped when it closes, and each chat's toolbox (its workspace folder, the servers' tools, what Settings →
Tools switched off)."""

from __future__ import annotations

import logging
from pathlib import Path

from ..core.settings import TOOLS_KEY, ChatSettings, ToolSettings
from ..core.storage.store import Store
from ..core.tools.mcp_config import MCP_CONFIG_NAME, McpConfigError, read_mcp_config
from ..core.tools.mcp_servers import McpServers
from ..core.tools.toolbox import Toolbox
from ..core.tools.workspace import Workspace

log = logging.getLogger("precis.gui")


class ToolService:
    """`problem`: why the servers are not running (mcp.json cannot be read), "" when they are (or there are none)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.config_path = Path(store.path).parent / MCP_CONFIG_NAME
        self.servers: McpServers | None = None
        self.problem = ""

    def start(self) -> None:
        """(Re)start the servers mcp.json names; returns at once (they start on their own thread)."""
        self.stop()
        try:
            configs = read_mcp_config(self.config_path)
        except McpConfigError as exc:
            self.problem = str(exc)
            log.warning("MCP servers not started: %s", exc)
            return
        self.problem = ""
        if configs:
            self.servers = McpServers(configs)
            self.servers.start()

    def stop(self) -> None:
        if self.servers is not None:
            self.servers.close()
            self.servers = None

    def settings(self) -> ToolSettings:
        return ToolSettings.model_validate(self.store.get_setting(TOOLS_KEY) or {})

    def toolbox_for(self, chat: ChatSettings) -> Toolbox | None:
        """The chat's tools: its workspace's (when it names a folder) and the running servers'; None without any.
        A workspace folder that is not there raises ToolInputError, naming it."""
        workspace = Workspace(chat.workspace) if chat.workspace.strip() else None
        if workspace is None and self.servers is None:
            return None
        return Toolbox(workspace, self.servers, disabled=self.settings().disabled)

