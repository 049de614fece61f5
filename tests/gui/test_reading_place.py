"""A reader in the middle of a long chat who switches to another chat and back, or quits and starts again, comes back
to the message they were reading; a chat they were at the end of stays following its end. (It always opened at the
end: a walk-through of a 695-message LoCoMo chat lost its place at every switch.)"""

from __future__ import annotations

from precis.core.settings import READING_PLACES_KEY
from precis.core.storage.importers import import_file
from precis.core.storage.store import open_store
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QAbstractSlider

from tests.conftest import CONVERSATIONS_DIR
from tests.gui.test_window import idle
from tests.timing import WAIT_MS


def import_long_chat(store, name: str) -> str:
    chat_id = import_file(store, CONVERSATIONS_DIR / name).chat_id
    store.update_chat_settings(chat_id, {"context_window": 1_000_000})  # all of it shown, nothing summarized
    return chat_id


def row_at(window, y: int) -> int | None:
    """The number of the row showing at this height of the view (None: none, or the gap between two)."""
    view = window.conversation
    index = view.indexAt(QPoint(view.viewport().width() // 2, y))
    return index.row() if index.isValid() else None


def at_top(window, key: str) -> bool:
    """Whether this row (a message id) spans the top edge of the view: the message being read there."""
    view = window.conversation
    number = view.rows_model.row_of(key)
    rect = view.visualRect(view.rows_model.index(number)) if number is not None else None
    return rect is not None and rect.isValid() and rect.top() <= 1 and rect.bottom() >= -1


def at_the_end(window) -> bool:
    """The whole chat is laid out (in batches, the scroll range growing with each) and its last row shows at the
    bottom of the view."""
    view = window.conversation
    last = view.rows_model.rowCount() - 1
    return (idle(window) and not window.chat.snapshot.partial and last >= 0
            and last in {row_at(window, view.viewport().height() - y) for y in range(1, 40, 4)})


def open_and_wait(qtbot, window, chat_id: str, ready=at_the_end) -> None:
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: window.chat.is_open(chat_id) and ready(window), timeout=WAIT_MS)


def read_the_middle(qtbot, window) -> str:
    """Scroll to the middle of the chat as a user does (the scroll bar); the message at the top of the view."""
    view = window.conversation
    bar = view.verticalScrollBar()

    def in_the_middle() -> bool:
        place = view.reading_place()
        if place is not None and at_top(window, place.key) and 100 < view.rows_model.row_of(place.key) < 600:
            return True  # of 695 rows: far from either end
        # Not yet: rows still being laid out (in batches, or again at the width the scroll bar leaves) moved it.
        bar.setValue(bar.maximum() // 2)
        bar.triggerAction(QAbstractSlider.SliderAction.SliderSingleStepAdd)  # what a user's scrolling reports
        return False

    qtbot.waitUntil(in_the_middle, timeout=WAIT_MS)
    return view.reading_place().key


def test_switching_away_and_back_and_restarting_keep_the_reading_place(qtbot, make_window, store, isolated_home):
    long_chat = import_long_chat(store, "locomo_3.jsonl")
    other = import_long_chat(store, "locomo_1.jsonl")
    window = make_window()
    open_and_wait(qtbot, window, long_chat)
    reading = read_the_middle(qtbot, window)

    open_and_wait(qtbot, window, other)
    assert window.conversation.is_at_bottom()  # never scrolled in: its end
    open_and_wait(qtbot, window, long_chat, ready=lambda window: idle(window) and at_top(window, reading))

    # Narrower, the rows grow taller: the same message stays at the top (a pixel offset would have drifted).
    window.resize(1000, 900)
    qtbot.waitUntil(lambda: window.conversation.viewport().width() < 700 and at_top(window, reading),
                    timeout=WAIT_MS)

    window.close()
    assert window.chat.finish_background_work()
    with open_store(isolated_home) as again:
        restarted = make_window(on_store=again)
        qtbot.waitUntil(lambda: restarted.chat.is_open(long_chat) and idle(restarted)
                        and at_top(restarted, reading), timeout=WAIT_MS)
        restarted.close()
        assert restarted.chat.finish_background_work()


def test_a_chat_left_at_its_end_opens_at_its_end_and_follows_it(qtbot, make_window, store):
    long_chat = import_long_chat(store, "locomo_3.jsonl")
    other = import_long_chat(store, "locomo_1.jsonl")
    window = make_window()
    open_and_wait(qtbot, window, long_chat)
    read_the_middle(qtbot, window)
    window.conversation.verticalScrollBar().triggerAction(QAbstractSlider.SliderAction.SliderToMaximum)
    qtbot.waitUntil(lambda: window.conversation.following, timeout=WAIT_MS)  # back at the end

    open_and_wait(qtbot, window, other)
    open_and_wait(qtbot, window, long_chat)
    assert window.conversation.is_at_bottom() and window.conversation.following
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert long_chat not in (store.get_setting(READING_PLACES_KEY) or {}).get("places", {})
