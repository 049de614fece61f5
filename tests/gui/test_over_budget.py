"""Over the budget and summaries that fail: the inspector says what is sent, what is cut, what the next message
does and what to do; ignored instructions and a summary that saves almost nothing are not shown as a success."""

from __future__ import annotations

import pytest
from precis.core.model.records import SummaryRecord, SummaryResult
from precis.core.providers.base import ProviderError
from precis.core.settings import SUMMARIZATION_KEY
from PySide6.QtCore import Qt

from tests.fakes import ScriptedProvider
from tests.gui.test_window import idle
from tests.timing import WAIT_MS


def long_dialogue(store, n: int, window: int) -> str:
    from precis.core.model.messages import Message

    history = [Message(role="user" if i % 2 == 0 else "assistant",
                       content=f"Step {i} of the migration plan: " + "move the billing tables and check them. " * 12)
               for i in range(n)]
    chat_id = store.import_chat("migration", history)
    from precis.core.settings import ChatSettings
    store.update_chat_settings(chat_id, ChatSettings(context_window=window))
    return chat_id


@pytest.mark.slow
def test_over_the_budget_the_inspector_says_what_is_sent_cut_next_and_what_to_do(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    chat_id = long_dialogue(store, 40, window=1024)
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    usage = window.chat.snapshot.usage
    assert usage.ratio > 1
    note = window.inspector.over_budget
    assert note.isVisible()
    text = note.text()
    assert f"Over the budget: {usage.total:,} tokens for {usage.available:,}. Only what fits is sent" in text
    assert "oldest messages left out" in text
    assert "Automatic summaries are off: the next message is sent cut like this." in text
    assert "Summarize now" in text

    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    assert window.chat.snapshot.usage.ratio <= 1  # the summary made room: the explanation goes
    assert not note.isVisible()


@pytest.mark.slow
def test_instructions_the_summarizer_could_not_follow_are_reported(qtbot, make_window, store):
    # Fault injected: the model fails, so the summary falls back to the rules, which cannot follow instructions.
    store.set_setting(SUMMARIZATION_KEY, {"mode": "llm", "keep_recent": 4})
    provider = ScriptedProvider(replies=[ProviderError("the model is not reachable")] * 4)
    chat_id = long_dialogue(store, 16, window=8192)
    window = make_window(provider=provider)
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.inspector.instructions.setText("keep every table name")
    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    record = window.chat.snapshot.chain[-1]
    assert record.fallback_used and record.instructions == "keep every table name"
    card = window.inspector.result_card.label.text()
    assert "Your instructions could not be followed: the rules summarized instead" in card


@pytest.mark.slow
def test_a_summary_that_saves_almost_nothing_is_not_shown_as_a_success(qtbot, make_window):
    window = make_window()
    # The case: 31 of 1,752 tokens saved.
    little = SummaryRecord(tokens_before=1752, tokens_after=1721, trigger="manual")
    assert little.result().saves_little and not SummaryResult(10, 1, 1752, 380).saves_little
    window.inspector.result_card.show_record(little, automatic=False)
    card = window.inspector.result_card.label.text()
    assert "saved almost nothing" in card and "Undo last brings the messages back" in card
    window.inspector.result_card.show_record(SummaryRecord(tokens_before=1752, tokens_after=380), automatic=False)
    card = window.inspector.result_card.label.text()
    assert "almost nothing" not in card and "Undo last" not in card


@pytest.mark.slow
def test_a_message_larger_than_the_budget_is_named_with_its_tokens_before_and_after_the_cut(qtbot, make_window, store):
    from precis.core.model.messages import Message
    from precis.core.settings import ChatSettings

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    paste = "Pasted log line with a request id and a status code. " * 600  # far over a 2,048-token window
    chat_id = store.import_chat("paste", [Message(role="user", content="Please read this log."),
                                          Message(role="assistant", content="Send it."),
                                          Message(role="user", content=paste)])
    store.update_chat_settings(chat_id, ChatSettings(context_window=2048))
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.usage is not None, timeout=WAIT_MS)
    engine = window.chat.session.engine
    before = engine.counter.raw_message_tokens(engine.messages[2])
    after = next(i.tokens for i in engine.assemble().items if i.source_id == engine.messages[2].id)
    assert after < engine.budget.available < before
    assert f"message 2 (user) cut from {before:,} to {after:,} tokens" in window.inspector.over_budget.text()


def test_over_the_budget_by_old_tool_outputs_the_headline_shows_what_is_sent(qtbot, make_window, store):
    # Issue 22: "Next prompt: 9,894 / 7,680 tokens (129%)" in red over a panel saying 2,220 tokens are sent, that
    # shrinking old tool outputs makes it fit, and to start a new chat.
    from precis.core.model.messages import Message, ToolCall
    from precis.core.settings import ChatSettings

    history = [Message(role="user", content="Read the two modules.")]
    for n in (1, 2):
        call = ToolCall(id=f"read-{n}", name="Read", arguments={"file_path": f"/src/module_{n}.py"})
        history += [Message(role="assistant", content="", tool_calls=(call,)),
                    Message(role="tool", name="Read", tool_call_id=call.id,
                            content="\n".join(f"{i}\tdef function_{n}_{i}(): return {i}" for i in range(80)))]
    history += [Message(role="assistant", content="Both modules define plain functions."),
                Message(role="user", content="Thanks. What next?")]
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = store.import_chat("two modules", history)
    store.update_chat_settings(chat_id, ChatSettings(context_window=2048, reserve_output=256))
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.usage is not None, timeout=WAIT_MS)
    snapshot = window.chat.snapshot
    sent = window.chat.session.engine.assemble().tokens
    assert snapshot.usage.total > snapshot.usage.available >= sent
    headline = window.inspector.total_label.text()
    assert headline.startswith(f"Next prompt: {sent:,} / {snapshot.usage.available:,} tokens "
                               f"({sent / snapshot.usage.available:.0%})")
    note = window.inspector.over_budget.text()
    assert note.count("\n") == 0 and f"{sent:,} of {snapshot.usage.available:,} tokens are sent" in note
    assert "new chat" not in note and "Summarize now" not in note
