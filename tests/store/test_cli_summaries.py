"""`precis summarize`, `undo-summary` and `history` on a real store (rule mode: no model needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.chats import restore_engine
from precis.core.storage.importers import import_file
from precis.core.storage.store import StoreError, attach_engine, open_store

from tests.conftest import CLAUDE_CODE_RAW


def _chat(data, mode: str = "rule") -> str:
    """A stored chat of 20 messages whose summaries Settings → Summarization says are written by `mode`."""
    with open_store(data) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": mode})
        chat = store.create_chat("cache work")
        store.add_messages(chat, [
            Message(role="user" if i % 2 == 0 else "assistant",
                    content=(f"Step {i}: please look at cache_{i}.py and explain the eviction policy in detail. "
                             * 6) if i % 2 == 0 else f"Step {i}: We decided to use an LRU cache for module {i}. "
                    * 6)
            for i in range(20)])
    return chat


def test_summarize_then_history_then_undo(tmp_path, capsys):
    data = tmp_path / "data"
    chat = _chat(data)
    assert main(["--data-dir", str(data), "summarize", "cache work", "--instructions", "keep the file names"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cache work: 14 messages → 1 summary · ") and "saved, −" in out

    assert main(["--data-dir", str(data), "history", chat[:8], "--full"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("1. ") and "messages 1-14" in out[1]
    assert "rule, written by rules, manual, " in out[1] and " tokens long, instructions: keep the file names" in out[1]
    assert out[2].startswith("   first: Step 0: please look at cache_0.py")
    assert out[3].startswith("   last:  Step 13: We decided to use an LRU cache for module 13.")

    assert main(["--data-dir", str(data), "undo-summary", "cache work"]) == 0
    assert ": 14 messages are back in the context" in capsys.readouterr().out
    with open_store(data) as store:
        [record] = store.load_records(chat)
        assert record.status == "undone" and not store.archived_by(chat)
    assert main(["--data-dir", str(data), "history", "cache work"]) == 0
    assert "[undone]" in capsys.readouterr().out


def test_nothing_to_undo_or_summarize_is_bad_input(tmp_path, capsys):
    data = tmp_path / "data"
    with open_store(data) as store:
        store.create_chat("empty")
    assert main(["--data-dir", str(data), "undo-summary", "empty"]) == 2
    assert main(["--data-dir", str(data), "summarize", "empty"]) == 2
    assert main(["--data-dir", str(data), "history", "nope"]) == 2
    err = capsys.readouterr().err
    assert "precis undo-summary:" in err and "precis summarize:" in err and "no chat with id or title 'nope'" in err


def test_the_record_says_which_model_wrote_it_after_a_round_trip_through_sqlite(tmp_path, capsys):
    data = tmp_path / "data"
    chat = _chat(data)
    with open_store(data) as store:
        covered = store.load_messages(chat)[:4]
        by_model = SummaryRecord(mode="hybrid", text="The user asked about caches.", written_by="local: SmolLM2-135M-Instruct",
                                 covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in covered])
        store.save_summary_state(chat, [by_model], {m.id: by_model.id for m in covered})
    with open_store(data) as store:
        [loaded] = store.load_records(chat)
    assert loaded.written_by == "local: SmolLM2-135M-Instruct"
    assert main(["--data-dir", str(data), "history", "cache work"]) == 0
    assert "hybrid, written by local: SmolLM2-135M-Instruct, " in capsys.readouterr().out


def test_records_saved_before_the_writer_was_recorded_say_what_is_known():
    # As an older Precis stored them: no written_by in the record's JSON.
    old_rule = SummaryRecord.model_validate_json('{"mode": "rule", "text": "Summary of 4 messages"}')
    old_fallback = SummaryRecord.model_validate_json('{"mode": "hybrid", "fallback_used": true}')
    old_model = SummaryRecord.model_validate_json('{"mode": "hybrid", "text": "The user asked."}')
    assert old_rule.writer == "rules" and old_fallback.writer == "rules"
    assert old_model.writer == "a model (not recorded)"


def test_history_and_context_say_why_a_summary_fell_back_to_the_rules(tmp_path, capsys):
    data = tmp_path / "data"
    chat = _chat(data)
    with open_store(data) as store:
        covered = store.load_messages(chat)[:4]
        fell_back = SummaryRecord(mode="rule", text="Summary of 4 messages", fallback_used=True,
                                  fallback_reason="the model took longer than 6 s, the summary's time limit",
                                  covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in covered])
        store.save_summary_state(chat, [fell_back], {m.id: fell_back.id for m in covered})
    why = "fell back to rules: the model took longer than 6 s, the summary's time limit"
    assert main(["--data-dir", str(data), "history", "cache work"]) == 0
    assert f"rule ({why}), written by rules" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "context", "cache work"]) == 0
    assert f"rule, {why}" in capsys.readouterr().out


def test_context_counts_what_the_pending_question_recalls_as_its_own_kind(tmp_path, capsys):
    data = tmp_path / "data"
    chat = _chat(data)
    with open_store(data) as store:
        store.add_messages(chat, [Message(role="user", content="Which cache did we decide on for module 1?")])
    assert main(["--data-dir", str(data), "summarize", "cache work"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(data), "context", "cache work"]) == 0
    recalled = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("recalled"))
    assert int(recalled.split()[1]) > 0, recalled


@pytest.mark.slow
def test_claude_codes_own_compaction_says_its_size(tmp_path, capsys):
    """`precis history` of the raw Claude Code session said its compaction (4,120 tokens) was '0 tokens itself',
    'written by a model (not recorded)'."""
    from tests.conftest import CLAUDE_CODE_RAW

    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "import", str(CLAUDE_CODE_RAW), "--title", "raw"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "history", "raw"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if "claude-code compaction" in line]
    assert "142,431 → 4,120 tokens" in line
    assert "llm, written by Claude Code, claude-code compaction (manual), 4,120 tokens long" in line


@pytest.mark.slow
def test_undoing_a_fold_says_its_summary_is_back_not_that_no_message_was(tmp_path, capsys):
    """A fold archives no message itself: undoing one said 'undid the summary of 0 messages'."""
    data = tmp_path / "data"
    with open_store(data) as store:
        chat = import_file(store, CLAUDE_CODE_RAW).chat_id  # with Claude Code's own compaction, a summary
        store.update_chat_settings(chat, {"summarization": {"max_depth": 1}})  # so the next summary folds it
    assert main(["--data-dir", str(data), "summarize", chat, "--mode", "rule"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(data), "undo-summary", chat]) == 0  # the new summary
    assert main(["--data-dir", str(data), "undo-summary", chat]) == 0  # the fold
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("messages are back in the context") and "0 messages" not in out[1]
    assert out[1].endswith(": the summary it folded is back in the chain"), out[1]
    with open_store(data) as store:
        [compaction] = [r for r in store.load_records(chat) if r.status == "active"]
        assert compaction.written_by == "Claude Code"


@pytest.mark.slow
def test_summarize_up_to_a_message_numbered_as_history_numbers_them(tmp_path, capsys):
    """--up-to took only an id, which a user finds only by exporting the chat; `precis history` shows numbers."""
    data = tmp_path / "data"
    chat = _chat(data)
    assert main(["--data-dir", str(data), "summarize", "cache work", "--up-to", "8"]) == 0
    assert main(["--data-dir", str(data), "history", "cache work"]) == 0
    assert "  messages 1-8  8 messages → 1 summary" in capsys.readouterr().out
    for beyond in ("0", "21"):
        assert main(["--data-dir", str(data), "summarize", "cache work", "--up-to", beyond]) == 2
        assert f"no message {beyond} in this conversation: its messages are numbered 1 to 20" in capsys.readouterr().err
    with open_store(data) as store:
        ninth = store.load_messages(chat)[11].id  # an id still works, as before
    assert main(["--data-dir", str(data), "summarize", "cache work", "--up-to", ninth]) == 0


def precis(*argv: str | bytes) -> subprocess.CompletedProcess:
    """The real command in a process of its own: its arguments may be bytes that are not UTF-8, as a shell gives."""
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *argv], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_instructions_that_are_not_utf8_are_bad_input_and_nothing_is_saved(tmp_path):
    """`--instructions $'keep \\xff names'` printed '14 messages → 1 summary' and exited 0 with nothing saved: the
    record could not be written, and the engine swallowed the save's error."""
    data = tmp_path / "data"
    chat = _chat(data)
    done = precis("--data-dir", str(data), "summarize", chat, "--instructions", b"keep \xff names")
    assert done.returncode == 2, done.stderr
    assert "Invalid value for '--instructions': not valid UTF-8: the byte 0xff at character 6" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    with open_store(data) as store:
        assert store.load_records(chat) == []


def test_a_summary_that_cannot_be_written_is_reported_by_the_engine_call_that_made_it(tmp_path):
    """Whatever stops the save (here a lone surrogate in the record, which no UTF-8 file can hold), the error reaches
    the caller, given to on_error or raised from summarize_now: it was logged and the summary reported as made."""
    data = tmp_path / "data"
    chat = _chat(data)
    with open_store(data) as store:
        engine, _ = restore_engine(store, chat, default_window=8192)
        failures = []
        attach_engine(store, chat, engine, on_error=failures.append)
        engine.summarize_now("keep \udcff names")
        assert len(failures) == 1 and str(failures[0]).startswith("could not save the summary: ")
        assert "surrogates not allowed" in str(failures[0])

        engine, _ = restore_engine(store, chat, default_window=8192)
        attach_engine(store, chat, engine)
        with pytest.raises(StoreError, match="could not save the summary: "):
            engine.summarize_now("keep \udcff names")
        assert store.load_records(chat) == []


@pytest.mark.model
def test_summarize_writes_the_summary_the_way_the_chats_settings_say(tmp_path, capsys):
    """`precis summarize` wrote by rules whatever Settings → Summarization said, unlike the window's Summarize now;
    --mode still chooses for one summary."""
    data = tmp_path / "data"
    chat = _chat(data, mode="hybrid")
    assert main(["--data-dir", str(data), "summarize", chat[:8], "--up-to", "8"]) == 0
    assert main(["--data-dir", str(data), "summarize", chat[:8], "--mode", "rule"]) == 0
    with open_store(data) as store:
        first, second = sorted(store.load_records(chat), key=lambda r: r.created_at)
    # The model was asked for its story (on a busy machine it may run past the time limit: then the rules' is kept).
    assert first.summarizer_tokens > 0 or "the model took longer" in (first.fallback_reason or "")
    assert second.mode == "rule" and second.summarizer_tokens == 0 and not second.fallback_used


def test_a_model_summary_that_fails_with_stop_on_failure_is_refused_in_words(tmp_path, capsys):
    """With "Stop if the model's summary fails" on, a summarizer that cannot be reached (a closed port on this
    computer) ended `precis summarize` in a traceback, and the window said "An error inside Precis ...; please report
    it": a refusal the user asked for, worded as a fault."""
    from tests.conftest import free_port

    data = tmp_path / "data"
    chat = _chat(data, mode="hybrid")
    address = f"http://127.0.0.1:{free_port()}/v1"
    with open_store(data) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": "hybrid", "summarizer": "other", "summarizer_provider": "openai",
                                              "summarizer_base_url": address, "abort_on_failure": True})
    assert main(["--data-dir", str(data), "summarize", "cache work"]) == 1
    said = capsys.readouterr().err
    assert said.startswith("precis summarize: not summarized: the model's summary failed and “Stop if the model's "
                           "summary fails” is on, so the rules did not write it (summarizer unavailable: cannot "
                           f"connect to {address}")
    assert "Traceback" not in said
    with open_store(data) as store:
        assert store.load_records(chat) == []
