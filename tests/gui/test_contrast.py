"""Text readable in both themes: every text colour against every background it is drawn on is at least 4.5:1 (WCAG
AA for normal text), a disabled control's text at least 3:1, and the inspector's headline, drawn in the colour of
its level, and the draft's count in its, as painted."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from tests.gui.test_window import dialogue

TEXT = 4.5
DISABLED = 3.0


def luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast(first, second) -> float:
    lighter, darker = sorted((luminance(QColor(first)), luminance(QColor(second))), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def drawn_pairs(p) -> list[tuple[str, str, str, str, float]]:
    """(what, its colour, on what, that colour, the least contrast) for the text the window draws."""
    bubbles = {"window": p.window, "surface": p.surface, "your message": p.user_bubble, "a reply": p.assistant_bubble,
               "a summary": p.summary_bubble, "a tool line": p.tool_bubble, "a card": p.card}
    texts = {"text": p.text, "muted text": p.muted, "a link": p.accent, "an error": p.error_text,
             "a warning": p.warning_text, "good news": p.good_text}
    pairs = [(what, colour, where, ground, TEXT) for what, colour in texts.items() for where, ground in bubbles.items()]
    # A card's title names who wrote it, on its own bubble (and a call's tool name on the tool line).
    for role, bubble in (("user", p.user_bubble), ("assistant", p.assistant_bubble), ("system", p.system_bubble),
                         ("summary", p.summary_bubble), ("assistant", p.tool_bubble)):
        pairs.append((f"the {role} title", p.role_colours[role], f"the {role} bubble", bubble, TEXT))
    pairs.append(("a primary button's text", p.on_accent, "the accent", p.accent, TEXT))
    pairs.append(("selected text", p.on_accent, "the selection highlight", p.accent, TEXT))
    for where, ground in (("a button", p.surface), ("a primary button", p.hover), ("the window", p.window)):
        pairs.append(("disabled text", p.disabled_text, where, ground, DISABLED))
    return pairs


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_every_text_colour_is_readable_on_what_it_is_drawn_on(dark):
    from precis.gui import theme

    palette = theme.DARK if dark else theme.LIGHT
    unreadable = [f"{what} {colour} on {where} {ground}: {contrast(colour, ground):.2f}"
                  for what, colour, where, ground, least in drawn_pairs(palette) if contrast(colour, ground) < least]
    assert unreadable == []


def painted_text(label) -> tuple[QColor, float]:
    """A label's text colour as painted, and its contrast: its most contrasting pixel against its background (a
    corner); antialiasing only lowers it."""
    picture = label.grab().toImage()
    ground = picture.pixelColor(0, 0)
    pixels = (picture.pixelColor(x, y) for y in range(picture.height()) for x in range(picture.width()))
    ink = max(pixels, key=lambda colour: contrast(colour, ground))
    return ink, contrast(ink, ground)


@pytest.mark.parametrize("choice", ["light", "dark"])
def test_the_headline_and_the_draft_count_say_their_level_in_a_readable_colour(qtbot, make_window, store, choice):
    from precis.gui import theme

    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    theme.choose(choice)
    try:
        headline = window.inspector.total_label
        assert headline.text().startswith("Next prompt:")  # a few tokens of 7,680: well inside the budget
        ink, readable = painted_text(headline)
        assert ink.name() == theme.current.good_text and readable >= TEXT
        # The draft's count: in the error colour when it would not fit (it was painted muted whatever its level).
        window.composer.show_token_count("9,000 tokens · 2,410 left", "error")
        ink, readable = painted_text(window.composer.token_count)
        assert ink.name() == theme.current.error_text and readable >= TEXT
    finally:
        theme.choose("system")
