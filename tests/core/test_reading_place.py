"""Where a chat reopens: the reader's place (the message at the top of the view) while it is still there, the summary
that archived it once it was summarized, else the end; a chat left at its end follows its end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat.reading_place import KEPT_PLACES, ReadingPlace, ReadingPlaces, place_to_hold

KEYS = st.text(alphabet="abcdef", min_size=1, max_size=3)
PLACES = st.builds(ReadingPlace, key=KEYS, into=st.floats(0.0, 1.0))


@given(st.one_of(st.none(), PLACES), st.lists(KEYS, unique=True), st.dictionaries(KEYS, KEYS), st.booleans())
def test_the_view_holds_the_place_its_stand_in_or_the_end(place, shown, hidden, whole_chat):
    index = {key: number for number, key in enumerate(shown)}
    held = place_to_hold(place, index, hidden, whole_chat)
    if place is None:
        assert held is None  # left at the end: follows the end
    elif place.key in index:
        assert held == place
    elif f"summary:{hidden.get(place.key)}" in index:  # summarized since: the summary standing for it, at its top
        assert held == ReadingPlace(key=f"summary:{hidden[place.key]}")
    elif whole_chat:
        assert held is None  # gone (edited away, deleted): the end
    else:
        assert held == place  # only the chat's last rows are shown yet: the place waits for the whole chat


def test_a_summarized_message_is_found_in_its_summary():
    place = ReadingPlace(key="m7", into=0.4)
    assert place_to_hold(place, {"m1": 0, "summary:r1": 1, "m9": 2}, {"m7": "r1"}, True) == ReadingPlace(
        key="summary:r1", into=0.0)


@given(st.lists(st.tuples(KEYS, st.one_of(st.none(), PLACES)), max_size=30))
def test_each_chat_keeps_the_place_it_was_left_at_last(leavings):
    places = ReadingPlaces()
    for chat_id, place in leavings:
        places = places.left_at(chat_id, place)
    for chat_id in {chat_id for chat_id, _place in leavings}:
        last = [place for left, place in leavings if left == chat_id][-1]
        assert places.of(chat_id) == last  # None: left at its end, so it opens at its end
    assert ReadingPlaces.model_validate(places.model_dump()) == places  # as saved and read back


def test_only_the_chats_left_most_recently_keep_a_place():
    places = ReadingPlaces()
    for number in range(KEPT_PLACES + 5):
        places = places.left_at(f"chat{number}", ReadingPlace(key="m1"))
    places = places.left_at("chat0", ReadingPlace(key="m2"))  # left again: among the newest once more
    assert len(places.places) == KEPT_PLACES
    assert places.of("chat0") == ReadingPlace(key="m2") and places.of(f"chat{KEPT_PLACES + 4}") is not None
    assert places.of("chat1") is None
