"""Denser sentences for conversation digests: the words inside a kept sentence that carry nothing a question could
ask about are cut (emoji, interjections and tags between commas, openers such as "So" and "Plus", a clause that
only praises what the rest of the sentence reports, intensifiers and hedges), so that a digest holds more facts in
its room.
Every other word stays as said and in order: questions ask about phrases word for word ("a single parent"), and
names, numbers, dates, quoted titles and negations are never cut."""

from __future__ import annotations

import re

# Said between punctuation (or at a sentence's ends), they react or address rather than report: "It was great,
# haha!", "Chase those dreams, buddy!".
INTERJECTION = re.compile(
    r"(?:^|[,;:])\s*(?:ha(?:ha)+h?|he(?:he)+|lol|lmao|omg|oh my (?:god|gosh)|wow+|whoa|woah|oh+|ah+|aw+|ugh|phew|"
    r"yay|woo+hoo+|you know|ya know|i mean|honestly|seriously|actually|anyway|anyways|btw|by the way|buddy|dude|"
    r"pal|bro|mate|my friend)\s*(?:[,;:]\s*|(?=[.!?]|$))", re.IGNORECASE)
# Emoji and emoticons: tokens that no question asks about (flags, which name a country, stay).
EMOJI = re.compile(r"(?:[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u2B55][\uFE0F\u200D\U0001F3FB-\U0001F3FF]*)+"
                   r"|\s+(?:[:;=]-?[)(DPp]|<3|xD|XD)(?=\s|$)")
# A tag that makes a statement sound like a question: "..., right?" says no more than "...".
TAG = re.compile(r",\s*(?:right|huh|eh|you know|ya know)\?$", re.IGNORECASE)
# Openers that join a sentence to the one before; in a digest that one is mostly not there.
OPENER = re.compile(r"^(?:so|and|but|plus|also|oh and)\b,?\s+(?!(?:much|many|far|long|that|to)\b)", re.IGNORECASE)
# Everyday words of praise: a clause made only of these and FRAME words says how the speaker liked what the rest
# of the sentence reports. Rarer ones ("therapeutic", "magical") describe the thing and stay. Not digest.GENERIC,
# which ranks: it also holds feelings and hardships ("tough", "scary", "tired") that a cut clause would lose (with it,
# 4 of locomo_1's 7 rule digests change).
EVALUATIVE = frozenset("""
great good amazing awesome fun cool nice wonderful fantastic incredible lovely beautiful brilliant perfect
exciting rewarding blast neat sweet terrific superb fabulous gorgeous stunning impressive inspiring worth best
enjoyable
""".split())
# Words that only frame an evaluation: its subject, a verb of being or seeming, an intensifier.
FRAME = frozenset("""
it it's it'll that that's this which was is has been be will gonna were are felt feels looks looked sounds sounded
seems seemed so really very super pretty such a an much totally truly absolutely definitely just quite too time
""".split())
# A clause ends at a comma, semicolon or dash; "and"/"but" start one when a frame's subject follows ("..., and it
# was great"), not between two things ("warmth and happiness").
CLAUSE = re.compile(r"(\s*(?:[,;]|\s[-–—]+|—|--)\s+|\s+(?:and|but)\s+(?=(?:it|that|which|this)\b))")
# What the rest of a sentence must keep, in words, for a praising clause to be cut ("Caroline, that's so cool!"
# stays whole rather than becoming "Caroline!").
MIN_KEPT = 3
NEGATIONS = frozenset("not never no nor nothing none nobody cannot".split())
# Not digest.WORD, which ranks: a curly apostrophe stays inside a word ("it’s" is one FRAME word) and a number runs
# to the next space, for counting and testing the words a cut leaves.
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d\S*")
# Intensifiers and hedges that can stand anywhere between words.
HEDGES = frozenset("really actually totally truly absolutely definitely literally basically super".split())
# These only after a verb of being or feeling, where they can only modify what follows ("I'm so happy"; not "so I
# went", "a pretty dress", "what kind of music").
AFTER_COPULA = frozenset("so pretty very".split())
COPULAS = frozenset("""is was are were be been am it's i'm we're they're you're he's she's that's feel feels felt
look looks looked seem seems seemed sound sounds sounded me""".split())
PAIRS = {("pretty", "much"), ("kind", "of"), ("sort", "of")}
# "so" and the others stay before these: "so much", "so far", "so that", "and so on".
KEEP_BEFORE = frozenset("much many far long that as to and or on forth".split())
QUOTE = re.compile(r'"[^"]*"|“[^”]*”')
# "just" stays where it means "only" or "exactly": "just one", "just a hobby", "just as", "just right".
JUST_KEEPS = frozenset("one a an as like in the right".split())
END = re.compile(r"[.!?…]+[\"”']?$")


def tightened(sentence: str) -> str:
    """The sentence without the words that carry nothing; unchanged when nothing but them would be left. Cutting
    one thing can bare another ("actually amazing, ..." is a praising clause once "actually" goes): trimmed until
    nothing more goes."""
    text = sentence
    while (shorter := trimmed_once(text)) != text:
        text = shorter
    return text[0].upper() + text[1:] if sentence[:1].isupper() else text


def trimmed_once(sentence: str) -> str:
    """One pass of every cut, in order: emoji and tags, interjections, openers, praising clauses, hedges."""
    text = TAG.sub(".", re.sub(r"\s+([,.!?;:])", r"\1", " ".join(EMOJI.sub(" ", sentence).split())))
    text = without_interjections(text)
    while (opened := OPENER.sub("", text)) != text and WORD.search(opened):
        text = opened
    text = without_evaluative_clauses(text)
    text = without_hedges(text)
    return text if WORD.search(text) else sentence


def dropped_interjection(match: re.Match[str]) -> str:
    """What an interjection leaves: the comma it stood between ("..., pal, you're ..." -> "..., you're ..."),
    else a space; a capitalized word inside a sentence may be a name ("..., Honey, ...") and stays."""
    said = match.group(0)
    if match.start() and any(c.isupper() for c in said):
        return said
    return said[0] + " " if said[0] in ",;:" and said.rstrip()[-1:] in (",", ";", ":") else " "


def without_interjections(text: str) -> str:
    """"Haha" or "you know" between commas or at an end dropped, with its comma."""
    out = INTERJECTION.sub(dropped_interjection, text).strip()
    out = re.sub(r"\s+([,.!?;:])", r"\1", out)
    return out if WORD.search(out) else text


def evaluative(clause: str, first: bool) -> bool:
    """A clause made only of frame and praise words, with at least one of each (a clause, not an item of a list),
    and no name, number, quote or negation in it."""
    words = WORD.findall(clause)
    if not words or any(c in clause for c in "\"“”0123456789"):
        return False
    if any(w[0].isupper() for w in words[1 if first else 0:]):
        return False
    lower = [w.lower().replace("’", "'") for w in words]
    return (all(w in FRAME or w in EVALUATIVE for w in lower) and any(w in EVALUATIVE for w in lower)
            and any(w in FRAME for w in lower))


def without_evaluative_clauses(text: str) -> str:
    """The sentence without its clauses that only praise ("Just started aerial yoga, it's great." -> "Just started
    aerial yoga."), keeping its closing mark; unchanged when the rest would be too short to say anything."""
    end = END.search(text)
    mark = end.group(0) if end else ""
    parts = CLAUSE.split(text[: len(text) - len(mark)])
    clauses, separators = parts[0::2], parts[1::2]
    cut = [evaluative(c, n == 0) for n, c in enumerate(clauses)]
    kept = ""
    for n, clause in enumerate(clauses):
        if not cut[n]:
            kept += (separators[n - 1] if kept else "") + clause
    if not any(cut) or len(WORD.findall(kept)) < MIN_KEPT:
        return text
    return kept + mark


def without_hedges(text: str) -> str:
    """Intensifiers and hedges standing alone between words dropped ("I'm really lucky" -> "I'm lucky"), never
    after a negation ("not really") nor inside a quote."""
    quotes = [m.span() for m in QUOTE.finditer(text)]
    found = [m for m in re.finditer(r"\S+", text) if not any(a <= m.start() < b for a, b in quotes)]
    drop: set[int] = set()
    for n, match in enumerate(found):
        word = match.group(0)
        bare = word.lower().replace("’", "'")
        before = next((found[k].group(0) for k in range(n - 1, -1, -1) if k not in drop), "").lower().replace("’", "'")
        after = found[n + 1].group(0).lower().rstrip(",.!?;:") if n + 1 < len(found) else ""
        if (n in drop or not bare.isalpha() or not after[:1].isalpha() or not (word.islower() or match.start() == 0)
                or before in NEGATIONS or before.endswith("n't")):
            continue
        if (bare, after) in PAIRS and before in COPULAS | {"i", "we", "they"}:
            drop |= {n, n + 1}
        elif bare in HEDGES and after not in KEEP_BEFORE:
            drop.add(n)
        elif bare == "just" and after not in JUST_KEEPS:
            drop.add(n)
        elif bare in AFTER_COPULA and before in COPULAS and after not in KEEP_BEFORE:
            drop.add(n)
    for start, end in reversed([found[n].span() for n in sorted(drop)]):
        text = text[:start] + text[end:].lstrip(" ")
    return text
