"""Design document 002 (token counting, the context manager, the LLM and hybrid summarizers, /context and
/summarize), checked literally: the counts, the trigger line, what is kept and in which order, the transcript
the summarizer reads, the command outputs. Expected values are worked out by hand in the comments (cl100k_base:
"hello world" is 2 tokens, " hello world" 2 more), never produced by the code under test. See tests/spec/README.md.
"""

from __future__ import annotations

import json

import pytest
from precis.core.chat.commands import SlashCommand, run_command
from precis.core.chat.session import ChatSession
from precis.core.context.engine import Budget, ContextEngine, NothingToSummarize
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SUMMARIZATION_KEY, SummarizationPolicy
from precis.core.storage.store import open_store
from precis.core.summary.facets import extract_facets
from precis.core.summary.summarizers import RuleSummarizer, SummaryRequest, render_transcript
from precis.core.summary.summary_block import render_artifact_trail

from tests.fakes import ScriptedProvider

# 96 tokens of text: a message of it is 100 tokens with the 4 tokens of per-message overhead (002's countMessages).
TEXT_96 = "hello world" + " hello world" * 47


def hundred(role: str) -> Message:
    return Message(role=role, content=TEXT_96)


# ----- TokenCounter: "count tokens accurately", "handle tool calls in messages", "cache repeated strings" -----

def test_002_tokens_are_cl100k_counts_plus_four_a_message():
    counter = TokenCounter()
    assert counter.count_text("hello world") == 2
    assert counter.raw_message_tokens(Message(role="user", content="hello world")) == 2 + 4
    # A prompt is its messages plus the assistant header the reply is primed with (3 tokens).
    assert counter.prompt_tokens([Message(role="user", content="hello world"),
                                  Message(role="assistant", content="hello world")]) == 6 + 6 + 3


def test_002_tool_call_arguments_are_counted():
    counter = TokenCounter()
    arguments = {"command": "pytest -q tests/test_cache.py"}
    bare = Message(role="assistant", content="hello world", id="bare")
    calling = Message(role="assistant", content="hello world", id="calling",
                      tool_calls=(ToolCall(id="c1", name="execute_bash", arguments=arguments),))
    # 002: `total += this.count(JSON.stringify(call))`: at least the arguments' JSON is added.
    added = counter.raw_message_tokens(calling) - counter.raw_message_tokens(bare)
    assert added >= counter.count_text(json.dumps(arguments)) + counter.count_text("execute_bash")


def test_002_a_message_is_tokenized_once(monkeypatch):
    counter = TokenCounter()
    encoded = []
    original = counter._encoding

    class Spy:
        def encode_ordinary(self, text):
            encoded.append(text)
            return original.encode_ordinary(text)

    monkeypatch.setattr(counter, "_encoding", Spy())
    message = Message(role="user", content="hello world")
    assert [counter.raw_message_tokens(message) for _ in range(3)] == [6, 6, 6]
    assert encoded == ["hello world"]  # cached by message (the document caches by string)


# ----- ContextManager: "trigger at threshold", "preserve recent messages", "keep system prompt", state -------

def manager() -> ContextEngine:
    """A 2,000-token budget (window 2,100, 100 reserved for the reply) with a 100-token system prompt."""
    engine = ContextEngine(Budget(window=2100, reserve_output=100), SummarizationPolicy(mode="rule"), TokenCounter(),
                           system_prompt=TEXT_96)
    assert engine.budget.available == 2000
    return engine


def test_002_summarizes_at_the_trigger_ratio_keeping_the_system_prompt_and_the_recent_messages():
    engine = manager()
    messages = [hundred("user" if n % 2 == 0 else "assistant") for n in range(15)]
    # 14 messages: 3 + 100 + 1,400 = 1,503 tokens, 75% of the budget: under summaryTriggerRatio 0.8.
    for message in messages[:14]:
        assert engine.append(message) is None
    assert engine.usage().total == 1503
    # The 15th: 1,603 tokens, 80.15% >= 80%: summarized now.
    record = engine.append(messages[14])
    assert record is not None and record.trigger == "threshold"
    assert (record.tokens_before, record.usage_ratio) == (1603, 0.8015)
    # keepRecentMessages: 6 (004's preserveRecent). Taking the 9 older messages reaches the target fill (50%):
    # 1,603 - 900 + an expected summary of a quarter of it (225) = 928 <= 1,000; keeping 7 would not (1,003).
    assert record.covered_ids == [m.id for m in messages[:9]]
    prompt = engine.assemble()
    assert [item.kind for item in prompt.items] == ["system", "summary"] + ["message"] * 6
    assert prompt.messages[0].content == TEXT_96  # the system prompt stays first, verbatim
    summary = prompt.messages[1]
    assert summary.role == "system"  # "Add summary as a system message", after the system prompt
    assert summary.content.startswith("[Summary 1 of earlier conversation: 9 messages, rule mode]\n")
    assert prompt.messages[2:] == messages[9:]
    # ContextState: totalTokens, messageCount, summaryCount, lastSummaryAt.
    assert record.tokens_after == engine.usage().total == prompt.tokens < 1000
    assert (len(engine.messages), len(engine.records)) == (15, 1)
    assert record.created_at > 0


def test_002_nothing_to_summarize_leaves_the_messages_as_they_are():
    # `if (toSummarize.length === 0) return messages;`: six messages are all the recent tail.
    engine = manager()
    for n in range(6):
        engine.append(hundred("user" if n % 2 == 0 else "assistant"))
    before = engine.assemble().messages
    with pytest.raises(NothingToSummarize, match="^nothing to summarize: only protected or recent messages are in "
                                                 "the window$"):
        engine.summarize_now()
    assert engine.records == [] and engine.assemble().messages == before


# ----- LLMSummarizer.formatTranscript and HybridSummarizer's extracted sections ------------------------------

SESSION = [
    Message(role="user", content="Run the tests"),
    Message(role="assistant", content="Running them.",
            tool_calls=(ToolCall(id="t1", name="execute_bash", arguments={"command": "pytest -q"}),)),
    Message(role="tool", name="execute_bash", tool_call_id="t1", content="3 passed in 0.12s"),
    Message(role="assistant", content="Reading the module.",
            tool_calls=(ToolCall(id="t2", name="read_file", arguments={"path": "/src/cache.py"}),)),
    Message(role="tool", name="read_file", tool_call_id="t2", content="def get(key):\n    return CACHE[key]"),
]


def test_002_the_summarizer_reads_each_message_with_its_role_and_tool_calls():
    # 002's formatTranscript: `User: ...`, `Assistant: ...` plus `[Tool calls: name]`. Precis names the speaker in
    # capitals, gives each call its arguments and each result its one-line summary (document 000).
    assert render_transcript(SESSION, preserve_error_details=True) == [
        "USER: Run the tests",
        'ASSISTANT: Running them.\n(calls execute_bash {"command": "pytest -q"})',
        "TOOL RESULT [? execute_bash: Command: pytest -q | Exit: ? | Output: 1 line | Last: 3 passed in 0.12s]",
        'ASSISTANT: Reading the module.\n(calls read_file {"path": "/src/cache.py"})',
        "TOOL RESULT [✓ read_file: File: /src/cache.py | Lines: 2 | Type: Python | Exports: get]",
    ]


def test_002_hybrid_facts_are_files_commands_and_errors_extracted_by_rules():
    # HybridSummarizer: "## Files Referenced", "## Commands Executed", "## Errors Encountered", then the model's
    # summary. Precis's rules write the same sections (files by whether they were read or modified; commands as
    # code, with the exit code when it is not 0), led by the user's requests; core/test_engine.py checks that the
    # model's narrative follows them.
    failing = [
        Message(role="assistant", content="",
                tool_calls=(ToolCall(id="t3", name="execute_bash", arguments={"command": "python -m app"}),)),
        Message(role="tool", name="execute_bash", tool_call_id="t3",
                content="Traceback (most recent call last):\nModuleNotFoundError: No module named 'app'\n"
                        "[exit code: 1]"),
    ]
    assert render_artifact_trail(extract_facets([*SESSION, *failing])) == (
        "User requests:\n"
        "- Run the tests\n"
        "Files read:\n"
        "- /src/cache.py\n"
        "Commands:\n"
        "- `pytest -q`\n"
        "- `python -m app` (exit 1)\n"
        "Errors:\n"
        "- ModuleNotFoundError: No module named 'app'"
    )


# ----- Commands: /context shows usage, /summarize triggers a summary -----------------------------------------

def test_002_context_and_summarize_commands(tmp_path):
    with open_store(tmp_path) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})

        def session_of(contents: list[str]) -> ChatSession:
            chat_id = store.create_chat("greetings", settings={"context_window": 1024, "reserve_output": 24})
            store.add_messages(chat_id, [Message(role="user" if n % 2 == 0 else "assistant", content=content)
                                         for n, content in enumerate(contents)])
            session = ChatSession(store, chat_id, ScriptedProvider())
            session.build_engine(estimate=False)
            return session

        def command(session: ChatSession, name: str) -> str:
            result = run_command(session, SlashCommand(name, ""))
            assert not result.failed, result.text
            return result.text

        greetings = session_of(["hello world"] * 10)
        # 10 messages of 6 tokens and the reply's 3: 63 of 1,000.
        assert command(greetings, "context") == "Context: 63 / 1,000 tokens (6%), 0 summaries in the chain."
        # Four "hello world"s (the 6 newest stay verbatim) make a summary larger than they are: it is not kept.
        refused = run_command(greetings, SlashCommand("summarize", ""))
        assert refused.failed and refused.text.startswith("not summarized: a summary of 4 messages would leave")
        assert command(greetings, "context") == "Context: 63 / 1,000 tokens (6%), 0 summaries in the chain."

        notes = session_of([f"Note {n}: the staging box runs the nightly import at two, and its log goes to "
                            f"/var/log/import-{n}.log, which the morning report reads before anyone is in."
                            for n in range(10)])
        assert command(notes, "summarize").startswith("4 messages → 1 summary · ")
        assert command(notes, "context").endswith(", 1 summary in the chain.")
        # Neither command adds a message the model would see.
        assert [m.content for m in store.load_messages(greetings.chat_id)] == ["hello world"] * 10
        assert len(store.load_messages(notes.chat_id)) == 10


def test_002_paths_mentioned_in_text_stay_in_the_summary():
    # extractFilePaths takes every absolute path in any message's text. Precis lists those a tool read or changed,
    # and those only mentioned as files named (relative to the folder most are under, /src here).
    messages = [Message(role="user", content="Please fix /src/app/main.py, then check /etc/nginx/nginx.conf."),
                *SESSION,
                Message(role="assistant", content="The bug is in /src/app/main.py line 40; /src/util.py is fine.")]
    text = RuleSummarizer().summarize(SummaryRequest(messages, max_tokens=400, counter=TokenCounter())).text
    assert "- Please fix /src/app/main.py, then check /etc/nginx/nginx.conf.\n" in text
    assert "- The bug is in /src/app/main.py line 40; /src/util.py is fine.\n" in text
    assert "Files under: /src\nFiles read:\n- cache.py\nFiles named:\n- app/main.py\n- /etc/nginx/nginx.conf\n- util.py\n" in text
