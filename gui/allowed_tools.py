"""Settings → This chat: the tools allowed in this chat (its consent card's "Allow in this chat"), each with a button
that takes it back, so that tool asks again before each call. Saved with the chat's other settings, at OK."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

NONE_ALLOWED = "None: every tool that writes or runs asks before each call."


class AllowedTools(QWidget):
    """The names allowed, in the order they were allowed; `names()` is what is left."""

    def __init__(self, names: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._names = list(names)
        self.rows: dict[str, QWidget] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.none = QLabel(NONE_ALLOWED)
        self.none.setObjectName("muted")
        self.none.setWordWrap(True)
        layout.addWidget(self.none)
        for name in self._names:
            row = QWidget()
            line = QHBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            line.addWidget(QLabel(name), 1)
            button = QPushButton("Ask again")
            button.setObjectName(f"ask-again-{name}")
            button.setToolTip(f"Take back \"Allow in this chat\": {name} asks before each call again")
            button.clicked.connect(lambda _checked=False, n=name: self.take_back(n))
            line.addWidget(button)
            layout.addWidget(row)
            self.rows[name] = row
        self.none.setVisible(not self._names)

    def take_back(self, name: str) -> None:
        self._names.remove(name)
        self.rows.pop(name).deleteLater()
        self.none.setVisible(not self._names)

    def names(self) -> list[str]:
        return list(self._names)
