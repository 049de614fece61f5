"""The window's menus and shortcuts, built from the command registry (core/chat/commands.py), and the theme menu."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMainWindow, QMenu

from ..core.chat import commands
from .appearance import AppearanceControl

Handler = Callable[[str], object]


class Menus:
    """An action per registered command, in its menu, running `handlers[command.name]` ("" as the argument)."""

    def __init__(self, window: QMainWindow, appearance: AppearanceControl, handlers: dict[str, Handler]) -> None:
        self.appearance = appearance
        self.actions: dict[str, QAction] = {}
        menus: dict[str, QMenu] = {}
        for menu_name, registered in commands.menus().items():
            menus[menu_name] = menu = window.menuBar().addMenu("&" + menu_name)
            for command in registered:
                action = QAction(command.title, window)
                action.setShortcut(command.shortcut)
                action.setToolTip(command.help)
                action.triggered.connect(lambda _checked=False, handler=handlers[command.name]: handler(""))
                menu.addAction(action)
                window.addAction(action)  # the shortcut works wherever the focus is
                self.actions[command.name] = action
        self.actions["inspector"].setCheckable(True)
        self.actions["inspector"].setChecked(True)
        self.theme_actions: dict[str, QAction] = {}
        menus["View"].insertMenu(self.actions["search"], self._theme_menu(window))

    def _theme_menu(self, window: QMainWindow) -> QMenu:
        """System / Light / Dark; the choice is saved and applied at once."""
        menu = QMenu("Theme", window)
        chosen = self.appearance.value.theme
        group = QActionGroup(window)
        for choice, text in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
            action = QAction(text, window, checkable=True, checked=choice == chosen)
            action.triggered.connect(lambda _checked, choice=choice: self.appearance.set_theme(choice))
            group.addAction(action)
            menu.addAction(action)
            self.theme_actions[choice] = action
        return menu
