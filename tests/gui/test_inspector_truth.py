"""The inspector shows what the model sees: the current summary after an undo, and copies the worker cannot change."""

from __future__ import annotations

from html import escape

import pytest
from precis.core.model.messages import Message
from precis.core.model.records import SummaryRecord
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.summary.summarizers import NO_ROOM
from precis.gui import theme
from precis.gui.inspector_record import ResultCard
from PySide6.QtCore import Qt

from tests.fakes import ScriptedProvider
from tests.gui.test_window import dialogue, idle, long_dialogue, open_imported_chat
from tests.timing import WAIT_MS


def summarize(qtbot, window) -> None:
    before = [r.id for r in window.chat.snapshot.chain]
    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and [r.id for r in window.chat.snapshot.chain] != before, timeout=WAIT_MS)


def test_after_undo_the_summary_tab_shows_the_current_record_not_the_undone_one(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    window = make_window()
    open_imported_chat(qtbot, window, store, dialogue(40, "Budget review, item"))
    inspector = window.inspector
    halfway = window.chat.snapshot.messages[19]
    window.conversation.summarize_up_to_requested.emit(halfway.id)  # "Summarize up to here"
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    summarize(qtbot, window)
    newest = window.chat.snapshot.chain[-1]
    assert newest.depth == 2
    inspector.chain.setCurrentRow(0)  # newest first
    assert inspector.after_text.toPlainText() == newest.text

    qtbot.mouseClick(inspector.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and newest.id not in {r.id for r in window.chat.snapshot.chain}, timeout=WAIT_MS)
    # The undone record's text is gone from every tab; what is shown is what is selected (if anything).
    current = {r.id: r for r in window.chat.snapshot.chain}.get(inspector.selected_record_id())
    assert inspector.after_text.toPlainText() == (current.text if current else "")
    assert newest.text not in inspector.summary_text.toPlainText()


@pytest.mark.slow
def test_snapshots_hold_copies_the_engine_cannot_change(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(16, "Release checklist, step"))
    summarize(qtbot, window)
    shown = window.chat.snapshot.chain[0]
    live = window.chat.session.engine.chain()[0]
    assert shown == live and shown is not live and shown.facets is not live.facets
    qtbot.mouseClick(window.inspector.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and not window.chat.snapshot.chain, timeout=WAIT_MS)
    # The engine marked its record undone; the copy the GUI held stays as it was shown.
    assert live.status != "active" and shown.status == "active"


@pytest.mark.slow
def test_the_inspector_lists_what_was_recalled_and_a_click_shows_it(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    history = [Message(role="user", content="Our lighthouse keeper Marguerite retires in October."),
               *dialogue(40, "Budget review, item")[1:],
               Message(role="user", content="When does Marguerite, the lighthouse keeper, retire?")]
    window = make_window()
    open_imported_chat(qtbot, window, store, history)
    window.conversation.summarize_up_to_requested.emit(window.chat.snapshot.messages[19].id)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    fact = history[0]
    assert window.chat.snapshot.hidden.get(fact.id)
    inspector = window.inspector
    recalled = inspector.recalled
    assert recalled.count() >= 1 and inspector.recalled_box.isVisible()
    item = recalled.item(0)
    # Who and the text, readable in the list (not the bracketed header the model reads); all of it in the tooltip.
    assert "Our lighthouse keeper Marguerite retires in October." in item.text() and "[Recalled" not in item.text()
    assert item.toolTip().startswith("[Recalled: ") and item.toolTip().endswith(fact.content)
    assert window.chat.snapshot.usage.by_kind["recalled"] > 0
    shown: list[str] = []
    inspector.message_selected.connect(shown.append)
    inspector.details.setCurrentIndex(0)
    qtbot.mouseClick(recalled.viewport(), Qt.MouseButton.LeftButton, pos=recalled.visualItemRect(item).center())
    assert shown == [fact.id]
    # The conversation shows the summary that holds it; the inspector that summary's archived messages, at it.
    record_id = window.chat.snapshot.hidden[fact.id]
    assert window.conversation.currentIndex().row() == window.conversation.rows_model.row_of(f"summary:{record_id}")
    assert inspector.selected_record_id() == record_id
    assert inspector.details.currentWidget() is inspector.archived_view
    archived = inspector.archived_view  # its rows are made off the GUI thread: at the fact once they are shown
    qtbot.waitUntil(lambda: archived.rows_model.row_of(fact.id) is not None, timeout=WAIT_MS)
    assert archived.currentIndex().row() == archived.rows_model.row_of(fact.id)


@pytest.mark.slow
def test_a_model_summary_that_fell_back_says_why_in_the_inspector(qtbot, make_window, store):
    # A scripted model: its narrative is the markup the embedded model once wrote for LoCoMo ("#1", "<br>"), which a
    # real model does not write on demand.
    store.set_setting(SUMMARIZATION_KEY, {"mode": "hybrid", "keep_recent": 4})
    window = make_window(ScriptedProvider(replies=["#1. <br>. ]["]))
    open_imported_chat(qtbot, window, store, long_dialogue(16, "Release checklist, step"))
    summarize(qtbot, window)
    [record] = window.chat.snapshot.chain
    assert record.fallback_used and "punctuation, numbering or markup" in record.fallback_reason
    why = f"Fell back to rules: {record.fallback_reason}"
    inspector = window.inspector
    inspector.chain.setCurrentRow(0)
    # Where the user reads the summary, before its text; on the result card; in the chain's entry and its tooltip.
    assert inspector.summary_text.toPlainText().splitlines()[1] == why
    assert escape(why) in inspector.result_card.label.text()
    entry = inspector.chain.item(0)
    assert " · fallback" in entry.text() and f"\nFallback: yes: {record.fallback_reason}\n" in entry.toolTip()
    # And on the summary's card in the conversation, whose header says "fallback".
    conversation = window.conversation.rows_model
    card = conversation.index(conversation.row_of(f"summary:{record.id}"))
    assert card.data(Qt.ItemDataRole.ToolTipRole) == why


@pytest.mark.slow
def test_recall_follows_the_global_setting_and_a_chats_own_switch(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4, "recall_ratio": 0.05})
    history = [Message(role="user", content="Our lighthouse keeper Marguerite retires in October."),
               *dialogue(40, "Budget review, item")[1:],
               Message(role="user", content="When does Marguerite, the lighthouse keeper, retire?")]
    window = make_window()

    def open_and_summarize(settings: dict) -> None:
        chat_id = store.import_chat("lighthouse", history, settings={"summarization": settings})
        window.refresh_chats()
        window.open_chat(chat_id)
        qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == chat_id, timeout=WAIT_MS)
        window.conversation.summarize_up_to_requested.emit(history[19].id)
        qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)

    open_and_summarize({})  # the global 5%
    usage = window.chat.snapshot.usage
    assert 0 < usage.by_kind["recalled"] <= usage.available * 0.05 and window.inspector.recalled_box.isVisible()
    open_and_summarize({"recall_enabled": False})  # this chat's own switch
    assert window.chat.snapshot.usage.by_kind["recalled"] == 0 and not window.chat.snapshot.recalled
    assert window.inspector.recalled_box.isHidden()


@pytest.mark.slow
def test_a_fold_of_summaries_counts_the_messages_it_stands_for(qtbot, make_window, store, capsys):
    """Opening the raw Claude Code session folds its imported compaction (404 messages) to make room for the next
    summary. The fold's row said 'SUMMARY · depth 1 · 0 messages' and `precis history` '0 messages → 1 summary':
    a fold archives no message itself, its summaries do."""
    from precis.core.cli.main import main
    from precis.core.storage.importers import import_file
    from precis.gui.message_delegate import MessageDelegate

    from tests.conftest import CLAUDE_CODE_RAW

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = import_file(store, CLAUDE_CODE_RAW).chat_id
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 2, timeout=120_000)
    fold, latest = window.chat.snapshot.chain
    assert fold.merged_ids
    titles = [MessageDelegate.title(row) for row in window.conversation.rows_model.rows() if row.record is not None]
    assert titles[0].startswith("SUMMARY · depth 1 · 404 messages · ") and titles[0].endswith(" tokens · fold")
    assert titles[1].startswith(f"SUMMARY · depth 2 · {len(latest.covered)} messages · ")
    # What the fold is, in its entry, and on hover what it folds (it said its newest summary's mode).
    [folded] = [r.kind for r in window.chat.session.engine.archive.records if r.id in fold.merged_ids]
    fold_entry = window.inspector.chain.item(1)  # newest first
    assert " tokens · fold" in fold_entry.text()
    assert f"\nMode: fold of 1 summary ({folded}), written by rules\n" in fold_entry.toolTip()
    assert f" tokens · {latest.mode}" in window.inspector.chain.item(0).text() and latest.mode == "rule"
    assert main(["context", chat_id]) == 0  # precis context too (it said the fold's newest summary's mode)
    lines = capsys.readouterr().out.split("summary chain: 2\n")[1].splitlines()
    [fold_line] = [line for line in lines if line.startswith("  1. ")]
    [latest_line] = [line for line in lines if line.startswith("  2. ")]
    assert "  404 messages  " in fold_line and " tokens  fold  (" in fold_line
    assert f"  {len(latest.covered):,} messages  " in latest_line and " tokens  rule  (" in latest_line
    for undone, said in ((latest, f"Summary undone: {len(latest.covered)} messages are back in the context."),
                         (fold, "Summary undone: the summary it folded is back in the chain.")):
        qtbot.mouseClick(window.inspector.undo_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda gone=undone.id: idle(window) and gone not in {r.id for r in window.chat.snapshot.chain},
                        timeout=WAIT_MS)
        assert window.statusBar().currentMessage() == said
    window.chat.finish_background_work()

    capsys.readouterr()
    assert main(["history", chat_id]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if "merge: the summaries used their share" in line]
    assert "messages 1-404  404 messages → 1 summary" in line
    assert f"fold of 1 summary ({folded}), written by rules" in line


@pytest.mark.slow
def test_the_gauge_and_the_recalled_list_say_which_prompt_each_is_about(qtbot, make_window, store):
    """After a reply the gauge (the next prompt: nothing recalled yet) read 'Recalled 0' beside 'Recalled for your
    last message: 13'; each now says which prompt it describes. A scripted reply: the recall is the app's own."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    history = [Message(role="user", content="Our lighthouse keeper Marguerite retires in October."),
               *dialogue(40, "Budget review, item")]
    window = make_window(ScriptedProvider(replies=["In October."]))
    open_imported_chat(qtbot, window, store, history)
    window.conversation.summarize_up_to_requested.emit(window.chat.snapshot.messages[19].id)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    window.submit("When does Marguerite, the lighthouse keeper, retire?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.messages[-1].content == "In October.",
                    timeout=WAIT_MS)
    inspector = window.inspector
    assert window.chat.snapshot.usage.by_kind["recalled"] == 0 and inspector.recalled.count() >= 1
    assert inspector.total_label.text().startswith("Next prompt: ")
    assert inspector.legend_values["recalled"].text() == "0"
    assert "next prompt" in inspector.legend_labels["recalled"].toolTip()
    assert inspector.recalled_title.text().startswith("Recalled for your last message: ")


@pytest.mark.parametrize(("reason", "instructions", "alarming"), [
    (NO_ROOM, None, False),  # the trail took the cap: the rules' summary is the whole answer
    (NO_ROOM, "keep the file names", True),  # the user's instructions were not followed
    ("cannot connect to http://127.0.0.1:9/v1", None, True),
])
def test_a_fallback_is_shown_as_a_failure_only_when_something_failed(qtbot, reason, instructions, alarming):
    """A large coding session at 8k in hybrid mode leaves no room for the model's narrative beside its trail: every
    summary fell back, and the card said so in the error colour as if each had failed."""
    card = ResultCard()
    qtbot.addWidget(card)
    record = SummaryRecord(depth=1, mode="hybrid", text="Summary of 2 earlier messages", fallback_used=True,
                           fallback_reason=reason, instructions=instructions, tokens_before=9000, tokens_after=3000)
    card.show_record(record, automatic=True, messages=2)
    text = card.label.text()
    assert escape(reason) in text
    assert (f"color:{theme.current.error_text}" in text) is alarming
