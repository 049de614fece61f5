"""Colours and the application style sheet, in one place."""

from __future__ import annotations

WINDOW = "#f6f7f9"
SURFACE = "#ffffff"
BORDER = "#dfe3e8"
TEXT = "#1f2328"
MUTED = "#6b7280"
ACCENT = "#2f6fed"
CODE_BACKGROUND = "#f1f3f5"

USER_BUBBLE = "#e8f0fe"
ASSISTANT_BUBBLE = "#ffffff"
SYSTEM_BUBBLE = "#fff8e1"
TOOL_BUBBLE = "#f3f4f6"
SUMMARY_BUBBLE = "#efe9fb"
ERROR_TEXT = "#c62828"

ROLE_COLOURS = {
    "user": "#2f6fed",
    "assistant": "#0f9d58",
    "system": "#b7791f",
    "tool": "#6b7280",
    "summary": "#7b4bd6",
}

# Gauge segments by kind of context, and the fill colours by level against the policy's ratios.
KIND_COLOURS = {
    "system": "#b7791f",
    "summaries": "#7b4bd6",
    "messages": "#2f6fed",
    "tool_outputs": "#6b7280",
    "reserve_output": "#d0d5dd",
}
LEVEL_OK = "#0f9d58"
LEVEL_NEAR = "#f29900"  # between reset and trigger ratio
LEVEL_OVER = "#d93025"  # at or past the trigger ratio

STYLE_SHEET = f"""
QMainWindow, QDialog {{ background: {WINDOW}; }}
QWidget {{ color: {TEXT}; }}
QListView#chatList {{ background: {WINDOW}; border: none; padding: 4px; }}
QListView#chatList::item {{ padding: 7px 8px; border-radius: 6px; }}
QListView#chatList::item:selected {{ background: #dde7fb; color: {TEXT}; }}
QListView#conversation {{ background: {WINDOW}; border: none; }}
QFrame#sidePanel, QFrame#inspector {{ background: {SURFACE}; border-left: 1px solid {BORDER}; }}
QFrame#sidePanel {{ border-left: none; border-right: 1px solid {BORDER}; background: {WINDOW}; }}
QFrame#composer {{ background: {SURFACE}; border: 1px solid {BORDER}; border-radius: 10px; }}
QPlainTextEdit#composerEdit {{ border: none; background: transparent; }}
QLineEdit, QPlainTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    border: 1px solid {BORDER}; border-radius: 6px; padding: 4px 6px; background: {SURFACE}; }}
QPushButton {{ border: 1px solid {BORDER}; border-radius: 6px; padding: 5px 12px; background: {SURFACE}; }}
QPushButton:hover {{ background: #eef2f7; }}
QPushButton:disabled {{ color: #a0a7b1; }}
QPushButton#primary {{ background: {ACCENT}; color: white; border: none; }}
QPushButton#primary:hover {{ background: #255ed0; }}
QPushButton#primary:disabled {{ background: #b8cbf3; color: #f4f7fd; }}
QPushButton#danger {{ background: #d93025; color: white; border: none; }}
QLabel#heading {{ font-weight: 600; font-size: 11pt; }}
QLabel#muted {{ color: {MUTED}; }}
QLabel#error {{ color: {ERROR_TEXT}; }}
QLabel#notice {{ background: #efe9fb; border: 1px solid #d7c8f5; border-radius: 6px; padding: 6px 10px; }}
QFrame#resultCard {{ background: #f5f1fd; border: 1px solid #d7c8f5; border-radius: 8px; }}
QTableWidget {{ border: 1px solid {BORDER}; border-radius: 6px; gridline-color: {BORDER}; background: {SURFACE}; }}
QHeaderView::section {{ background: {WINDOW}; border: none; border-bottom: 1px solid {BORDER}; padding: 4px; }}
QTabWidget::pane {{ border: 1px solid {BORDER}; border-radius: 6px; }}
QStatusBar {{ color: {MUTED}; }}
"""
