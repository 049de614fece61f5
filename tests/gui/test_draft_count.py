"""The composer counts the draft's tokens against what is left of the window, and warns before a summary."""

from __future__ import annotations

import re
import threading

import pytest
from precis.core.model.messages import Message
from precis.core.settings import SUMMARIZATION_KEY
from PySide6.QtCore import QTimer

from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS

COUNT = re.compile(r"^([\d,]+) tokens · ([\d,]+) (left|over the window)$")


def shown(window) -> tuple[int, int, str] | None:
    """(draft tokens, tokens left (negative: over), level) as the composer shows them, None when nothing shows."""
    found = COUNT.match(window.composer.token_count.text())
    if found is None:
        return None
    left = int(found.group(2).replace(",", ""))
    return (int(found.group(1).replace(",", "")), -left if found.group(3) != "left" else left,
            window.composer.token_count.objectName())


@pytest.mark.slow
def test_the_draft_is_counted_against_what_is_left_and_warns_before_a_summary(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    chat_id = store.import_chat("gyms", dialogue(8, "We compared two kickboxing gyms near the station, point"),
                                settings={"context_window": 2048})
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    usage, policy = window.chat.snapshot.usage, window.chat.snapshot.policy
    used = usage.total - usage.by_kind["recalled"]
    engine = window.chat.session.engine

    # Typing: the count follows once typing pauses, and the event loop keeps turning meanwhile.
    beats = []
    heartbeat = QTimer(window)
    heartbeat.timeout.connect(lambda: beats.append(1))
    heartbeat.start(10)
    text = "Which gym has the better beginner classes on weekday evenings?"
    qtbot.keyClicks(window.composer.edit, text)
    qtbot.waitUntil(lambda: shown(window) is not None and shown(window)[0] > 10, timeout=WAIT_MS)
    heartbeat.stop()
    assert beats
    tokens, left, level = shown(window)
    # The count is what the message will cost once sent, and what is left is the budget less both.
    assert tokens == engine.counter.raw_message_tokens(Message(role="user", content=text))
    assert left == usage.available - used - tokens and level == "muted"

    # A draft that takes the context past the trigger: warning colour, with why in the tooltip.
    # Its size, between the trigger and the window, in the tokenizer's own measure: each " gym" is one token.
    assert engine.counter.count_text(" gym" * 100) == 100
    to_trigger = int(policy.trigger_ratio * usage.available) - used
    window.composer.set_text(" gym" * (to_trigger + 10))
    qtbot.waitUntil(lambda: shown(window) is not None and shown(window)[2] == "warning", timeout=WAIT_MS)
    tokens, left, _level = shown(window)
    assert used + tokens >= policy.trigger_ratio * usage.available and left >= 0
    assert "summarized first" in window.composer.token_count.toolTip()

    # Past the window: the error colour and how far over.
    window.composer.set_text(" gym" * (usage.available - used + 10))
    qtbot.waitUntil(lambda: shown(window) is not None and shown(window)[2] == "error", timeout=WAIT_MS)
    tokens, left, _level = shown(window)
    assert left == usage.available - used - tokens < 0
    assert "does not fit" in window.composer.token_count.toolTip()

    # A slash command is not sent to the model: no count; an empty box: none either.
    window.composer.set_text("/summarize")
    qtbot.waitUntil(lambda: window.composer.token_count.text() == "", timeout=WAIT_MS)
    window.composer.set_text("Back to the gyms.")
    qtbot.waitUntil(lambda: shown(window) is not None, timeout=WAIT_MS)
    window.composer.set_text("")
    qtbot.waitUntil(lambda: window.composer.token_count.text() == "", timeout=WAIT_MS)


def test_each_chats_draft_comes_back_read_off_the_windows_thread(qtbot, make_window, store):
    # Issue 22: drafts were read on the window's thread, where a store held by another writer can wait.
    first, second = store.create_chat("first"), store.create_chat("second")
    store.set_draft(first, "half a thought")
    readers: list[bool] = []
    read = store.get_draft

    def watched(chat_id: str) -> str:  # the real read, noting which thread made it
        readers.append(threading.current_thread() is threading.main_thread())
        return read(chat_id)

    store.get_draft = watched
    window = make_window()
    for chat_id, draft in ((first, "half a thought"), (second, ""), (first, "half a thought")):
        window.open_chat(chat_id)
        qtbot.waitUntil(lambda c=chat_id: idle(window) and window.chat.session.chat_id == c, timeout=WAIT_MS)
        assert window.composer.text() == draft
    assert readers and not any(readers)
