"""A reply streaming in one Precis while another writes the same data folder: `precis import` of a long chat holds
the store's write lock for its whole transaction. The reply's text is saved as it streams (every SAVE_EVERY_S); a
save that waits for the lock stalls the stream, and so the text shown, until the import commits.

Run: python benchmarks/bench_shared_writer.py   (BENCH_MESSAGES sets the import's length, default 100,000)
Prints the import's time and the longest gap between two pieces of the reply reaching the window (the provider sends
one every 20 ms). Goal: the longest gap stays near 20 ms whatever the import does (a save that waited for the
import: 0.65-1.1 s at 100,000 messages; skipped while it writes: 26 ms).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.chat.session import ChatSession  # noqa: E402
from precis.core.model.messages import Message  # noqa: E402
from precis.core.providers.base import CancelToken, ChatChunk, Usage  # noqa: E402
from precis.core.storage.store import open_store  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "100000"))
PIECE_EVERY_S = 0.02


class SteadyModel:
    """A stand-in for a model server that streams one piece every PIECE_EVERY_S until told to stop: the benchmark
    times the saving, not a model."""

    name = model = "steady"

    def __init__(self) -> None:
        self.stop = threading.Event()

    def context_window(self) -> int:
        return 8192

    def stream_chat(self, messages, *, max_tokens=512, temperature=0.7, json_schema=None, cancel=None, **_options):
        while not self.stop.is_set():
            time.sleep(PIECE_EVERY_S)
            yield ChatChunk(text=" word")
        yield ChatChunk(done=True, usage=Usage(0, 0), finish_reason="stop")

    def request_body(self, messages, **_options):
        return {}

    def count_tokens(self, text: str) -> int | None:
        return None

    def tokenizer_name(self) -> str | None:
        return None


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        data, source = Path(folder) / "data", Path(folder) / "long.jsonl"
        source.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                                              "content": f"note {i} about the kiwi survey and its transects"}) + "\n"
                                  for i in range(MESSAGES)))
        store = open_store(data)
        chat_id = store.import_chat("streaming", [Message(role="user", content="Tell me about kiwis.")])
        model = SteadyModel()
        session = ChatSession(store, chat_id, model)
        session.build_engine(estimate=False)
        arrivals: list[float] = []
        reply = threading.Thread(target=lambda: session.reply(
            Message(role="assistant", content="", incomplete=True), on_text=lambda _piece: arrivals.append(
                time.monotonic()), cancel=CancelToken()))
        reply.start()
        time.sleep(1.5)
        started = time.monotonic()
        imported = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(data), "import",
                                   str(source)], capture_output=True, text=True)
        import_s = time.monotonic() - started
        time.sleep(1.5)
        model.stop.set()
        reply.join()
        session.close()
        store.close()
        assert imported.returncode == 0, imported.stderr
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
        print(f"import of {MESSAGES:,} messages beside the reply: {import_s:.2f} s")
        print(f"reply pieces: {len(arrivals)}; longest gap between two: {max(gaps) * 1000:.0f} ms "
              f"(one every {PIECE_EVERY_S * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
