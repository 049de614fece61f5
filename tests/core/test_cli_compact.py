"""`precis compact`: what a user sees from the command line."""

from __future__ import annotations

import json

import pytest
from precis.core.cli.main import main
from precis.core.providers.local import find_model_path, load_vocabulary, to_template_messages
from precis.core.storage.interchange import message_from_record, read_transcript

from tests.conftest import CONVERSATIONS_DIR, TRANSCRIPTS_DIR


@pytest.mark.slow
def test_json_output_is_the_context_as_sent_with_summaries_and_archived_indices(capsys):
    path = TRANSCRIPTS_DIR / "claudecode_session.jsonl"
    assert main(["compact", str(path), "--context-tokens", "8192", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    originals = read_transcript(path)
    stats = result["stats"]
    assert stats["messages"] == len(originals) and stats["context_tokens"] <= stats["budget"] == 8192 - 512
    assert result["summaries"] and all(s["trail_coverage"] is not None for s in result["summaries"])
    # Every message in the context is in the interchange format, and summaries appear as such.
    assert all(set(m) >= {"role", "content", "name", "tool_args"} for m in result["context"])
    assert any(m["content"].startswith("[Summary") for m in result["context"])
    # "archived" lists exactly the originals not sent verbatim.
    verbatim = {m["content"] for m in result["context"]}
    for index in result["archived"][:50]:
        original = originals[index]
        assert original.content not in verbatim or not original.content
    kept = set(range(len(originals))) - set(result["archived"])
    assert all(originals[i].content in verbatim for i in kept)


def test_the_tokens_by_kind_are_those_of_the_context_as_sent(capsys):
    """usage_by_kind was the context before trimming (old tool outputs whole): at 4,000 its kinds added up to 3,853
    beside context_tokens 3,204. Now they add up to it, shrunk tool outputs as their own kind, in the report too."""
    path = TRANSCRIPTS_DIR / "sweagent_1.jsonl"
    assert main(["compact", str(path), "--context-tokens", "4000", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)["stats"]
    assert sum(stats["usage_by_kind"].values()) == stats["context_tokens"]
    assert stats["usage_by_kind"]["trimmed"] > 0
    assert main(["compact", str(path), "--context-tokens", "4000"]) == 0
    report = capsys.readouterr().out
    by_kind = next(line for line in report.splitlines() if line.startswith("by kind: "))
    shown = {k: int(v) for k, v in (part.rsplit(" ", 1) for part in by_kind.removeprefix("by kind: ").split(", "))}
    assert {k: v for k, v in stats["usage_by_kind"].items() if v} == shown


def test_plain_report_names_the_chain(capsys):
    assert main(["compact", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl"), "--context-tokens", "4096"]) == 0
    out = capsys.readouterr().out
    assert "summaries made:" in out and "trail coverage: files" in out


def test_bad_line_is_reported_with_its_number(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{"role": "user", "content": 5}\n', encoding="utf-8")
    assert main(["compact", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl, line 2" in err and "'content'" in err


def test_missing_file_and_missing_key_are_clear_errors(tmp_path, capsys, monkeypatch):
    assert main(["compact", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["compact", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl"), "--mode", "llm", "--provider", "openai"])
    assert code == 1
    assert "no API key for openai" in capsys.readouterr().err


@pytest.mark.parametrize("seconds", ["0", "-1"])
def test_a_summary_time_limit_that_is_not_positive_is_bad_input(capsys, seconds):
    """--summary-seconds -1 was taken, and the replay run."""
    assert main(["compact", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl"), "--summary-seconds", seconds]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Invalid value for '--summary-seconds'" in err


CONVERSATION = CONVERSATIONS_DIR / "locomo_1.jsonl"


@pytest.mark.slow
def test_probes_get_the_prompt_of_their_question_with_recall_and_leave_the_chat_alone(tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "When did Caroline go to the LGBTQ support group?"}) + "\n\n"
                         + json.dumps({"question": "What did Caroline research?"}) + "\n")
    assert main(["compact", str(CONVERSATION), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["compact", str(CONVERSATION), "--json", "--probes", str(questions)]) == 0
    result = json.loads(capsys.readouterr().out)
    def said(context: list[dict]) -> list[tuple]:
        return [(m["role"], m["content"]) for m in context]

    assert said(result["context"]) == said(plain["context"]) and result["stats"] == plain["stats"]
    first, second = result["probes"]
    assert first["question"].startswith("When did Caroline") and first["context"][-1]["content"] == first["question"]
    # Message 3 holds the answer (7 May 2023) and was summarized away; recall brings it back, with its date.
    assert 3 in plain["archived"] and 3 in first["recalled"]
    assert set(first["recalled"]) <= set(plain["archived"]) and second["recalled"]
    recalled = next(m["content"] for m in first["context"] if "message" in m["content"] and "Recalled" in m["content"])
    assert "8 May, 2023" in recalled  # the date of its session


@pytest.mark.parametrize("line, reason", [("{not json", "not valid JSON"), ('{"q": 1}', "question"),
                                          ('["question"]', "question"), ('{"question": "  "}', "question")])
def test_a_bad_probe_line_is_named_by_file_and_line(tmp_path, capsys, line, reason):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "fine"}) + "\n" + line + "\n")
    assert main(["compact", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl"), "--probes", str(questions)]) == 2
    err = capsys.readouterr().err
    assert f"{questions}, line 2" in err and reason in err


@pytest.mark.slow
def test_a_raw_claude_code_session_is_read_directly(capsys):
    """The importers' reader: every original is replayed, Claude Code's own compaction included in what it covers."""
    raw = TRANSCRIPTS_DIR / "claudecode_session.raw.jsonl"
    assert main(["compact", str(raw), "--context-tokens", "8192"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("646 messages replayed into a 8192-token window") and "None" not in out + err


@pytest.mark.slow
def test_a_message_larger_than_the_budget_is_reported_cut_with_its_tokens(tmp_path, capsys):
    paste = " ".join(f"line{i} status=200 took {i % 90} ms" for i in range(6000))
    path = tmp_path / "paste.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in [{"role": "user", "content": "read this log"},
                                                       {"role": "assistant", "content": "send it"},
                                                       {"role": "user", "content": paste}]) + "\n")
    assert main(["compact", str(path), "--context-tokens", "4096", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    [cut] = result["cut"]
    assert (cut["index"], cut["role"]) == (2, "user")
    assert cut["tokens_after"] < result["stats"]["budget"] < cut["tokens_before"]
    sent = next(m["content"] for m in result["context"] if m["content"].startswith("line0 "))
    assert len(sent) < len(paste)
    assert (f"message 2 (user) cut from {cut['tokens_before']:,} to {cut['tokens_after']:,} tokens "
            f"to fit the {result['stats']['budget']:,}-token budget") in captured.err
    assert main(["compact", str(path), "--context-tokens", "4096"]) == 0
    assert f"cut to fit: message 2 (user) cut from {cut['tokens_before']:,}" in capsys.readouterr().out


def test_nothing_is_reported_cut_when_every_message_fits(capsys):
    assert main(["compact", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl"), "--context-tokens", "8192", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["cut"] == [] and "cut from" not in captured.err


@pytest.mark.parametrize(("transcript", "window"), [("sweagent_1.jsonl", 6000), ("sweagent_2.jsonl", 8192)])
def test_compact_counts_the_prompt_as_the_embedded_model_reads_it(capsys, transcript, window):
    """It counted with cl100k, 7-20% below SmolLM2: sweagent_1 at 6,000 was reported at 5,422 tokens, within the
    budget of 5,488, and the model read 6,445, over the window; sweagent_2 at 8,192, 6,182 for 7,495. The prompt
    as sent, rendered with SmolLM2's own template and vocabulary (the tokens the model reads), fits the budget, and
    the reported count is within 5% of it (document 002's accuracy)."""
    assert main(["compact", str(TRANSCRIPTS_DIR / transcript), "--context-tokens", str(window), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    stats = result["stats"]
    sent = [message_from_record(record, source="context", line=n) for n, record in enumerate(result["context"])]
    read = len(load_vocabulary(find_model_path()).prompt_tokens(to_template_messages(sent)))
    assert abs(stats["context_tokens"] - read) <= 0.05 * read, (stats["context_tokens"], read)
    assert read <= stats["budget"] == window - 512
    assert stats["tokens_exact"] and stats["tokenizer"].startswith("gguf ")


def test_compact_says_its_counts_are_estimates_where_the_models_vocabulary_is_not_at_hand(capsys, monkeypatch):
    """A hosted model's tokenizer is not at hand: the counts are cl100k's, and the report says so."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = str(TRANSCRIPTS_DIR / "sweagent_1.jsonl")
    assert main(["compact", path, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"]) == 0
    assert "% of the budget, estimated)" in capsys.readouterr().out
    assert main(["compact", path]) == 0
    assert "% of the budget, exact)" in capsys.readouterr().out


def test_a_probes_file_is_read_as_a_chat_file_is(tmp_path, capsys):
    """A binary probes file was 'cannot read q.jsonl: 'utf-8' codec can't decode byte 0x89…', with no line; one
    saved as UTF-16 with its mark was the same."""
    transcript = str(TRANSCRIPTS_DIR / "sweagent_1.jsonl")
    binary = tmp_path / "q.jsonl"
    binary.write_bytes(b'{"question": "fine"}\n\x89PNG\x00\x00')
    assert main(["compact", transcript, "--probes", str(binary)]) == 2
    assert f"precis compact: {binary}, line 2: not a text file: byte 26 is NUL" in capsys.readouterr().err
    wide = tmp_path / "wide.jsonl"
    wide.write_bytes('{"question": "What was the flag?"}\n'.encode("utf-16"))
    assert main(["compact", transcript, "--probes", str(wide)]) == 0
    assert "probe 'What was the flag?'" in capsys.readouterr().out


@pytest.mark.parametrize("options, named", [
    (["--context-tokens", "0"], "Invalid value for '--context-tokens': 0 is not in the range x>=1"),
    (["--context-tokens", "-5"], "Invalid value for '--context-tokens'"),
    (["--reserve-output", "-1"], "Invalid value for '--reserve-output'"),
    (["--context-tokens", "300"], "--context-tokens 300 is too small for --reserve-output 512: context window 300"),
])
def test_a_window_option_out_of_range_is_named(capsys, options, named):
    """These said 'context window must be positive, got 0' or 'reserved tokens cannot be negative', naming no option."""
    assert main(["compact", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl"), *options]) == 2
    assert named in capsys.readouterr().err
