"""An exported chat imported again is the same chat: its title and its own settings travel with its messages, its
pins and its summaries; what belongs to this computer (the tools' folder, the tools allowed without asking, a
server's address) and API keys never do."""

from __future__ import annotations

import json

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.importers import ImportFailed, import_file
from precis.core.storage.store import open_store

from tests.conftest import TRANSCRIPTS

OWN_SETTINGS = {"system_prompt": "Answer as Maria's diary would.", "context_window": 4096, "reserve_output": 300,
                "summarization": {"mode": "rule"}}
THIS_COMPUTER = {"workspace": "/home/someone/project", "allowed_tools": ["execute_bash"],
                 "base_url": "https://user:sk-in-the-address@llm.example/v1"}


def test_export_then_import_keeps_the_title_the_settings_and_the_pins(tmp_path, capsys, monkeypatch):
    """The import was named after the file ("export") and took the default settings: a chat set to rule summaries
    with its own system prompt came back as another chat."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat = store.import_chat("Maria & John, 2022–23", [Message(role="user", content="the fire truck"),
                                                           Message(role="assistant", content="donated", pinned=True)],
                                 settings={**OWN_SETTINGS, **THIS_COMPUTER})
    exported = tmp_path / "export.jsonl"
    assert main(["--data-dir", data, "export", chat[:8], "--format", "jsonl", "-o", str(exported)]) == 0
    text = exported.read_text(encoding="utf-8")
    assert "sk-" not in text and "/home/someone" not in text and "execute_bash" not in text
    capsys.readouterr()
    assert main(["--data-dir", data, "import", str(exported)]) == 0
    again = capsys.readouterr().out.strip()
    with open_store(data) as store:
        original, imported = store.get_chat(chat), store.get_chat(again)
        assert imported.title == "Maria & John, 2022–23"
        assert imported.settings.model_dump() == {**original.settings.model_dump(), "workspace": "",
                                                  "allowed_tools": [], "base_url": None}
        assert store.load_messages(again) == store.load_messages(chat)  # the pin too
        assert store.load_records(again) == store.load_records(chat)


def test_a_title_given_on_import_wins_over_the_exported_one(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi", "chat": {"title": "exported title"}}) + "\n")
    with open_store(tmp_path / "data") as store:
        assert store.get_chat(import_file(store, path).chat_id).title == "exported title"
        assert store.get_chat(import_file(store, path, title="mine").chat_id).title == "mine"


@pytest.mark.parametrize(("chat", "field"), [
    ("[]", "field 'chat' must be an object"),
    ('{"title": 7}', "field 'chat.title' must be a string"),
    ('{"settings": {"context_window": 3}}', "field 'chat.settings': Context window"),
    ('{"settings": {"api_key": "sk-x"}}', "field 'chat.settings': setting 'api_key' looks like a secret"),
])
def test_bad_chat_settings_in_a_file_are_bad_input_naming_the_line(tmp_path, chat, field):
    path = tmp_path / "chat.jsonl"
    path.write_text(f'{{"role": "user", "content": "hi", "chat": {chat}}}\n')
    with open_store(tmp_path / "data") as store:
        with pytest.raises(ImportFailed, match=f"chat.jsonl, line 1: {field}"):
            import_file(store, path)
        assert store.list_chats() == []


def test_a_plain_transcript_still_imports_under_its_file_name(tmp_path):
    with open_store(tmp_path / "data") as store:
        chat = store.get_chat(import_file(store, TRANSCRIPTS[0]).chat_id)
        assert chat.title == TRANSCRIPTS[0].stem and chat.settings.system_prompt == ""
