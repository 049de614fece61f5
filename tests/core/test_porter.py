"""Recall's terms are the store's: the in-memory index stems words exactly as SQLite's FTS5 porter tokenizer does."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st
from precis.core.context.porter import stem
from precis.core.context.recall_index import terms

# Word pieces that exercise every step of the algorithm (plurals, -ed/-ing, -y, -ational ... -ize, -e, -ll).
PIECES = ("a", "e", "i", "o", "u", "y", "b", "c", "l", "n", "s", "t", "z", "w", "ss", "ies", "eed", "ed", "ing",
          "at", "bl", "iz", "ational", "tional", "enci", "izer", "logi", "alli", "entli", "eli", "ousli", "ization",
          "ator", "iveness", "fulness", "biliti", "icate", "ness", "ful", "ative", "alize", "ance", "ible", "ement",
          "sion", "tion", "ism", "ous", "ive", "ll", "é", "ü", "ß", "日本")
SEPARATORS = (" ", "_", "-", "'", ", ", ".\n", "3")


def fts5_terms(text: str) -> list[str]:
    """The terms the store's index (schema.py, migration 6) makes of a text, in order."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.execute("INSERT INTO t(x) VALUES (?)", (text,))
        return [term for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]
    finally:
        db.close()


word = st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join)


@given(st.lists(st.tuples(word, st.sampled_from(SEPARATORS)), min_size=1, max_size=12))
def test_recall_terms_are_the_terms_fts5s_porter_tokenizer_indexes(parts):
    text = "".join((w.upper() if n % 4 == 0 else w) + separator for n, (w, separator) in enumerate(parts))
    assert terms(text) == fts5_terms(text)


def test_a_word_meets_its_other_forms():
    assert stem("researching") == stem("research") == "research"
    assert stem("adoption") == stem("adopt") and stem("hiking") == stem("hike") and stem("running") == "run"
    assert terms("Caroline: Researching adoption agencies!") == ["carolin", "research", "adopt", "agenc"]
