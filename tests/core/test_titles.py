"""The untitled-chat rule, one function for the window and the terminal: a chat still called "New chat" takes its
title from its first message; a chat named by hand, or with messages already, keeps its own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.model.titles import NEW_CHAT_TITLE, TITLE_CHARS, first_message_title


def test_the_first_message_names_a_new_chat():
    assert first_message_title(NEW_CHAT_TITLE, 0, "\n  Which ferry   leaves first?\nAnd when?") == \
        "Which ferry leaves first?"
    long = "Plan a three day walking trip along the coast from Porto to Vigo with stops"
    assert first_message_title(NEW_CHAT_TITLE, 0, long) == "Plan a three day walking trip along the coast…"


def test_a_chat_with_messages_or_a_name_of_its_own_keeps_it():
    assert first_message_title(NEW_CHAT_TITLE, 1, "Which ferry leaves first?") is None
    assert first_message_title("Ferries", 0, "Which ferry leaves first?") is None
    assert first_message_title(NEW_CHAT_TITLE, 0, " \n\t ") is None  # nothing to name it by


@given(title=st.sampled_from([NEW_CHAT_TITLE, "Ferries", ""]), messages=st.integers(min_value=0, max_value=3),
       text=st.text(max_size=200))
def test_a_title_is_given_only_to_an_empty_new_chat_and_is_one_short_line(title, messages, text):
    named = first_message_title(title, messages, text)
    if title != NEW_CHAT_TITLE or messages:
        assert named is None
    elif named is not None:
        assert named.strip() and "\n" not in named and len(named) <= TITLE_CHARS + 1
        assert not named.rstrip("…") or named.rstrip("…").split()[0] in text
