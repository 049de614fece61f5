"""The inspector stays readable at 1000×700: no text cut off, the window no taller, everything reachable."""

from __future__ import annotations

from precis.core.storage.chats import GLOBAL_POLICY_KEY
from PySide6.QtWidgets import QLabel

from tests.gui.test_window import dialogue, idle


def cut_off(label: QLabel) -> bool:
    """Whether part of a label's text cannot be seen: a wrapped label shorter than its text, or one line wider."""
    if label.wordWrap():
        return label.height() < label.heightForWidth(label.width())
    return label.fontMetrics().horizontalAdvance(label.text()) > label.width() + 1


def test_at_1000_by_700_the_inspector_shows_its_notices_whole(qtbot, make_window, store):
    store.set_setting(GLOBAL_POLICY_KEY, {"mode": "rule"})
    chat_id = store.import_chat("long chat", dialogue(240, "We weighed the two kickboxing gyms again, and noted point"),
                                settings={"context_window": 2048})
    window = make_window()
    window.resize(1000, 700)
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.inspector.notice_box.isVisible(), timeout=60_000)
    qtbot.waitUntil(lambda: window.size().width() == 1000 and window.size().height() == 700)
    inspector = window.inspector
    assert "summarized automatically" in inspector.notice.text()

    # Every label of the inspector shows its whole text; the upper part scrolls to reach each one.
    labels = [label for label in inspector.findChildren(QLabel) if label.isVisible() and label.text()]
    assert inspector.notice in labels and inspector.total_label in labels
    for label in labels:
        assert not cut_off(label), f"cut off at 1000×700: {label.text()!r}"
    scroll = inspector.notice_box.parentWidget().parentWidget().parentWidget()  # top → viewport → scroll area
    scroll.ensureWidgetVisible(inspector.notice)
    qtbot.waitUntil(lambda: not inspector.notice.visibleRegion().isEmpty())
    assert inspector.notice.visibleRegion().boundingRect().height() == inspector.notice.height()

    # The tokens by kind fold away for room, and come back.
    inspector.breakdown_toggle.click()
    assert not inspector.breakdown.isVisible()
    inspector.breakdown_toggle.click()
    assert inspector.breakdown.isVisible()
    # The three detail tabs' names fit side by side.
    bar = inspector.details.tabBar()
    assert sum(bar.tabRect(i).width() for i in range(bar.count())) <= inspector.details.width()
