"""Settings → Tools: mcp.json's text, the servers it starts (each with its state and its tools) and a switch for every
tool.

The page acts at once, not at OK: Save checks mcp.json, writes it and restarts the servers; a switch is saved as it
is flipped. Reading mcp.json and the tool settings, writing them and restarting the servers happen off the GUI
thread; the servers' states are read on a timer while the page is shown (statuses() only copies them).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..core.model.counted import counted
from ..core.settings import TOOLS_KEY, ToolSettings
from ..core.tools.editing import EDITING_TOOLS
from ..core.tools.mcp_config import EMPTY_CONFIG, McpConfigError, parse_mcp_text
from ..core.tools.mcp_servers import EXITED, FAILED, ServerStatus, state_words
from ..core.tools.workspace import WORKSPACE_TOOLS
from . import theme
from .store_calls import StoreCalls
from .tool_service import ToolService
from .wording import failure_text
from .workers import Runner

STATUS_MS = 500  # how often the servers' states are read while the page is shown
EDITOR_LINES = 12  # the mcp.json box's height: a server or two in Claude desktop's layout, whole
EXAMPLE = """{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "..."}}
  }
}"""


def _label(text: str = "", name: str = "", wrap: bool = False) -> QLabel:
    label = QLabel(text)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    return label


class ServerBlock(QWidget):
    """One server: its switch (all its tools), its state, why it failed or ended, and a switch per tool."""

    def __init__(self, name: str, on_switch, on_restart) -> None:
        super().__init__()
        self.name = name
        self._on_switch = on_switch
        self.switch = QCheckBox(name)
        self.switch.setToolTip(f"Off: none of {name}'s tools is offered to the model")
        self.switch.toggled.connect(lambda on: self._switched(f"{name}/*", on))
        self.state = _label(name="muted")
        self.detail = _label(name="error", wrap=True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.hide()
        # A server that failed or ended is started again alone: the others (and their calls) go on.
        self.restart = QPushButton("Restart")
        self.restart.setToolTip(f"Start {name} again; the other servers go on")
        self.restart.setAccessibleName(f"Restart {name}")
        self.restart.clicked.connect(lambda: on_restart(name))
        self.restart.hide()
        self.tool_switches: dict[str, QCheckBox] = {}
        self._tools = QVBoxLayout()
        self._tools.setContentsMargins(24, 0, 0, 0)
        self._tools.setSpacing(2)
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.switch)
        head.addWidget(self.state, 1)
        head.addWidget(self.restart)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(2)
        layout.addLayout(head)
        detail_line = QHBoxLayout()
        detail_line.setContentsMargins(24, 0, 0, 0)
        detail_line.addWidget(self.detail)
        layout.addLayout(detail_line)
        layout.addLayout(self._tools)

    def show_status(self, status: ServerStatus, settings: ToolSettings | None, start_seconds: float) -> None:
        self.state.setText(state_words(status, start_seconds))
        self.detail.setText(status.detail)
        self.detail.setVisible(bool(status.detail))
        self.restart.setVisible(status.state in (FAILED, EXITED))
        names = [tool.name for tool in status.tools]
        if names != list(self.tool_switches):
            self._show_tools(status, settings)
        self.show_settings(settings)

    def show_settings(self, settings: ToolSettings | None) -> None:
        """The switches as `settings` has them (all off limits until they are read)."""
        self.switch.setEnabled(settings is not None)
        server_on = settings is None or settings.is_on(f"{self.name}/*")
        _set_quietly(self.switch, server_on)
        for tool, box in self.tool_switches.items():
            _set_quietly(box, settings is None or settings.is_on(f"{self.name}/{tool}"))
            box.setEnabled(settings is not None and server_on)

    def _show_tools(self, status: ServerStatus, settings: ToolSettings | None) -> None:
        while self._tools.count():
            self._tools.takeAt(0).widget().deleteLater()
        self.tool_switches = {}
        for tool in status.tools:
            box = QCheckBox(f"{tool.name}  ({'reads only' if tool.read_only else 'asks before each call'})")
            box.setToolTip(tool.description)
            box.toggled.connect(lambda on, key=f"{self.name}/{tool.name}": self._switched(key, on))
            self.tool_switches[tool.name] = box
            self._tools.addWidget(box)

    def _switched(self, key: str, on: bool) -> None:
        if key.endswith("/*"):
            for box in self.tool_switches.values():
                box.setEnabled(on)
        self._on_switch(key, on)


def _set_quietly(box: QCheckBox, on: bool) -> None:
    """Show a saved value without saving it again."""
    box.blockSignals(True)
    box.setChecked(on)
    box.blockSignals(False)


class ToolsPage(QWidget):
    """Settings → Tools over the window's ToolService; settings are saved through `store_calls`."""

    loaded = Signal()  # mcp.json and the tool settings are shown; the switches work
    settings_saved = Signal()  # a switch's change is in the store
    config_saved = Signal(bool)  # Save's outcome: True, mcp.json written and the servers restarted

    def __init__(self, tools: ToolService, store_calls: StoreCalls, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tools = tools
        self.store_calls = store_calls
        self.settings: ToolSettings | None = None  # None until read from the store
        self._saved_text = ""
        self._restarting = False
        self._runner = Runner(max_threads=1, parent=self)  # one restart at a time, in the order they were asked
        self.server_blocks: dict[str, ServerBlock] = {}

        self.editor = QPlainTextEdit()
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setPlaceholderText(EXAMPLE)
        self.editor.setAccessibleName("mcp.json")
        self.editor.setFixedHeight(self.editor.fontMetrics().lineSpacing() * EDITOR_LINES + 16)
        self.editor.setEnabled(False)
        self.editor.textChanged.connect(self._edited)
        self.save_button = QPushButton("Save and restart servers")
        self.save_button.setToolTip(f"Check the text, write it to {tools.config_path} and restart its servers")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save)
        self.status = _label("Reading mcp.json…", "muted", wrap=True)
        self.error = _label(name="error", wrap=True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        self.no_servers = _label(name="muted", wrap=True)
        self.settings_error = _label(name="error", wrap=True)
        self.settings_error.hide()
        self._servers = QVBoxLayout()
        self._servers.setContentsMargins(0, 0, 0, 0)
        self._servers.setSpacing(0)

        self.workspace_switches: dict[str, QCheckBox] = {}
        workspace_grid = QGridLayout()
        workspace_grid.setContentsMargins(0, 0, 0, 0)
        for place, spec in enumerate((*WORKSPACE_TOOLS, *EDITING_TOOLS)):
            box = QCheckBox(spec.name)
            box.setToolTip(spec.description)
            box.setEnabled(False)
            box.toggled.connect(lambda on, name=spec.name: self._switch(name, on))
            self.workspace_switches[spec.name] = box
            workspace_grid.addWidget(box, place // 3, place % 3)
        self.ask_before_reading = QCheckBox("Ask before reading tools too")
        self.ask_before_reading.setToolTip("On: every tool call waits for your consent, read-only ones included")
        self.ask_before_reading.setEnabled(False)
        self.ask_before_reading.toggled.connect(self._ask_before_reading)

        layout = QVBoxLayout(self)
        layout.addWidget(_label("MCP servers", "heading"))
        layout.addWidget(_label("Paste a Claude desktop or Cursor “mcpServers” block. Save checks it, writes it to "
                                "mcp.json in the data folder and restarts the servers.", "muted", wrap=True))
        self.file = _label(str(tools.config_path), "muted")
        self.file.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.file)
        layout.addWidget(self.editor)
        layout.addWidget(self.error)
        save_line = QHBoxLayout()
        save_line.addWidget(self.save_button)
        save_line.addWidget(self.status, 1)
        layout.addLayout(save_line)
        layout.addWidget(self.no_servers)
        layout.addLayout(self._servers)
        layout.addSpacing(8)
        layout.addWidget(_label("Workspace tools", "heading"))
        layout.addWidget(_label("In the folder a chat names (This chat → Workspace folder).", "muted", wrap=True))
        layout.addLayout(workspace_grid)
        layout.addSpacing(8)
        layout.addWidget(self.ask_before_reading)
        layout.addWidget(_label("Tools that only read run without asking unless this is on; the others always ask.",
                                "muted", wrap=True))
        layout.addWidget(self.settings_error)
        layout.addStretch(1)

        self._timer = QTimer(self)
        self._timer.setInterval(STATUS_MS)
        self._timer.timeout.connect(self.show_servers)
        self.show_servers()
        store_calls.newest("read the tool settings", lambda _store: (tools.config_text(), tools.settings()),
                           self._loaded)

    # ---- reading ----------------------------------------------------------------------------------------------
    def _loaded(self, found: tuple[str, ToolSettings]) -> None:
        text, settings = found
        self.editor.setPlainText(text)
        self._saved_text = self.editor.toPlainText()  # as the box gives it back (its line ends may not be the file's)
        self.editor.setEnabled(True)
        self.save_button.setEnabled(True)
        self.status.setText("")
        self.settings = settings
        self._show_settings()
        self.loaded.emit()

    def _show_settings(self) -> None:
        for name, box in self.workspace_switches.items():
            _set_quietly(box, self.settings.is_on(name))
            box.setEnabled(True)
        _set_quietly(self.ask_before_reading, self.settings.ask_before_reading)
        self.ask_before_reading.setEnabled(True)
        for block in self.server_blocks.values():
            block.show_settings(self.settings)

    def show_servers(self) -> None:
        """Each server of the running set with its state and tools; a new set (after a restart) is laid out anew."""
        if self._restarting:
            return
        servers = self.tools.servers
        statuses = servers.statuses() if servers is not None else []
        if [status.name for status in statuses] != list(self.server_blocks):
            for block in self.server_blocks.values():
                self._servers.removeWidget(block)
                block.deleteLater()
            self.server_blocks = {status.name: ServerBlock(status.name, self._switch, self._restart_server)
                                  for status in statuses}
            for block in self.server_blocks.values():
                self._servers.addWidget(block)
        for status in statuses:
            self.server_blocks[status.name].show_status(status, self.settings, servers.start_seconds)
        if statuses:
            self.no_servers.hide()
        else:
            self.no_servers.setText(self.tools.problem or "No MCP servers: mcp.json names none.")
            theme.style_as(self.no_servers, "error" if self.tools.problem else "muted")
            self.no_servers.show()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.show_servers()
        self._timer.start()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self._timer.stop()
        super().hideEvent(event)

    # ---- mcp.json ---------------------------------------------------------------------------------------------
    @property
    def unsaved(self) -> bool:
        return self.editor.isEnabled() and self.editor.toPlainText() != self._saved_text

    def _edited(self) -> None:
        if not self._restarting:
            self.status.setText("Not saved yet." if self.unsaved else "")

    def save(self) -> bool:
        """Check the text; if it is a valid mcp.json, write it and restart the servers off the GUI thread. False,
        with the mistake shown under the text (naming the server and field), when it is not: nothing is written."""
        text = self.editor.toPlainText()
        try:
            servers = parse_mcp_text(text, self.tools.config_path)
        except McpConfigError as exc:
            self.error.setText(str(exc))
            self.error.show()
            self.status.setText("Not saved.")
            self.config_saved.emit(False)
            return False
        self.error.hide()
        if not text.strip():
            self.editor.setPlainText(EMPTY_CONFIG)
        self._saved_text = self.editor.toPlainText()
        self._restarting = True
        self.save_button.setEnabled(False)
        self.status.setText(f"Saving mcp.json and restarting {counted(len(servers), 'server')}…")
        job = self._runner.submit("save mcp.json", lambda _job: self.tools.save_config(text))
        job.succeeded.connect(lambda _none: self._restarted(None))
        job.failed.connect(self._restarted)
        return True

    def save_pending(self) -> bool:
        """At OK: save the text if it was edited; False (and the mistake shown) if it cannot be."""
        return not self.unsaved or self.save()

    def _restarted(self, failure: BaseException | None) -> None:
        self._restarting = False
        self.save_button.setEnabled(True)
        self.status.setText("Saved." if failure is None else "")
        if failure is not None:
            self.error.setText(f"mcp.json not saved: {failure_text(failure)}")
            self.error.show()
        self.show_servers()
        self.config_saved.emit(failure is None)

    def _restart_server(self, name: str) -> None:
        """Start one failed or ended server again (it returns at once: the server starts on its own thread)."""
        servers = self.tools.servers
        if servers is not None and servers.restart(name):
            self.show_servers()

    # ---- switches ---------------------------------------------------------------------------------------------
    def _switch(self, name: str, on: bool) -> None:
        if self.settings is not None:
            self._save_settings(self.settings.switched(name, on))

    def _ask_before_reading(self, on: bool) -> None:
        if self.settings is not None:
            self._save_settings(self.settings.model_copy(update={"ask_before_reading": on}))

    def _save_settings(self, settings: ToolSettings) -> None:
        """Saved after the writes before it, so the last switch flipped is what the store keeps."""
        self.settings = settings
        value = settings.model_dump()
        self.store_calls.write("save the tool settings", lambda store: store.set_setting(TOOLS_KEY, value),
                               lambda _saved: self._settings_saved(""), self._settings_saved)

    def _settings_saved(self, failure: str) -> None:
        self.settings_error.setText(f"The tool switches were not saved: {failure}" if failure else "")
        self.settings_error.setVisible(bool(failure))
        if not failure:
            self.settings_saved.emit()
