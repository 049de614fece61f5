"""What a digest knows of English words: which are everyday or say nothing of a fact (GENERIC, generic), how rare
one is (rarity), the content words of a text, and the words of dates and times."""

from __future__ import annotations

import functools
import math
import re

from ..model.tokens import get_encoding
from .text_rules import STOP_WORDS

MONTHS = frozenset("january february march april may june july august september october november december jan feb "
                   "mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday "
                   "sunday".split())
WHEN = frozenset("yesterday today tomorrow tonight weekend week month year ago last next since".split())
# How often something is done, a number in words ("once or twice a year", "at least three times a week", "every
# other weekend"): asked about as often as a number is.
_TIMES = r"(?:once|twice|(?:one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several|\d+) times)"
FREQUENCY = re.compile(
    rf"\b(?:(?:at least|at most|about|around|only|usually) )?(?:{_TIMES}(?: or {_TIMES})? (?:a|an|per|every|each)|"
    r"every(?: other)?) (?:day|night|morning|evening|week|weekend|month|year|summer|winter)\b", re.IGNORECASE)
# Every frequency holds one of these: most sentences are passed over without running FREQUENCY.
_FREQUENCY_WORD = re.compile(r"once|twice|times|every", re.IGNORECASE)
# Words that judge, feel or generalize rather than name a fact (general English: praise and feeling adjectives,
# abstract nouns of feeling, character and value, verbs of feeling and encouragement). "Your passion inspires me"
# and "It's those moments of creativity that bring us closer" are made of them and answer no question; the
# concrete words around them (names, numbers, places, objects, activities) are what answers are made of.
GENERIC = frozenset("""
amazing awesome great good nice wonderful fantastic incredible inspiring inspirational admirable impressive
beautiful gorgeous stunning lovely cool fun enjoyable meaningful rewarding fulfilling powerful special important
necessary valuable priceless precious brilliant excellent fabulous terrific superb marvelous remarkable
extraordinary magical perfect unforgettable memorable exciting thrilling happy glad sad proud grateful thankful
blessed lucky hopeful optimistic positive negative calm peaceful relaxing soothing therapeutic cathartic
empowering uplifting motivating motivational encouraging supportive caring kind sweet thoughtful welcoming
comforting heartwarming touching emotional tough hard difficult challenging easy stressful overwhelming scary
vivid creative passionate dedicated determined committed brave courageous strong resilient cheerful joyful
delightful wholesome fascinating interesting intriguing enlightening insightful cute adorable playful epic crazy
wild huge super true real genuine whole entire bright amazed impressed excited thrilled stoked touched moved
inspired motivated relaxed refreshed overwhelmed worried nervous anxious stressed tired exhausted curious eager
keen fulfilled accepted appreciated loved valued confident free alive unique different solid fine
passion enthusiasm commitment dedication determination inspiration motivation support encouragement journey moment
memory experience feeling emotion joy happiness love hope strength courage resilience gratitude kindness
compassion empathy understanding acceptance belonging growth expression creativity perspective insight vibe
energy peace balance purpose meaning connection bond challenge struggle obstacle difference change progress
success effort goal dream reminder importance value beauty laughter laugh smile appreciation revelation priority
wellbeing mindset outlook attitude spirit soul heart mind confidence friendship trust respect freedom adventure
excitement fulfillment satisfaction relief comfort warmth positivity vulnerability authenticity unity
opportunity chance lesson impact power potential possibility part way life world time people stuff lot sort
situation matter deal fact idea thought sense mood day days
inspire motivate appreciate admire cherish treasure feel remind mean brighten bring help keep push thrive grow
embrace tackle overcome believe wish share encourage relax unwind chat catch reflect realize chase celebrate
achieve succeed pursue focus stay hang vibes achievement accomplishment setback comeback others other together key
drive guts ambition willingness risk talent skill interest awareness ups downs ride amazingly totally truly deeply
absolutely incredibly extremely pretty quite genuinely honestly seriously definitely completely
wanna gonna gotta kinda sorta cuz coz lemme dunno congrats kudos fave fav loads blast oomph chill badass happier
tougher funniest
learn enjoy hear agree sound seem look make care
""".split())
ELONGATED = re.compile(r"([a-z])\1\1")  # "sooo", "yesss": said for feeling, not a word to look up
# Words encoded as one token numbered below this are everyday words (see rarity).
COMMON_RANK = 4000
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d[\d,.:/-]*")


def content_words(text: str) -> set[str]:
    """The words that say what a text is about, lowercased ("Charlotte's" as "charlotte"; "I'm" says nothing)."""
    return {w.lower().split("'")[0].strip("-") for w in WORD.findall(text)} - STOP_WORDS - {""}


def frequencies(text: str) -> list[str]:
    """How often something is done, as said in `text` ("once or twice a year")."""
    return [m.group(0) for m in FREQUENCY.finditer(text)] if _FREQUENCY_WORD.search(text) else []


@functools.cache
def generic(word: str) -> bool:
    """True when a lowercased word is one of GENERIC or an inflection of one ("inspires", "moments", "chatted",
    "smiling")."""
    stems = {word}
    for ending, back in (("s", ""), ("es", ""), ("ies", "y"), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e"),
                         ("ly", ""), ("ness", "")):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            stem = word[:-len(ending)] + back
            stems |= {stem, stem[:-1]} if back == "" and len(stem) > 3 and stem[-1] == stem[-2] else {stem}
    return not stems.isdisjoint(GENERIC) or ELONGATED.search(word) is not None


@functools.cache
def rarity(word: str) -> float:
    """How uncommon a word is in English, from 0 (everyday) to 1 (rare): byte-pair encodings number their tokens
    roughly from the most frequent, so a word that is one early token is common and one split in pieces is rare."""
    pieces = get_encoding().encode_ordinary(" " + word)
    rank = pieces[0] if len(pieces) == 1 else COMMON_RANK * 8
    return min(max(math.log(rank / COMMON_RANK, 8), 0.0), 1.0)
