"""An export holds no secret: a key pasted into a message, a password in a tool call's arguments or a token in a
summary is written `[REDACTED:<kind>]` in every format, and `precis export` says how many (they were exported as
written). Everything else survives export and import as before; the store keeps the messages as written."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.main import main
from precis.core.model.messages import Message, ToolCall
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.exporters import EXPORT_FORMATS, without_secrets
from precis.core.storage.store import open_store

OPENAI_KEY = "sk-proj-4fJ9xQ2mZ8rT1vW6yB3nK7pL0sD5hG2aC9eU"
GITHUB_TOKEN = "ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU6v"
PASSWORD = "hunter2x99"
SECRETS = (OPENAI_KEY, GITHUB_TOKEN, PASSWORD)


def chat_with_secrets(store) -> tuple[str, list[Message]]:
    call = ToolCall(id="call_1", name="run", arguments={"command": f"mysql --user=app password={PASSWORD}"})
    messages = [
        Message(role="user", content=f"Here is the key for the staging box: {OPENAI_KEY} (rotate it Friday)."),
        Message(role="assistant", content="", tool_calls=(call,)),
        Message(role="tool", content="connected", tool_call_id="call_1", name="run"),
        Message(role="user", content=f"Same key again, bare: {OPENAI_KEY}", pinned=True),
        Message(role="assistant", content="Noted: the staging box, rotation on Friday."),
    ]
    summary = SummaryRecord(text=f"The user shared a token {GITHUB_TOKEN} and the staging key.",
                            covered=[CoveredMessage(m.id, m.sha256()) for m in messages[:3]],
                            first_message_id=messages[0].id, last_message_id=messages[2].id)
    chat_id = store.import_chat("Staging access", messages, [summary], {m.id: summary.id for m in messages[:3]},
                                {"system_prompt": "Be brief.", "context_window": 4096})
    return chat_id, messages


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_no_secret_is_exported_and_the_count_is_told(tmp_path, capsys, fmt):
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat_id, _messages = chat_with_secrets(store)
    exported = tmp_path / f"chat.{fmt}"
    assert main(["--data-dir", data, "export", chat_id, "--format", fmt, "-o", str(exported)]) == 0
    text = exported.read_text(encoding="utf-8")
    assert not [secret for secret in SECRETS if secret in text]
    assert "[REDACTED:openai_key]" in text and "[REDACTED:password]" in text
    assert "rotate it Friday" in text and "Noted: the staging box" in text  # the rest as written
    # The key twice (the second time bare), the password, the summary's token (counted in every format).
    assert "precis export: 4 secrets redacted" in capsys.readouterr().err
    with open_store(data) as store:  # the store keeps what was written
        assert OPENAI_KEY in store.load_messages(chat_id)[0].content


def test_export_then_import_keeps_all_but_the_secrets(tmp_path, capsys):
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat_id, messages = chat_with_secrets(store)
        records, archived = store.load_records(chat_id), store.archived_by(chat_id)
    exported = tmp_path / "chat.jsonl"
    assert main(["--data-dir", data, "export", chat_id, "-o", str(exported)]) == 0
    assert main(["--data-dir", data, "import", str(exported)]) == 0
    again = capsys.readouterr().out.strip()
    with open_store(data) as store:
        back = store.load_messages(again)
        chat = store.get_chat(again)
        assert chat.title == "Staging access" and chat.settings.system_prompt == "Be brief."
        assert chat.settings.context_window == 4096
        assert [(m.id, m.role, m.pinned, m.created_at, m.tool_call_id) for m in back] == [
            (m.id, m.role, m.pinned, m.created_at, m.tool_call_id) for m in messages]
        unchanged = [m for m in messages if not any(secret in json.dumps([m.content, [c.arguments for c in
                                                                                       m.tool_calls]])
                                                    for secret in SECRETS)]
        assert unchanged and all(m in back for m in unchanged)
        assert back[0].content == "Here is the key for the staging box: [REDACTED:openai_key] (rotate it Friday)."
        assert back[1].tool_calls[0].arguments == {"command": "mysql --user=app password=[REDACTED:password]"}
        assert store.archived_by(again) == archived
        [record] = store.load_records(again)
        assert record.id == records[0].id and record.text.startswith("The user shared a token [REDACTED:")
        # Each covered message's fingerprint is that of the message as exported.
        assert [(c.id, c.sha256) for c in record.covered] == [(m.id, m.sha256()) for m in back[:3]]


@given(st.lists(st.text(alphabet="abcdefghij .,", max_size=40), min_size=1, max_size=8))
def test_a_chat_without_secrets_is_exported_as_written(texts):
    messages = [Message(role="user", content=text) for text in texts]
    chat = without_secrets("plain", messages, [], {"system_prompt": texts[0]})
    assert chat.messages == messages and chat.count == 0 and chat.settings == {"system_prompt": texts[0]}
