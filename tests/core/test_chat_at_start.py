"""Which chat the window opens at start: the one it showed last, while that chat is still there."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.settings import chat_at_start

IDS = st.text(alphabet="0123456789abcdef", min_size=1, max_size=4)


@given(st.lists(IDS, unique=True), st.one_of(st.none(), IDS, st.integers(), st.lists(IDS)))
def test_the_chat_shown_last_opens_again_while_listed_else_the_first(listed, last_open):
    opened = chat_at_start(listed, last_open)
    if last_open in listed:
        assert opened == last_open
    else:  # deleted meanwhile, never saved, or a saved value that is no id: the chat changed last
        assert opened == (listed[0] if listed else None)
