"""The inspector stays readable at 1000×700: no text cut off, the window no taller, everything reachable."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message
from precis.core.settings import SUMMARIZATION_KEY
from precis.gui import theme
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel

from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS


def cut_off(label: QLabel) -> bool:
    """Whether part of a label's text cannot be seen: a wrapped label shorter than its text, or one line wider."""
    if label.wordWrap():
        return label.height() < label.heightForWidth(label.width())
    return label.fontMetrics().horizontalAdvance(label.text()) > label.width() + 1


def open_summarized_chat(qtbot, make_window, store, width: int, height: int):
    """A window of this size on a long chat that opening summarizes (a 2,048-token window)."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = store.import_chat("long chat", dialogue(240, "We weighed the two kickboxing gyms again, and noted point"),
                                settings={"context_window": 2048})
    window = make_window()
    window.resize(width, height)
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.inspector.notice_box.isVisible(), timeout=WAIT_MS)
    return window


@pytest.mark.slow
def test_at_1000_by_700_the_inspector_shows_its_notices_whole(qtbot, make_window, store):
    window = open_summarized_chat(qtbot, make_window, store, 1000, 700)
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


def mark_drawn(gauge, ratio: float, colour: str) -> bool:
    """Whether the gauge shows a line of `colour` at `ratio` of the budget, above the bar (where only lines are)."""
    image = gauge.grab().toImage()
    x = int(gauge.mark_x(ratio))
    wanted = QColor(colour)
    return any(max(abs(c.red() - wanted.red()), abs(c.green() - wanted.green()), abs(c.blue() - wanted.blue())) < 40
               for c in (image.pixelColor(column, row) for column in (x - 1, x) for row in range(1, 5)))


@pytest.mark.slow
def test_the_gauge_draws_the_target_line_where_the_setting_puts_it_and_says_what_each_line_is(qtbot, make_window,
                                                                                              store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "target_ratio": 0.3, "trigger_ratio": 0.9})
    chat_id = store.import_chat("chat", dialogue(40, "We compared the ferry timetables, point"))
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.usage is not None, timeout=WAIT_MS)
    gauge = window.inspector.gauge
    assert mark_drawn(gauge, 0.3, theme.LEVEL_OK) and mark_drawn(gauge, 0.9, theme.LEVEL_OVER)
    assert not mark_drawn(gauge, 0.5, theme.LEVEL_OK)  # not at the default target
    legend = window.inspector.thresholds.text()
    assert "summarizes at 90%" in legend and "down to 30%" in legend and "re-arms below 70%" in legend
    assert "the target: a summary takes the oldest messages needed to bring usage down to it" in gauge.toolTip()


@pytest.mark.slow
def test_at_1920_by_1080_the_summary_chain_shows_every_column_without_scrolling(qtbot, make_window, store):
    window = open_summarized_chat(qtbot, make_window, store, 1920, 1080)
    chain = window.inspector.chain
    qtbot.waitUntil(lambda: chain.viewport().width() > 400)
    widths = sum(chain.columnWidth(column) for column in range(chain.columnCount()))
    assert widths <= chain.viewport().width() and chain.horizontalScrollBar().maximum() == 0


@pytest.mark.slow
def test_at_1000_by_700_the_recalled_list_keeps_the_inspector_within_its_width(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    history = [Message(role="user", content="Our lighthouse keeper Marguerite retires in October."),
               *dialogue(40, "Budget review, item")[1:],
               Message(role="user", content="When does Marguerite, the lighthouse keeper, retire?")]
    chat_id = store.import_chat("lighthouse", history)
    window = make_window()
    window.resize(1000, 700)
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.usage is not None, timeout=WAIT_MS)
    window.conversation.summarize_up_to_requested.emit(history[19].id)
    qtbot.waitUntil(lambda: idle(window) and window.inspector.recalled.count() > 0, timeout=WAIT_MS)
    inspector = window.inspector
    viewport = inspector.gauge.parentWidget().parentWidget()  # the upper part's scroll viewport
    qtbot.waitUntil(lambda: inspector.recalled_box.isVisible() and viewport.width() < 320)
    # The chain's new row shortens the upper part, which lays its content out again at the width left beside its
    # scroll bar: an event later.
    top = inspector.gauge.parentWidget()
    qtbot.waitUntil(lambda: top.height() >= top.heightForWidth(viewport.width()))
    # Every label ends inside the panel: none widens it past its right edge (the numbers there would be cut).
    for label in inspector.gauge.parentWidget().findChildren(QLabel):
        if label.isVisible() and label.text():
            right = label.mapTo(viewport, label.rect().topRight()).x()
            assert right <= viewport.width(), f"past the inspector's edge at 1000×700: {label.text()!r}"
            assert not cut_off(label), f"cut off at 1000×700: {label.text()!r}"


@pytest.mark.slow
def test_summarize_and_undo_are_in_view_at_the_default_size_with_a_notice_and_recalled_messages(qtbot, make_window,
                                                                                                store):
    """At 1400×900, with what the last message recalled and the notice of a summary made on opening, the row of
    Summarize now, Undo last and Pin was below the upper part's fold: a sliver of it showed."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    history = [*dialogue(240, "We weighed the two kickboxing gyms again, and noted point"),
               Message(role="user", content="Which kickboxing gym did we weigh at point 12?")]
    chat_id = store.import_chat("long chat", history, settings={"context_window": 2048})
    window = make_window()
    window.resize(1400, 900)
    window.open_chat(chat_id)
    inspector = window.inspector
    qtbot.waitUntil(lambda: idle(window) and inspector.notice_box.isVisible() and inspector.recalled.count() > 0,
                    timeout=WAIT_MS)
    for button in (inspector.summarize_button, inspector.undo_button, inspector.pin_button):
        qtbot.waitUntil(lambda b=button: b.visibleRegion().boundingRect().height() == b.height())


@pytest.mark.slow
@pytest.mark.parametrize("width, height", [(1000, 700), (1500, 950)])
def test_the_summary_chain_is_in_view_beside_the_buttons_without_scrolling(qtbot, make_window, store, width, height):
    """A chat summarized on opening, its notice and result card shown: the chain's newest summary and the
    Summarize now / Undo last buttons are in view as the window opens (the chain sat below the fold of the upper
    part's scrolling at both sizes)."""
    window = open_summarized_chat(qtbot, make_window, store, width, height)
    inspector, chain = window.inspector, window.inspector.chain
    qtbot.waitUntil(lambda: chain.rowCount() >= 1)

    def in_view(widget, rect=None) -> bool:
        """The whole height of `rect` (default: the widget) is on screen, over some of its width."""
        rect = rect or widget.rect()
        shown = widget.visibleRegion().intersected(rect).boundingRect()
        return rect.height() > 0 and shown.height() == rect.height() and shown.width() > 0

    newest = chain.visualItemRect(chain.item(0, 0))
    assert newest.height() == chain.rowHeight(0) > 0
    title = next(label for label in inspector.findChildren(QLabel) if label.text() == "Summary chain")
    for widget, rect in ((chain.viewport(), newest), (title, None),
                         (inspector.summarize_button, None), (inspector.undo_button, None)):
        qtbot.waitUntil(lambda w=widget, r=rect: in_view(w, r))
