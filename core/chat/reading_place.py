"""Where a reader was in each chat, so switching away and back, or quitting and starting again, comes back there.

A place is the row at the top of the view (a message id, or 'summary:<record id>') and how far down that row the
view's top was: not a pixel offset of the whole flow, since rows' heights change with the window's width, the text
size and the rows laid out so far. A chat its reader left at its end has no place: it opens at its end, following it.
The window saves the places under READING_PLACES_KEY (core.settings), as it keeps its other state.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

# The chats whose places are kept, the most recently left first: a place is only a convenience, and the setting
# must not grow with every chat ever read.
KEPT_PLACES = 100


class ReadingPlace(BaseModel):
    """The row at the top of the view, and the share of its height above the view's top edge."""

    key: str
    into: float = Field(0.0, ge=0.0, le=1.0)


class ReadingPlaces(BaseModel):
    """Chat id -> where its reader left it (saved under READING_PLACES_KEY); a chat not here opens at its end."""

    places: dict[str, ReadingPlace] = Field(default_factory=dict)

    def of(self, chat_id: str) -> ReadingPlace | None:
        return self.places.get(chat_id)

    def left_at(self, chat_id: str, place: ReadingPlace | None) -> ReadingPlaces:
        """These places with the chat's as its reader left it (None: at its end), the newest KEPT_PLACES only."""
        others = {key: value for key, value in self.places.items() if key != chat_id}
        newest = {chat_id: place} if place is not None else {}
        kept = list({**newest, **others}.items())[:KEPT_PLACES]
        return ReadingPlaces(places=dict(kept))


def place_to_hold(place: ReadingPlace | None, row_index: Mapping[str, int], hidden: Mapping[str, str],
                  whole_chat: bool) -> ReadingPlace | None:
    """Where the view stays once these rows are shown (None: at the end, following it).

    `row_index` maps the shown rows' keys to their positions; `hidden` a message id to the summary that archived it;
    `whole_chat` is False while only the chat's last rows are shown (the first paint), the rest to come.
    The place's own row when it is shown; the summary standing for its message once that was archived; the place
    kept (the view waits at the end) while its row may still come with the whole chat; else the end."""
    if place is None or place.key in row_index:
        return place
    record_id = hidden.get(place.key)
    if record_id is not None and f"summary:{record_id}" in row_index:
        return ReadingPlace(key=f"summary:{record_id}")
    return None if whole_chat else place
