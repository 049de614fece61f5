"""Colours and the application style sheet, in one place: a light and a dark palette.

The app follows the system's colour scheme (Qt 6.5+ style hints) unless the user chose one in View → Theme. Widgets
read `theme.current` when they paint, so a change of scheme repaints in the new colours.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette

from ..core.settings import ThemeChoice


@dataclass(frozen=True)
class Palette:
    dark: bool
    window: str
    surface: str
    border: str
    text: str
    muted: str
    accent: str
    accent_hover: str
    code_background: str
    selection: str
    hover: str
    disabled_text: str
    user_bubble: str
    assistant_bubble: str
    system_bubble: str
    tool_bubble: str
    summary_bubble: str
    card: str
    card_border: str
    gauge_track: str
    error_text: str
    warning_text: str  # a caution short of an error (a draft that will make a summary)
    good_text: str  # all is well (the next prompt well inside its budget)
    on_accent: str  # text on an accent-filled button
    search_hit: str  # the background of a searched word in the conversation
    role_colours: dict[str, str]
    kind_colours: dict[str, str]


LIGHT = Palette(
    dark=False, window="#f6f7f9", surface="#ffffff", border="#dfe3e8", text="#1f2328", muted="#5f6672",
    accent="#255ed0", accent_hover="#1f4fb0", code_background="#f1f3f5", selection="#dde7fb", hover="#eef2f7",
    disabled_text="#80868f", user_bubble="#e8f0fe", assistant_bubble="#ffffff", system_bubble="#fff8e1",
    tool_bubble="#f3f4f6", summary_bubble="#efe9fb", card="#f5f1fd", card_border="#d7c8f5", gauge_track="#eceff3",
    error_text="#c62828", warning_text="#a44b07", good_text="#087443", on_accent="#ffffff", search_hit="#ffe08a",
    # Text colours are at least 4.5:1 against every background they are drawn on (the bubbles, the cards).
    role_colours={"user": "#255ed0", "assistant": "#087443", "system": "#8a5a14", "tool": "#6b7280",
                  "summary": "#7b4bd6"},
    kind_colours={"system": "#b7791f", "tools": "#c2410c", "summaries": "#7b4bd6",
                  "recalled": "#0f9d8a", "messages": "#2f6fed", "tool_outputs": "#6b7280",
                  "reserve_output": "#d0d5dd"},
)

DARK = Palette(
    dark=True, window="#17191c", surface="#202328", border="#353a42", text="#e6e8eb", muted="#9aa3ae",
    accent="#6f9cf7", accent_hover="#8ab0f8", code_background="#2a2e35", selection="#2c3e63", hover="#2a2e35",
    disabled_text="#7d8590", user_bubble="#1f2f4d", assistant_bubble="#23272d", system_bubble="#3a3220",
    tool_bubble="#262a30", summary_bubble="#2e2745", card="#2a2440", card_border="#4a3f70", gauge_track="#2f343b",
    error_text="#ff7b72", warning_text="#e3b341", good_text="#4cc38a", on_accent="#17191c", search_hit="#6e5a14",
    role_colours={"user": "#7aa4f7", "assistant": "#4cc38a", "system": "#e0a84a", "tool": "#9aa3ae",
                  "summary": "#b195f0"},
    kind_colours={"system": "#e0a84a", "tools": "#f0883e", "summaries": "#9d7bea",
                  "recalled": "#3cc2ad", "messages": "#5b8ef5", "tool_outputs": "#8b949e",
                  "reserve_output": "#4a515b"},
)

# Gauge fill colours by level against the policy's ratios: the same in both palettes. Not for text: too light on
# white (the amber 2.3:1); text says its level in the palette's good, warning and error colours.
LEVEL_OK = "#0f9d58"
LEVEL_NEAR = "#f29900"  # between reset and trigger ratio
LEVEL_OVER = "#d93025"  # at or past the trigger ratio

# A heading (QLabel#heading) this much larger than the application's text, whatever size that is: a style sheet's
# font-size takes only points or pixels, so the sheet is made again when the application's font changes.
HEADING_SCALE = 1.1

current: Palette = LIGHT
_choice: ThemeChoice = "system"
_installed: QObject | None = None  # what restyles the application when its font changes, once installed


def style_sheet(p: Palette, text: QFont) -> str:
    """The application's style sheet in `p`'s colours, for the application's font `text`."""
    heading = (f"{text.pointSizeF() * HEADING_SCALE:.1f}pt" if text.pointSizeF() > 0
               else f"{round(text.pixelSize() * HEADING_SCALE)}px")
    return f"""
QMainWindow, QDialog {{ background: {p.window}; }}
QWidget {{ color: {p.text}; }}
QMenuBar {{ background: {p.window}; color: {p.text}; }}
QMenuBar::item:selected, QMenu::item:selected {{ background: {p.selection}; color: {p.text}; }}
QMenu {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border}; }}
QListView#chatList {{ background: {p.window}; border: none; padding: 4px; }}
QListView#chatList::item {{ padding: 7px 8px; border-radius: 6px; }}
QListView#chatList::item:selected {{ background: {p.selection}; color: {p.text}; }}
QListView#conversation {{ background: {p.window}; border: none; }}
QFrame#sidePanel, QFrame#inspector {{ background: {p.surface}; border-left: 1px solid {p.border}; }}
QFrame#sidePanel {{ border-left: none; border-right: 1px solid {p.border}; background: {p.window}; }}
QFrame#composer {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 10px; }}
QPlainTextEdit#composerEdit {{ border: none; background: transparent; }}
QLineEdit, QPlainTextEdit, QTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    border: 1px solid {p.border}; border-radius: 6px; padding: 4px 6px; background: {p.surface}; color: {p.text}; }}
QPushButton {{ border: 1px solid {p.border}; border-radius: 6px; padding: 5px 12px; background: {p.surface}; }}
QPushButton:hover {{ background: {p.hover}; }}
QPushButton:disabled {{ color: {p.disabled_text}; }}
QPushButton#primary {{ background: {p.accent}; color: {p.on_accent}; border: none; }}
QPushButton#primary:hover {{ background: {p.accent_hover}; }}
QPushButton#primary:disabled {{ background: {p.hover}; color: {p.disabled_text}; }}
QPushButton#danger {{ background: #d93025; color: white; border: none; }}
QPushButton:focus {{ border: 2px solid {p.accent}; padding: 4px 11px; }}
QPushButton#primary:focus, QPushButton#danger:focus {{ border: 2px solid {p.text}; padding: 3px 10px; }}
QCheckBox, QRadioButton {{ border: 1px solid transparent; border-radius: 4px; padding: 1px 2px; }}
QCheckBox:focus, QRadioButton:focus {{ border-color: {p.accent}; }}
QToolButton:focus {{ border: 2px solid {p.accent}; border-radius: 4px; }}
QLineEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus, QComboBox:focus {{ border-color: {p.accent}; }}
/* Only the editable text boxes: the read-only views (the inspector's of a 100,000-message summary) are ringed by
   focus_ring.py's overlay, which re-polishes nothing. */
QPlainTextEdit[readOnly="false"]:focus, QTextEdit[readOnly="false"]:focus {{ border-color: {p.accent}; }}
QLabel#heading {{ font-weight: 600; font-size: {heading}; }}
QLabel#muted {{ color: {p.muted}; }}
QLabel#error {{ color: {p.error_text}; }}
QLabel#warning {{ color: {p.warning_text}; }}
QLabel#good {{ color: {p.good_text}; }}
QLabel#notice {{ background: {p.card}; border: 1px solid {p.card_border}; border-radius: 6px; padding: 6px 10px; }}
QFrame#resultCard {{ background: {p.card}; border: 1px solid {p.card_border}; border-radius: 8px; }}
QFrame#consentCard {{ background: {p.surface}; border: 2px solid {p.warning_text}; border-radius: 10px; }}
QLabel#consentTitle {{ font-weight: 600; }}
QFrame#suggestionCard {{ background: {p.card}; border: 1px solid {p.card_border}; border-radius: 10px; }}
QLabel#suggestionTitle {{ font-weight: 600; }}
QPlainTextEdit#consentPreview {{ background: {p.tool_bubble}; }}
QTableWidget {{ border: 1px solid {p.border}; border-radius: 6px; gridline-color: {p.border};
    background: {p.surface}; alternate-background-color: {p.window}; }}
QListWidget#recalled {{ border: 1px solid {p.border}; border-radius: 6px; background: {p.surface};
    alternate-background-color: {p.window}; }}
QListWidget#recalled::item {{ padding: 3px 4px; }}
QHeaderView::section {{ background: {p.window}; color: {p.text}; border: none; border-bottom: 1px solid {p.border};
    padding: 4px; }}
QTabWidget::pane {{ border: 1px solid {p.border}; border-radius: 6px; }}
QTabBar::tab {{ background: {p.window}; color: {p.muted}; padding: 5px 10px; border: 1px solid {p.border}; }}
QTabBar::tab:selected {{ background: {p.surface}; color: {p.text}; }}
QTabBar::tab:focus {{ border: 2px solid {p.accent}; padding: 4px 9px; }}
QStatusBar {{ color: {p.muted}; }}
QToolTip {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border}; }}
"""


def style_as(widget, name: str) -> None:
    """Give `widget` the style sheet's rules for `name` (QLabel#error, #warning, ...) now: a new object name alone
    is not looked at until the widget is polished again (setStyleSheet("") does not do it)."""
    widget.setObjectName(name)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


def qt_palette(p: Palette) -> QPalette:
    """The Qt palette matching `p`, so text drawn by Qt itself (documents, native menus) is readable too."""
    palette = QPalette()
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, p.window), (roles.WindowText, p.text), (roles.Base, p.surface),
        (roles.AlternateBase, p.window), (roles.Text, p.text), (roles.Button, p.surface),
        (roles.ButtonText, p.text), (roles.Highlight, p.accent), (roles.HighlightedText, p.on_accent),
        (roles.ToolTipBase, p.surface), (roles.ToolTipText, p.text), (roles.PlaceholderText, p.muted),
        (roles.Link, p.accent),
    ):
        palette.setColor(role, QColor(colour))
    palette.setColor(QPalette.ColorGroup.Disabled, roles.Text, QColor(p.disabled_text))
    palette.setColor(QPalette.ColorGroup.Disabled, roles.ButtonText, QColor(p.disabled_text))
    return palette


class _FontFollower(QObject):
    """Restyles the application when its font changes (a larger system font): the style sheet's sizes follow it."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self.app = app

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        # It sees every event of the application: the cheap test first (an event's type is made a Python enum).
        if watched is self.app and event.type() == QEvent.Type.ApplicationFontChange:
            restyle()
        return False


def install(app) -> None:
    """Style `app` for the scheme in effect and restyle it whenever the system's scheme or the application's font
    changes."""
    global _installed
    if _installed is None:
        app.styleHints().colorSchemeChanged.connect(lambda _scheme: restyle())
        _installed = _FontFollower(app)
        app.installEventFilter(_installed)
    restyle()


def choose(choice: ThemeChoice) -> None:
    """Follow the system (`system`) or force a scheme, and restyle the running application."""
    global _choice
    _choice = choice
    hints = QGuiApplication.styleHints()
    if choice == "system":
        hints.unsetColorScheme()
    else:  # native dialogs follow too, where the platform supports it
        hints.setColorScheme(Qt.ColorScheme.Dark if choice == "dark" else Qt.ColorScheme.Light)
    restyle()


def restyle() -> None:
    """Apply the palette for the scheme in effect to the running application."""
    global current
    if _choice == "system":
        dark = QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark
    else:
        dark = _choice == "dark"
    current = DARK if dark else LIGHT
    app = QGuiApplication.instance()
    app.setPalette(qt_palette(current))
    # Fusion draws a check box's edge in the window colour darkened: on the dark window it vanished.
    indicators = qt_palette(current)
    indicators.setColor(QPalette.ColorRole.Window, QColor(current.muted))
    for widget_class in ("QCheckBox", "QRadioButton"):
        app.setPalette(indicators, widget_class)
    app.setStyleSheet(style_sheet(current, app.font()))
