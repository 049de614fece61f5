"""Conversation digests, session markers and the model's output hygiene."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript
from precis.core.summary.digest import (
    choose,
    conversation_digest,
    digest_room,
    indexed,
    is_conversation,
    mentioned,
    merged_digest,
    rank,
    sentences_of,
    session_label,
    terms_of,
    trimmed,
)
from precis.core.summary.llm_output import LLMActionItem, LLMSummaryOut, says_something, without_noise
from precis.core.summary.summarizers import HybridSummarizer, RuleSummarizer, SummaryRequest

from tests.conftest import CONVERSATIONS_DIR
from tests.fakes import ScriptedProvider

COUNTER = TokenCounter()
COUNT = COUNTER.count_text


def talk() -> list[Message]:
    lines = [("system", "Session 1 - 1:56 pm on 8 May, 2023"),
             ("user", "Caroline: Hey Mel! Good to see you! How have you been?"),
             ("assistant", "Melanie: Hey Caroline! I'm swamped with the kids & work. What's up with you?"),
             ("user", "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."),
             ("system", "Session 2 - 6:10 pm on 22 December, 2022"),
             ("assistant", "Melanie: We're going camping at Lake Tahoe next month with my 3 kids. I painted a "
                           "sunrise there in 2022 and I love it.")]
    return [Message(role=r, content=c) for r, c in lines]


def test_a_digest_keeps_both_speakers_under_their_session_dates_and_whole_sentences():
    messages = talk()
    assert is_conversation(messages)
    text, lines = conversation_digest(messages, 200, COUNTER)
    assert "[8 May, 2023]" in text and "[22 December, 2022]" in text
    assert "- Caroline: I went to a LGBTQ support group yesterday and it was powerful." in text
    assert "Melanie: We're going camping at Lake Tahoe next month with my 3 kids." in text
    body = text.split("\n", 1)[1]
    assert body.index("8 May") < body.index("LGBTQ") < body.index("22 December") < body.index("Lake Tahoe")
    assert "Good to see you" not in text  # greetings carry no fact
    # Dated by the day, once: a session's time of day and the header's date range cost tokens and answer nothing.
    assert "1:56" not in text and "2022" not in text.splitlines()[0]
    # A tighter cap keeps fewer sentences, never part of one.
    small, _ = conversation_digest(messages, 40, COUNTER)
    assert COUNT(small) <= 40
    said = " ".join(m.content for m in messages)
    for line in small.splitlines()[1:]:
        assert line.startswith(("[", "Mentioned: ")) or (line[-1] in ".!?" and line.split(": ", 1)[1] in said)


def test_greetings_thanks_and_reactions_are_stripped_and_a_message_keeps_one_line():
    messages = [Message(role="system", content="Session 4 - 10:37 am on 27 June, 2023"),
                Message(role="user", content="Caroline: Wow, Melanie! That's awesome. Thanks, Mel! Last Friday I went "
                                             "to an LGBTQ+ counseling workshop. My grandma gave me this necklace in "
                                             "Sweden."),
                Message(role="assistant", content="Melanie: I totally agree, Caroline! How have you been?")]
    text, lines = conversation_digest(messages, 200, COUNTER)
    assert lines == ["Caroline: Last Friday I went to an LGBTQ+ counseling workshop. My grandma gave me this "
                     "necklace in Sweden."]
    assert "awesome" not in text and "Melanie:" not in text
    assert trimmed("I 100% agree, Mel.") == trimmed("I totally agree, Mel.") == ""  # a number is no fact here


def test_merged_digests_rank_the_lines_of_every_stretch_together_under_their_dates():
    bland = ["We talked about the weather for a while.", "It was a nice day outside, really.",
             "The afternoon went by slowly as usual.", "Things have been about the same as before.",
             "We just stayed in and rested all day.", "Nothing much else happened this time around."]

    def stretch(date: str, fact: str) -> list[Message]:
        talk = [Message(role="system", content=f"Session - 1:00 pm on {date}")]
        for said in [fact, *bland]:
            talk += [Message(role="user", content=f"Caroline: {said}"),
                     Message(role="assistant", content=f"Melanie: That's so great to hear. {said[:12]}?")]
        return talk
    first = stretch("8 May, 2023", "I adopted a guinea pig named Oscar in March.")
    second = stretch("20 July, 2023", "Melanie's favorite book is \"Charlotte's Web\" by E. B. White.")
    texts = [conversation_digest(part, 400, COUNTER)[0] for part in (first, second)]
    merged = merged_digest(texts, len(first) + len(second), 75, COUNT)
    assert COUNT(merged) <= 75 and "stayed in" not in merged
    assert merged.startswith("Merged conversation digest of")
    assert "[8 May, 2023]\n- Caroline: I adopted a guinea pig named Oscar in March." in merged
    assert "[20 July, 2023]\n- Caroline: Melanie's favorite book is \"Charlotte's Web\" by E. B. White." in merged
    # A merge of merges reads its own format back.
    assert merged_digest([merged], 99, 80, COUNT).split("\n", 1)[1] == merged.split("\n", 1)[1]


def test_a_name_said_once_in_a_sentence_that_did_not_fit_is_still_in_the_digest():
    said = ["I adopted a guinea pig named Oscar in March.", "My favorite book is Charlotte's Web, I read it at 9.",
            "We went camping at Lake Tahoe with my 3 kids.",
            "Yesterday after work I was walking home along the street when I saw my old friend Bartholomew there "
            "for a little while and we talked about the weather and things."]
    messages = [Message(role="system", content="Session 1 - 1:56 pm on 8 May, 2023")]
    messages += [Message(role="user" if n % 2 == 0 else "assistant",
                         content=f"{'Caroline' if n % 2 == 0 else 'Melanie'}: {line}") for n, line in enumerate(said)]
    text, _ = conversation_digest(messages, 90, COUNTER)
    assert COUNT(text) <= 90
    assert "walking home" not in text  # the long sentence that tells little did not fit ...
    assert "Oscar" in text and "Lake Tahoe" in text
    mentioned = [line for line in text.splitlines() if line.startswith("Mentioned: ")]
    assert len(mentioned) == 1 and "Bartholomew" in mentioned[0]  # ... but the name it told is indexed
    assert text.index("[8 May, 2023]") < text.index("Lake Tahoe") < text.index("Mentioned: ")
    # Merging digests reads the index back.
    assert "Bartholomew" in merged_digest([text], len(messages), 90, COUNT)


def test_a_speakers_kept_messages_of_one_day_share_a_line():
    said = [("Caroline", "I adopted a guinea pig named Oscar in March."), ("Melanie", "That's so nice to hear."),
            ("Caroline", "My cousin Bartholomew fixed his kayak in Denver."), ("Melanie", "Wow, good for him!"),
            ("Melanie", "We went camping at Lake Tahoe with my 3 kids.")]
    messages = [Message(role="system", content="Session 1 - 1:56 pm on 8 May, 2023")]
    messages += [Message(role="user" if who == "Caroline" else "assistant", content=f"{who}: {line}")
                 for who, line in said]
    messages.append(Message(role="system", content="Session 2 - 2:00 pm on 9 May, 2023"))
    messages.append(Message(role="user", content="Caroline: I sold my old piano to a school in Boston."))
    text, key_points = conversation_digest(messages, 400, COUNTER)
    # What Melanie said between was not kept: Caroline's two messages are one line; the next day's is its own.
    assert ("[8 May, 2023]\n- Caroline: I adopted a guinea pig named Oscar in March. My cousin Bartholomew fixed his "
            "kayak in Denver.\n- Melanie: We went camping at Lake Tahoe with my 3 kids.\n[9 May, 2023]\n"
            "- Caroline: I sold my old piano to a school in Boston.") in text
    assert len(key_points) == 4  # a key point per message, as said
    # A merge reads the shared line back as both sentences.
    merged = merged_digest([text], len(messages), 400, COUNT)
    assert "Oscar in March. My cousin Bartholomew" in merged and "[9 May, 2023]\n- Caroline: I sold" in merged


def test_repeated_messages_collapse_into_one_line_with_a_count():
    reminder = "Please always provide EXACTLY ONE action in triple backticks, found 0 actions."
    messages = [Message(role="user", content=reminder) if i % 2 else
                Message(role="assistant", content=f"I will look at file number {i} of the project next.")
                for i in range(8)]
    text, _ = conversation_digest(messages, 400, COUNTER)
    assert text.count("EXACTLY ONE action") == 1 and "(×4)" in text


def test_session_markers_are_summarized_with_their_stretch():
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    for m in [Message(role="system", content="You are helpful."), *talk()]:
        engine.append(m, auto=False)
    record = engine.summarize_now(up_to=engine.messages[-1].id)
    covered = {m.content for m in engine.archived_messages(record.id)}
    assert "Session 2 - 6:10 pm on 22 December, 2022" in covered
    kinds = [(i.kind, i.message.content) for i in engine.assemble().items]
    assert kinds[0] == ("system", "You are helpful.")  # the chat's first system message stays
    assert not any("Session 2" in c for k, c in kinds if k == "system")
    assert "22 December, 2022" in engine.records[-1].text
    assert session_label("Session 3 - 1:14 pm on 25 May, 2023") == "25 May, 2023, 1:14 pm"


def stretch_of_talk() -> list[Message]:
    """Longer messages: a summary of a few short ones is larger than they are, and is not kept."""
    lines = [("assistant", "Melanie: That sounds like a big step. I remember how nervous I was before my first "
                           "pottery class, and how quickly the room full of strangers felt like friends."),
             ("user", "Caroline: The speakers told how they came out to their families, and one of them works at an "
                      "adoption agency, so I asked her how the home study goes and how long the wait usually is."),
             ("assistant", "Melanie: I'm so proud of you for asking. When you know which agency you want, tell me "
                           "and I'll help you read through the forms; I did the same for my sister last spring.")]
    return [Message(role=r, content=c) for r, c in lines]


def test_a_stretch_is_dated_by_the_session_marker_before_it():
    # LoCoMo-style: the chat opens with its first session's marker, which stays as the system prompt; the summary
    # of the stretch after it still dates its facts. A plain system prompt dates nothing.
    for opening, date in (("Session 1 - 1:56 pm on 8 May, 2023", "8 May, 2023"), ("You are helpful.", "")):
        engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"),
                               TokenCounter())
        for m in [Message(role="system", content=opening), *talk()[1:4], *stretch_of_talk()]:
            engine.append(m, auto=False)
        record = engine.summarize_now(up_to=engine.messages[-1].id)
        assert engine.assemble().items[0].message.content == opening
        body = record.text.split("\n", 1)[1]
        if date:
            assert body.startswith(f"[{date}]")
        else:
            assert "[" not in body and "helpful" not in record.text


def test_a_session_marker_kept_verbatim_dates_the_messages_after_it_in_the_prompt():
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    later = [Message(role="system", content="Session 3 - 1:14 pm on 25 May, 2023"),
             Message(role="user", content="Caroline: I'm researching adoption agencies this week."),
             Message(role="assistant", content="Melanie: That's wonderful, Caroline!"),
             Message(role="system", content="Session 4 - 10:37 am on 27 June, 2023"),
             Message(role="user", content="Caroline: Where did you say you painted the lake sunrise?")]
    for m in [Message(role="system", content="You are helpful."), *talk(), *later]:
        engine.append(m, auto=False)
    engine.summarize_now(up_to=engine.messages[6].id)  # the first two sessions
    contents = [i.message.content for i in engine.assemble().items]
    assert contents[0] == "You are helpful."
    # Each kept marker stands just before the messages it dates, not hoisted with the system prompt.
    assert contents[-5:] == [m.content for m in later]
    # What is recalled (here the sunrise, from the summarized sessions) comes after the summary, before the dates.
    kinds = [i.kind for i in engine.assemble().items]
    assert kinds[:2] == ["system", "summary"] and kinds.index("recalled") < contents.index(later[0].content)


def test_model_output_that_says_nothing_is_dropped():
    for noise in ("#1", "<br>Your passion is amazing!", "][, due", "1.", "---"):
        assert not says_something(noise), noise
    assert says_something("Caroline joined a support group in May")
    out = LLMSummaryOut(narrative="Caroline and Melanie caught up about family and art.",
                        key_points=["#1", "Melanie paints sunrises at the lake", "]["],
                        action_items=[LLMActionItem(task="][, due"), LLMActionItem(task="Book the camping trip")])
    clean = without_noise(out)
    assert clean.key_points == ["Melanie paints sunrises at the lake"]
    assert [a.task for a in clean.action_items] == ["Book the camping trip"]


def test_folding_a_chain_of_digests_keeps_facts_from_its_first_stretch():
    """A merge re-ranks the sentences of every digest it folds: the first stretch's facts survive later merges."""
    policy = SummarizationPolicy(mode="rule", max_depth=2, keep_recent=2, min_recent=2)
    engine = ContextEngine(Budget(window=4096, reserve_output=256), policy, TokenCounter())
    engine.append(Message(role="system", content="You are helpful."), auto=False)
    chatter = ["That sounds like a lovely time, really.", "We mostly stayed home and rested this week.",
               "The weather has been about the same as always.", "Nothing much else to report from here."]
    for session in range(4):
        engine.append(Message(role="system", content=f"Session {session + 1} - 1:00 pm on {session + 3} May, 2023"),
                      auto=False)
        if session == 0:
            engine.append(Message(role="user", content="Caroline: My grandma gave me a necklace in Sweden when I "
                                                        "was 12."), auto=False)
        for n in range(16):
            engine.append(Message(role="assistant" if n % 2 else "user",
                                  content=f"{'Melanie' if n % 2 else 'Caroline'}: {chatter[n % 4]}"), auto=False)
        engine.summarize_now()
    merged = [r for r in engine.chain() if r.merged_ids]
    assert merged and merged[0].text.startswith("Merged conversation digest")
    # Under its session's date, as a line or, where the repeated lines took the room, in its "Mentioned:" index.
    first_session = merged[0].text.split("[3 May, 2023]\n", 1)[1].split("\n[", 1)[0]
    assert all(fact in first_session for fact in ("grandma", "necklace", "Sweden", "12"))
    assert sum(r.tokens for r in engine.chain()) <= engine.budget.available * policy.conversation_chain_share


def test_conversation_digests_take_their_own_share_of_the_budget_and_tool_traffic_keeps_the_chains():
    """Where the summaries are conversation digests the chain may take conversation_chain_share; tool traffic keeps
    chain_share; neither more than its share of what the system prompt leaves under the trigger."""
    policy = SummarizationPolicy(mode="rule", chain_share=0.3, conversation_chain_share=0.5)
    talk_engine = ContextEngine(Budget(window=8192, reserve_output=512), policy, TokenCounter())
    for m in talk():
        talk_engine.append(m, auto=False)
    assert talk_engine.summarization.is_talk()
    assert 7680 * 0.49 < talk_engine.summarization.summary_cap() <= 7680 * 0.5  # the session markers take a little
    tools = ContextEngine(Budget(window=8192, reserve_output=512), policy, TokenCounter())
    tools.append(Message(role="user", content="Run the tests please."), auto=False)
    tools.append(Message(role="assistant", content="", tool_calls=(ToolCall(id="c1", name="Bash",
                                                                             arguments={"command": "pytest"}),)),
                 auto=False)
    tools.append(Message(role="tool", content="3 passed", tool_call_id="c1", name="Bash"), auto=False)
    assert not tools.summarization.is_talk()
    assert tools.summarization.summary_cap() == int(7680 * 0.3)
    # A large system prompt: the conversation's chain keeps to its share of what is left under the trigger.
    crowded = ContextEngine(Budget(window=8192, reserve_output=512), policy, TokenCounter())
    crowded.append(Message(role="system", content="rule " * 3000), auto=False)
    for m in talk():
        crowded.append(m, auto=False)
    fixed = crowded.usage().by_kind["system"]
    assert crowded.summarization.summary_cap() <= (7680 * 0.8 - fixed) * 0.5 / 0.8 + 1


def varied_talk(sessions: int) -> list[Message]:
    """Two people telling each other different things: every sentence its own facts, no word rare enough to index."""
    things = ["garden", "kitchen", "bicycle", "library", "market", "concert", "river", "bakery", "museum", "office",
              "station", "harbor", "forest", "school", "theater", "village"]
    talk = []
    for session in range(sessions):
        talk.append(Message(role="system", content=f"Session {session + 1} - 2:00 pm on {session + 1} June, 2023"))
        for n, thing in enumerate(things):
            speaker = "Melanie" if n % 2 else "Caroline"
            talk.append(Message(role="assistant" if n % 2 else "user",
                                content=f"{speaker}: On day {n + 2} I walked to the {thing} with my sister again. "
                                        f"The {thing} was busy that morning, so we stayed for an hour."))
    return talk


def test_a_digest_fills_its_share_with_whole_sentences_when_the_index_needs_less():
    messages = varied_talk(3)
    spoken = sum(COUNT(m.content) for m in messages if m.role != "system")
    text, _ = conversation_digest(messages, 4000, COUNTER)
    longest = max(COUNT(line) for line in text.splitlines())
    assert spoken * 0.2 - 2 * longest <= COUNT(text) <= spoken * 0.2 + 2


def test_a_rule_summary_of_talk_keeps_its_decisions_as_digest_lines_within_the_digests_share():
    messages = varied_talk(1)
    decision = "We decided to adopt a puppy named Bailey in May."
    messages.insert(3, Message(role="user", content=f"Caroline: Hey Mel! {decision}"))
    draft = RuleSummarizer().summarize(SummaryRequest(messages, max_tokens=4000, counter=TokenCounter()))
    # Said by Caroline, once, on her line under its date: no "Decisions:" block repeating it as "- Chose: ...".
    line = next(line for line in draft.text.splitlines() if decision in line)
    assert line.startswith("- Caroline: ") and draft.text.count("adopt a puppy") == 1
    assert "Decisions" not in draft.text and "Chose:" not in draft.text
    assert draft.facets.decisions == [f"Chose: {decision}"]  # the record still lists it
    assert COUNT(draft.text) <= digest_room(messages, COUNTER.text_tokens)  # its share, at least MIN_DIGEST
    # Kept first: a digest with room for one line keeps the decision, not the sentences that tell more.
    small = RuleSummarizer().summarize(SummaryRequest(messages, max_tokens=50, counter=TokenCounter()))
    assert small.text.splitlines()[2].startswith(f"- Caroline: {decision}") and COUNT(small.text) <= 50
    assert small.text.count("walked") <= 1
    merged = merged_digest([draft.text], len(messages), 4000, COUNT)
    assert next(line for line in merged.splitlines() if decision in line).startswith("- Caroline: ")


def test_a_question_about_a_decision_is_no_decision_in_a_rule_or_a_hybrid_summary_of_talk():
    messages = varied_talk(1)
    decision = "We decided to adopt a puppy named Bailey in May."
    messages.insert(3, Message(role="user", content=f"Caroline: {decision}"))
    messages.insert(4, Message(role="assistant", content="Melanie: What made you decide to adopt a puppy?"))
    request = SummaryRequest(messages, max_tokens=4000, counter=TokenCounter())
    rule = RuleSummarizer().summarize(request)
    # The model's story is scripted: the facets of talk are the rules' in both modes.
    hybrid = HybridSummarizer(ScriptedProvider(["Caroline and Melanie talked about their walks."])).summarize(request)
    assert hybrid.mode == "hybrid" and not hybrid.fallback_used
    [chose] = rule.facets.decisions
    assert decision in chose and hybrid.facets.decisions == [chose]


def test_a_digest_keeps_a_concrete_fact_over_praise_of_the_same_length():
    fact = "I keep my grandmother's old violin in a cedar box under the bed."
    praise = "I'm so amazed by your passion, dedication and enthusiasm - so admirable and inspiring!"
    assert abs(COUNT(fact) - COUNT(praise)) <= 2
    messages = [Message(role="system", content="Session 1 - 2:00 pm on 1 June, 2023"),
                Message(role="user", content=f"Caroline: {fact}"),
                Message(role="assistant", content=f"Melanie: {praise}")]
    sentences = sentences_of(messages)
    rank(sentences, lambda s: COUNT(s.text))
    # Its rare words ("admirable", "enthusiasm") are praise and feeling: none names anything to ask about later.
    assert sentences[0].score > 2 * sentences[1].score
    # A sentence mostly of such words, with one that is not ("forward"), tells little more.
    mostly = [Message(role="user", content=f"Caroline: {fact}"),
              Message(role="assistant", content="Melanie: I'm staying positive and pushing forward with the whole thing.")]
    sentences = sentences_of(mostly)
    rank(sentences, lambda s: COUNT(s.text))
    assert sentences[0].score > 3 * sentences[1].score
    # With room for one of them (its line and its date's), the digest keeps the fact.
    room = COUNT(f"- Melanie: {praise}") + COUNT("1 June, 2023") + 6
    assert [s.text for s in choose(sentences_of(messages), room, COUNT)] == [fact]


def test_a_three_word_fact_is_a_sentence_that_outranks_three_words_of_small_talk():
    """"We made pizza!" answers what the family cooked together (LoCoMo asks it); at four words or more only, it
    was dropped before ranking and never reached the digest or its index."""
    messages = [Message(role="user", content="John: We made pizza! Have you made anything lately?"),
                Message(role="assistant", content="Maria: That's so cool! Love that idea.")]
    kept = [s.text for s in sentences_of(messages)]
    assert "We made pizza!" in kept
    sentences = sentences_of(messages)
    rank(sentences, lambda s: COUNT(s.text))
    scores = {s.text: s.score for s in sentences}
    assert scores.pop("We made pizza!") > 3 * max(scores.values())


def test_the_mentioned_index_names_things_before_it_says_how_they_felt():
    said = "Honestly I felt so motivated and thankful, we chatted for hours about the frisbee tournament."
    assert terms_of(said, set()) == ["motivated", "thankful", "chatted", "frisbee tournament"]
    # A run of rare words ends at a word that names something; "poetry reading" is one thing.
    assert terms_of("We caught the sunset perfectly, then went to a poetry reading.", set()) == [
        "sunset", "poetry reading"]
    # Everyday words that together name a thing are indexed ("adoption agencies"), not only rare ones.
    assert terms_of("Then I looked at adoption agencies with my sister.", set()) == ["adoption agencies"]
    candidates = [("1 June, 2023", term) for term in ("swamped", "thankful", "motivating", "chatted", "kayak",
                                                      "frisbee tournament", "sunset")]
    index = mentioned(candidates, "", 16, COUNT)
    assert index == {"1 June, 2023": ["frisbee tournament", "kayak", "sunset"]}
    # Slang and drawn-out words come after things too, and what the speakers call each other is no term.
    said = sentences_of([Message(role="user", content="Caroline: My brother showed Mel his kayak, sooo rusty."),
                         Message(role="assistant", content="Melanie: Yeah, I gotta say that was kinda badass.")])
    assert "Mel" not in str(indexed(said, [], [], 200, COUNT))
    slang = [("1 June, 2023", term) for term in ("sooo", "kinda", "gotta", "kayak", "badass")]
    assert mentioned(slang, "", 8, COUNT) == {"1 June, 2023": ["kayak"]}


@pytest.mark.slow
def test_a_merge_of_digests_leaves_the_room_of_the_next_and_the_chain_fills_its_share():
    """Folding the chain, the merged digest takes what the digest about to be written does not need: a long
    conversation's chain ends at its share, not a quarter below it, and never over it."""
    places = ["garden", "kitchen", "bicycle shop", "library", "market", "concert hall", "river", "bakery"]
    policy = SummarizationPolicy(mode="rule")
    engine = ContextEngine(Budget(window=4096, reserve_output=256), policy, TokenCounter())
    engine.append(Message(role="system", content="Session 1 - 2:00 pm on 1 June, 2023"))
    for week in range(30):
        engine.append(Message(role="system", content=f"Session {week + 2} - 2:00 pm on {week % 28 + 1} July, 2023"))
        for n in range(16):
            speaker, place = ("Melanie" if n % 2 else "Caroline"), places[n % 8]
            engine.append(Message(role="assistant" if n % 2 else "user",
                                  content=f"{speaker}: In week {week} on day {n + 2} I walked to the {place} with my "
                                          f"sister number {week * 16 + n}. It was busy, so we stayed {week + n} minutes."))
    assert any(r.merged_ids for r in engine.chain())
    share = engine.budget.available * policy.conversation_chain_share
    used = share - engine.summarization.chain_room()
    assert 0.95 * share <= used <= share


def test_a_reaction_that_repeats_the_other_speakers_words_ranks_below_the_same_words_said_first():
    report = Message(role="user", content="Caroline: I gave a talk at the Lakeside Pride festival about my transition.")
    reaction = Message(role="assistant", content="Melanie: I'm so proud of your Lakeside Pride festival talk about "
                                                 "transition.")
    other = Message(role="user", content="Caroline: My grandma gave me a necklace in Sweden when I was young.")

    def score_of_reaction(messages: list[Message]) -> float:
        sentences = sentences_of(messages)
        rank(sentences, lambda s: COUNT(s.text))
        return next(s.score for s in sentences if s.speaker == "Melanie")

    # The same sentence, answering the report it echoes or after something else: the echo tells less.
    assert score_of_reaction([report, reaction]) < 0.6 * score_of_reaction([other, reaction])


def test_in_a_small_window_a_digest_fits_beside_the_messages_it_keeps():
    """The conversation's share of a 1,024-token window and the two messages a manual summary keeps do not fit
    together: the digest takes what they leave, so the prompt is within the budget again."""
    policy = SummarizationPolicy(mode="rule", enabled=False)
    engine = ContextEngine(Budget(window=1024, reserve_output=512), policy, TokenCounter())
    for n in range(40):
        engine.append(Message(role="user" if n % 2 == 0 else "assistant",
                              content=f"Step {n} of the migration plan: " + "move the billing tables and check them. " * 12))
    assert engine.usage().ratio > 1
    engine.summarize_now()
    assert engine.usage().ratio <= 1 and engine.chain()


@pytest.mark.slow
def test_a_long_conversation_opened_in_a_small_window_keeps_its_recent_tail_verbatim():
    """Opening locomo_1 (438 messages) at 8k: the digest of the rest is expected above the target fill by itself,
    which is no reason to drop recent messages (the tail shrank to 2 of the 6 kept)."""
    messages = read_transcript(CONVERSATIONS_DIR / "locomo_1.jsonl")
    policy = SummarizationPolicy(mode="rule")
    engine = ContextEngine.restore(messages, [], Budget(window=8192, reserve_output=512), policy, TokenCounter())
    engine.maybe_summarize()
    prompt = engine.assemble()
    verbatim = [i.source_id for i in prompt.items if i.kind == "message" and i.message.role != "system"]
    assert engine.records and verbatim == [m.id for m in messages[-policy.keep_recent:]]
    assert prompt.tokens <= engine.budget.available


def test_how_often_something_is_done_is_ranked_and_indexed_like_a_number():
    said = "We don't go often, usually only once or twice a year, and the kids love it."
    assert "only once or twice a year" in terms_of(said, set())
    assert "three times a week" in terms_of("Yeah, we train together three times a week at the club.", set())
    # Among things that did not fit, how often comes before how it felt.
    candidates = [("1 June, 2023", term) for term in ("thankful", "motivating", "three times a week")]
    assert mentioned(candidates, "", 30, COUNT)["1 June, 2023"][0] == "three times a week"
    # And before a rare word, however many words say it: with room for one term, the index keeps how often.
    candidates = [("1 June, 2023", term) for term in ("easel", "at least once a week")]
    room = COUNT("Mentioned: at least once a week") + 1
    assert mentioned(candidates, "", room, COUNT) == {"1 June, 2023": ["at least once a week"]}

    def score(line: str) -> float:
        sentences = sentences_of([Message(role="user", content=f"Caroline: {line}")])
        rank(sentences, lambda s: COUNT(s.text))
        return sentences[0].score

    assert score("We walk the dogs by the river three times a week.") > score(
        "We walk the dogs by the river near the old mill.")


def test_what_answers_the_other_speakers_question_ranks_above_the_same_words_said_unasked():
    answer = Message(role="assistant", content="Melanie: We went camping at the lake with the kids and roasted "
                                               "marshmallows.")

    def score_after(before: str) -> float:
        sentences = sentences_of([Message(role="user", content=before), answer])
        rank(sentences, lambda s: COUNT(s.text))
        return next(s.score for s in sentences if s.speaker == "Melanie")

    asked = score_after("Caroline: What did you and the family get up to last weekend?")
    assert asked > score_after("Caroline: I spent last weekend painting the garden fence blue.")
    # A new session answers nothing asked in the last one.
    question = Message(role="user", content="Caroline: What did you and the family get up to last weekend?")
    marker = Message(role="system", content="Session 2 - 1:56 pm on 8 June, 2023")
    sentences = sentences_of([question, marker, answer])
    assert not next(s for s in sentences if s.speaker == "Melanie").answers


@given(st.text(max_size=200), st.sampled_from(["user", "assistant", "tool"]), st.booleans(),
       st.sampled_from([None, "Caroline"]))
def test_a_messages_text_counts_the_same_from_its_saved_count_as_tokenized_again(text, role, with_call, name):
    """A digest's room is a share of what its messages said, read from their counts made when the chat opened."""
    calls = (ToolCall("c1", "read_file", {"path": "a.txt"}),) if with_call and role == "assistant" else ()
    message = Message(role=role, content=text, tool_calls=calls, name=name)
    counter = TokenCounter()
    fresh = counter.text_tokens(message)
    counter.raw_message_tokens(message)  # counted, as when the chat opened
    assert counter.text_tokens(message) == fresh == counter.count_text(text)


def test_a_digest_is_dated_by_session_markers_and_names_speakers_not_labels():
    """An imported chat's system prompt is no date, and "Note:" or a clause before a colon is no one's name; a
    session marker dates what follows, and "Dr. Lee:" names who spoke."""
    messages = [Message(role="system", content="You are a helpful assistant who answers briefly and kindly.")]
    for n in range(2, 5):
        messages += [Message(role="user", content=f"Note: I planted {n} tomato seedlings in the Kew greenhouse."),
                     Message(role="assistant", content=f"Then {n} seedlings of tomato need watering twice a week.")]
    messages += [Message(role="user", content="The files I have here are: notes.txt and a log from the Kew trip."),
                 Message(role="system", content="Session 2 - 6:10 pm on 22 December, 2022"),
                 Message(role="user", content="Dr. Lee: The greenhouse at Kew needs a new heater before January.")]

    text, _ = conversation_digest(messages, 400, COUNTER)

    assert text.splitlines()[0].endswith("(user, assistant, Dr. Lee)")
    assert "[You are" not in text and "- user: Note: I planted 2 tomato" in text
    after = text.split("[22 December, 2022]\n", 1)[1]
    assert after.startswith("- Dr. Lee: The greenhouse at Kew needs a new heater")

