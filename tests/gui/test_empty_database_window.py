"""The window opened on a data folder whose database file was emptied says so in its status bar."""

from __future__ import annotations

from precis.core.storage.store import open_store

from tests.store.test_empty_database import emptied_after_closing


def test_the_window_says_the_database_was_empty(tmp_path, make_window):
    data = tmp_path / "data"
    emptied_after_closing(data)
    store = open_store(data)
    window = make_window(on_store=store)
    try:
        message = window.statusBar().currentMessage()
        assert message.startswith(f"{data / 'precis.db'} is empty (0 bytes): starting a new database"), message
        assert "kept as" in message
    finally:
        window.close()
        window.chat.finish_background_work()
        store.close()
