"""`precis import` tells a person what it imported (the title, how many messages, the summaries if any) on standard
error, and keeps standard output to the new chat's id alone, which scripts read (it printed only the id before)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from precis.core.storage.importers import parse_file
from precis.core.storage.store import open_store

from tests.conftest import CLAUDE_CODE_RAW, CONVERSATIONS_DIR


@pytest.mark.parametrize("path", [CONVERSATIONS_DIR / "locomo_1.jsonl", CLAUDE_CODE_RAW], ids=lambda p: p.name)
def test_import_prints_the_id_for_scripts_and_what_it_holds_for_people(tmp_path, path):
    data = tmp_path / "data"
    done = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(data), "import", str(path),
                           "--title", "Trip notes"], capture_output=True, text=True, check=True)
    chat_id = done.stdout.strip()
    assert done.stdout == f"{chat_id}\n"  # one line: `id=$(precis import FILE)`
    with open_store(data) as store:
        chat = store.get_chat(chat_id)
        summaries = len(store.load_records(chat_id))
    said = done.stderr.splitlines()[0]
    expected = f'precis import: imported "Trip notes": {chat.message_count} messages'
    assert said == (expected + f", {summaries} summar{'y' if summaries == 1 else 'ies'}" if summaries else expected)
    assert chat.message_count == len(parse_file(path).messages) and chat.title == "Trip notes"
    assert (summaries > 0) == (path == CLAUDE_CODE_RAW)  # both forms are checked


def test_a_title_is_quoted_so_its_end_is_plain(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(tmp_path / "data"),
                           "import", str(path), "--title", 'Plans: "Q3": draft'], capture_output=True, text=True,
                          check=True)
    assert done.stderr.splitlines()[0] == r'precis import: imported "Plans: \"Q3\": draft": 1 message'
