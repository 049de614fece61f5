"""A long chat's merges nest one in the next: every summary at the chain's depth folds the fold before it, so after
thousands of summaries the oldest record sits thousands of folds deep. Reopening such a chat counted what each fold
covers by recursion and stopped at Python's recursion limit (found rebuilding a reply's prompt in a 10,000-message
chat, benchmarks/bench_sent_records.py); so did `precis history` and the Markdown export."""

from __future__ import annotations

from precis.core.chat.history import history_lines
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.settings import SummarizationPolicy
from precis.core.storage.exporters import export_markdown

DEPTH = 3_000


def test_a_chat_with_folds_thousands_deep_opens_and_reads():
    messages = [Message(role="user" if n % 2 == 0 else "assistant", content=f"message {n}") for n in range(DEPTH + 4)]
    records: list[SummaryRecord] = []
    for n in range(DEPTH):  # each summary covers one message and folds the one before it
        records.append(SummaryRecord(text=f"summary {n}", covered=[CoveredMessage(messages[n].id, messages[n].sha256())],
                                     merged_ids=[records[-1].id] if records else [], status="merged"))
    records[-1].status = "active"
    engine = ContextEngine.restore(messages, records, Budget(8192), SummarizationPolicy(mode="rule"))
    assert [r.id for r in engine.chain()] == [records[-1].id]
    assert engine.archive.covered_count(records[-1]) == DEPTH
    prompt = engine.assemble()
    assert prompt.messages[0].content.startswith(f"[Summary 1 of earlier conversation: {DEPTH:,} messages")
    assert [m.content for m in prompt.messages[1:]] == [f"message {n}" for n in range(DEPTH, DEPTH + 4)]
    lines = history_lines(messages, records, full=True)
    [active] = [line for line in lines if f"messages 1-{DEPTH} " in line]
    assert "[merged]" not in active and f"{DEPTH:,} messages → 1 summary" in active
    exported = "".join(export_markdown("deep", messages, records))
    assert exported.count("summary 2999") == 1
