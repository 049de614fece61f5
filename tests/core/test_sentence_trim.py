"""Denser digest sentences: what carries nothing goes, every word a question could ask about stays as said."""

import re

from hypothesis import given
from hypothesis import strategies as st
from precis.core.summary.sentence_trim import EVALUATIVE, FRAME, HEDGES, tightened


def test_a_clause_that_only_praises_goes_and_the_sentence_keeps_its_end():
    assert tightened("Just started doing aerial yoga, it's great.") == "Started doing aerial yoga."
    assert tightened("It was amazing, I went to the Grand Canyon.") == "I went to the Grand Canyon."
    assert tightened("We went camping at Lake Tahoe, which was so much fun!") == "We went camping at Lake Tahoe!"
    assert (tightened("I ran a charity race for mental health last Saturday – it was really rewarding.")
            == "I ran a charity race for mental health last Saturday.")
    assert (tightened("I went to a pride parade last Friday and it was awesome - so much energy and love.")
            == "I went to a pride parade last Friday - so much energy and love.")


def test_interjections_tags_and_hedges_go_from_inside_a_sentence():
    assert tightened("It was a long drive, haha, but we made it to Denver.") == (
        "It was a long drive, but we made it to Denver.")
    assert tightened("Keep on pushing, pal, you're headed for greatness.") == (
        "Keep on pushing, you're headed for greatness.")
    assert tightened("I started my own clothing store last month - pretty cool, huh?") == (
        "I started my own clothing store last month.")
    assert tightened("I'm really lucky to have my family.") == "I'm lucky to have my family."
    assert tightened("Finally passed my driving test 🎉🎉 :)") == "Finally passed my driving test"
    assert tightened("Moved back home to 🇸🇪 last May ✨") == "Moved back home to 🇸🇪 last May"
    assert tightened("This necklace is super special to me.") == "This necklace is special to me."
    assert tightened("So I just signed up for a pottery class yesterday.") == "I signed up for a pottery class yesterday."


def test_phrases_a_question_could_ask_about_stay_word_for_word():
    # Things joined by "and" are not clauses: "warmth and happiness" is an answer.
    assert tightened("Sunflowers mean warmth and happiness.") == "Sunflowers mean warmth and happiness."
    assert tightened("I'm researching adoption agencies as a single parent.") == (
        "I'm researching adoption agencies as a single parent.")
    # A rarer word describes the thing rather than praising it: "fun and therapeutic" stays.
    assert tightened("We all made our own pots, it was fun and therapeutic!") == (
        "We all made our own pots, it was fun and therapeutic!")
    assert tightened('I loved "So Really Great" by Ed Sheeran.') == 'I loved "So Really Great" by Ed Sheeran.'
    assert tightened("What kind of music do you like?") == "What kind of music do you like?"
    assert tightened("Pottery is a huge part of my life, not just a hobby.") == (
        "Pottery is a huge part of my life, not just a hobby.")


def test_negations_keep_what_they_modify_and_nothing_is_emptied():
    assert tightened("I'm not really sure about the move.") == "I'm not really sure about the move."
    assert tightened("It wasn't so great, the rain never stopped.") == "It wasn't so great, the rain never stopped."
    # All praise, or a name and praise: the sentence stays whole rather than becoming "Caroline!".
    assert tightened("That's so cool!") == "That's cool!"
    assert tightened("Caroline, that sounds awesome!") == "Caroline, that sounds awesome!"


NAMES = ["Caroline", "Sweden", "Matt", "Patterson", "Door", "Dash", "Grand", "Canyon"]
NUMBERS = ["3", "2022", "9-5", "18th", "100%"]
NEGATIONS = ["not", "never", "no", "don't", "isn't", "wasn't", "nothing"]
PLAIN = ["I", "went", "to", "the", "lake", "we", "painted", "a", "single", "parent", "adoption", "agencies", "and",
         "but", "my", "kids", "love", "camping", "you", "know", "haha", "huh", "right", "of", "kind", "much", "far",
         "one", "like", "as", "so", "Just", "So", "Really", "Wow", "Plus", "Also"]
WORDS = st.sampled_from(sorted(EVALUATIVE | FRAME | HEDGES) + NAMES + NUMBERS + NEGATIONS + PLAIN)
PUNCTUATION = st.sampled_from(["", "", "", "", ",", " -", " –", ";", "!", "."])
SENTENCES = st.tuples(st.lists(st.tuples(WORDS, PUNCTUATION), min_size=1, max_size=18),
                      st.sampled_from([".", "!", "?", ""])).map(
    lambda parts: " ".join(w + p for w, p in parts[0]) + parts[1])


def words(text: str) -> list[str]:
    return re.findall(r"[\w'%-]+", text)


@given(SENTENCES)
def test_trimming_only_removes_words_and_keeps_names_numbers_and_negations(sentence):
    out = tightened(sentence)
    said, kept = [w.lower() for w in words(sentence)], [w.lower() for w in words(out)]
    rest = iter(said)
    assert all(w in rest for w in kept), "trimming adds or reorders words"
    for word in words(sentence):
        if word in NAMES or word in NUMBERS or word in NEGATIONS:
            assert word.lower() in kept, f"{word!r} lost: {sentence!r} -> {out!r}"
    assert tightened(out) == out, f"trimming twice trims more: {sentence!r} -> {out!r} -> {tightened(out)!r}"
