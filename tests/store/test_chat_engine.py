"""A chat's engine rebuilt from the store: settings apply, and old messages are never tokenized twice."""

from __future__ import annotations

import pytest
from precis.core.context.recall_index import RecallIndex
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.providers.local import LocalProvider
from precis.core.settings import SUMMARIZATION_KEY, SummarizationPolicy
from precis.core.storage.chats import restore_engine, save_token_counts
from precis.core.storage.store import attach_engine, open_store


def chat_with_history(store, n=40):
    chat_id = store.create_chat("history", {"system_prompt": "Be terse.", "summarization": {"keep_recent": 4}})
    for i in range(n):
        store.add_message(chat_id, Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i} " * 20))
    return chat_id


@pytest.mark.slow
def test_settings_and_global_policy_shape_the_engine(tmp_path):
    with open_store(tmp_path) as store:
        chat_id = chat_with_history(store)
        store.set_setting(SUMMARIZATION_KEY, {"trigger_ratio": 0.9, "reset_ratio": 0.5})
        engine, settings = restore_engine(store, chat_id, default_window=4096)
    assert engine.budget.window == 4096 and engine.system_prompt == "Be terse."
    assert engine.policy.keep_recent == 4 and engine.policy.trigger_ratio == 0.9


def test_a_chat_opens_on_summarization_settings_that_do_not_hold_together_saying_why(tmp_path, caplog):
    """The dialog refuses such settings, but the global ones may change under a chat's own, or be written by hand:
    the chat still opens, on the global settings, else the defaults, and the log names the setting."""
    with open_store(tmp_path) as store:
        chat_id = chat_with_history(store, n=4)  # its own keep_recent: 4
        store.set_setting(SUMMARIZATION_KEY, {"keep_recent": 8, "min_recent": 6})  # 6 is more than the chat's 4
        engine, _ = restore_engine(store, chat_id, default_window=4096)
        assert (engine.policy.keep_recent, engine.policy.min_recent) == (8, 6)
        assert "using the global ones" in caplog.text
        store.set_setting(SUMMARIZATION_KEY, {"trigger_ratio": 0.6})  # below the default re-arm point, 0.7
        engine, _ = restore_engine(store, chat_id, default_window=4096)
    assert engine.policy == SummarizationPolicy()
    assert "Re-arm below" in caplog.text and "using the defaults" in caplog.text


@pytest.mark.slow
def test_reopening_a_chat_tokenizes_no_old_message(tmp_path, monkeypatch):
    with open_store(tmp_path) as store:
        chat_id = chat_with_history(store)
        first, _ = restore_engine(store, chat_id, default_window=65536)
        first.usage()
        save_token_counts(store, chat_id, first)
        counter = TokenCounter()
        tokenized: list[str] = []
        original = counter.count_text
        monkeypatch.setattr(counter, "count_text", lambda text: tokenized.append(text) or original(text))
        second, _ = restore_engine(store, chat_id, default_window=65536, counter=counter)
    assert second.usage().total == first.usage().total
    assert not [t for t in tokenized if t.startswith("message ")], "stored counts should have been used"


def model_tokenizer_counter(calls: list[str]) -> TokenCounter:
    """An exact counter on the local model's own tokenizer (its vocabulary alone, no weights), noting each text the
    tokenizer is asked to count."""
    provider = LocalProvider()

    def counting(text: str) -> int:
        calls.append(text)
        return provider.count_tokens(text)

    return TokenCounter(exact=counting, exact_name=provider.tokenizer_name())


@pytest.mark.slow
def test_reopening_a_chat_with_the_models_tokenizer_tokenizes_no_old_message(tmp_path):
    """Opening a long chat in the window counts with the model's tokenizer: the second opening must not count again."""
    with open_store(tmp_path) as store:
        chat_id = chat_with_history(store)
        first_calls: list[str] = []
        first, _ = restore_engine(store, chat_id, default_window=65536, counter=model_tokenizer_counter(first_calls))
        first.usage()
        save_token_counts(store, chat_id, first)
        second_calls: list[str] = []
        second, _ = restore_engine(store, chat_id, default_window=65536, counter=model_tokenizer_counter(second_calls))
        assert second.usage().total == first.usage().total
    assert len([t for t in first_calls if t.startswith("message ")]) == 40
    assert not [t for t in second_calls if t.startswith("message ")], "the saved exact counts should have been used"


@pytest.mark.slow
def test_counts_saved_by_another_tokenizer_are_not_used_and_are_replaced(tmp_path):
    with open_store(tmp_path) as store:
        chat_id = chat_with_history(store)
        estimated, _ = restore_engine(store, chat_id, default_window=65536)
        estimate = estimated.usage().total
        save_token_counts(store, chat_id, estimated)

        calls: list[str] = []
        exact, _ = restore_engine(store, chat_id, default_window=65536, counter=model_tokenizer_counter(calls))
        assert exact.usage().total != estimate  # the two tokenizers disagree on this text, so a reuse would show
        assert len([t for t in calls if t.startswith("message ")]) == 40, "the estimates must not stand for counts"
        save_token_counts(store, chat_id, exact)

        # Now the saved counts are the model's: the estimate counts for itself again, and gets what it got before.
        counter = TokenCounter()
        tokenized: list[str] = []
        original = counter.count_text
        counter.count_text = lambda text: tokenized.append(text) or original(text)
        again, _ = restore_engine(store, chat_id, default_window=65536, counter=counter)
        assert again.usage().total == estimate
        assert len([t for t in tokenized if t.startswith("message ")]) == 40


@pytest.mark.slow
def test_saving_counts_reads_the_stored_counts_once_however_long_the_chat(tmp_path, monkeypatch):
    """Reading the stored counts once per message made `precis context` quadratic (18 s at 10,000 messages)."""
    with open_store(tmp_path) as store:
        chat_id = chat_with_history(store, n=60)
        engine, _ = restore_engine(store, chat_id, default_window=65536)
        engine.usage()
        reads: list[str] = []
        original = store.token_counts
        monkeypatch.setattr(store, "token_counts", lambda cid, name: reads.append(cid) or original(cid, name))
        save_token_counts(store, chat_id, engine)
        assert reads == [chat_id]
        assert len(original(chat_id, engine.counter.name)) == 60


@pytest.mark.slow
def test_recall_searches_the_stores_index_of_this_chats_archived_messages(tmp_path):
    """The engine of a stored chat recalls through SQLite FTS5 (BM25), never another chat's or a visible message."""
    with open_store(tmp_path) as store:
        other = store.create_chat("other", {})
        store.add_message(other, Message(role="user", content="The greyhound in the other chat is called Rex."))
        chat_id = store.create_chat("dogs", {"context_window": 2048, "reserve_output": 256})
        fact = Message(role="user", content="My sister adopted a grey greyhound called Biscuit in Lisbon.")
        store.add_message(chat_id, fact)
        for i in range(30):
            store.add_message(chat_id, Message(role="user" if i % 2 else "assistant",
                                               content=" ".join(f"filler{i}x{j}" for j in range(20))))
        engine, _ = restore_engine(store, chat_id, default_window=2048)
        detach = attach_engine(store, chat_id, engine)
        engine.summarize_now()
        detach()
        assert engine.is_archived(fact.id)
        question = Message(role="user", content="What is the greyhound called?")
        store.add_message(chat_id, question)
        engine.append(question, auto=False)
        recalled = engine.recalled()
        assert [i.source_id for i in recalled][:1] == [fact.id]
        assert "Biscuit" in recalled[0].message.content and "Rex" not in engine.context_text()
        assert store.search_archived(chat_id, "greyhound? \"OR\" NEAR(") == [fact.id]


@pytest.mark.slow
def test_the_stores_index_and_the_in_memory_one_recall_the_same_messages(tmp_path):
    """Both recall paths stem words the same way (FTS5's porter tokenizer; core/context/porter.py in memory): a
    question meets "Researching adoption agencies" through "research", in a stored chat and in `precis compact`."""
    lines = ["Caroline: Researching adoption agencies this week, it's a big step for me.",
             "Melanie: That's wonderful! My kids and I went hiking near the lake.",
             "Caroline: I joined a mentorship program for LGBTQ youth last weekend.",
             "Melanie: We painted a sunset together, the kids loved it.",
             "Caroline: The agency called back about the adoption interview."]
    messages = [Message(role="user" if n % 2 == 0 else "assistant", content=c) for n, c in enumerate(lines)]
    in_memory = RecallIndex()
    with open_store(tmp_path) as store:
        chat_id = store.import_chat("friends", messages, archived_by={m.id: "summary-1" for m in messages})
        for message in messages:
            in_memory.add(message.id, message.content)
        for question in ("What did Caroline research?", "Where did Melanie hike?", "What did they paint?",
                         "Which agencies did Caroline call about adopting?", "mentorship programs"):
            stored = store.search_archived(chat_id, question, 10)
            assert stored and stored == in_memory.search(question, 10), question
        assert store.search_archived(chat_id, "What did Caroline research?", 1) == [messages[0].id]


@pytest.mark.slow
def test_the_in_memory_index_weighs_words_as_fts5s_bm25_does(tmp_path):
    """A word in half the messages weighs next to nothing in memory as in the store (FTS5's idf): with "pottery" in
    four messages of eight, the short "race cat paint" comes before the longer message with both words."""
    lines = ["race cat paint", "pottery pottery", "camp hike cat pottery dog", "camp race dog pottery paint",
             "hike race cat sunset dog dog dog", "book dog camp hike camp dog book", "pottery pottery book",
             "sunset hike hike"]
    messages = [Message(role="user", content=line) for line in lines]
    in_memory = RecallIndex()
    for message in messages:
        in_memory.add(message.id, message.content)
    with open_store(tmp_path) as store:
        chat_id = store.import_chat("words", messages, archived_by={m.id: "summary-1" for m in messages})
        stored = store.search_archived(chat_id, "pottery paint", 10)
    assert stored == in_memory.search("pottery paint", 10)
    assert stored[:2] == [messages[0].id, messages[3].id]


@pytest.mark.slow
def test_claude_codes_own_compaction_keeps_its_text_when_opening_the_session_folds_it(tmp_path):
    """The raw Claude Code session imports with Claude Code's compaction as its one summary (4,120 tokens, text only:
    no points or facts of ours). Opened at 8k it overflows; that summary takes the chain's whole share, so it is
    folded to leave room, and the fold kept only 'Merged summary of 404 earlier messages.'"""
    from precis.core.storage.importers import import_file

    from tests.conftest import CLAUDE_CODE_RAW

    with open_store(tmp_path) as store:
        chat_id = import_file(store, CLAUDE_CODE_RAW).chat_id
        engine, _ = restore_engine(store, chat_id, default_window=8192)
        attach_engine(store, chat_id, engine)
        [compaction] = engine.chain()
        assert engine.maybe_summarize() is not None  # the overflow on opening
        fold = engine.chain()[0]
        assert fold.merged_ids == [compaction.id]
        assert "This session is being continued from a previous conversation" in fold.text
        assert "spotter-4te.1" in engine.context_text()
        assert engine.counter.count_text(fold.text) > 500
    with open_store(tmp_path) as store:  # as saved
        again, _ = restore_engine(store, chat_id, default_window=8192)
        assert again.chain()[0].text == fold.text
