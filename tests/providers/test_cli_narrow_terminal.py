"""`precis chat` in a terminal window 44 columns wide: a refusal and the question before a tool call ("Allow it?
[y/a/N]" with its preview) are broken between words to fit, as /help already was; before, the terminal cut words at
its edge. A mistyped command is one line naming the command meant, not the whole list. The real command on a
pseudo-terminal of that size; the model is the scripted server on loopback, a stand-in: a real model does not call a
tool on demand."""

from __future__ import annotations

import os
import re

from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.terminal import NO_TERMINAL, fitted

from tests.providers.scripted_server import stream
from tests.providers.test_tool_loop import answer, calls
from tests.pseudo_terminal import PseudoTerminal

COLUMNS = 44
PROMPT = r"you> "


def shown_lines(shown: str) -> list[str]:
    """The lines as the terminal shows them: readline's switches of bracketed paste (CSI ?2004h/l) are no text."""
    return re.sub(r"\x1b\[\?2004[hl]|\r", "", shown.replace("\r\n", "\n")).split("\n")


def fits(lines: list[str]) -> bool:
    """Each line within the terminal, or a single word wider than it (a path, kept whole)."""
    return all(len(line) <= COLUMNS or " " not in line.strip() for line in lines)


def test_refusals_and_the_question_before_a_call_fit_a_narrow_terminal(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    workspace = tmp_path / "w"
    workspace.mkdir()
    command = "echo the kiwi crates are stacked by the north gate > note.txt"
    server.steps = [stream(calls(("c1", "execute_bash", {"command": command}))), stream(answer("Saved."))]
    env = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    with PseudoTerminal("chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir",
                        str(tmp_path / "data"), "--context-tokens", "8192", "--workspace", str(workspace),
                        env=env, columns=COLUMNS) as terminal:
        terminal.expect(PROMPT)
        terminal.line("/hlep")
        refused = terminal.expect(PROMPT)
        assert "Unknown command /hlep. Did you mean /help?" in " ".join(refused.split()), refused
        assert "/summarize [instructions]" not in refused  # one line's worth, not the ~30 of /help
        assert fits(shown_lines(refused)[1:]), refused  # the typed line's echo aside
        assert len(shown_lines(refused)) > 3  # broken into lines: at 44 columns it cannot be one

        terminal.line("/use no_such_tool and then say what the tools here are")
        refused = terminal.expect(PROMPT)
        assert "there is no tool called 'no_such_tool' here" in " ".join(refused.split())
        assert fits(shown_lines(refused)[1:]), refused

        terminal.line("Save a note.")
        asked = terminal.expect(r"\[y/a/N\] ")
        question = asked[asked.index("[The model wants"):]
        assert fits(shown_lines(question)), question
        assert " ".join(question.split()) == (f"[The model wants to run execute_bash, in {workspace}.] $ {command} "
                                              f"(in {workspace}) Allow it? y: this once, a: always in this chat, n: "
                                              "no [y/a/N]")
        terminal.line("y")
        terminal.expect("Saved.")
        terminal.expect(PROMPT)
        terminal.line("/quit")
        assert terminal.wait() == 0, terminal.seen
    assert (workspace / "note.txt").read_text() == "the kiwi crates are stacked by the north gate\n"


WORD = st.text(alphabet="abcdefg-/", min_size=1, max_size=12)
LINE = st.tuples(st.sampled_from(["", "  ", "    "]), st.lists(WORD, min_size=1, max_size=20).map(" ".join))


@given(text=st.lists(LINE.map("".join), min_size=1, max_size=4).map("\n".join), width=st.integers(8, 60))
def test_fitted_text_keeps_its_words_and_line_breaks_and_breaks_only_lines_too_wide(text, width):
    lines = fitted(text, width).split("\n")
    assert all(len(line) <= width or " " not in line.strip() for line in lines)
    assert fitted(text, width).split() == text.split()  # the same words, in the same order
    assert all(line in lines for line in text.split("\n") if len(line) <= width)  # those that fit, as they were
    assert fitted(text, NO_TERMINAL) == text  # written to no terminal (a pipe): as it is
