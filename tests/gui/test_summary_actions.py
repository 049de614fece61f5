"""Summarize now, Undo and what the inspector says of them, as someone tuning summarization uses them: one click is
one summary, and the notice beside an Undo speaks of what that Undo undoes."""

from __future__ import annotations

import pytest
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from PySide6.QtCore import Qt

from tests.gui.held_replies import HeldReplies
from tests.gui.test_window import idle, long_dialogue, open_imported_chat
from tests.timing import WAIT_MS


def test_summarize_now_waits_for_the_summary_being_made_so_a_second_click_makes_no_second_one(
        qtbot, make_window, store):
    """A summary takes seconds with a model (up to its time limit), and the button stayed enabled meanwhile: a second
    click queued a second Summarize now, which summarized what the first left, or was refused as saving nothing
    ("not summarized: a summary of 1 messages would leave ...") though the user had asked for one summary."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(60, "walk"))
    inspector = window.inspector
    assert inspector.summarize_button.isEnabled()

    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)
    # What the window is doing, in words (it said "Summarize…", read as a menu item's name).
    assert window.statusBar().currentMessage() == "Summarizing older messages…"
    for button in (inspector.summarize_button, inspector.undo_button):
        assert not button.isEnabled()
        assert button.toolTip() == "Wait for the summary to finish"
    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)  # the impatient second click
    qtbot.waitUntil(lambda: idle(window) and inspector.undo_button.isEnabled(), timeout=WAIT_MS)
    assert len(window.chat.snapshot.chain) == 1
    assert window.composer.hint.text() == ""  # no refusal of a second summary

    qtbot.mouseClick(inspector.undo_button, Qt.MouseButton.LeftButton)
    assert window.statusBar().currentMessage() == "Undoing the summary…"
    assert not inspector.undo_button.isEnabled() and not inspector.summarize_button.isEnabled()
    qtbot.mouseClick(inspector.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and inspector.summarize_button.isEnabled(), timeout=WAIT_MS)
    assert window.chat.snapshot.chain == []
    assert window.composer.hint.text() == ""  # no "No summary to undo" for the second click


def test_every_way_to_ask_for_a_summary_waits_for_the_one_being_made(qtbot, make_window, store):
    """Only the inspector's buttons waited: Chat → Summarize now (or its shortcut) and /summarize typed in the message
    box queued a second summary while one was made, and Undo the latest summary a second undo. Now the menu items
    are disabled meanwhile, and /summarize and a message's "Summarize up to here" are refused in words (the typed
    command stays in the box, instructions and all)."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    window = make_window()
    messages = long_dialogue(60, "walk")
    open_imported_chat(qtbot, window, store, messages)
    summarize, undo = window.actions["summarize"], window.actions["undo-summary"]
    assert summarize.isEnabled() and undo.isEnabled()

    summarize.trigger()
    assert window.statusBar().currentMessage() == "Summarizing older messages…"
    assert window.chat.model.state != "summarizing…"  # the rules write it: the model is not running it
    assert not summarize.isEnabled() and not undo.isEnabled()
    summarize.trigger()  # the impatient second choice (a disabled item's shortcut does nothing either)
    window.composer.set_text("/summarize keep the module names")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    refusal = "Wait for the summary to finish: Precis is summarizing older messages."
    assert window.composer.hint.text() == refusal
    assert window.composer.text() == "/summarize keep the module names"  # to send again once it is made
    window.composer.set_hint("")
    window.conversation.trigger("summarize", window.conversation.rows_model.rowCount() - 3)
    assert window.composer.hint.text() == refusal
    qtbot.waitUntil(lambda: idle(window) and summarize.isEnabled(), timeout=WAIT_MS)
    assert len(window.chat.snapshot.chain) == 1  # one summary for all those asks

    undo.trigger()
    assert window.statusBar().currentMessage() == "Undoing the summary…"
    assert not summarize.isEnabled() and not undo.isEnabled()
    window.composer.set_text("/undo-summary")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert window.composer.hint.text() == "Wait for the summary to finish: Precis is undoing the summary."
    window.inspector.undo_requested.emit()  # as the notice's Undo would
    qtbot.waitUntil(lambda: idle(window) and undo.isEnabled(), timeout=WAIT_MS)
    assert window.chat.snapshot.chain == []  # one undo, not two (a second would have said "No summary to undo")


def test_a_summary_being_made_on_one_chat_leaves_summarize_now_free_on_the_others(qtbot, make_window, store, server):
    """The wait for a summary being made was the window's, not the chat's: after switching to another chat
    mid-summary, Summarize now stayed disabled there (and /summarize refused) until the first chat's summary ended.
    The summary is held while the test switches: the model writing it (a server on loopback) waits for the test."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "hybrid", "enabled": False})
    held = HeldReplies(OpenAICompatProvider(server.base_url, "m", "sk-test", window=32_768))
    window = make_window(held)
    first = open_imported_chat(qtbot, window, store, long_dialogue(60, "first"))
    second = store.import_chat("second chat", long_dialogue(60, "second"))
    window.refresh_chats()
    inspector, summarize = window.inspector, window.actions["summarize"]

    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)
    assert not inspector.summarize_button.isEnabled() and not summarize.isEnabled()
    window.open_chat(second)
    qtbot.waitUntil(lambda: window.chat.is_open(second) and window.chat.snapshot is not None
                    and not window.chat.chat_runner.busy, timeout=WAIT_MS)
    assert inspector.summarize_button.isEnabled() and summarize.isEnabled()
    assert inspector.summarize_button.toolTip() != "Wait for the summary to finish"
    assert window.chat.summary_refusal("summarize") is None  # /summarize and a message's menu are not refused

    window.open_chat(first)  # back while its summary is still being made: it waits for that one
    qtbot.waitUntil(lambda: window.chat.is_open(first) and window.chat.snapshot is not None, timeout=WAIT_MS)
    assert not inspector.summarize_button.isEnabled() and not summarize.isEnabled()
    assert inspector.undo_button.toolTip() == "Wait for the summary to finish"

    window.open_chat(second)
    qtbot.waitUntil(lambda: window.chat.is_open(second) and idle(window), timeout=WAIT_MS)
    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)  # the second chat's own summary
    assert window.statusBar().currentMessage() == "Summarizing older messages…"
    assert not inspector.summarize_button.isEnabled()
    held.release.set()
    qtbot.waitUntil(lambda: idle(window) and inspector.undo_button.isEnabled(), timeout=WAIT_MS)
    assert window.actions["undo-summary"].isEnabled() and len(window.chat.snapshot.chain) == 1
    qtbot.waitUntil(lambda: len(store.load_records(first)) == 1, timeout=WAIT_MS)  # the first chat's, made on its own
    assert window.composer.hint.text() == ""


def summarize_up_to(qtbot, window, message_id: str) -> None:
    """Summarize up to here (a message's context menu), then wait for it."""
    window.summarize_now(up_to=message_id)
    qtbot.waitUntil(lambda: idle(window) and window.inspector.undo_button.isEnabled(), timeout=WAIT_MS)


def test_the_notice_beside_undo_speaks_of_the_summary_undo_undoes(qtbot, make_window, store):
    """At the chain's maximum depth Summarize now first folds the chain. The notice then said "Older messages were
    summarized automatically (merge at maximum depth)" beside an Undo that undid the user's own summary, and a notice
    of an automatic summary stayed beside the Undo of a later summary of the user's."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False, "max_depth": 2})
    window = make_window()
    messages = long_dialogue(60, "walk")
    open_imported_chat(qtbot, window, store, messages)
    inspector = window.inspector
    summarize_up_to(qtbot, window, messages[9].id)
    summarize_up_to(qtbot, window, messages[19].id)
    assert not inspector.notice_box.isVisible()  # the result card tells of the user's own summaries
    assert [bool(r.merged_ids) for r in window.chat.snapshot.chain] == [False, False]

    summarize_up_to(qtbot, window, messages[29].id)
    fold, latest = window.chat.snapshot.chain
    assert fold.merged_ids and latest.trigger == "manual"
    notice = inspector.notice.text()
    assert inspector.notice_box.isVisible()
    assert "automatically" not in notice
    assert ("folded into one (the chain had reached its maximum depth). Undo undoes this summary, then the fold."
            in notice)
    qtbot.mouseClick(inspector.notice_undo, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    assert window.chat.snapshot.chain[0].id == fold.id  # that Undo undid this summary, as said; the fold is next
    assert not inspector.notice_box.isVisible()


def test_a_fold_of_a_single_summary_is_told_as_condensed_not_folded_into_one(qtbot, make_window, store):
    """At a maximum depth of 1, Summarize now first re-condenses the one summary there is; the notice said "the
    summaries before it were first folded into one", of a single summary."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False, "max_depth": 1})
    window = make_window()
    messages = long_dialogue(60, "walk")
    open_imported_chat(qtbot, window, store, messages)
    summarize_up_to(qtbot, window, messages[9].id)
    summarize_up_to(qtbot, window, messages[19].id)
    fold = window.chat.snapshot.chain[0]
    assert len(fold.merged_ids) == 1
    notice = window.inspector.notice.text()
    assert ("To make room for it, the summary before it was first condensed into a shorter one (the chain had "
            "reached its maximum depth)." in notice)
    assert "summaries" not in notice


def test_a_summary_of_the_users_own_takes_the_place_of_an_automatic_ones_notice(qtbot, make_window, store):
    """Opened between the trigger and the window (88%), the chat is summarized automatically and the notice says so;
    a summary the user makes next hides it, as its Undo now undoes the user's summary."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    messages = long_dialogue(120, "walk")
    chat_id = store.import_chat("imported chat", messages, settings={"context_window": 9000})
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    inspector = window.inspector
    assert "summarized automatically" in inspector.notice.text() and inspector.notice_box.isVisible()

    visible = [m for m in window.chat.snapshot.messages if m.id not in window.chat.snapshot.hidden]
    summarize_up_to(qtbot, window, visible[2].id)
    assert len(window.chat.snapshot.chain) == 2
    assert not inspector.notice_box.isVisible()  # its Undo would undo this summary, not the automatic one
    assert inspector.result_card.isVisible()


def test_a_model_summary_stopped_by_its_setting_is_told_as_a_refusal_not_a_fault(qtbot, make_window, store):
    """With "Stop if the model's summary fails" on and the summarizer out of reach (a closed port on this computer),
    Summarize now said "An error inside Precis (SummarizationFailed: ...); please report it"."""
    from tests.conftest import free_port

    address = f"http://127.0.0.1:{free_port()}/v1"
    store.set_setting(SUMMARIZATION_KEY, {"mode": "hybrid", "enabled": False, "summarizer": "other",
                                          "summarizer_provider": "openai", "summarizer_base_url": address,
                                          "abort_on_failure": True})
    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(40, "walk"))
    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    hint = window.composer.hint
    qtbot.waitUntil(lambda: idle(window) and hint.text() != "", timeout=WAIT_MS)
    assert hint.text().startswith("not summarized: the model's summary failed and “Stop if the model's summary "
                                  "fails” is on, so the rules did not write it")
    assert f"(summarizer unavailable: cannot connect to {address}" in hint.toolTip().replace("\xa0", " ")  # on hover
    assert window.chat.snapshot.chain == []


def test_the_summarization_settings_say_when_they_apply_and_do_as_they_say(qtbot, make_window, store):
    """Settings → Summarization did not say when a change applies: lowering "Summarize at" summarized the open chat
    the moment OK was pressed, with nothing in the dialog saying it would. Its note says so now, and this is what
    happens: at OK the open chat over the new trigger is summarized, and what was summarized stays so."""
    from precis.gui.settings_dialog import WHEN_APPLIED

    from tests.gui.conftest import open_settings

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    messages = long_dialogue(120, "walk")
    chat_id = store.import_chat("imported chat", messages, settings={"context_window": 14_000})  # at 55%
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    summarize_up_to(qtbot, window, messages[9].id)
    hidden_before = set(window.chat.snapshot.hidden)

    dialog = open_settings(qtbot, window)
    for note in (dialog.policy_note.text(), WHEN_APPLIED):
        assert "Applied at OK" in note and "the open chat at OK, the others when next opened" in note
    assert WHEN_APPLIED in dialog.policy_note.text()
    fields = dialog.policy_fields.editors
    for name, value in (("trigger_ratio", "40"), ("reset_ratio", "30"), ("target_ratio", "20")):
        fields[name].setText(value)
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: idle(window) and any(r.trigger == "threshold" for r in window.chat.snapshot.chain),
                    timeout=WAIT_MS)
    assert hidden_before <= set(window.chat.snapshot.hidden)  # summarized before, summarized still
    assert "summarized automatically (the context reached the trigger)" in window.inspector.notice.text()


@pytest.mark.model
@pytest.mark.slow
def test_the_status_bar_says_the_model_is_summarizing_while_the_summarizer_runs_it(qtbot, make_window, store,
                                                                                  local_provider):
    """In hybrid mode on the embedded model, the status bar said "not loaded yet" while the summary ran that model
    (and loaded it): it says "summarizing…" meanwhile, then "ready"."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "hybrid", "enabled": False})
    local_provider.close()  # not loaded: the summary starts it
    window = make_window(local_provider)
    open_imported_chat(qtbot, window, store, long_dialogue(40, "walk"))
    model = window.status.model
    assert model.text() == "local · SmolLM2-135M-Instruct · not loaded yet"

    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    assert model.text() == "local · SmolLM2-135M-Instruct · summarizing…"
    assert "writing a summary" in model.toolTip()
    qtbot.waitUntil(lambda: idle(window) and window.inspector.undo_button.isEnabled(), timeout=WAIT_MS)
    [record] = window.chat.snapshot.chain
    assert record.written_by != "rules"  # the model wrote it (what the state said)
    assert model.text() == "local · SmolLM2-135M-Instruct · ready"  # the summary loaded it

    qtbot.mouseClick(window.inspector.undo_button, Qt.MouseButton.LeftButton)  # an undo runs no model
    assert model.text().endswith("· ready")
