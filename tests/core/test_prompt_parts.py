"""The next prompt, part by part (issue 26): the parts are what is sent, in order, each traced to its source, and
their tokens add up to the prompt's; `precis prompt` prints them."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.main import main
from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.prompt_parts import (
    LEFT_OUT,
    PINNED,
    PRIMING,
    RECALLED,
    SHRUNK,
    SUMMARY,
    SYSTEM_PROMPT,
    TOOLS,
    prompt_parts,
    sent_text,
)
from precis.core.context.summarizing import SummaryNotSmaller
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SUMMARIZATION_KEY, SummarizationPolicy
from precis.core.storage.store import open_store

from tests.core.test_engine import TOOL_SPECS, TOPICS, long_text, tool_pair


@given(steps=st.lists(st.sampled_from(["user", "assistant", "tool", "pinned", "ask", "summarize", "undo",
                                       "calibrate"]), min_size=1, max_size=40),
       tools=st.booleans(), system_prompt=st.sampled_from(["", "Answer briefly."]))
def test_the_parts_are_the_prompt_sent_and_add_up_to_it(steps, tools, system_prompt):
    engine = ContextEngine(Budget(window=1400, reserve_output=128),
                           SummarizationPolicy(mode="rule", keep_recent=2, min_messages=2, recall_ratio=0.3),
                           TokenCounter(), system_prompt=system_prompt)
    if tools:
        engine.set_tools(TOOL_SPECS)
    for n, step in enumerate(steps):
        text = f"{TOPICS[n % 3]} " + long_text(25 + n % 9, f"w{n}")
        if step in ("user", "assistant"):
            engine.append(Message(role=step, content=text))
        elif step == "pinned":
            engine.append(Message(role="user", content=text, pinned=True))
        elif step == "ask":  # recall fills free room with archived messages on this topic
            engine.append(Message(role="user", content=f"what about the {TOPICS[n % 3]}?"), auto=False)
        elif step == "tool":
            for message in tool_pair("Bash", {"command": f"make t{n}"}, "\n".join([text] * 6)):
                engine.append(message)
        elif step == "summarize" and engine.can_summarize():
            try:
                engine.summarize_now()
            except SummaryNotSmaller:  # one that saves nothing is refused: nothing changed
                pass
        elif step == "undo" and engine.chain():
            engine.undo_last()
        elif step == "calibrate":
            engine.counter.calibrate(1000, 1100 + 10 * n)
    prompt = engine.assemble()
    parts, total = prompt_parts(engine)
    assert total == prompt.tokens == sum(part.tokens for part in parts)
    assert parts[-1].kind == PRIMING and (parts[0].kind == TOOLS) == tools
    sent = [part for part in parts if part.kind not in (TOOLS, PRIMING)]
    assert [(p.role, p.text) for p in sent] == [(m.role, sent_text(m)) for m in prompt.messages]
    for part in sent:  # each part leads to what it came from
        if part.kind == SUMMARY:
            assert engine.archive.by_record[part.source].status == "active"
        elif part.kind in (RECALLED, SHRUNK):
            assert part.source in engine.archive.position
        elif part.kind == PINNED:
            assert engine.messages[engine.archive.position[part.source]].pinned
        elif part.kind == SYSTEM_PROMPT:
            assert part.text == system_prompt


def test_precis_prompt_prints_each_part_with_its_source(tmp_path, capsys):
    data = str(tmp_path / "data")
    with open_store(data) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
        chat_id = store.create_chat("keeper", settings={"system_prompt": "Answer briefly."})
        store.add_messages(chat_id, [Message(role="user" if n % 2 == 0 else "assistant",
                                             content=f"Note {n}: the lighthouse keeper logs the lamp at dusk, checks "
                                                     f"the fuel, and writes the weather for ship {n} in the book.")
                                     for n in range(16)])
    assert main(["--data-dir", data, "summarize", "keeper"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "prompt", "keeper", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    kinds = [part["kind"] for part in shown["parts"]]
    assert kinds[:2] == [SYSTEM_PROMPT, SUMMARY] and kinds[-1] == PRIMING
    assert shown["tokens"] == sum(part["tokens"] for part in shown["parts"]) <= shown["budget"]
    with open_store(data) as store:
        [record] = store.load_records(chat_id)
    assert shown["parts"][1]["source"] == record.id and shown["parts"][1]["detail"].startswith("depth 1, ")
    assert main(["--data-dir", data, "prompt", "keeper"]) == 0
    text = capsys.readouterr().out
    assert "1. system prompt · system · " in text and "   Answer briefly." in text
    assert main(["--data-dir", data, "prompt", "no such chat"]) == 2


def test_a_reply_that_calls_a_tool_shows_the_call_it_sends(tmp_path, capsys):
    """The model's call was sent (its tokens counted) but its part showed no text: the prompt view hid which tool
    was called with which arguments."""
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat_id = store.create_chat("clock")
        store.add_messages(chat_id, [Message(role="user", content="What time is it in Tokyo?"),
                                     *tool_pair("get_current_time", {"timezone": "Asia/Tokyo"}, '{"hour": 2}')])
    assert main(["--data-dir", data, "prompt", "clock", "--json"]) == 0
    call = json.loads(capsys.readouterr().out)["parts"][1]
    assert call["role"] == "assistant" and call["tokens"] > 0
    assert call["text"] == '{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}'
    assert main(["--data-dir", data, "prompt", "clock"]) == 0
    assert '   {"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}' in capsys.readouterr().out


def test_a_chat_far_over_its_window_starts_with_the_note_of_what_was_left_out():
    engine = ContextEngine(Budget(window=1024, reserve_output=128), SummarizationPolicy(enabled=False), TokenCounter())
    for n in range(200):
        engine.append(Message(role="user" if n % 2 == 0 else "assistant", content=f"note {n}: the parcel for bay {n}"))
    parts, total = prompt_parts(engine)
    assert parts[0].kind == LEFT_OUT and parts[0].source == ""  # the assembler's own note, no message's
    assert parts[-2].text == "note 199: the parcel for bay 199" and total <= engine.budget.available
