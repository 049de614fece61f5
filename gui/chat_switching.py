"""Which chat the window shows: the chat list, creating, opening, closing and deleting chats, and showing the open
chat's snapshots (rows, inspector, title).

Creating, renaming, deleting and restoring a chat are store writes: they run off the GUI thread (a write waits for
another writer's lock, up to SQLite's busy timeout) and the window changes only once one has succeeded; a failure
is told in the status bar and leaves the list as it was."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import QObject, Signal

from ..core.chat.reading_place import ReadingPlace, ReadingPlaces, place_to_hold
from ..core.chat.rows import build_rows
from ..core.chat.snapshot import Snapshot
from ..core.model.titles import NEW_CHAT_TITLE, first_message_title
from ..core.settings import OPEN_CHAT_KEY, READING_PLACES_KEY, chat_at_start
from ..core.storage.store import ChatInfo
from .chat_list import ChatList
from .composer import Composer
from .controller import ChatController
from .conversation import ConversationView
from .feedback import Feedback
from .inspector import Inspector
from .status import StatusLine
from .workers import Job

log = logging.getLogger("precis.gui")


class ChatSwitcher(QObject):
    """The window's chat switching, over the parts it shows chats in."""

    switched = Signal()  # another chat is about to open (or none): what was under way for the last one is dropped
    title_changed = Signal(str)  # the window's title
    shown = Signal()  # a snapshot of the open chat is shown (rows, inspector)
    closed = Signal()  # the open chat closed: none is open until the next opens
    summary_revealed = Signal(str)  # a search hit was archived in this summary: show it in the inspector

    def __init__(self, chat: ChatController, chat_list: ChatList, conversation: ConversationView, composer: Composer,
                 inspector: Inspector, status: StatusLine, feedback: Feedback, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.chat, self.chat_list, self.conversation, self.composer = chat, chat_list, conversation, composer
        self.inspector, self.status, self.feedback = inspector, status, feedback
        self.closing = False  # the window is closing: the chat list is no longer refreshed
        self.creation: Job | None = None  # the store call creating a chat, until it answers (see new_chat)
        self.waiting_for_creation: list[Callable[[str], Any]] = []
        self.made_by_new_chat: str | None = None  # the chat New chat made last, known before the list shows it
        self.deleted_elsewhere: str | None = None  # the open chat, deleted by another Precis (told once)
        self.last_open: object = chat.store.get_setting(OPEN_CHAT_KEY)  # the chat the window showed last
        self.places = saved_places(chat)

    @property
    def creating(self) -> bool:
        return self.creation is not None

    def connect(self) -> None:
        chat = self.chat
        # Chats deleted before this window opened are no longer offered for undo (that offer went with the window
        # that made it): they go for good, their text overwritten on disk.
        opened = time.time()
        chat.store_calls.write("remove deleted chats for good", lambda store: store.purge_deleted(opened))
        chat.rows_loaded.connect(self._first_rows)
        chat.snapshot_changed.connect(self.show_snapshot)
        chat.chats_changed.connect(self.refresh_chats)
        chat_list = self.chat_list
        chat_list.chat_selected.connect(self.open_chat)
        chat_list.new_requested.connect(self.new_chat)
        chat_list.rename_requested.connect(self.rename_chat)
        chat_list.delete_requested.connect(self.delete_chat)
        chat_list.search_changed.connect(self.search)
        chat_list.hit_selected.connect(self.open_hit)

    def refresh_chats(self) -> None:
        if not self.closing:
            self.chat.store_calls.newest("list the chats", lambda store: store.list_chats(), self._show_chats)

    def _show_chats(self, chats: list[ChatInfo]) -> None:
        if self.closing:
            return
        current = self.chat.session.chat_id if self.chat.session else None
        self.chat_list.set_chats(chats, current)
        self.update_title()
        if self.chat.session is None and chats:
            self.open_chat(chat_at_start([chat.id for chat in chats], self.last_open))
        elif current is not None and current not in {chat.id for chat in chats}:
            self._tell_deleted_elsewhere(current)
        else:
            self.deleted_elsewhere = None

    def _tell_deleted_elsewhere(self, chat_id: str) -> None:
        """The open chat is gone from the list: another Precis window deleted it (this one closes a chat before
        deleting it). It stays open, with what is typed in it, and restoring it is offered until another opens."""
        if self.deleted_elsewhere == chat_id:  # told already
            return
        self.deleted_elsewhere = chat_id
        self.status.offer_undo("This chat was deleted in another Precis window: restore it to write in it.",
                               "Restore chat", lambda: self.restore_chat(chat_id), lasting=True)

    def new_chat(self, title: str = NEW_CHAT_TITLE, then: Callable[[str], Any] | None = None) -> Job:
        """Create a chat and open it; `then(chat_id)` once it is open. While one is being created, a second request
        (files dropped twice, New chat clicked twice) waits for that chat instead of making another."""
        if then is not None:
            self.waiting_for_creation.append(then)
        if self.creation is not None:
            return self.creation

        def created(chat_id: str) -> None:
            waiting, self.waiting_for_creation = self.waiting_for_creation, []
            if self.closing:  # the window closed while the store answered: nothing to open it in
                return
            self.refresh_chats()
            self.open_chat(chat_id)
            self.made_by_new_chat = chat_id if title == NEW_CHAT_TITLE else None
            self.composer.edit.setFocus()
            for then_ in waiting:
                then_(chat_id)

        def ended() -> None:  # after created, or after a failure: then what waited stays undone (text kept)
            self.creation = None
            self.waiting_for_creation.clear()

        self.status.tell("Creating the chat…")
        self.creation = self.chat.store_calls.write("create the chat", lambda store: store.create_chat(title),
                                                      created)
        self.creation.finished.connect(ended)
        return self.creation

    def rename_chat(self, chat_id: str, title: str) -> None:
        self.chat.store_calls.write("rename the chat", lambda store: store.rename_chat(chat_id, title),
                                           lambda _none: self.refresh_chats())

    def delete_chat(self, chat_id: str) -> None:

        def deleted(_none: None) -> None:
            if self.closing:
                return
            if self.chat.is_open(chat_id):
                self.close_chat()
                self.conversation.rows_model.set_rows([])
                # The next chat is opened here, before the undo is offered: opening a chat withdraws the offer.
                others = [chat.id for chat in self.chat_list.chats if chat.id != chat_id]
                if others:
                    self.open_chat(others[0])
            self.refresh_chats()
            self.status.offer_undo("Chat deleted.", "Undo delete", lambda: self.restore_chat(chat_id))

        self.chat.store_calls.write("delete the chat", lambda store: store.delete_chat(chat_id), deleted)

    def restore_chat(self, chat_id: str) -> None:
        self.chat.store_calls.write("restore the chat", lambda store: store.restore_chat(chat_id),
                                           lambda _none: self.closing or (self.refresh_chats(),
                                                                          self.open_chat(chat_id)))

    def _first_rows(self, snapshot: Snapshot) -> None:
        self.show_rows(snapshot, self.places.of(snapshot.chat_id))
        if snapshot.draft and not self.composer.text():  # what was typed meanwhile is kept
            self.composer.set_text(snapshot.draft)

    def open_chat(self, chat_id: str) -> None:
        if self.chat.is_open(chat_id):
            return
        left_empty = self._untouched_open_chat()
        self.close_chat()
        self.switched.emit()
        self.chat_list.set_chats(self.chat_list.chats, chat_id)
        self.composer.set_text("")  # its draft comes with its first rows, read off this thread
        self.chat.open(chat_id)
        self.update_title()
        self._remember_open(chat_id)
        if left_empty is not None:  # "New chat" clicked and left as it was: not kept, nothing in it is lost
            self.chat.store_calls.write("remove the empty chat", lambda store: store.delete_untouched_chat(left_empty),
                                        lambda _removed: self.refresh_chats())

    def _remember_open(self, chat_id: str) -> None:
        """Saved as each chat opens, so the next start opens it again (a read-only folder keeps the last one)."""
        if chat_id != self.last_open and not self.chat.store.read_only:
            self.last_open = chat_id
            self.chat.store_calls.set_setting(OPEN_CHAT_KEY, chat_id)

    def _untouched_open_chat(self) -> str | None:
        """The open chat's id if this window's New chat made it and nothing shows in it; the store removes it only
        if nobody did anything in it (delete_untouched_chat). An empty chat another Precis made (a terminal chat
        before its first line) is never this window's to remove."""
        session = self.chat.session
        if session is None or self.conversation.rows_model.rowCount() or self.composer.text().strip():
            return None
        return session.chat_id if session.chat_id == self.made_by_new_chat else None

    def close_chat(self) -> None:
        if self.chat.session is None:
            return
        self.remember_place()
        self.composer.flush_draft()
        self.chat.close()
        self.closed.emit()
        self.update_title()

    def open_title(self) -> str | None:
        """The open chat's title as the chat list has it (None: no chat is open)."""
        session = self.chat.session
        return next((c.title for c in self.chat_list.chats if session and c.id == session.chat_id), None)

    def update_title(self) -> None:
        title = self.open_title()
        self.title_changed.emit(f"{title} — Precis" if title else "Precis")

    def title_untitled_chat(self, text: str) -> None:
        """A chat made with "New chat" takes its title from its first message."""
        chat = next((c for c in self.chat_list.chats if c.id == self.chat.session.chat_id), None)
        if chat is not None and (title := first_message_title(chat.title, self.conversation.rows_model.rowCount(),
                                                               text)):
            self.rename_chat(chat.id, title)

    def remember_place(self) -> None:
        """Save where the reader is in the open chat (as it closes, or the window does), for its next opening."""
        session = self.chat.session
        if session is None or self.chat.store.read_only or self.chat.snapshot is None:
            return
        places = self.places.left_at(session.chat_id, self.conversation.reading_place())
        if places != self.places:
            self.places = places
            self.chat.store_calls.set_setting(READING_PLACES_KEY, places.model_dump())

    def show_rows(self, snapshot: Snapshot, place: ReadingPlace | None) -> None:
        """Show the snapshot's rows at the reader's `place` (None: the end) or what stands for it now."""
        conversation = self.conversation
        if snapshot.rows is not None:  # built on the worker
            conversation.rows_model.set_rows(snapshot.rows, snapshot.row_index)
        else:  # rows asked for again (a pin, a failed change): built here
            conversation.rows_model.set_rows(build_rows(snapshot.messages, snapshot.chain, snapshot.hidden))
        conversation.rows_model.set_versions(snapshot.versions)
        conversation.hold(place_to_hold(place, conversation.rows_model.row_index(), snapshot.hidden,
                                        whole_chat=not snapshot.partial))

    def show_snapshot(self, snapshot: Snapshot, rebuild_rows: bool) -> None:
        if rebuild_rows:
            self.show_rows(snapshot, self.conversation.reading_place())
        self.conversation.rows_model.set_versions(snapshot.versions)
        self.inspector.show_snapshot(snapshot)
        self.status.show_counting(None if snapshot.usage is None else snapshot.usage.exact, snapshot.counting)
        self.feedback.announce(snapshot.events)
        self.shown.emit()

    def search(self, text: str) -> None:
        """Search all chats in the background (the list shows the newest answer) and highlight the words in the
        conversation and the archive; "" goes back to the chats and clears the highlight."""
        if text:
            self.chat.store_calls.newest("search the chats", lambda store: store.search(text), self.chat_list.show_hits)
        else:
            self.chat.store_calls.forget("search the chats")
            self.chat_list.show_hits(None)
        for view in (self.conversation, self.inspector.archived_view):
            view.set_highlight(text)

    def open_hit(self, hit) -> None:
        """Open the chat of a search hit at the message; an archived one also in its summary's archive."""
        chat = self.chat

        def reveal(chat_id: str) -> None:
            if chat_id != hit.chat_id:
                return
            chat.chat_opened.disconnect(reveal)
            record_id = chat.snapshot.hidden.get(hit.message_id) if chat.snapshot else None
            if record_id is None:
                self.conversation.reveal(hit.message_id)
                return
            self.conversation.reveal(f"summary:{record_id}")
            self.summary_revealed.emit(record_id)
            self.inspector.reveal_archived(hit.message_id)

        chat.chat_opened.connect(reveal)
        if chat.is_open(hit.chat_id):
            if chat.snapshot is not None:  # else it is opening: revealed once open
                reveal(hit.chat_id)
        else:
            self.open_chat(hit.chat_id)


def saved_places(chat: ChatController) -> ReadingPlaces:
    try:
        return ReadingPlaces.model_validate(chat.store.get_setting(READING_PLACES_KEY, {}) or {})
    except ValidationError as error:  # only a convenience: every chat opens at its end
        log.warning("the saved reading places are not valid, chats open at their end: %s", error)
        return ReadingPlaces()
