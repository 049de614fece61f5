"""The inspector at 1000×700 and up (issue 22, item 9): one scroll, sections that fold away, the summary chain read
without scrolling sideways, the headline and the buttons always in view, no text cut off."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message
from precis.core.settings import INSPECTOR_KEY, SUMMARIZATION_KEY
from precis.gui import theme
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractScrollArea, QLabel

from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS


def cut_off(label: QLabel) -> bool:
    """Whether part of a label's text cannot be seen: a wrapped label shorter than its text, or one line wider."""
    if label.wordWrap():
        return label.height() < label.heightForWidth(label.width())
    return label.fontMetrics().horizontalAdvance(label.text()) > label.width() + 1


def in_view(widget, rect=None) -> bool:
    """The whole of `rect` (default: the widget) is on screen: not scrolled away, not clipped."""
    rect = rect or widget.rect()
    return widget.isVisible() and rect.height() > 0 and widget.visibleRegion().intersected(rect).boundingRect() == rect


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


def open_chain_of_three(qtbot, make_window, store, width: int, height: int):
    """A window of this size on a chat with three summaries, made one after another as a user would."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    history = [Message(role="user" if i % 2 == 0 else "assistant",
                       content=f"Harbour survey, section {i}: we compared the tide gauge readings with the ferry "
                               f"timetable for berth {i} and agreed to recheck the buoy at marker {i}.")
               for i in range(60)]
    chat_id = store.import_chat("survey", history)
    window = make_window()
    window.resize(width, height)
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.is_open(chat_id), timeout=WAIT_MS)
    for count, up_to in enumerate((history[11], history[23], history[35]), start=1):
        window.conversation.summarize_up_to_requested.emit(up_to.id)  # "Summarize up to here"
        qtbot.waitUntil(lambda c=count: idle(window) and len(window.chat.snapshot.chain) == c, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.size().width() == width and window.size().height() == height)
    return window


@pytest.mark.parametrize("width, height", [(1000, 700), (1400, 900)])
def test_the_inspector_has_one_scroll_and_reads_its_chain_without_scrolling_sideways(qtbot, make_window, store,
                                                                                     width, height):
    window = open_chain_of_three(qtbot, make_window, store, width, height)
    inspector = window.inspector
    chain = inspector.chain
    assert chain.count() == 3 and chain.item(0).text().startswith("Depth 3 · ")
    qtbot.waitUntil(lambda: chain.height() >= chain.sizeHint().height())

    # Nothing inside the panel's scroll scrolls on its own: no scroll bar shown, nothing to scroll to.
    content = inspector.scroll.widget()
    inner = content.findChildren(QAbstractScrollArea)
    assert chain in inner and inspector.archived_view in inner and inspector.summary_text in inner

    def scrolling_inside() -> list[str]:
        return [type(area).__name__ for area in content.findChildren(QAbstractScrollArea)
                for bar in (area.verticalScrollBar(), area.horizontalScrollBar()) if bar.isVisible() or bar.maximum()]

    qtbot.waitUntil(lambda: scrolling_inside() == [], timeout=WAIT_MS)  # once laid out at the panel's width
    # The next prompt, part by part, opened: its parts are in the same one scroll (once laid out at its width).
    inspector.prompt_section.set_expanded(True)
    qtbot.waitUntil(lambda: inspector.prompt.list.count() > 0, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: scrolling_inside() == [], timeout=WAIT_MS)
    inspector.prompt_section.set_expanded(False)
    qtbot.waitUntil(lambda: scrolling_inside() == [] and all(  # laid out again at the panel's width
        chain.visualItemRect(chain.item(row)).width() <= chain.viewport().width() for row in range(chain.count())),
        timeout=WAIT_MS)

    # Each entry of the chain is whole within the panel's width: read without a scroll bar, nothing past its edge.
    viewport = inspector.scroll.viewport()
    assert chain.mapTo(viewport, chain.rect().topRight()).x() <= viewport.width()
    for row in range(chain.count()):
        rect = chain.visualItemRect(chain.item(row))
        assert rect.width() <= chain.viewport().width() and rect.height() >= 2 * chain.fontMetrics().lineSpacing()
    # The newest summary's two lines are in view as the chat opens; everything about it is on hover.
    qtbot.waitUntil(lambda: in_view(chain.viewport(), chain.visualItemRect(chain.item(0))))
    newest = window.chat.snapshot.chain[-1]
    assert f"Tokens: {newest.tokens_before:,} → {newest.tokens_after:,}" in chain.item(0).toolTip()

    # The token headline and the buttons are in view without scrolling, and stay so when the panel scrolls.
    for widget in (inspector.total_label, inspector.gauge, inspector.summarize_button, inspector.undo_button):
        qtbot.waitUntil(lambda w=widget: in_view(w))
    bar = inspector.scroll.verticalScrollBar()
    bar.setValue(bar.maximum())
    qtbot.waitUntil(lambda: in_view(inspector.total_label) and in_view(inspector.summarize_button), timeout=WAIT_MS)

    # Choosing the oldest summary shows it below: its text whole, read in the panel's one scroll.
    chain.setCurrentRow(2)
    oldest = window.chat.snapshot.chain[0]
    assert inspector.after_text.toPlainText() == oldest.text
    assert inspector.record_section.header.text() == "Selected summary · depth 1"
    qtbot.waitUntil(lambda: inspector.summary_text.height() >= inspector.summary_text.document().size().height())
    # Its archived messages too: all of them, in the panel's scroll, and the Summary tab no taller than its text.
    archived = inspector.archived_view
    inspector.details.setCurrentWidget(archived)
    assert archived.rows_model.rowCount() == len(window.chat.snapshot.archived(oldest.id)) == 12
    # (its scroll bar's range follows the height it is given, after a layout pass under a loaded machine)
    qtbot.waitUntil(lambda: archived.isVisible() and archived.height() >= archived.sizeHint().height() > 12 * 20
                    and archived.verticalScrollBar().maximum() == 0, timeout=WAIT_MS)
    inspector.details.setCurrentWidget(inspector.summary_text)
    qtbot.waitUntil(lambda: inspector.details.height() < inspector.summary_text.height() + 100)


def test_a_section_folds_and_unfolds_from_the_mouse_and_the_keyboard_and_stays_as_left(qtbot, make_window, store):
    window = open_chain_of_three(qtbot, make_window, store, 1000, 700)
    inspector = window.inspector
    section = inspector.sent_section
    assert inspector.legend_values["summaries"].isVisible()
    qtbot.mouseClick(section.header, Qt.MouseButton.LeftButton)
    assert not section.body.isVisible() and not inspector.legend_values["summaries"].isVisible()
    qtbot.mouseClick(section.header, Qt.MouseButton.LeftButton)
    assert section.body.isVisible()

    # The chain's header is reached with Tab like any button; Space and Enter fold and unfold it.
    chain_section = inspector.chain_section
    chain_section.header.setFocus()
    qtbot.waitUntil(chain_section.header.hasFocus)
    qtbot.keyClick(chain_section.header, Qt.Key.Key_Space)
    assert not inspector.chain.isVisible()
    qtbot.keyClick(chain_section.header, Qt.Key.Key_Return)
    assert inspector.chain.isVisible()
    assert chain_section.header.focusPolicy() & Qt.FocusPolicy.TabFocus

    # Folded away, it stays folded the next time the window opens.
    qtbot.mouseClick(inspector.record_section.header, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: store.get_setting(INSPECTOR_KEY) == {"folded": ["prompt", "summary"]}, timeout=WAIT_MS)
    again = make_window()
    assert not again.inspector.record_section.expanded and again.inspector.chain_section.expanded
    assert not again.inspector.details.isVisible()


@pytest.mark.slow
def test_at_1000_by_700_the_inspector_shows_its_notices_whole(qtbot, make_window, store):
    window = open_summarized_chat(qtbot, make_window, store, 1000, 700)
    qtbot.waitUntil(lambda: window.size().width() == 1000 and window.size().height() == 700)
    inspector = window.inspector
    assert "summarized automatically" in inspector.notice.text()

    # Every label of the inspector shows its whole text; the panel's scroll reaches each one.
    labels = [label for label in inspector.findChildren(QLabel) if label.isVisible() and label.text()]
    assert inspector.notice in labels and inspector.total_label in labels
    for label in labels:
        assert not cut_off(label), f"cut off at 1000×700: {label.text()!r}"
    inspector.scroll.ensureWidgetVisible(inspector.result_card)
    qtbot.waitUntil(lambda: in_view(inspector.result_card))
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
    viewport = inspector.scroll.viewport()
    qtbot.waitUntil(lambda: inspector.recalled_box.isVisible() and viewport.width() < 320)
    recalled = inspector.recalled
    # The whole list, in the panel's scroll: no scroll bar of its own.
    qtbot.waitUntil(lambda: recalled.height() >= recalled.sizeHint().height() and recalled.verticalScrollBar().maximum() == 0)
    # Every label ends inside the panel: none widens it past its right edge (the numbers there would be cut).
    for label in inspector.scroll.widget().findChildren(QLabel):
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
        qtbot.waitUntil(lambda b=button: in_view(b))


@pytest.mark.slow
@pytest.mark.parametrize("width, height", [(1000, 700), (1500, 950)])
def test_the_summary_chain_is_in_view_beside_the_buttons_without_scrolling(qtbot, make_window, store, width, height):
    """A chat summarized on opening, its notice and result card shown: the chain's newest summary and the
    Summarize now / Undo last buttons are in view as the window opens (the chain sat below the fold of the upper
    part's scrolling at both sizes)."""
    window = open_summarized_chat(qtbot, make_window, store, width, height)
    inspector, chain = window.inspector, window.inspector.chain
    qtbot.waitUntil(lambda: chain.count() >= 1)
    newest = chain.visualItemRect(chain.item(0))
    for widget, rect in ((chain.viewport(), newest), (inspector.chain_section.header, None),
                         (inspector.summarize_button, None), (inspector.undo_button, None)):
        qtbot.waitUntil(lambda w=widget, r=rect: in_view(w, r))


def test_a_chat_with_no_summary_shows_no_empty_chain_box(qtbot, make_window, store):
    """Under "Summary chain · none yet" an empty list was drawn, a box with nothing in it."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    store.import_chat("short", dialogue(20, "We compared the tide tables, point"))
    window = make_window()
    inspector = window.inspector
    qtbot.waitUntil(lambda: idle(window) and inspector.chain_section.header.text().endswith("none yet"), timeout=WAIT_MS)
    assert inspector.chain_section.expanded and not inspector.chain.isVisible()
    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and inspector.chain.isVisible(), timeout=WAIT_MS)
    assert inspector.chain_section.header.text() == "Summary chain · 1 summary"
