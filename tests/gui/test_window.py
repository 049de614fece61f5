"""The real window on a real SQLite store, without the model: summaries, undo, settings, import, commands."""

from __future__ import annotations

from pathlib import Path

import pytest
from precis.core.chat import commands
from precis.core.model.messages import Message
from precis.core.providers.base import ContextLengthExceeded
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextEdit

from tests.conftest import TRANSCRIPTS
from tests.fakes import ScriptedProvider
from tests.gui.conftest import open_settings
from tests.timing import WAIT_MS


def idle(window) -> bool:
    chat = window.chat
    return (chat.snapshot is not None and not chat.chat_runner.busy and not chat.runner.busy
            and not chat.store_calls.busy)


def open_new_chat(qtbot, window, store, **settings) -> str:
    chat_id = store.create_chat("test chat", settings=settings)
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    return chat_id


def open_imported_chat(qtbot, window, store, history: list[Message]) -> str:
    chat_id = store.import_chat("imported chat", history)
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    return chat_id


def dialogue(n: int, topic: str) -> list[Message]:
    return [Message(role="user" if i % 2 == 0 else "assistant", content=f"{topic} {i}.") for i in range(n)]


WORK = ("the schema migration", "the nightly backup", "the login page", "the search index", "the invoice export",
        "the cache layer", "the mobile build", "the audit log")


def long_dialogue(n: int, topic: str) -> list[Message]:
    """Like dialogue (each message ends "{topic} {i}."), with messages long enough and distinct enough that a summary
    of a few of them is smaller than they are: one that is not is refused (docs/summarization.md, "A summary must
    save"), and one-line messages no longer make one."""
    return [Message(role="user" if i % 2 == 0 else "assistant",
                    content=f"About {WORK[i % len(WORK)]}: we change module_{i}.py so that it retries {i + 2} times, "
                            f"run its {3 * i + 5} tests on the staging server, and write in the release notes what "
                            f"changed for the users of {WORK[(i + 3) % len(WORK)]} and why. {topic} {i}.")
            for i in range(n)]


def source_file(folder: Path, number: int) -> Path:
    path = folder / f"module_{number}.py"
    path.write_text("".join(f"def function_{number}_{i}(value):\n    return value * {i} + {number}\n\n"
                            for i in range(14)))
    return path


def fill_past_trigger(qtbot, window, folder: Path) -> None:
    """Attach files (read_file tool messages) until an automatic summary happens."""
    for number in range(12):
        window.sending.attach_files([str(source_file(folder, number))])
        qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
        if window.chat.snapshot.chain:
            return
    raise AssertionError(f"no summary after 12 files; usage {window.chat.snapshot.usage}")


@pytest.mark.model  # hybrid summaries and loading run the embedded model
@pytest.mark.slow
def test_filling_past_the_trigger_summarizes_and_undo_brings_the_messages_back(qtbot, make_window, store, tmp_path):
    window = make_window()
    chat_id = open_new_chat(qtbot, window, store, context_window=2048)
    fill_past_trigger(qtbot, window, tmp_path)
    snapshot = window.chat.snapshot
    record = snapshot.chain[0]
    archived = snapshot.archived(record.id)
    assert archived and all(m.role in ("assistant", "tool") for m in archived)

    # The gauge shows the window and the count by kind; the chain table has the new row.
    inspector = window.inspector
    assert inspector.gauge.usage is snapshot.usage and snapshot.usage.window == 2048
    assert "/ 1,536 tokens" in inspector.total_label.text()
    assert inspector.chain.count() == 1
    assert inspector.chain.item(0).text().startswith(f"Depth 1 · {len(archived)} messages · ")
    assert inspector.notice_box.isVisible() and "automatically" in inspector.notice.text()
    assert inspector.result_card.isVisible()
    # The flow shows the summary where the archived messages were.
    rows = window.conversation.rows_model.rows()
    assert rows[0].record is not None and rows[0].record.id == record.id
    assert not {m.id for m in archived} & {r.message.id for r in rows if r.message is not None}
    # Selecting the chain row shows its text and the archived originals, read-only.
    inspector.chain.setCurrentRow(0)
    assert record.text.splitlines()[0][:20] in inspector.summary_text.toPlainText()  # at once; the rows follow
    qtbot.waitUntil(lambda: inspector.archived_view.rows_model.rowCount() > 0, timeout=WAIT_MS)
    shown = [r.message.id for r in inspector.archived_view.rows_model.rows()]
    assert shown == [m.id for m in archived]
    assert archived[1].content[:30] in inspector.before_text.toPlainText()
    assert store.archived_by(chat_id).keys() >= {m.id for m in archived if m.role == "tool"}

    qtbot.mouseClick(inspector.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and not window.chat.snapshot.chain, timeout=WAIT_MS)
    rows = window.conversation.rows_model.rows()
    assert all(r.record is None for r in rows)
    assert [r.message.id for r in rows] == [m.id for m in store.load_messages(chat_id)]
    assert inspector.chain.count() == 0
    assert store.archived_by(chat_id) == {}


@pytest.mark.slow
def test_settings_persist_across_a_restart(qtbot, make_window, store, isolated_home):
    window = make_window()
    chat_id = open_new_chat(qtbot, window, store)
    dialog = open_settings(qtbot, window)
    policy = dialog.policy_fields.editors
    policy["trigger_ratio"].setText("90")  # percentages in the window, fractions in the store
    policy["reset_ratio"].setText("60")
    policy["keep_recent"].setText("8")
    policy["mode"].setCurrentText("hybrid")
    dialog.chat_fields.editors["system_prompt"].setPlainText("You are terse.")
    dialog.chat_fields.editors["context_window"].setText("4096")
    assert dialog.validate()
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    window.apply_settings(dialog)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.close()
    window.chat.finish_background_work()
    store.close()

    reopened = open_store(isolated_home)
    try:
        again = make_window(on_store=reopened)
        qtbot.waitUntil(lambda: idle(again), timeout=WAIT_MS)
        assert again.chat.session.chat_id == chat_id
        assert again.chat.snapshot.policy.trigger_ratio == 0.9 and again.chat.snapshot.policy.keep_recent == 8
        assert again.chat.snapshot.usage.window == 4096
        assert "90%" in again.inspector.thresholds.text() and "60%" in again.inspector.thresholds.text()
        fresh = open_settings(qtbot, again)
        assert fresh.policy_fields.editors["trigger_ratio"].text() == "90"
        assert fresh.policy_fields.editors["mode"].currentText() == "hybrid"
        assert fresh.chat_fields.editors["system_prompt"].toPlainText() == "You are terse."
        again.close()
    finally:
        reopened.close()


@pytest.mark.slow
def test_bad_settings_are_refused_with_the_reason_next_to_the_field(qtbot, make_window, store):
    window = make_window()
    open_new_chat(qtbot, window, store)
    dialog = open_settings(qtbot, window)
    qtbot.addWidget(dialog)
    dialog.show()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    fields = dialog.policy_fields

    fields.editors["trigger_ratio"].setText("lots")
    assert not ok.isEnabled()
    assert not fields.error_labels["trigger_ratio"].isHidden()
    assert "must be a number" in fields.error_labels["trigger_ratio"].text()

    fields.editors["trigger_ratio"].setText("50")  # below the reset ratio of 70 %
    assert not ok.isEnabled()
    assert dialog.cross_error.text() == (
        "“Re-arm below” (70 % of the budget) must be below “Summarize at” (50 % of the budget)")

    fields.editors["trigger_ratio"].setText("80")
    fields.editors["keep_recent"].setText("0")
    assert not ok.isEnabled()
    assert fields.error_labels["keep_recent"].text() == "must be from 1 to 1000 messages"

    fields.editors["keep_recent"].setText("6")
    dialog.chat_fields.editors["context_window"].setText("10")
    assert not ok.isEnabled()
    assert dialog.chat_fields.error_labels["context_window"].text() == "must be from 256 to 10000000 tokens"

    dialog.chat_fields.editors["context_window"].setText("")
    dialog.base_url.setText("localhost:11434")
    dialog.kind.setCurrentText("openai")
    assert not ok.isEnabled()
    assert dialog.provider_fields.error_labels["base_url"].text() == (
        "must start with http:// or https://, as in http://localhost:11434/v1, not 'localhost:11434'")
    dialog.base_url.setText("http://")  # passed, then 'cannot connect to http://: Request URL is missing …'
    assert not ok.isEnabled()
    assert dialog.provider_fields.error_labels["base_url"].text().startswith("names no server after http://")
    dialog.base_url.setText("http://localhost:11434/v1")
    dialog.kind.setCurrentText("local")  # the server's address stays, unused, for a switch back
    assert ok.isEnabled() and not dialog.base_url.isEnabled()
    dialog.kind.setCurrentText("openai")
    assert dialog.base_url.text() == "http://localhost:11434/v1"

    dialog.base_url.setText("")
    assert dialog.errors() == {}
    assert ok.isEnabled() and fields.error_labels["keep_recent"].isHidden()
    # Nothing was saved while the values were bad.
    assert store.get_setting("summarization") is None


@pytest.mark.parametrize("transcript", [p for p in TRANSCRIPTS if p.name == "claudecode_session.jsonl"],
                         ids=lambda p: p.name)
@pytest.mark.slow
def test_importing_a_shared_transcript_opens_it_and_it_scrolls(qtbot, make_window, store, transcript):
    store.set_setting("summarization", {"enabled": False})  # the whole chat stays in the flow, to scroll
    window = make_window()
    with qtbot.waitSignal(window.chat.chat_opened, timeout=WAIT_MS):
        window.import_transcript(str(transcript))
    view = window.conversation
    rows = view.rows_model.rows()
    assert len(rows) == sum(1 for line in transcript.read_text().splitlines() if line.strip())
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())

    def row_at_top() -> int:
        return view.indexAt(QPoint(view.viewport().width() // 2, 4)).row()

    qtbot.waitUntil(lambda: row_at_top() > len(rows) // 2)  # opened at the end of the chat
    bar.setValue(0)
    qtbot.waitUntil(lambda: row_at_top() == 0)
    bar.setValue(bar.maximum() // 2)
    qtbot.waitUntil(lambda: 0 < row_at_top() < len(rows) - 1)
    assert not window.grab().isNull()  # painting measured rows replaces estimates without errors


@pytest.mark.slow
def test_the_import_notice_counts_bytes_that_are_not_utf8(qtbot, make_window, tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"role": "user", "content": "ok"}\n{"role": "user", "content": "caf\xe9"}\n')
    window = make_window()
    shown: list[str] = []
    window.statusBar().messageChanged.connect(shown.append)
    with qtbot.waitSignal(window.chat.chat_opened, timeout=WAIT_MS):
        window.import_transcript(str(path))
    assert "Imported; 1 byte sequence that is not UTF-8 replaced with U+FFFD (first on line 2)." in shown


@pytest.mark.slow
def test_importing_a_file_that_cannot_be_read_says_so_in_words(qtbot, make_window, tmp_path):
    """The window showed Python's "[Errno 2] No such file or directory: '/…/gone.jsonl'"; the command line said
    'cannot read FILE: No such file or directory'. Both say the latter now."""
    window = make_window()
    failures: list[str] = []
    window.job_failed.connect(failures.append)
    for path, why in ((tmp_path / "gone.jsonl", "No such file or directory"), (tmp_path, "Is a directory")):
        window.import_transcript(str(path))
        qtbot.waitUntil(lambda: len(failures) == 1, timeout=WAIT_MS)
        assert failures.pop() == f"cannot read {path}: {why}"


@pytest.mark.slow
def test_run_stops_at_the_chats_time_limit_setting(qtbot, make_window, store):
    window = make_window()
    chat_id = open_new_chat(qtbot, window, store, run_timeout=1)
    window.submit("/run echo started; sleep 30")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 2, timeout=WAIT_MS)
    result = store.load_messages(chat_id)[1]
    assert result.content.startswith("[timed out after 1 s; the command was stopped]\nstarted")


@pytest.mark.slow
def test_slash_commands_run_tools_and_unknown_ones_get_a_hint(qtbot, make_window, store, tmp_path):
    window = make_window()
    chat_id = open_new_chat(qtbot, window, store)
    (tmp_path / "notes.txt").write_text("alpha\nbeta needle\ngamma\n")

    window.submit("/frobnicate now")
    assert "Unknown command /frobnicate" in window.composer.hint.text()
    assert window.conversation.rows_model.rows() == []

    window.submit("/run echo hello; exit 3")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 2, timeout=WAIT_MS)
    call, result = store.load_messages(chat_id)
    assert call.tool_calls[0].name == "bash" and call.tool_calls[0].arguments == {"command": "echo hello; exit 3"}
    assert result.role == "tool" and result.tool_call_id == call.tool_calls[0].id
    assert result.content == "hello\n[exit code: 3]"

    window.submit(f"/grep needle {tmp_path}")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 4, timeout=WAIT_MS)
    grep_call, grep_result = store.load_messages(chat_id)[2:]
    assert grep_call.tool_calls[0].name == "grep"
    assert "notes.txt:2: beta needle" in grep_result.content and "1 match in 1 file" in grep_result.content

    window.submit("/run sleep 30")
    qtbot.waitUntil(lambda: window.composer.stop_button.isVisible(), timeout=WAIT_MS)
    qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 6, timeout=WAIT_MS)
    assert store.load_messages(chat_id)[-1].content.endswith("[cancelled]")

    window.sending.attach_files([str(tmp_path / "notes.txt")])
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 8, timeout=WAIT_MS)
    read_call, read_result = store.load_messages(chat_id)[6:]
    assert read_call.tool_calls[0].name == "read_file"
    assert read_call.tool_calls[0].arguments == {"path": str(tmp_path / "notes.txt")}
    assert read_result.content == "alpha\nbeta needle\ngamma\n"


@pytest.mark.slow
def test_the_draft_survives_a_restart(qtbot, make_window, store, isolated_home):
    window = make_window()
    chat_id = open_new_chat(qtbot, window, store)
    qtbot.keyClicks(window.composer.edit, "half a thought")
    window.close()
    assert window.chat.finish_background_work()  # saved off the GUI thread, before the store closes
    assert store.get_draft(chat_id) == "half a thought"


@pytest.mark.slow
def test_the_chat_system_prompt_is_sent_first_and_counted_as_system(qtbot, make_window, store):
    window = make_window()
    open_new_chat(qtbot, window, store)
    assert window.inspector.legend_values["system"].text() == "0"
    dialog = open_settings(qtbot, window)
    dialog.chat_fields.editors["system_prompt"].setPlainText("You are a terse reviewer of Python code.")
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    window.apply_settings(dialog)
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.usage.by_kind["system"] > 0, timeout=WAIT_MS)
    assert int(window.inspector.legend_values["system"].text().replace(",", "")) > 0
    first = window.chat.session.engine.assemble().messages[0]
    assert (first.role, first.content) == ("system", "You are a terse reviewer of Python code.")


@pytest.mark.model
@pytest.mark.slow
def test_counts_are_exact_with_the_local_model_and_estimated_otherwise(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    open_new_chat(qtbot, window, store)
    assert window.chat.snapshot.usage.exact and window.inspector.exact_label.text() == "exact"
    scripted = make_window(ScriptedProvider())
    open_new_chat(qtbot, scripted, store)
    assert not scripted.chat.snapshot.usage.exact and scripted.inspector.exact_label.text() == "estimated"


@pytest.mark.slow
def test_per_chat_summarization_overrides_are_checked_applied_and_persist(qtbot, make_window, store, isolated_home):
    window = make_window(ScriptedProvider())
    chat_id = open_new_chat(qtbot, window, store)
    other_id = store.create_chat("other chat")
    dialog = open_settings(qtbot, window)
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    overrides = dialog.chat_policy_fields
    assert not overrides.editors["trigger_ratio"].isEnabled()  # inherited until ticked
    overrides.override_boxes["trigger_ratio"].setChecked(True)
    overrides.editors["trigger_ratio"].setText("60")  # below the global reset ratio of 70 %
    assert not ok.isEnabled() and "“Re-arm below” (70 % of the budget)" in dialog.chat_cross_error.text()
    overrides.override_boxes["reset_ratio"].setChecked(True)
    overrides.editors["reset_ratio"].setText("150")
    assert not ok.isEnabled()
    assert overrides.error_labels["reset_ratio"].text() == "must be above 0 and below 100 % of the budget"
    overrides.editors["reset_ratio"].setText("50")
    overrides.override_boxes["keep_recent"].setChecked(True)
    overrides.editors["keep_recent"].setText("3")
    assert ok.isEnabled() and overrides.error_labels["reset_ratio"].isHidden() and not dialog.chat_cross_error.text()
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    window.apply_settings(dialog)
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.policy.trigger_ratio == 0.6, timeout=WAIT_MS)
    assert window.chat.session.engine.policy.keep_recent == 3 and window.chat.session.engine.policy.reset_ratio == 0.5
    assert "60%" in window.inspector.thresholds.text()
    window.close()
    window.chat.finish_background_work()
    store.close()

    reopened = open_store(isolated_home)
    try:
        again = make_window(ScriptedProvider(), on_store=reopened)
        again.open_chat(chat_id)
        qtbot.waitUntil(lambda: idle(again) and again.chat.session.chat_id == chat_id, timeout=WAIT_MS)
        assert (again.chat.snapshot.policy.trigger_ratio, again.chat.snapshot.policy.keep_recent) == (0.6, 3)
        fresh = open_settings(qtbot, again)
        assert fresh.chat_policy_fields.override_boxes["keep_recent"].isChecked()
        assert fresh.chat_policy_fields.editors["keep_recent"].text() == "3"
        assert not fresh.chat_policy_fields.override_boxes["max_depth"].isChecked()
        # Another chat follows the global settings.
        again.open_chat(other_id)
        qtbot.waitUntil(lambda: idle(again) and again.chat.session.chat_id == other_id, timeout=WAIT_MS)
        assert again.chat.snapshot.policy.trigger_ratio == 0.8 and again.chat.snapshot.policy.keep_recent == 6
        again.close()
    finally:
        reopened.close()


@pytest.mark.slow
def test_a_context_length_error_summarizes_and_retries_once(qtbot, make_window, store):
    """The server refusing the prompt as too long cannot be produced on demand: a scripted provider injects it."""
    provider = ScriptedProvider(replies=[ContextLengthExceeded("prompt is too long: 9000 tokens > 8192"),
                                         "Here is the short answer."])
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})  # the scripted replies are for the chat, not summaries
    window = make_window(provider)
    chat_id = open_imported_chat(qtbot, window, store, dialogue(20, "A point about the parser design, number"))
    assert not window.chat.snapshot.chain
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS) as reply:
        window.submit("And the lexer?")
    result = reply.args[0]
    assert result.problem is None and result.message.content == "Here is the short answer."
    first, retry = provider.calls
    assert len(retry) < len(first) and "[Summary 1" in retry[0].content
    qtbot.waitUntil(lambda: idle(window) and len(window.inspector.chain.records) == 1, timeout=WAIT_MS)
    assert store.load_messages(chat_id)[-1] == result.message and not result.message.incomplete
    assert len(store.load_records(chat_id)) == 1


@pytest.mark.slow
def test_summarize_up_to_a_chosen_message_from_its_context_menu(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    chat_id = open_imported_chat(qtbot, window, store, long_dialogue(16, "Migration plan, step"))
    rows = window.conversation.rows_model.rows()
    chosen = next(r.message for r in rows if r.message is not None and r.message.content.endswith("step 9."))
    window.conversation.summarize_up_to_requested.emit(chosen.id)  # what the menu's "Summarize up to here" sends
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    record = window.chat.snapshot.chain[0]
    assert record.covered_ids == [m.id for m in store.load_messages(chat_id)[:10]]
    entry = window.inspector.chain.item(0)  # the mode in the entry; who wrote it on hover
    assert " · rule" in entry.text() and "\nMode: rule, written by rules\n" in entry.toolTip()
    assert len(store.load_records(chat_id)) == 1


@pytest.mark.slow
def test_the_menus_and_shortcuts_are_the_command_registry(qtbot, make_window):
    window = make_window()
    assert set(window.handlers) == set(commands.REGISTRY)
    menus = {action.text().lstrip("&"): action.menu() for action in window.menuBar().actions()}
    for menu_name, registered in commands.menus().items():
        titles = [action.text() for action in menus[menu_name].actions() if not action.isSeparator()]
        assert [c.title for c in registered] == [t for t in titles if t != "Theme"]
    for command in commands.REGISTRY.values():
        if command.shortcut:
            assert window.actions[command.name].shortcut().toString() == command.shortcut
    window.submit("/help")  # with no chat open, run once the chat for it is made (off the window's thread)
    qtbot.waitUntil(lambda: bool(window.findChildren(QDialog)), timeout=WAIT_MS)
    dialog = window.findChildren(QDialog)[-1]
    assert dialog.windowTitle() == "Commands" and "/summarize [instructions]" in dialog.findChild(QTextEdit).toPlainText()
