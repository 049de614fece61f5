"""An OpenAI chat file whose 'role' is not a string is bad input, said as such."""

from __future__ import annotations

import pytest
from precis.core.storage.importers import ImportFailed, import_file
from precis.core.storage.store import open_store


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "data") as s:
        yield s


@pytest.mark.parametrize("role", ['["user"]', '{"name": "user"}'])
def test_an_openai_message_whose_role_is_not_a_string_is_bad_input(store, tmp_path, role):
    """Looking up a list or an object among the roles raised TypeError (unhashable), a traceback for a bad file."""
    path = tmp_path / "chat.json"
    path.write_text('{"messages": [\n  {"role": "user", "content": "Hi"},\n  {"role": ' + role + ', "content": "Hi"}\n]}')
    with pytest.raises(ImportFailed, match=r"chat.json, line 3: field 'role' must be one of"):
        import_file(store, path)
    assert store.list_chats() == []
