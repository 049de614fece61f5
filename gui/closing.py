"""Closing the window while a reply is not saved whole (a full disk, a read-only file): the user is asked first (Save
again, Copy it, Close anyway), so the reply's text is never lost without a word; and the process ending on a signal
(SIGTERM, Ctrl+C in the terminal that started it) closes the window as its Close does, saving what is under way."""

from __future__ import annotations

import logging
import signal
import socket

from PySide6.QtCore import QObject, QSocketNotifier
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from ..core.chat.unsaved import UnsavedReply
from .controller import ChatController
from .status import StatusLine

log = logging.getLogger("precis.gui")

UNSAVED_BOX = "unsavedReplies"  # the question's object name
SAVE_AGAIN, COPY_IT, CLOSE_ANYWAY = "Save again", "Copy it", "Close anyway"
OPEN_THAT_CHAT = "Open that chat"  # the status bar's button, when a chat left has a reply not saved whole


class CloseGuard(QObject):
    """Whether the window may close now; while a reply is not saved whole, the user is asked and the window closes
    once they have chosen."""

    def __init__(self, window: QWidget, chat: ChatController, status: StatusLine) -> None:
        super().__init__(window)
        self.window, self.chat, self.status = window, chat, status
        self.without_asking = False  # Close anyway was chosen, or the process was told to end
        self.box: QMessageBox | None = None

    def allows_close(self) -> bool:
        unsaved = self.chat.unsaved_replies()
        if not unsaved:
            return True
        if self.without_asking:
            log.warning("closed with %d replies not saved whole: %s", len(unsaved), unsaved[0].why)
            return True
        self.ask(unsaved)
        return False

    def ask(self, unsaved: list[UnsavedReply]) -> None:
        if self.box is None:
            self.box = QMessageBox(QMessageBox.Icon.Warning, "Reply not saved", "", parent=self.window)
            self.box.setObjectName(UNSAVED_BOX)
            self.box.addButton(SAVE_AGAIN, QMessageBox.ButtonRole.AcceptRole)
            self.box.addButton(COPY_IT, QMessageBox.ButtonRole.ActionRole)
            self.box.addButton(CLOSE_ANYWAY, QMessageBox.ButtonRole.DestructiveRole)
            self.box.addButton(QMessageBox.StandardButton.Cancel)
            self.box.buttonClicked.connect(self._chosen)
        replies = "The last reply is" if len(unsaved) == 1 else f"{len(unsaved)} replies are"
        self.box.setText(f"{replies} not saved whole: {unsaved[0].why.rstrip('.')}. The chat holds only the part "
                         "saved before.")
        self.box.setInformativeText("Save again tries once more. Copy it puts the whole text on the clipboard, to "
                                    "paste somewhere safe. Close anyway loses what is not saved.")
        self.box.open()

    def _chosen(self, button: QAbstractButton) -> None:
        unsaved = self.chat.unsaved_replies()
        if button.text() == SAVE_AGAIN:
            self.chat.save_unsaved(lambda left: self.window.close() if not left else self.ask(left))
        elif button.text() == COPY_IT:
            QGuiApplication.clipboard().setText("\n\n".join(reply.text for reply in unsaved))
            self.status.tell("The reply not saved is copied: paste it somewhere safe before closing Precis.", 60_000)
        elif button.text() == CLOSE_ANYWAY:
            self.without_asking = True
            self.window.close()


def close_on_signals(window: QWidget, guard: CloseGuard) -> None:
    """SIGTERM and SIGINT close the window as Close does, without asking (nobody may be there to answer): a reply
    being written is stopped and what arrived is saved, the draft too. Python runs a signal's handler only between
    its own bytecodes, never while Qt's event loop waits, so the signal also wakes the loop through a socket."""
    reader, writer = socket.socketpair()
    for end in (reader, writer):
        end.setblocking(False)
    signal.set_wakeup_fd(writer.fileno())
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, window)
    notifier.activated.connect(lambda: reader.recv(64))  # the handler below runs as this Python slot does

    def close(signum: int, _frame) -> None:
        log.info("%s: closing the window", signal.Signals(signum).name)
        guard.without_asking = True
        window.close()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, close)
    window.destroyed.connect(lambda: (signal.set_wakeup_fd(-1), reader.close(), writer.close()))
