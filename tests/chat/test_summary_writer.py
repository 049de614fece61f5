"""Which model writes a chat's summaries (core/storage/chats.py writes_summaries): the window's status bar says "summarizing…"
of the chat's model only while that model writes one, not while the rules or another model do."""

from __future__ import annotations

import pytest
from precis.core.chat.session import ChatSession
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.chats import writes_summaries
from precis.core.storage.store import open_store

from tests.gui.test_window import dialogue


@pytest.mark.parametrize(("policy", "written_by_the_chats_model"), [
    ({"mode": "rule"}, False),
    ({"mode": "hybrid"}, True),  # the chat's own model, the default summarizer
    ({"mode": "llm", "summarizer": "chat"}, True),
    ({"mode": "hybrid", "summarizer": "other", "summarizer_provider": "openai",
      "summarizer_base_url": "http://127.0.0.1:9/v1", "summarizer_model": "another"}, False),
])
def test_a_chats_summaries_are_said_to_be_written_by_its_model_only_when_they_are(tmp_path, policy,
                                                                                   written_by_the_chats_model):
    with open_store(tmp_path) as store:
        store.set_setting(SUMMARIZATION_KEY, policy)
        chat_id = store.import_chat("walk", dialogue(6, "walk"))
        # Never asked: the provider only gives the chat's window (nothing listens on port 9).
        provider = OpenAICompatProvider("http://127.0.0.1:9/v1", "m", "sk-test", window=4096)
        session = ChatSession(store, chat_id, provider)
        assert not writes_summaries(session.engine, provider)  # no engine yet: nothing is summarizing
        session.build_engine(estimate=False)
        assert writes_summaries(session.engine, provider) is written_by_the_chats_model
        session.close()
