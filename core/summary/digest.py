"""Conversation digests: where a stretch is conversation rather than tool traffic, the rule summary keeps the
sentences that tell the most (rare words of the conversation, names, numbers, dates, how often, titles, preferences,
answers to the other speaker's questions), whole, ranked by what they tell per token and fitted to the cap, each
under its session's date and its speaker, in the order they were said. Greetings, thanks and reactions are stripped
from a sentence's start; inside it, only words that carry nothing go (sentence_trim).
Repeated messages collapse into one line with a count. After each session's lines, a "Mentioned:" line indexes the
names, dates, numbers, frequencies and rare words of its sentences that did not fit. Merging digests re-ranks the
lines of all of them and re-indexes what the merge drops with what their indexes held."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..model.counted import counted
from ..model.messages import Message
from ..model.tokens import TokenCounter
from .digest_words import FREQUENCY, MONTHS, WHEN, WORD, content_words, frequencies, generic, rarity
from .sentence_trim import tightened
from .text_rules import STOP_WORDS

# A stretch is conversation when at most this share of its messages are tool calls or results.
TOOL_SHARE = 0.2
# A digest takes at most this share of the tokens it replaces (the LoCoMo reference summaries: about 0.2).
DIGEST_SHARE = 0.2
MIN_DIGEST = 160  # tokens: a short stretch still gets its header, dates and a few lines
MIN_WORDS = 3  # words in a sentence that can tell a fact ("We made pizza!")
# A sentence ends at . ! or ? before a space, but not after an initial or a title ("E. B. White", "Dr. Lee"): a
# sentence kept whole keeps its names whole.
SENTENCE = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\b(?:Mr|Ms|Dr|St|Jr|Sr)\.)(?<!\bMrs\.)\s+|\n+")
HEADERS = ("Conversation digest", "Merged conversation digest")
# A message that starts with its speaker's name ("Caroline: ...", "Dr. Lee: ...", as imported group chats and
# LoCoMo's conversations are): one to three capitalized words, not a label ("Note:", "Update:").
SPEAKER = re.compile(r"^(?!(?:Note|Notes|Update|Edit|Error|Warning|Question|Answer|Summary|Example|Output|Input|"
                     r"Result|Step|Task|Todo|TODO|Tip|Hint|Important|Reminder|Context|Goal|Problem|Solution|Fix|"
                     r"Reason|Response|Reply|User|Assistant|System|Human|AI|PS|P\.S\.):)"
                     r"([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+")
SESSION_DATE = re.compile(r"\b(?:on|at)\s+(.{4,40})$|^.{0,40}?[-–]\s*(.{4,60})$")
TIME_OF_DAY = re.compile(r",\s*\d{1,2}:\d{2}\s*[ap]m$", re.IGNORECASE)
# Words that say what someone likes, owns, plans or did: the answers people later ask about follow them.
CUES = frozenset("favorite favourite love loved prefer enjoy hate fan named name called years plan "
                 "planning decided signed adopted moved bought started joined applied".split())
# A sentence's opening that says nothing (greetings, thanks, reactions), with the name of the one addressed.
FILLER = re.compile(
    r"^(?:(?:hey|hi|hello|wow|whoa|yeah|yes|yep|yup|oh|ah|aw+|haha\w*|lol|omg|ooh|um|hmm|well|thanks|thank you|"
    r"thanks so much|sure|cool|awesome|great|nice|totally|absolutely|definitely|right|okay|ok|so|gosh|"
    r"congrats|congratulations)(?:\s+[A-Z][a-z]+)?\s*[,!.:;-]+\s*)+", re.IGNORECASE)
# Sentences that are only a reaction or an empty question, whatever their length.
SMALL_TALK = re.compile(
    r"^(?:how (?:have you been|are you|about you|'s it going)|what(?:'s| is) up|good to see you|great to (?:chat|"
    r"see|hear)|glad to hear|that's (?:so |really )?(?:great|awesome|amazing|cool|nice)|sounds (?:great|fun|"
    r"awesome)|take care|see you|talk (?:soon|later)|bye|anything (?:new|fun|interesting)|i (?:\S+ )?agree)\b",
    re.IGNORECASE)
ABSTRACT_WEIGHT = 0.2
MOSTLY_GENERIC = 0.6  # the share of a sentence's words that are GENERIC above which it weighs ABSTRACT_WEIGHT
DECIDED = 1e5  # the score of a sentence stating a decision: kept after repeated messages, before the rest
# The kind a rule decision is labelled with, before the sentence that states it.
DECISION_KIND = re.compile(r"^(?:Chose|Rejected|User corrected): ")
IMAGE_WEIGHT = 0.5
# What answers the other speaker's question ("What did you do last weekend?" "We went camping.") is what people later
# ask about; it is often told in everyday words, which rarity alone ranks low.
ANSWER_WEIGHT = 1.5
FIRST_PERSON = frozenset("i i'm i've i'd i'll me my we we're we've our us".split())
# Tokens added to a sentence's cost when ranking, so that a short sentence with one rare word does not outrank a
# longer one full of them.
SHORT_SENTENCE = 8
# What a word the message before said (by the other speaker) tells, as a share of what it tells where it is new.
GIVEN = 0.3
# The share of a digest's room for its sessions' "Mentioned:" lines: the names, numbers, dates and rare words of
# sentences that did not fit, as an index (entity memories keep one), so that what was said once is still there. A
# sentence kept says more than its terms: from 0.05 to 0.1 of the room the index kept as many answers, at 0.15 fewer.
MENTION_SHARE = 0.1
MENTIONED = "Mentioned: "
# Words rarer than this (see rarity) are indexed on their own.
RARE = 0.6
QUOTED = re.compile(r"[\"“']([A-Z][^\"”']{2,60})[\"”']")
TOKEN = re.compile(r"[A-Za-z][\w'’-]*|\d[\d,.:/]*%?")
CONNECTORS = frozenset(("of", "the", "and", "&", "de"))
# Word endings of adjectives, verb forms and abstract nouns: an indexed term made only of such words (or of
# GENERIC ones) says how something was, not what it was, and goes after names, objects and places.
DESCRIBING = ("ful", "ive", "ous", "ing", "ed", "ly", "ness", "able", "ible", "ity", "ment")
DESCRIBING_WEIGHT = 0.3
MAX_PHRASE = 3  # words in an indexed run of rare words ("adoption agencies")


def is_conversation(messages: list[Message]) -> bool:
    """True when the stretch is people talking rather than tool traffic."""
    spoken = [m for m in messages if m.role in ("user", "assistant") and m.content.strip() and not m.tool_calls]
    tools = sum(1 for m in messages if m.role == "tool" or m.tool_calls)
    return bool(spoken) and tools <= TOOL_SHARE * len(messages)


def is_digest(text: str) -> bool:
    return text.startswith(HEADERS)


def session_label(content: str) -> str:
    """The date of a session marker ("Session 2 - 6:10 pm on 22 December, 2022" -> "22 December, 2022, 6:10
    pm"), or the marker itself when it is short."""
    text = " ".join(content.split())
    match = re.search(r"(\d{1,2}:\d{2}\s*[ap]m)\s+on\s+(.+)$", text, re.IGNORECASE)
    if match:
        return f"{match.group(2)}, {match.group(1)}"
    match = SESSION_DATE.search(text)
    if match:
        return (match.group(1) or match.group(2)).strip()
    return text[:60]


def session_date(content: str) -> str:
    """The date a system message gives the messages after it when it is a session or date marker (short, with a
    number in it: "Session 2 - 6:10 pm on 22 December, 2022"), else "" (a system prompt dates nothing)."""
    marker = content.strip()
    return session_label(marker.splitlines()[0]) if len(marker) <= 120 and any(c.isdigit() for c in marker) else ""


def day_of(label: str) -> str:
    """A session's label without its time of day ("22 December, 2022, 6:10 pm" -> "22 December, 2022"): a digest
    dates its facts by the day, and every session's time costs its date line a third more."""
    return TIME_OF_DAY.sub("", label)


@dataclass
class Sentence:
    order: int
    date: str
    speaker: str
    text: str
    turn: int  # the message it was said in: its kept sentences share one line
    count: int = 1
    score: float = 0.0
    # The words of the message it answers (the one before, by someone else): a sentence that says them again is
    # mostly a reaction to it ("That bowl is gorgeous!"), one that says new words reports something.
    given: frozenset[str] = frozenset()
    answers: bool = False  # the message before, by the other speaker, asked something
    decided: bool = False  # it states one of the rules' decisions: kept before the others


def trimmed(sentence: str) -> str:
    """The sentence without an opening that says nothing ("Wow, Caroline, ..."), or "" when that is all it is."""
    rest = FILLER.sub("", sentence.strip())
    if SMALL_TALK.match(rest) or len(WORD.findall(rest)) < MIN_WORDS:
        return ""
    return rest[0].upper() + rest[1:] if rest[0].islower() and rest != sentence.strip() else rest


def speakers_names(sentences: list[Sentence]) -> set[str]:
    """The speakers' names, lowercased, and what they call each other for short ("mel" for Melanie)."""
    people = {p.lower() for s in sentences for p in s.speaker.split()}
    return people | {w for w in {w.lower() for s in sentences for w in WORD.findall(s.text)}
                     if len(w) >= 3 and any(p.startswith(w) for p in people)}


def rank(sentences: list[Sentence], cost: Callable[[Sentence], int]) -> None:
    """Score each sentence by what it tells per token: its words weighed by how rare they are in English and in
    these sentences (a word said once tells more than one said everywhere), with names, numbers, dates, titles
    and the words before likes, plans and possessions counting extra; the speakers' own names (said to each
    other all the time) count for nothing; questions tell little (their answers tell); words the other speaker
    just said tell less than new ones (a reaction repeats them, a report brings its own)."""
    addressed = speakers_names(sentences)
    frequency = Counter(w for s in sentences if s.count == 1 for w in content_words(s.text) - addressed)
    total = max(len(sentences), 1)
    for s in sentences:
        if s.count > 1 or s.decided:  # a repeated message is kept once, with its count, first; then decisions
            s.score = 1e6 if s.count > 1 else DECIDED
            continue
        words = [w for w in WORD.findall(s.text) if w.lower() not in addressed]
        said = {w for w in content_words(s.text) - addressed if len(w) > 2}
        if len(said) < 2:
            s.score = 0.0
            continue
        value = sum(rarity(w) * math.log(1 + total / frequency[w]) * (GIVEN if w in s.given else 1.0)
                    for w in said)
        value += 2.0 * sum((GIVEN if w.lower().split("'")[0] in s.given else 1.0) for w in words[1:]
                           if w[0].isupper() and w not in ("I", "I'm", "I've", "I'll", "I'd"))
        numbers = sum(1 for w in words if w[0].isdigit() or w.lower() in MONTHS) + len(frequencies(s.text))
        value += 2.0 * numbers
        value += 1.0 * min(sum(1 for w in words if w.lower() in WHEN), 2)
        value += 3.0 * len(QUOTED.findall(s.text))
        value += 1.5 * sum(1 for w in words if w.lower() in CUES)
        lower = [w.lower() for w in words]
        # What the speakers say of themselves ("I've known them for 4 years", "my grandma") carries the facts.
        value += 1.0 * min(sum(1 for w in lower if w in FIRST_PERSON), 3)
        if sum(map(generic, said)) >= MOSTLY_GENERIC * len(said):
            value *= ABSTRACT_WEIGHT  # praise, feelings and abstractions only: no fact to ask about
        if s.text.startswith("[") and s.text.endswith("]"):
            value *= IMAGE_WEIGHT  # "[shares an image: a photo of ...]": what a picture showed, not what was said
        if s.text.endswith("?"):
            value *= 0.3
        elif not any(w in FIRST_PERSON for w in lower) and any(w in ("you", "your", "you're") for w in lower):
            value *= 0.5  # said about the listener: mostly a reaction to what they said
        if s.answers:
            value *= ANSWER_WEIGHT
        s.score = value / (cost(s) + SHORT_SENTENCE)


def choose(sentences: list[Sentence], room: int, count_tokens: Callable[[str], int]) -> list[Sentence]:
    """The best sentences per token that fit in `room` (with their speaker's and date's lines), in the order they
    were said."""
    rank(sentences, lambda s: count_tokens(s.text))
    used, dates, turns, chosen = 0, set(), set(), []
    for sentence in sorted(sentences, key=lambda s: (-s.score, s.order)):
        # A sentence joins the line of its message when another of that message is kept, else it starts one.
        cost = count_tokens(sentence.text if sentence.turn in turns else line_of([sentence])) + 1
        if sentence.date and sentence.date not in dates:
            cost += count_tokens(sentence.date) + 3
        if sentence.score <= 0 or used + cost > room:
            continue
        chosen.append(sentence)
        dates.add(sentence.date)
        turns.add(sentence.turn)
        used += cost
    return sorted(chosen, key=lambda s: s.order)


def terms_of(text: str, skip: set[str]) -> list[str]:
    """The names, dates, numbers with their nouns, how often and runs of rare words of a sentence, as said ("Grand
    Canyon", "7 May 2023", "4 years", "twice a year", "adoption agencies"), without the words in `skip` (the
    speakers' names)."""
    found = list(TOKEN.finditer(text))
    words = [m.group(0).rstrip(".,:/-") for m in found]
    joined = [n > 0 and not text[found[n - 1].end():found[n].start()].strip() for n in range(len(words))]
    lower = [re.sub(r"['’]s$", "", w.lower()) for w in words]  # "Charlotte's" is a name, "I've" is not
    dropped = STOP_WORDS | WHEN | skip

    def plain(n: int) -> bool:  # a word that can stand in an indexed run: no pronoun, contraction or stop word
        return "'" not in lower[n] and "’" not in lower[n] and lower[n] not in dropped

    def name(n: int) -> bool:
        return n > 0 and len(words[n]) > 1 and words[n][0].isupper() and plain(n)  # a sentence's first word is capitalized anyway

    terms, n = frequencies(text), 0
    while n < len(words):
        end = n + 1
        if words[n][0].isdigit() or lower[n] in MONTHS:
            while end < len(words) and joined[end] and end - n < 3 and (
                    words[end][0].isdigit() or lower[end] in MONTHS or (end == n + 1 and plain(end))):
                end += 1
            if words[n][0].isdigit() or end > n + 1:
                terms.append(" ".join(words[n:end]))
        elif name(n):
            while end < len(words) and joined[end] and (name(end) or (
                    lower[end] in CONNECTORS and end + 1 < len(words) and joined[end + 1] and name(end + 1))):
                end += 1
            terms.append(re.sub(r"['’]s$", "", " ".join(words[n:end])))
        elif n > 0 and plain(n) and words[n].isalpha() and len(words[n]) > 3:  # a first word is often "Gotta"
            while end < len(words) and end - n < MAX_PHRASE and joined[end] and plain(end) and not name(end):
                end += 1
            # The run ends at a word that names something ("sunset perfectly" -> "sunset"; "poetry reading" stays).
            first, last = n, end
            while last - first > 1 and (generic(lower[last - 1]) or lower[last - 1].endswith(("ly", "ed"))):
                last -= 1
            while last - first > 1 and generic(lower[first]):
                first += 1
            if any(rarity(w) >= RARE for w in lower[first:last]):
                terms.append(" ".join(words[first:last]))
        n = end
    return terms


def salience(term: str) -> float:
    """What an indexed term tells: names, numbers, dates and how often count most, then words by how rare they
    are."""
    words = term.split()
    frequency = bool(FREQUENCY.fullmatch(term))
    value = sum(rarity(w.lower()) for w in words if w.isalpha())
    value += 2.0 * (any(w[0].isdigit() or w.lower() in MONTHS for w in words) or frequency)
    value += 2.0 * (term[0].isupper())
    if all(generic(w.lower()) or w.lower().endswith(DESCRIBING) for w in words if w.isalpha()):
        value *= DESCRIBING_WEIGHT  # "thankful", "motivating", "chatted": how it was, not what
    # How often is one fact however many words say it ("at least once a week"): counted as one word, it went after
    # every rare word of the stretch and out of the index (on the shared three and their concatenations at 8k, 14
    # more answers kept; none more or fewer on the held out).
    return value / (2 if frequency else len(words) + 1)


def mentioned(candidates: list[tuple[str, str]], kept: str, room: int,
              count_tokens: Callable[[str], int]) -> dict[str, list[str]]:
    """Per session date, the most salient of `candidates` ((date, term), in the order said) that the kept text does
    not already hold, deduplicated, fitted to `room` tokens with their "Mentioned:" lines."""
    have = " " + " ".join(WORD.findall(kept.lower())) + " "
    seen: set[str] = set()
    unique = []
    for date, term in candidates:
        key = " ".join(WORD.findall(term.lower()))
        if key and key not in seen and f" {key} " not in have:
            seen.add(key)
            unique.append((date, term))
    by_date: dict[str, list[str]] = {}
    used = 0
    for date, term in sorted(unique, key=lambda c: -salience(c[1])):
        cost = count_tokens(term) + 1 if date in by_date else count_tokens(MENTIONED + term) + 1
        if used + cost > room:
            continue
        by_date.setdefault(date, []).append(term)
        used += cost
    return by_date


def indexed(sentences: list[Sentence], chosen: list[Sentence], extra: list[tuple[str, str]], room: int,
            count_tokens: Callable[[str], int]) -> dict[str, list[str]]:
    """The "Mentioned:" terms of the sentences not chosen (and of `extra`: earlier digests' index lines)."""
    skip = speakers_names(sentences)
    kept = {id(s) for s in chosen}
    candidates = extra + [(s.date, t) for s in sentences if id(s) not in kept for t in terms_of(s.text, skip)]
    return mentioned(candidates, " ".join(s.text for s in chosen), room, count_tokens)


def sentences_of(messages: list[Message], date: str = "") -> list[Sentence]:
    """Every sentence that says something, with its session date (`date` until the stretch's first marker) and
    speaker; a repeated message becomes one line with its count."""
    repeats = Counter(" ".join(m.content.split()) for m in messages if m.role in ("user", "assistant"))
    seen: set[str] = set()
    out: list[Sentence] = []
    turn = 0
    before: frozenset[str] = frozenset()
    before_speaker, before_asked = "", False
    for m in messages:
        if m.role == "system":
            if marker := session_date(m.content):  # a system prompt dates nothing
                date = day_of(marker)
                before, before_speaker, before_asked = frozenset(), "", False  # a new session answers nothing said in the last one
            continue
        if m.role not in ("user", "assistant") or not m.content.strip():
            continue
        key = " ".join(m.content.split())
        if key in seen:
            continue
        seen.add(key)
        turn += 1
        content = m.content.strip()
        speaker: str = m.role  # or the name the message starts with
        named = SPEAKER.match(content)
        if named:
            speaker, content = named.group(1), content[named.end():]
        given = before if before_speaker != speaker else frozenset()
        answers = before_asked and before_speaker != speaker
        before, before_speaker, before_asked = frozenset(content_words(content)), speaker, "?" in content
        if repeats[key] > 1:
            out.append(Sentence(len(out), date, speaker, " ".join(content.split()), turn, repeats[key]))
            continue
        for part in SENTENCE.split(content):
            if text := trimmed(" ".join(part.split())):
                out.append(Sentence(len(out), date, speaker, tightened(text), turn, given=given, answers=answers))
    return out


def by_message(chosen: Iterable[Sentence]) -> list[list[Sentence]]:
    """The chosen sentences grouped by the message they were said in, in order."""
    groups: list[list[Sentence]] = []
    for sentence in chosen:
        if groups and groups[-1][-1].turn == sentence.turn:
            groups[-1].append(sentence)
        else:
            groups.append([sentence])
    return groups


def speaker_lines(chosen: Iterable[Sentence]) -> list[list[Sentence]]:
    """The chosen sentences grouped into lines: a message's on one line, with the next kept message's when the same
    speaker said it on the same day (what the other said between was not kept: naming the speaker once is enough).
    A repeated message keeps its own line with its count."""
    lines: list[list[Sentence]] = []
    for group in by_message(chosen):
        last = lines[-1][-1] if lines else None
        if last and last.count == 1 and group[0].count == 1 and (last.speaker, last.date) == (group[0].speaker,
                                                                                            group[0].date):
            lines[-1] += group
        else:
            lines.append(group)
    return lines


def render(header: str, chosen: Iterable[Sentence], index: dict[str, list[str]] | None = None) -> str:
    """The header, then per session its date, its kept lines and its "Mentioned:" line."""
    groups = speaker_lines(chosen)
    index = index or {}
    dates = list(dict.fromkeys([g[0].date for g in groups] + list(index)))
    lines = [header]
    for date in dates:
        if date:
            lines.append(f"[{date}]")
        lines += [line_of(g) for g in groups if g[0].date == date]
        if index.get(date):
            lines.append(MENTIONED + "; ".join(index[date]))
    return "\n".join(lines)


def fitted(header: str, sentences: list[Sentence], room: int, max_tokens: int,
           count_tokens: Callable[[str], int], extra: Iterable[tuple[str, str]] = ()) -> tuple[str, list[Sentence]]:
    """The digest of the best sentences in `room` less the index's share, and the index of the rest. What the index
    leaves of its share goes to more sentences (the index is made again of what they leave)."""
    index_room = int(room * MENTION_SHARE)
    chosen = choose(sentences, room - index_room, count_tokens)
    index = indexed(sentences, chosen, list(extra), index_room, count_tokens)
    spare = room - count_tokens(render("", chosen, index))
    if spare > 0:
        more = choose(sentences, room - index_room + spare, count_tokens)
        more_index = indexed(sentences, more, list(extra), room - count_tokens(render("", more)), count_tokens)
        if count_tokens(render("", more, more_index)) <= room:
            chosen, index = more, more_index
    text = render(header, chosen, index)
    while count_tokens(text) > max_tokens and chosen:  # the estimate of the date lines was short
        chosen.remove(min(chosen, key=lambda s: s.score))
        text = render(header, chosen, index)
    return text, chosen


def digest_room(messages: list[Message], text_tokens: Callable[[Message], int]) -> int:
    """The tokens a digest of these messages may take: its share of what was said (each message's text counted by
    `text_tokens`), at least MIN_DIGEST."""
    spoken = sum(text_tokens(m) for m in messages if m.role in ("user", "assistant"))
    return max(int(spoken * DIGEST_SHARE), MIN_DIGEST)


def conversation_digest(messages: list[Message], max_tokens: int, counter: TokenCounter, date: str = "",
                        decisions: Iterable[str] = ()) -> tuple[str, list[str]]:
    """(digest text within max_tokens, its kept messages as key points: a line of the text may join several of one
    speaker's). Sentences are kept (tightened) or not at all; `date` is the session's where the stretch starts (its
    marker was before the stretch). The sentences that state one of `decisions` (the rules' "Chose: ...", read from
    the same messages) are kept first, on their speaker's line like any other: a decision is said by someone, once."""
    sentences = sentences_of(messages, day_of(date))
    # A kept sentence may be the decision's sentence with filler cut from it, or a clipped decision's whole one.
    stated = [set(WORD.findall(DECISION_KIND.sub("", d).removesuffix("…").lower())) for d in decisions]
    for s in sentences:
        said = set(WORD.findall(s.text.lower()))
        s.decided = any(said <= d or d <= said for d in stated if d)
    room, count_tokens = min(max_tokens, digest_room(messages, counter.text_tokens)), counter.count_text
    people = list(dict.fromkeys(s.speaker for s in sentences))
    # The sessions' dates head their lines below: the header names who spoke, not when.
    header = f"{HEADERS[0]} of {counted(len(messages), 'message')} ({', '.join(people)})"
    text, chosen = fitted(header, sentences, room - count_tokens(header) - 1, max_tokens, count_tokens)
    return text, [line_of(group).removeprefix("- ") for group in by_message(chosen)]


LINE = re.compile(r"^- ([^:\n]{1,40}): (.+?)(?: \(×(\d+)\))?$")


def merged_digest(texts: list[str], covered: int, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """One digest of several (oldest first) within max_tokens: the sentences that tell the most across all of
    them, re-ranked together, under their dates and speakers, in the order they were said. A digest's lines end at
    its first blank line: what follows in its summary (a model's narrative) is not said by anyone."""
    sentences: list[Sentence] = []
    date = ""
    index: list[tuple[str, str]] = []
    for turn, line in enumerate(line for text in texts for line in text.split("\n\n", 1)[0].splitlines()):
        if line.startswith("[") and line.endswith("]"):
            date = line[1:-1]
        elif line.startswith(MENTIONED):
            index += [(date, term) for term in line.removeprefix(MENTIONED).split("; ")]
        elif match := LINE.match(line):
            speaker, said, repeats = match.groups()
            parts = [said] if repeats else [p for p in SENTENCE.split(said) if p.strip()]
            sentences += [Sentence(len(sentences) + n, date, speaker, part, turn, int(repeats or 1))
                          for n, part in enumerate(parts)]
    header = f"{HEADERS[1]} of {counted(covered, 'earlier message')}"
    return fitted(header, sentences, max_tokens - count_tokens(header) - 1, max_tokens, count_tokens, index)[0]


def line_of(group: list[Sentence]) -> str:
    """One line of a speaker's kept sentences (of one message, or of several in a row: speaker_lines): "- Caroline:
    I went ... (×3)"."""
    repeat = f" (×{group[0].count})" if group[0].count > 1 else ""
    return f"- {group[0].speaker}: {' '.join(s.text for s in group)}{repeat}"
