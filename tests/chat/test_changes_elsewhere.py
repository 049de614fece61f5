"""An open chat follows what another Precis on the same data folder changed in it (ChatSession.reload_if_changed):
two stores on one SQLite file, as a window and `precis chat --chat ID` (or a second window) have."""

from __future__ import annotations

import pytest
from precis.core.chat.session import ChatSession
from precis.core.model.messages import Message
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store

from tests.gui.test_window import dialogue


@pytest.fixture
def stores(tmp_path):
    """(ours, theirs): two stores on one data folder."""
    with open_store(tmp_path) as ours, open_store(tmp_path) as theirs:
        yield ours, theirs


def opened(store, chat_id: str, server) -> ChatSession:
    # No reply is asked for: the provider only gives the chat's window (set here, so the server is never asked).
    session = ChatSession(store, chat_id, OpenAICompatProvider(server.base_url, "m", "sk-test", window=4096))
    session.build_engine(estimate=False)
    return session


def test_a_pin_made_elsewhere_is_kept_by_the_open_chats_summaries(stores, server):
    ours, theirs = stores
    ours.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
    chat_id = ours.import_chat("gyms", dialogue(20, "We compared the kickboxing gyms, point"))
    session = opened(ours, chat_id, server)
    first = session.built_engine.messages[0]
    elsewhere = opened(theirs, chat_id, server)
    elsewhere.set_pinned(first.id, True)  # `/pin` in `precis chat --chat ID`

    reloaded = session.reload_if_changed()

    assert reloaded is not None and reloaded.messages[0].pinned
    session.summarize_now()
    assert session.built_engine.chain() and not session.built_engine.is_archived(first.id)  # still sent
    assert session.built_engine.is_archived(session.built_engine.messages[1].id)  # summarized around it

    elsewhere.reload_if_changed()  # the summary, made here
    elsewhere.set_pinned(first.id, False)  # and `/unpin`
    assert session.reload_if_changed() is not None
    assert not session.built_engine.messages[0].pinned
    elsewhere.close()
    session.close()


def test_the_chats_settings_changed_elsewhere_are_used_by_the_open_chat(stores, server):
    ours, theirs = stores
    chat_id = ours.create_chat("sailing")
    ours.add_messages(chat_id, [Message(role="user", content="Where do we moor tonight?")])
    session = opened(ours, chat_id, server)
    # Settings → This chat in another window
    theirs.update_chat_settings(chat_id, {"system_prompt": "Answer as a sailor.", "reserve_output": 300,
                                          "tool_steps": 3})

    assert session.reload_if_changed() is not None
    assert session.settings.tool_steps == 3 and session.max_reply_tokens == 300
    prompt = session.built_engine.assemble().messages
    assert (prompt[0].role, prompt[0].content) == ("system", "Answer as a sailor.")
    assert session.built_engine.budget.reserve_output == 300
    session.close()


def test_the_global_summarization_settings_changed_elsewhere_are_followed_under_the_chats_own(stores, server):
    ours, theirs = stores
    ours.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
    chat_id = ours.create_chat("gyms", settings={"summarization": {"keep_recent": 6}})
    ours.add_messages(chat_id, dialogue(20, "We compared the kickboxing gyms, point"))
    session = opened(ours, chat_id, server)
    assert session.built_engine.policy.trigger_ratio == 0.8
    # Settings → Summarization in another window
    theirs.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 3, "trigger_ratio": 0.75})

    assert session.reload_if_changed() is not None
    policy = session.built_engine.policy
    assert (policy.trigger_ratio, policy.keep_recent) == (0.75, 6)  # the chat's own value still wins
    assert session.reload_if_changed() is None
    session.close()


def test_the_open_chat_is_not_loaded_again_for_its_own_changes(stores, server):
    """A pin, a tool allowed and a summary made by this chat itself change the stored chat as its engine already
    has it: nothing to load (loading a long chat again costs seconds)."""
    ours, _theirs = stores
    ours.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
    chat_id = ours.create_chat("gyms", settings={"system_prompt": "Be brief."})
    ours.add_messages(chat_id, dialogue(20, "We compared the kickboxing gyms, point"))
    session = ChatSession(ours, chat_id, OpenAICompatProvider(server.base_url, "m", "sk-test", window=4096),
                          overrides={"reserve_output": 200, "summarization": {"keep_recent": 4}})
    session.build_engine(estimate=False)
    assert session.reload_if_changed() is None

    session.set_pinned(session.built_engine.messages[3].id, True)
    session.allow_tool("read_file")
    session.summarize_now()

    assert session.reload_if_changed() is None
    session.close()
