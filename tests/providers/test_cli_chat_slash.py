"""The terminal chat runs the registry's slash commands itself instead of sending them to the model."""

from __future__ import annotations

import io
import re

import pytest
from precis.core.cli.chat import TurnOptions, terminal_chat
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.store import open_store

from tests.fakes import ScriptedProvider


def test_slash_commands_run_in_the_terminal_chat_and_never_reach_the_model(tmp_path):
    # The provider has no reply to give: any line sent to it would fail the chat. (A fake: nothing is generated.)
    provider = ScriptedProvider([])
    args = TurnOptions(context_tokens=4096, max_tokens=64, temperature=0.0, mode="rule", data_dir=str(tmp_path))
    stdin = io.StringIO("/context\n/run echo hello-from-run\n/history\n/undo-summary\n/nosuch\n/help\n")
    out = io.StringIO()
    assert terminal_chat(provider, args, stdin, out, out) == 2  # read from a pipe: /nosuch is a line that failed
    text = out.getvalue()
    assert provider.calls == []
    assert "tokens (0%, estimated)" in text and "summary chain: none" in text
    assert "hello-from-run\n[exit code: 0]" in text
    assert "no summaries" in text
    assert "Unknown command /nosuch." in text
    assert "/summarize [instructions]" in text  # /help lists the registry
    assert "/quit or /exit leaves" in text  # and the way out of the terminal chat, which it alone has
    with open_store(tmp_path) as store:
        [chat] = store.list_chats()
        # /run's call and output are kept as a tool exchange; the slash lines themselves are not messages.
        assert [m.role for m in store.load_messages(chat.id)] == ["assistant", "tool"]


@pytest.mark.slow
def test_pin_history_and_unpin_in_the_terminal_chat_do_what_help_says(tmp_path):
    """/help says '/pin  pin the selected (or last) message' and '/history  list the summaries, then the recent
    messages'; the terminal chat answered '/pin works in the window only' and listed the summaries alone."""
    data = str(tmp_path)
    with open_store(data) as store:
        chat = store.create_chat("notes", {"context_window": 4096})
        for n in range(3):
            store.add_message(chat, Message("user" if n % 2 == 0 else "assistant", f"note {n} about the kiwi crates"))
    provider = ScriptedProvider([])  # nothing is sent to a model (a fake: nothing is generated)
    args = TurnOptions(temperature=0.0, chat="notes", data_dir=data)
    out = io.StringIO()
    assert terminal_chat(provider, args, io.StringIO("/pin\n/history\n"), out, io.StringIO()) == 0
    text = out.getvalue()
    assert "works in the window only" not in text
    assert "Pinned: this message is always sent and never summarized. (note 2 about the kiwi crates)" in text
    assert "no summaries" in text and "2. assistant: note 1 about the kiwi crates" in text
    with open_store(data) as store:
        assert [m.pinned for m in store.load_messages(chat)] == [False, False, True]  # kept with the chat
    out = io.StringIO()
    assert terminal_chat(provider, args, io.StringIO("/unpin\n"), out, io.StringIO()) == 0
    assert "Unpinned: this message can be summarized again." in out.getvalue()
    with open_store(data) as store:
        assert not any(m.pinned for m in store.load_messages(chat))


def test_pin_takes_a_message_by_its_number_in_history_and_refuses_one_not_there(tmp_path):
    """`/pin 1` ended the terminal chat with a traceback (KeyError: '1'): /pin took only an id, which the terminal
    shows nowhere. It takes the number /history shows, and a message not there is refused, the chat going on."""
    data = str(tmp_path)
    with open_store(data) as store:
        chat = store.create_chat("notes", {"context_window": 4096})
        for n in range(3):
            store.add_message(chat, Message("user" if n % 2 == 0 else "assistant", f"note {n} about the kiwi crates"))
    args = TurnOptions(temperature=0.0, chat="notes", data_dir=data)
    out = io.StringIO()
    stdin = io.StringIO("/pin 1\n/pin 4\n/unpin kiwi\n/history\n/help\n")
    terminal_chat(ScriptedProvider([]), args, stdin, out, out)  # a fake: nothing is sent to a model
    text = out.getvalue()
    # /help showed a bare "/pin": the number it takes was said nowhere but in its help's words.
    assert re.search(r"^/pin \[N\] +pin a message", text, re.MULTILINE)
    assert re.search(r"^/unpin \[N\] +unpin a message", text, re.MULTILINE)
    assert "Pinned: this message is always sent and never summarized. (note 0 about the kiwi crates)" in text
    assert "/pin: no message 4 in this conversation: its messages are numbered 1 to 3" in text
    assert "/unpin: no message 'kiwi' in this conversation: name one by its number in the history, 1 to 3" in text
    assert "3. user: note 2 about the kiwi crates" in text  # the chat went on after the refusals
    with open_store(data) as store:
        assert [m.pinned for m in store.load_messages(chat)] == [True, False, False]


def test_run_keeps_to_the_chats_own_limits(tmp_path):
    """A chat's /run memory and process limits (its settings) reach the command, not only the defaults."""
    data = str(tmp_path)
    with open_store(data) as store:
        store.create_chat("limits", {"context_window": 4096, "run_processes": 5, "run_memory_mb": 4096})
    args = TurnOptions(temperature=0.0, chat="limits", data_dir=data)
    stdin = io.StringIO("/run python3 -c 'bytes(2_000_000_000)' && echo allocated\n"
                        "/run for i in $(seq 20); do sleep 60 & done; wait\n")
    out = io.StringIO()
    assert terminal_chat(ScriptedProvider([]), args, stdin, out, io.StringIO()) == 0
    text = out.getvalue()
    assert "allocated\n[exit code: 0]" in text  # 2 GB within the chat's 4,096 MB (the default is 1,024)
    assert "[more than 5 processes at once; the command was stopped]" in text


def _summarized_chat(data: str) -> None:
    """A stored chat of 30 notes, its summaries written by the rules (no model)."""
    with open_store(data) as store:
        chat = store.create_chat("notes", {"context_window": 4096, "summarization": {"mode": "rule"}})
        store.add_messages(chat, [Message("user" if n % 2 == 0 else "assistant", f"note {n} about the kiwi crates " * 20)
                                  for n in range(30)])


def test_history_full_in_the_terminal_chat_is_precis_history_full(tmp_path, capsys):
    """`/history --full` in `precis chat` printed neither the ranges' first and last messages nor the summaries'
    text, where `precis history CHAT --full` did: they now print the same lines."""
    data = str(tmp_path)
    _summarized_chat(data)
    args = TurnOptions(temperature=0.0, chat="notes", data_dir=data)
    err = io.StringIO()
    assert terminal_chat(ScriptedProvider([]), args, io.StringIO("/summarize\n"), io.StringIO(), err) == 0
    assert "[precis: summarized older messages (manual)" in err.getvalue()
    out = io.StringIO()
    assert terminal_chat(ScriptedProvider([]), args, io.StringIO("/history --full\n"), out, io.StringIO()) == 0
    shown = out.getvalue().strip()
    assert main(["--data-dir", data, "history", "notes", "--full"]) == 0
    title, _, listed = capsys.readouterr().out.strip().partition("\n")
    assert title.startswith("notes  (") and shown == listed
    assert "  messages 1-24  24 messages → 1 summary" in shown
    assert "\n   first: note 0 about the kiwi crates" in shown and "\n   last:  note 23 about" in shown
    assert "\n   | Conversation digest of 24 messages (user, assistant)" in shown


def test_context_in_the_terminal_chat_is_precis_context(tmp_path, capsys):
    """/context's help says 'show what the model sees: tokens by kind and the summary chain'; the terminal chat
    printed one line of totals ('Context: 1,234 / 3,584 tokens (34%), 1 summary in the chain.'), and nothing led to
    the prompt itself. It prints what `precis context CHAT` does, then the command that shows the prompt."""
    data = str(tmp_path)
    _summarized_chat(data)
    args = TurnOptions(temperature=0.0, chat="notes", data_dir=data)
    assert terminal_chat(ScriptedProvider([]), args, io.StringIO("/summarize\n"), io.StringIO(), io.StringIO()) == 0
    out = io.StringIO()
    assert terminal_chat(ScriptedProvider([]), args, io.StringIO("/context\n"), out, io.StringIO()) == 0
    shown, _, then = out.getvalue().strip().rpartition("\n")
    assert main(["--data-dir", data, "context", "notes"]) == 0
    title, _, listed = capsys.readouterr().out.strip().partition("\n")
    # Line for line the same, but for the counts: the fake provider has no vocabulary, so the chat's are estimates.
    def figures_out(text: str) -> str:
        return re.sub(r" +", " ", re.sub(r"\[[#.]+\]|[\d,]+%?|exact|estimated", "_", text))

    assert title.startswith("notes  (") and figures_out(shown) == figures_out(listed)
    assert "\n  summaries " in shown and "\nsummary chain: 1\n  1. " in shown and "24 messages" in shown
    with open_store(data) as store:
        [chat] = store.list_chats()
    assert then == f"The prompt itself, part by part: precis prompt {chat.id[:8]}"


def test_undo_summary_in_the_terminal_chat_says_it_undid_a_summary_and_the_tokens_grew(tmp_path):
    """After /undo-summary the terminal said '[precis: summarized older messages (undo): 3736 -> 33071 tokens]':
    an undo read as a summary. It says it undid one, and its figures run from the prompt with the summary to the
    prompt with the messages back: the summary's own figures, the other way round."""
    data = str(tmp_path)
    _summarized_chat(data)
    out = io.StringIO()
    args = TurnOptions(temperature=0.0, chat="notes", data_dir=data)
    assert terminal_chat(ScriptedProvider([]), args, io.StringIO("/summarize\n/undo-summary\n"), out, out) == 0
    text = out.getvalue()
    made = re.search(r"\[precis: summarized older messages \(manual\): (\d+) -> (\d+) tokens", text)
    undone = re.search(r"\[precis: undid the summary: 24 messages are back in the context \((\d+) -> (\d+) tokens\)]",
                       text)
    assert made is not None and undone is not None, text
    assert (int(undone[1]), int(undone[2])) == (int(made[2]), int(made[1]))
    assert int(undone[1]) < int(undone[2])
    assert text.count("summarized older messages") == 1
    assert "Summary undone: 24 messages are back in the context." in text
