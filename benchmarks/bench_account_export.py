"""Importing an account export: a generated ChatGPT conversations.json and a Claude.ai one of 1,000 conversations
of 100 messages each (a regenerated reply in every ChatGPT conversation), each into a fresh data folder.

Run: python benchmarks/bench_account_export.py [conversations] [messages]   (prints the file's size, the seconds to
import it and the messages a second)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.storage.importers import import_file  # noqa: E402
from precis.core.storage.store import open_store  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while seven wizards quietly box jam".split()


def _text(n: int) -> str:
    return " ".join(WORDS[(n + i) % len(WORDS)] for i in range(40))


def _chatgpt(conversations: int, messages: int) -> list[dict]:
    export = []
    for c in range(conversations):
        mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for m in range(messages):
            node = f"{c}-{m}"
            mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                "id": node, "author": {"role": "user" if m % 2 == 0 else "assistant"}, "create_time": 1.7e9 + m,
                "content": {"content_type": "text", "parts": [_text(c + m)]}, "metadata": {}, "recipient": "all"}}
            mapping[parent]["children"].append(node)
            parent = node
        # The first reply was regenerated: the earlier one becomes a version of it.
        mapping["regen"] = {"id": "regen", "parent": f"{c}-0", "children": [], "message": {
            "id": "regen", "author": {"role": "assistant"}, "create_time": 1.7e9,
            "content": {"content_type": "text", "parts": ["an earlier reply"]}, "metadata": {}, "recipient": "all"}}
        mapping[f"{c}-0"]["children"].insert(0, "regen")
        export.append({"title": f"chat {c}", "create_time": 1.7e9, "update_time": 1.7e9 + c, "current_node": parent,
                       "mapping": mapping})
    return export


def _claude_ai(conversations: int, messages: int) -> list[dict]:
    return [{"uuid": f"c{c}", "name": f"chat {c}", "created_at": "2024-10-01T09:00:00Z",
             "updated_at": "2024-10-01T10:00:00Z", "chat_messages": [
                 {"uuid": f"{c}-{m}", "sender": "human" if m % 2 == 0 else "assistant", "text": _text(c + m),
                  "content": [{"type": "text", "text": _text(c + m)}], "attachments": [], "files": [],
                  "created_at": "2024-10-01T09:00:00Z"} for m in range(messages)]} for c in range(conversations)]


def main() -> None:
    conversations = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    messages = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    for name, make in (("ChatGPT", _chatgpt), ("Claude.ai", _claude_ai)):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "conversations.json"
            path.write_text(json.dumps(make(conversations, messages)), encoding="utf-8")
            with open_store(Path(folder) / "data") as store:
                start = time.perf_counter()
                result = import_file(store, path)
                took = time.perf_counter() - start
            print(f"{name}: {conversations:,} conversations x {messages} messages, "
                  f"{path.stat().st_size / 1e6:.0f} MB: imported {result.described()} in {took:.1f} s "
                  f"({result.messages / took:,.0f} messages/s)")


if __name__ == "__main__":
    main()
