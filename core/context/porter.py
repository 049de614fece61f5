"""The Porter stemmer exactly as SQLite's FTS5 `porter` tokenizer applies it, so that the in-memory recall index and
the store's FTS5 index (tokenize='porter unicode61 remove_diacritics 2') reduce every word to the same term:
"researching" and "research" meet, as do "adoption" and "adopt".

Words are taken as unicode61 takes them: runs of letters and digits (an underscore separates), case-folded, with
diacritics removed. FTS5 leaves words shorter than 3 or longer than 64 bytes as they are.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

WORD = re.compile(r"[^\W_]+")
SHORTEST, LONGEST = 3, 64
_VOWELS = frozenset("aeiou")


def words(text: str) -> list[str]:
    """The words of a text as unicode61 tokenizes them: letters and digits, folded, diacritics removed."""
    return [fold(w) for w in WORD.findall(text)]


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    word = word.lower()
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def _is_vowel(c: str, y_is_vowel: bool) -> bool:
    return c in _VOWELS or (y_is_vowel and c == "y")


def _after_vc(stem: str, consonant_before: bool) -> int:
    """Where the stem's first vowel-consonant sequence ends (0 if it has none): "y" after a consonant is a vowel."""
    consonant = consonant_before
    i = 0
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        i += 1
        if not consonant:
            break
    else:
        return 0
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        i += 1
        if consonant:
            return i
    return 0


def _m_gt0(stem: str) -> bool:
    return _after_vc(stem, False) > 0


def _m_gt1(stem: str) -> bool:
    n = _after_vc(stem, False)
    return n > 0 and _after_vc(stem[n:], True) > 0


def _m_eq1(stem: str) -> bool:
    n = _after_vc(stem, False)
    return n > 0 and _after_vc(stem[n:], True) == 0


def _cvc(stem: str) -> bool:
    """Porter's *o: the stem ends consonant-vowel-consonant, the last not w, x or y."""
    if len(stem) < 3 or stem[-1] in "wxy":
        return False
    flags, consonant = [], False
    for c in stem:
        consonant = not _is_vowel(c, consonant)
        flags.append(consonant)
    return flags[-3:] == [True, False, True]


def _has_vowel(stem: str) -> bool:
    return any(_is_vowel(c, i > 0) for i, c in enumerate(stem))


def _m_gt1_s_or_t(stem: str) -> bool:
    return stem[-1:] in ("s", "t") and _m_gt1(stem)


# Steps 2-4: for each last-but-one letter, its suffixes in the order tried; the first that ends the word is
# replaced when its condition holds (and no other is tried).
_STEP2 = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "g": (("logi", "log"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
}
_STEP3 = {
    "a": (("ical", "ic"),),
    "s": (("ness", ""),),
    "t": (("icate", "ic"), ("iciti", "ic")),
    "u": (("ful", ""),),
    "v": (("ative", ""),),
    "z": (("alize", "al"),),
}
_STEP4 = {
    "a": ("al",), "c": ("ance", "ence"), "e": ("er",), "i": ("ic",), "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"), "o": ("ion", "ou"), "s": ("ism",), "t": ("ate", "iti"), "u": ("ous",),
    "v": ("ive",), "z": ("ize",),
}


def _replace(word: str, rules: tuple[tuple[str, str], ...]) -> str:
    for suffix, replacement in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _m_gt0(stem) else word
    return word


def _step4(word: str) -> str:
    for suffix in _STEP4.get(word[-2:-1], ()):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem if (_m_gt1_s_or_t if suffix == "ion" else _m_gt1)(stem) else word
    return word


def _step1b(word: str) -> tuple[str, bool]:
    """Step 1b: "eed" to "ee"; "ed" and "ing" cut after a vowel (then True: the tidy-up of 1b applies)."""
    if word[-2] == "e":
        if len(word) > 3 and word.endswith("eed"):
            return (word[:-1] if _m_gt0(word[:-3]) else word), False
        if word.endswith("ed") and _has_vowel(word[:-2]):
            return word[:-2], True
    elif word[-2] == "n" and len(word) > 3 and word.endswith("ing") and _has_vowel(word[:-3]):
        return word[:-3], True
    return word, False


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a folded word, as FTS5's porter tokenizer makes it."""
    if word.isascii():
        return _stem(word) if SHORTEST <= len(word) <= LONGEST else word
    # FTS5 stems the UTF-8 bytes: each byte one letter here (never a vowel), cut where FTS5 cuts.
    encoded = word.encode()
    if not SHORTEST <= len(encoded) <= LONGEST:
        return word
    return _stem(encoded.decode("latin-1")).encode("latin-1").decode("utf-8", errors="ignore")


def _stem(word: str) -> str:
    # Step 1a: plurals.
    if word[-1] == "s":
        if word[-2] == "e":
            if (len(word) > 4 and word[-4:-2] == "ss") or (len(word) > 3 and word[-3] == "i"):
                word = word[:-2]
            else:
                word = word[:-1]
        elif word[-2] != "s":
            word = word[:-1]
    word, cut = _step1b(word)
    if cut:
        if len(word) > 2 and word[-2:] in ("at", "bl", "iz"):
            word += "e"
        elif not _is_vowel(word[-1], False) and word[-1] not in "lsz" and word[-1] == word[-2]:
            word = word[:-1]
        elif _m_eq1(word) and _cvc(word):
            word += "e"
    # Step 1c.
    if word[-1] == "y" and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _replace(word, _STEP2.get(word[-2:-1], ()))
    word = _replace(word, _STEP3.get(word[-2:-1], ()))
    word = _step4(word)
    # Step 5a, 5b.
    if word[-1] == "e" and (_m_gt1(word[:-1]) or (_m_eq1(word[:-1]) and not _cvc(word[:-1]))):
        word = word[:-1]
    if len(word) > 1 and word[-2:] == "ll" and _m_gt1(word[:-1]):
        word = word[:-1]
    return word
