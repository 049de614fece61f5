"""SSE parsing per the HTML spec, including what real servers send (keep-alive comments, event names)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.providers.sse import SSEEvent, iter_sse


def parse(text: str) -> list[SSEEvent]:
    return list(iter_sse(text.split("\n")))


def test_multi_line_data_joins_with_newlines():
    assert parse("data: one\ndata:two\ndata:  three\n\n") == [SSEEvent(data="one\ntwo\n three")]


def test_comments_and_blank_events_are_skipped():
    assert parse(": ping\n\n:\n\ndata: x\n\n") == [SSEEvent(data="x")]


def test_event_name_and_id():
    events = parse("event: content_block_delta\nid: 7\ndata: {}\n\ndata: y\n\n")
    assert events == [SSEEvent(data="{}", event="content_block_delta", id="7"), SSEEvent(data="y", id="7")]


def test_field_without_colon_and_unknown_fields():
    assert parse("data\nretry: 10\nfoo: bar\n\n") == [SSEEvent(data="")]


def test_unterminated_last_event_is_not_dispatched():
    assert parse("data: whole\n\ndata: cut") == [SSEEvent(data="whole")]


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=20), min_size=1, max_size=5))
def test_any_data_lines_round_trip(lines):
    text = "".join(f"data: {line}\n" for line in lines) + "\n"
    assert parse(text) == [SSEEvent(data="\n".join(lines))]
