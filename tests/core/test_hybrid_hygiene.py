"""Model output hygiene (hybrid and LLM summaries): the model's sentences and items that say nothing are dropped one
by one, stray punctuation in front and a last sentence cut off go, and a narrative left with nothing falls back to
the rules, the record saying why."""

from __future__ import annotations

from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.summary.llm_output import LLMSummaryOut, without_noise
from precis.core.summary.summarizers import HybridSummarizer, SummaryRequest
from precis.core.tools.bounded import run_command_messages

from tests.fakes import ScriptedProvider

# Scripted replies: the markup and numbering a small model sometimes writes, which it does not write on demand.


def stretch() -> list[Message]:
    assistant, result = run_command_messages("echo cache ready")
    return [Message(role="user", content="Add caching to the API client."),
            Message(role="assistant", content="I will add an in-process LRU cache to the client."), assistant, result]


def summarize(reply: str):
    return HybridSummarizer(ScriptedProvider([reply])).summarize(
        SummaryRequest(stretch(), max_tokens=600, counter=TokenCounter()))


def test_sentences_that_say_nothing_are_dropped_from_the_models_story():
    draft = summarize("#1. The user asked for caching of the API client. <br>. **. 2. The cache is ready.")
    assert not draft.fallback_used
    story = draft.text.split("What happened:\n", 1)[1]
    assert story.splitlines() == ["- The user asked for caching of the API client.", "- The cache is ready."]


def test_a_story_of_markup_and_numbering_only_falls_back_to_the_rules_and_says_why():
    draft = summarize("#1. <br>. ][. 2.")
    assert draft.fallback_used and draft.mode == "rule"
    assert draft.fallback_reason == "the model's narrative was punctuation, numbering or markup only"
    assert "What happened" not in draft.text and "`echo cache ready`" in draft.text


def test_a_sentence_naming_someone_the_transcript_never_mentions_is_dropped():
    # The embedded model wrote "3) Sarah (Melissa): Hey Caroline?" of a LoCoMo talk between Caroline and Melanie.
    draft = summarize("The user asked for caching of the API client. Then Melissa reviewed it with Sarah.")
    assert "caching of the API client" in draft.text and "Melissa" not in draft.text


def test_stray_punctuation_in_front_and_a_sentence_cut_off_at_the_end_go():
    # What the embedded model wrote in llm mode of sweagent_1 at 8k (the JSON string stopped by its length cap).
    out = LLMSummaryOut(narrative=", This worked as expected, and we didn't get any error. On the other hand,",
                        key_points=["- The server echoes the input back", "#1"])
    clean = without_noise(out)
    assert clean.narrative == "This worked as expected, and we didn't get any error."
    assert clean.key_points == ["The server echoes the input back"]


def test_the_schema_sent_closes_every_object_and_a_reply_with_more_keys_still_reads():
    # llama.cpp's grammar lets a model add keys of any length unless the schema forbids them: SmolLM2 wrote
    # "What happened": {...} until its tokens ran out, and 7 of 16 summaries fell back to the rules.
    from precis.core.summary.llm_output import SUMMARY_SCHEMA

    assert SUMMARY_SCHEMA["additionalProperties"] is False
    assert all(definition["additionalProperties"] is False for definition in SUMMARY_SCHEMA["$defs"].values())
    read = LLMSummaryOut.model_validate({"narrative": "We moved the billing tables.", "extra": {"from": "a server"}})
    assert read.narrative == "We moved the billing tables."
