"""The window's look, as saved: the theme and the text size of the conversation and the composer (View → Zoom)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QWidget

from ..core.settings import APPEARANCE_KEY, Appearance
from ..core.storage.store import Store
from . import theme
from .conversation import ConversationView

# The text sizes Ctrl+= and Ctrl+- step through, as a fraction of the system's font size.
TEXT_SIZES = (0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0)


class AppearanceControl:
    """Applies and saves Appearance; `views` and `editors` are what the text size scales."""

    def __init__(self, store: Store, save_setting: Callable[[str, object], object],
                 views: Sequence[ConversationView], editors: Sequence[QWidget]) -> None:
        self._save_setting = save_setting  # off the GUI thread
        self.views = views
        self.editors = editors
        self.value = Appearance.model_validate(store.get_setting(APPEARANCE_KEY, {}) or {})
        self._base_points = QApplication.font().pointSizeF()
        theme.choose(self.value.theme)
        if self.value.text_size != 1.0:
            self._apply_text_size()

    def set_theme(self, choice: theme.ThemeChoice) -> None:
        theme.choose(choice)
        self._save(self.value.model_copy(update={"theme": choice}))
        for view in self.views:  # they cache laid-out text in the old colours
            view.delegate.restyle()

    def zoom(self, steps: int) -> None:
        """One size larger (+1) or smaller (-1) than now, or back to the system's size (0)."""
        now = self.value.text_size
        if steps == 0:
            size = 1.0
        else:
            larger = [size for size in TEXT_SIZES if size > now]
            smaller = [size for size in TEXT_SIZES if size < now]
            size = (larger[0] if larger else now) if steps > 0 else (smaller[-1] if smaller else now)
        if size != now:
            self._save(self.value.model_copy(update={"text_size": size}))
            self._apply_text_size()

    def _save(self, value: Appearance) -> None:
        self.value = value
        self._save_setting(APPEARANCE_KEY, value.model_dump(exclude_defaults=True))

    def _apply_text_size(self) -> None:
        font = QFont(QApplication.font())
        font.setPointSizeF(self._base_points * self.value.text_size)
        for editor in self.editors:
            editor.setFont(font)
        for view in self.views:
            view.setFont(font)
            view.delegate.update_fonts(font)
            view.delegate.restyle()
            view.doItemsLayout()  # every row's height changes with the font
