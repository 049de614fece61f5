"""Design document 003 (session summaries with structured fields): key decisions by rule (top 5) and a hybrid
summary that keeps the rules' key points when the model gives none. See tests/spec/README.md."""

from __future__ import annotations

from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.summary.decisions import extract_decisions
from precis.core.summary.summarizers import HybridSummarizer, RuleSummarizer, SummaryRequest
from precis.core.tools.bounded import run_command_messages

from tests.fakes import ScriptedProvider

CONVERSATION = [
    Message(role="user", content="Add caching to the API client."),
    Message(role="assistant", content="Let me look at the client first. We decided to use Redis instead of "
                                      "memcached because it is already deployed."),
    Message(role="user", content="No, use an in-process LRU cache, not Redis."),
    Message(role="assistant", content="Understood. I switched to functools.lru_cache for the client. "
                                      "We won't use Redis here."),
]


def test_003_key_decisions_are_what_was_chosen_rejected_and_corrected():
    # 003's extractKeyDecisions looks for "decided to", "chose to", "will use", "going with"; Precis also records
    # what was rejected and what the user corrected.
    assert extract_decisions(CONVERSATION) == [
        "Chose: We decided to use Redis instead of memcached because it is already deployed.",
        "User corrected: No, use an in-process LRU cache, not Redis.",
        "Chose: I switched to functools.lru_cache for the client.",
        "Rejected: We won't use Redis here.",
    ]


def test_003_key_decisions_keep_the_top_five_newest():
    many = [Message(role="assistant", content=f"We decided to use option number {i} for step {i}.")
            for i in range(8)]
    assert extract_decisions(many) == [f"Chose: We decided to use option number {i} for step {i}." for i in range(3, 8)]


def test_003_rule_summary_records_and_shows_its_decisions():
    draft = RuleSummarizer().summarize(SummaryRequest(CONVERSATION, max_tokens=400, counter=TokenCounter()))
    assert draft.facets.decisions[1] == "User corrected: No, use an in-process LRU cache, not Redis."
    # This chat has no tool calls: its summary is a digest, where each decision is its speaker's line, kept first.
    assert "- assistant: Let me look at the client first. We decided to use Redis" in draft.text


def test_003_hybrid_keeps_the_rules_key_points_and_decisions_when_the_model_gives_none():
    # A fake model, to produce on demand what the embedded model often returns: a narrative and nothing else.
    assistant, result = run_command_messages("echo cache ready")
    messages = [*CONVERSATION, assistant, result]
    reply = "The user asked for caching of the API client."  # hybrid asks for the story only, in plain text
    draft = HybridSummarizer(ScriptedProvider([reply])).summarize(
        SummaryRequest(messages, max_tokens=600, counter=TokenCounter()))
    assert not draft.fallback_used  # the model's narrative was used ...
    assert "The user asked for caching of the API client." in draft.text
    # ... and the rules filled what it left empty.
    assert "[✓ bash: Command: echo cache ready | Exit: 0 | Output: 1 line | Last: cache ready]" in draft.key_points
    assert "User corrected: No, use an in-process LRU cache, not Redis." in draft.facets.decisions
