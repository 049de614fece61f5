"""What the centre shows before a chat has any message: what Precis is and how to start."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QSizePolicy, QWidget

from . import theme

MAX_WIDTH = 560

# (what to do, what it does)
HINTS = (
    ("Type a message below and press Enter", "a chat is created and titled from it"),
    ("/run CMD", "runs a shell command (only when you send it) and adds its output and exit code"),
    ("/grep PATTERN [PATH]", "adds a search result"),
    ("Attach… or drop files on the message box", "adds files as read_file tool output"),
    ("Settings → This chat → Workspace folder, or Settings → Tools", "lets the model read files, run commands "
     "(asking you first) and call MCP servers; /use TOOL MESSAGE makes it call one"),
    ("Import… (Ctrl+I)", "opens a transcript: interchange JSONL, OpenAI chat JSON or a Claude Code session"),
    ("/summarize, /undo-summary, /context, /history, /pin", "act on the context; type / alone for the list"),
)


def welcome_html(provider_name: str, model: str) -> str:
    if provider_name == "local":
        where = (f"It runs offline on the embedded model <b>{escape(model)}</b>: nothing leaves this computer. "
                 "Hosted providers can be chosen in File → Settings.")
    else:
        where = (f"Replies come from <b>{escape(provider_name)}</b> ({escape(model)}); "
                 "the embedded offline model can be chosen again in File → Settings.")
    items = "".join(f"<li><b>{escape(action)}</b> — {escape(effect)}</li>" for action, effect in HINTS)
    return (
        f"<h2 style='color:{theme.current.text}'>Precis</h2>"
        "<p>A chat that does not run out of context. When a conversation nears the model's window, older messages "
        "are summarized; the originals are kept, and the inspector on the right shows exactly what the model "
        "sees.</p>"
        f"<p>{where}</p>"
        f"<p style='color:{theme.current.muted}'>To start:</p><ul>{items}</ul>"
    )


class WelcomePanel(QScrollArea):
    """A readable column in the middle of the empty centre. It scrolls when the window is short: as the centre's page,
    its height was the least the centre could have, and cards shown above the message box grew the window."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("welcome")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        column = QWidget()
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setMaximumWidth(MAX_WIDTH)
        self.label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        layout = QHBoxLayout(column)
        layout.setContentsMargins(32, 24, 32, 24)
        layout.addWidget(self.label, 0, Qt.AlignmentFlag.AlignCenter)
        self.setWidget(column)

    def set_provider(self, provider_name: str, model: str) -> None:
        self.label.setText(welcome_html(provider_name, model))
