"""The engine inside the tool loop (issue 23): between steps old outputs shrink and summaries are made as between
messages, so no request of a long tool session exceeds the budget, and a secret read from the workspace never
reaches a summary. A real store and real workspace tools; the model is an in-process stand-in that calls the tools
it is scripted to (what a real model does not do on demand), and records every prompt it is sent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat.session import ChatSession
from precis.core.chat.tool_loop import ALLOW_ONCE, ToolLoop
from precis.core.model.messages import Message, ToolCall
from precis.core.providers.base import CancelToken, ChatChunk, Usage
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import Workspace


class ScriptedCaller:
    """Makes the scripted calls, one reply each, then answers; keeps the messages of every request."""

    name = model = "scripted caller"

    def __init__(self, calls: list[tuple[str, dict]]) -> None:
        self.calls = list(calls)
        self.prompts: list[list[Message]] = []

    def context_window(self) -> int:
        return 8192

    def stream_chat(self, messages, **_options):
        self.prompts.append(list(messages))
        if not self.calls:
            yield ChatChunk(text="Done.")
            yield ChatChunk(done=True, usage=Usage(0, 0), finish_reason="stop")
            return
        name, arguments = self.calls.pop(0)
        call = ToolCall(id=f"call-{len(self.calls)}", name=name, arguments=arguments)
        yield ChatChunk(done=True, usage=Usage(0, 0), finish_reason="tool_calls", tool_calls=(call,))

    def count_tokens(self, _text: str) -> None:
        return None

    def tokenizer_name(self) -> None:
        return None

    def list_models(self) -> list[str]:
        return [self.model]


def run_session(folder, data, calls, window: int, question: str = "Look around.") -> tuple[ChatSession, ScriptedCaller]:
    model = ScriptedCaller(calls)
    store = open_store(data)
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = store.create_chat("agent", settings={"context_window": window, "reserve_output": 128})
    session = ChatSession(store, chat_id, model)
    session.build_engine(estimate=False)
    session.add_messages([Message(role="user", content=question)])
    ToolLoop(session, Toolbox(Workspace(folder)), lambda _call, _preview: ALLOW_ONCE, max_steps=100).answer(
        cancel=CancelToken(), on_text=lambda _placeholder, _piece: None)
    return session, model


@given(sizes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30),
       window=st.sampled_from([2048, 4096, 8192]))
def test_no_request_of_a_tool_session_exceeds_the_budget(tmp_path_factory, sizes, window):
    folder = tmp_path_factory.mktemp("project")
    for n, lines in enumerate(sizes):
        (folder / f"part_{n}.txt").write_text("".join(f"line {i} of part {n}: the cache keeps {i} entries\n"
                                                      for i in range(lines)))
    calls = [("read_file", {"path": f"part_{n}.txt"}) if n % 3 else ("execute_bash", {"command": f"wc -l part_{n}.txt"})
             for n in range(len(sizes))]
    session, model = run_session(folder, tmp_path_factory.mktemp("data"), calls, window)
    try:
        counter, budget = session.engine.counter, session.engine.budget.available
        assert len(model.prompts) == len(sizes) + 1
        for prompt in model.prompts:  # each request, the tool definitions sent with it
            assert counter.calibrated(counter.prompt_raw_tokens(prompt) + session.engine.setup.tool_tokens) <= budget
        stored = session.store.load_messages(session.chat_id)
        assert sum(m.role == "tool" for m in stored) == len(sizes)  # every result kept, whatever the prompt held
    finally:
        session.store.close()


def test_a_secret_read_from_the_workspace_never_reaches_a_summary(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    secret = "sk-proj-" + "Q7w8E9r0T1y2U3i4O5p6" * 2
    (folder / ".env").write_text(f"OPENAI_API_KEY={secret}\nDATABASE_URL=postgres://app:hunter2hunter2@db/app\n")
    (folder / "app.py").write_text("".join(f"def step_{i}():\n    return {i}\n" for i in range(120)))
    calls = [("read_file", {"path": ".env"}), *[("read_file", {"path": "app.py"})] * 6]
    session, _model = run_session(folder, tmp_path / "data", calls, 2400, "Check the settings and the app.")
    try:
        records = session.store.load_records(session.chat_id)
        assert records, "the session summarized on the way"
        for record in records:
            dumped = record.model_dump_json()
            assert secret not in dumped and "hunter2hunter2" not in dumped
        assert any(record.redactions for record in records)
    finally:
        session.store.close()
