"""Looks: light and dark themes readable everywhere, the choice saved, and a chat column that gets the width."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message
from precis.core.settings import APPEARANCE_KEY, SUMMARIZATION_KEY
from precis.gui import theme
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QTabWidget

from tests.gui.test_window import dialogue, idle, open_imported_chat
from tests.timing import WAIT_MS


def contrast(a: str | QColor, b: str | QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21; 4.5 is readable body text)."""

    def luminance(colour) -> float:
        colour = QColor(colour)
        channels = []
        for value in (colour.redF(), colour.greenF(), colour.blueF()):
            channels.append(value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4)
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.fixture(autouse=True)
def system_theme_after():
    yield
    theme.choose("system")


@pytest.mark.slow
@pytest.mark.parametrize("choice", ["light", "dark"])
def test_each_theme_keeps_text_readable_on_bubbles_menus_and_the_summary_tab(qtbot, make_window, store, choice):
    window = make_window()
    open_imported_chat(qtbot, window, store, dialogue(6, "Trip plan, day"))
    window.theme_actions[choice].trigger()
    palette = theme.current
    assert palette.dark == (choice == "dark")
    for bubble in (palette.user_bubble, palette.assistant_bubble, palette.system_bubble, palette.tool_bubble,
                   palette.summary_bubble, palette.card):
        assert contrast(palette.text, bubble) >= 7
    # What Qt draws itself (menu bar, the Summary tab's document, tables) uses the same palette.
    menu_bar = window.menuBar().palette()
    assert contrast(menu_bar.color(QPalette.ColorRole.WindowText), menu_bar.color(QPalette.ColorRole.Window)) >= 7
    summary = window.inspector.summary_text.palette()
    assert contrast(summary.color(QPalette.ColorRole.Text), summary.color(QPalette.ColorRole.Base)) >= 7
    assert (summary.color(QPalette.ColorRole.Base).lightness() < 128) == (choice == "dark")
    assert contrast(palette.muted, palette.window) >= 4.5 and contrast(palette.error_text, palette.surface) >= 4.5


@pytest.mark.slow
def test_the_theme_choice_is_saved_and_restored(qtbot, make_window, store):
    window = make_window()
    window.theme_actions["dark"].trigger()
    qtbot.waitUntil(lambda: store.get_setting(APPEARANCE_KEY) == {"theme": "dark"})  # saved in the background
    window.close()
    theme.choose("light")
    reopened = make_window()
    assert theme.current is theme.DARK and reopened.theme_actions["dark"].isChecked()


@pytest.mark.slow
def test_at_1000_by_700_the_chat_gets_the_most_width_and_the_inspector_folds_away(qtbot, make_window, store):
    window = make_window()
    window.resize(1000, 700)
    qtbot.waitUntil(lambda: window.width() == 1000)
    chat_list, centre, inspector = window.splitter.sizes()
    assert centre > inspector and centre >= 400
    window.actions["inspector"].trigger()
    assert not window.inspector.isVisible()
    qtbot.waitUntil(lambda: window.splitter.sizes()[1] >= 700)


@pytest.mark.slow
def test_on_a_wide_screen_cards_keep_a_reading_width_and_long_code_wraps_beside_its_copy_chip(
        qtbot, make_window, store):
    from precis.core.model.messages import Message
    from precis.gui.conversation import READING_WIDTH
    from precis.gui.markdown import code_chip_gutter

    long_line = "curl -X POST " + " ".join(f"--data field{i}=value{i}" for i in range(40))
    window = make_window()
    open_imported_chat(qtbot, window, store, [Message(role="user", content="How?"),
                                              Message(role="assistant", content=f"Run:\n\n```\n{long_line}\n```\n")])
    window.actions["inspector"].trigger()
    window.resize(1920, 1080)
    view = window.conversation
    qtbot.waitUntil(lambda: view.viewport().width() > 1200)
    delegate = view.delegate
    row = view.rows_model.row_at(1)
    width = delegate._text_width()
    assert width <= READING_WIDTH
    doc, chips, _hidden = delegate._document(row, width)
    # The code wrapped inside the card (no line wider than the text) and the chip sits in its own gutter.
    assert doc.size().width() <= width + 1
    [(chip, code)] = chips
    assert code == long_line and width - code_chip_gutter(delegate.body_font) <= chip.left() and chip.right() <= width


@pytest.mark.slow
def test_only_the_chats_opening_system_message_is_headed_system_prompt(qtbot, make_window, store):
    """A session marker is conversation (summarized with its stretch): headed "System", not "System prompt"."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
    history = [Message(role="system", content="Session 1 - 1:56 pm on 8 May, 2023"),
               *dialogue(8, "Caroline: We talked about the lake, point"),
               Message(role="system", content="Session 2 - 6:10 pm on 22 December, 2022"),
               *dialogue(8, "Melanie: We planned the camping trip, point")]
    window = make_window()
    open_imported_chat(qtbot, window, store, history)
    view = window.conversation

    def titles(conversation) -> dict[str, str]:
        return {row.message.content: view.delegate.title(row) for row in conversation.rows() if row.message}

    shown = titles(view.rows_model)
    assert shown[history[0].content] == "System prompt" and shown[history[9].content] == "System"
    window.conversation.summarize_up_to_requested.emit(history[12].id)  # past the second marker
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    assert titles(view.rows_model)[history[0].content] == "System prompt"
    window.inspector.chain.setCurrentRow(0)
    qtbot.waitUntil(lambda: window.inspector.archived_view.rows_model.rowCount() > 0, timeout=WAIT_MS)  # made off the GUI thread
    assert titles(window.inspector.archived_view.rows_model)[history[9].content] == "System"


@pytest.mark.parametrize("choice", ["light", "dark"])
def test_an_unchecked_box_stands_out_from_the_window_in_each_theme(qtbot, choice):
    """Fusion draws a check box's edge in the window colour darkened: on the dark window it could not be seen
    (Settings' "Extra buffer types"). Non-text parts need 3:1 against what is around them (WCAG 1.4.11)."""
    from precis.core.settings import ChatSettings, ProviderChoice
    from precis.gui.settings_dialog import SettingsDialog
    from PySide6.QtWidgets import QCheckBox, QLabel, QStyle, QStyleOptionButton

    theme.choose(choice)
    dialog = SettingsDialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    dialog.show()
    label = next(lb for lb in dialog.findChildren(QLabel) if lb.text() == "Extra buffer types")
    box = label.buddy().findChild(QCheckBox)  # the field is the box in a row of its own
    assert isinstance(box, QCheckBox) and not box.isChecked()
    tabs = dialog.findChild(QTabWidget)
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(box)))
    option = QStyleOptionButton()
    option.initFrom(box)
    indicator = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    corner = box.mapTo(dialog, indicator.topLeft())
    image = dialog.grab().toImage()
    around = image.pixelColor(corner.x() - 3, corner.y() + indicator.height() // 2)
    edge = max(contrast(image.pixelColor(corner.x() + dx, corner.y() + dy), around)
               for dx in range(indicator.width()) for dy in range(indicator.height()))
    assert edge >= 3, f"the box's edge has {edge:.2f}:1 against the window"
