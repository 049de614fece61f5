"""The composer hint shows a server's error text as text: markup in it is neither rendered nor loaded."""

from __future__ import annotations

from precis.gui.app import application
from precis.gui.composer import Composer

from tests.gui.test_window import open_new_chat


def test_an_html_error_body_is_shown_literally_and_the_hint_does_not_grow(qtbot, tmp_path):
    application()
    picture = tmp_path / "big.png"
    from PySide6.QtGui import QColor, QImage
    image = QImage(400, 338, QImage.Format.Format_RGB32)
    image.fill(QColor("red"))
    image.save(str(picture))
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(700, 200)
    composer.show()
    composer.set_hint("Server error 502")
    qtbot.waitExposed(composer)
    line = composer.hint.fontMetrics().lineSpacing()
    error = f'<html><body><h1>Bad gateway</h1><img src="{picture}"></body></html>'
    composer.set_hint(error, error=True, details=error)
    assert composer.hint.text() == error  # shown as it came, tags and all
    qtbot.wait(50)
    # A few lines of text (the path wraps: longer under a test worker's folder), not a 338 px picture.
    assert composer.hint.height() <= 5 * line < image.height() // 4
    assert "&lt;img" in composer.hint.toolTip()  # the tooltip shows the markup as text too



def test_a_long_failure_is_read_across_the_box_and_the_token_count_stays_whole(qtbot, make_window):
    """In a 950 px window a store failure stood beside the buttons in a column a word wide, taller than the message
    box, and cut the draft's count to "17 tokens · 4,943 l"."""
    window = make_window()
    window.resize(950, 750)
    composer = window.composer
    composer.show_token_count("17 tokens · 4,943 left")
    composer.set_hint("Not sent: could not save the message: /home/someone/.local/share/Precis/precis.db is busy "
                      "(another program kept it locked for over 30 s). Nothing was changed; try again", error=True)
    qtbot.wait(50)
    count, hint = composer.token_count, composer.hint
    assert count.width() >= count.sizeHint().width()
    assert hint.width() > composer.width() * 3 // 4
    assert hint.height() <= hint.heightForWidth(hint.width()) + hint.fontMetrics().lineSpacing()
    composer.set_hint("")
    assert not hint.isVisible()  # no empty line under the box


def test_a_mistyped_command_is_one_hint_naming_the_command_meant_not_every_command(qtbot, make_window, store):
    """The window shares the terminal's rule (core/chat/commands.py): /hlep was hinted "Unknown command /hlep.
    Commands: /regenerate /continue /use …", all of them and none picked out."""
    window = make_window()
    chat_id = open_new_chat(qtbot, window, store)
    window.submit("/hlep")
    assert window.composer.hint.text() == ("Unknown command /hlep. Did you mean /help? /help lists the commands; // "
                                           "starts a message with a slash.")
    assert "/help" in window.composer.hint.toolTip() and "/summarize" in window.composer.hint.toolTip()  # all, on hover
    assert store.load_messages(chat_id) == []  # never sent
