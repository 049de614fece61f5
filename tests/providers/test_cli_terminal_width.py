"""What the terminal lays out in columns fits the terminal: at 40 columns `/help`'s lines ran to 150 characters and
`precis context`'s bars to 64, each wrapping into the next line. The width is the terminal's (COLUMNS here, as
shutil reads it); the real commands on a real store."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat import commands as slash
from precis.core.cli.chat import TurnOptions, terminal_chat
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.store import open_store

from tests.fakes import ScriptedProvider

BAR = re.compile(r"\[([#.]+)\]$")


def words(text: str) -> list[str]:
    return text.split()


@given(width=st.integers(min_value=26, max_value=200))
def test_help_fits_any_width_the_longest_usage_fits_and_loses_no_word(width):
    listed = slash.help_text(width)
    assert max(map(len, listed.splitlines())) <= width
    assert words(listed) == words(slash.help_text())  # the same words, in the same order: only the lines differ
    for command in slash.slash_commands():  # each usage still starts a line, where the eye looks for it
        assert any(line.startswith(command.usage) for line in listed.splitlines())


@pytest.mark.parametrize("columns", [40, 100])
def test_help_in_the_terminal_chat_fits_the_terminal(tmp_path, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    out, err = io.StringIO(), io.StringIO()
    args = TurnOptions(context_tokens=4096, temperature=0.0, data_dir=str(tmp_path))
    assert terminal_chat(ScriptedProvider([]), args, io.StringIO("/help\n/nosuch\n"), out, err) == 2  # a fake: no reply
    shown, refused = out.getvalue(), err.getvalue()
    assert "/summarize [instructions]" in shown and "leaves, as end of input" in shown
    assert max(map(len, shown.splitlines())) <= columns
    assert "Unknown command /nosuch." in refused and "/summarize [instructions]" not in refused  # /help lists them
    assert max(map(len, refused.splitlines())) <= columns
    help_line = next(line for line in shown.splitlines() if line.startswith("/help"))
    assert (help_line.endswith("list the commands")) == (columns == 100)  # beside its usage only where there is room


@pytest.mark.parametrize("columns", [40, 100])
def test_precis_context_fits_the_terminal_with_its_bars_alike(tmp_path, capsys, monkeypatch, columns):
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("notes", {"context_window": 2048})
        store.add_messages(chat_id, [Message("user" if n % 2 == 0 else "assistant", f"note {n} about the kiwi "
                                             f"crates, stacked by the north gate {n} times") for n in range(30)])
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["--data-dir", str(tmp_path), "context", chat_id]) == 0
    _title, *lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= columns
    bars = [found.group(1) for line in lines if (found := BAR.search(line))]
    assert len(bars) == 7 and len({len(bar) for bar in bars}) == 1  # the whole window, then one a kind, alike
    kinds = [line for line in lines if BAR.search(line) and not line.lstrip().startswith("[")]
    if columns == 100:
        assert len(bars[0]) == 40  # as wide as ever: there is room
    else:
        assert all(len(line) == columns for line in kinds)  # as wide as the room left
    messages = next(line for line in lines if line.lstrip().startswith("messages"))
    assert "#" in BAR.search(messages).group(1)  # the messages fill part of theirs
