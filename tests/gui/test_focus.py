"""Typing at start is not lost: the first keystrokes went to the "New chat" button (issue 22, item 1)."""

from tests.timing import WAIT_MS


def test_the_message_box_has_the_focus_at_start_and_after_a_new_chat(qtbot, make_window):
    window = make_window()
    assert window.focusWidget() is window.composer.edit
    with qtbot.waitSignal(window.snapshot_shown, timeout=WAIT_MS):
        window.new_chat()
    assert window.focusWidget() is window.composer.edit
