"""`python -m benchmarks.fidelity --answers` against an OpenAI-compatible server: the embedded model's own
llama.cpp server, asked every reference prompt of one question."""

import re

import pytest

from benchmarks.fidelity import main


@pytest.mark.slow
@pytest.mark.model
def test_answers_are_asked_of_the_server_for_every_reference(llama_server, capsys):
    assert main(["--answers", "--provider", "openai", "--base-url", llama_server, "--windows", "4k",
                 "--transcripts", "", "--conversations", "locomo_2", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| locomo_2 | 4k |"))
    model, asked, in_prompt, *references, seconds = [c.strip() for c in row.strip("|").split("|")][2:]
    assert model == "SmolLM2-135M-Instruct.Q4_1" and asked == "1"
    # Each of precis, summaries, floor and ceiling asked and counted: answered or not, never too long for the model.
    assert len(references) == 4 and all(re.fullmatch(r"(0|100)% \([01]/1\)", cell) for cell in references), row
    # locomo_2 (14,306 tokens) is more than the server's 8,192-token window, and the report says so.
    assert "the ceiling is the newest" in out and "than the model's window (8,192)" in out
