"""A restart (a new window on the same data folder) shows the chat that was open when the window closed."""

from __future__ import annotations

from precis.core.model.messages import Message
from precis.core.storage.store import open_store

from tests.gui.test_window import idle
from tests.timing import WAIT_MS


def test_a_restart_opens_the_chat_that_was_open_not_the_newest(qtbot, make_window, store, isolated_home):
    """Someone reading an older chat quit and started again: the window opened the chat changed last instead."""
    older = store.import_chat("older chat", [Message(role="user", content="the older one")])
    store.import_chat("newer chat", [Message(role="user", content="the newer one")])
    window = make_window()
    window.open_chat(older)
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == older, timeout=WAIT_MS)
    window.close()
    assert window.chat.finish_background_work()

    with open_store(isolated_home) as again:
        restarted = make_window(on_store=again)
        qtbot.waitUntil(lambda: idle(restarted), timeout=WAIT_MS)
        assert restarted.chat.session.chat_id == older
        assert restarted.windowTitle() == "older chat — Precis"
        restarted.close()
        assert restarted.chat.finish_background_work()


def test_a_restart_after_the_open_chat_was_deleted_elsewhere_opens_the_newest(qtbot, make_window, store,
                                                                              isolated_home):
    gone = store.import_chat("gone", [Message(role="user", content="deleted by a command")])
    newest = store.import_chat("newest", [Message(role="user", content="still here")])
    window = make_window()
    window.open_chat(gone)
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == gone, timeout=WAIT_MS)
    window.close()
    assert window.chat.finish_background_work()
    store.delete_chat(gone)  # `precis` in a terminal, while the window was closed

    with open_store(isolated_home) as again:
        restarted = make_window(on_store=again)
        qtbot.waitUntil(lambda: idle(restarted), timeout=WAIT_MS)
        assert restarted.chat.session.chat_id == newest
        restarted.close()
        assert restarted.chat.finish_background_work()


def test_a_chat_deleted_in_the_window_is_undoable_until_the_window_opens_again_then_gone(qtbot, make_window, store,
                                                                                         isolated_home):
    """Delete hid a chat for good: its messages stayed in the database file forever, readable by anything that
    opens it, though the window never showed them again."""
    diary = store.import_chat("diary", [Message(role="user", content="a private zanzibarquokka")])
    store.import_chat("other", [Message(role="user", content="still here")])
    window = make_window()
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.switcher.delete_chat(diary)
    qtbot.waitUntil(lambda: idle(window) and diary not in {c.id for c in window.chat_list.chats}, timeout=WAIT_MS)
    assert diary in {c.id for c in store.list_chats(include_deleted=True)}  # hidden: Undo can still bring it back
    window.close()
    assert window.chat.finish_background_work()

    with open_store(isolated_home) as again:
        restarted = make_window(on_store=again)
        qtbot.waitUntil(lambda: idle(restarted), timeout=WAIT_MS)
        assert diary not in {c.id for c in again.list_chats(include_deleted=True)}
        assert not again.search("zanzibarquokka")
        restarted.close()
        assert restarted.chat.finish_background_work()
