"""Stop while the server has not answered yet: the time from Stop to the work ending, and to the server seeing the
client go, against a loopback server that reads the request and then holds its response headers for HOLD seconds
(tests/held_headers.py: what a llama.cpp or Ollama server does while it reads a long prompt).

Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_stop.py
Goal: every case < 0.2 s (it was HOLD: Stop waited for the server's headers).

With --model, also the real llama.cpp server (core/providers/model_server.py, SmolLM2) given a ~3,300-token prompt:
Stop one second in, and how soon the server answers a short request after it (it stops work on the stopped prompt
once it has read the batch it is on), beside the same prompt's time unstopped.

Cases: a reply's stream (OpenAI-compatible, Anthropic), a model list (Test connection; the list is asked inside
transport.cancellable), and the window: Stop pressed to the window idle again, and closing the window to its work
finished.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.model.messages import Message  # noqa: E402
from precis.core.providers.anthropic import AnthropicProvider  # noqa: E402
from precis.core.providers.base import CancelToken  # noqa: E402
from precis.core.providers.openai_compat import OpenAICompatProvider  # noqa: E402

from tests.held_headers import HeldHeadersServer  # noqa: E402

HOLD = 10.0


def timed_stop(server: HeldHeadersServer, work, cancel: CancelToken) -> tuple[float, float | None]:
    """(seconds from cancel to `work` returning, seconds from cancel to the server seeing the client go)."""
    releaser = threading.Timer(HOLD, server.release)
    releaser.start()
    thread = threading.Thread(target=lambda: _quietly(work), daemon=True)
    thread.start()
    server.asked.wait(HOLD)
    started = time.monotonic()
    cancel.cancel()
    thread.join(HOLD + 5)
    ended = time.monotonic() - started
    releaser.cancel()
    return ended, (server.left_at - started if server.left_at is not None else None)


def _quietly(work) -> None:
    try:
        work()
    except Exception:  # noqa: BLE001 - Cancelled (or, before the fix, whatever the late answer gave): not measured
        pass


def report(case: str, ended: float, left: float | None) -> None:
    went = f"{left * 1000:.0f} ms" if left is not None else "never (it answered first)"
    print(f"{case}: Stop to the call ending {ended * 1000:.0f} ms; server saw the client go after {went} "
          f"(goal < 200 ms; hold {HOLD:g} s)")


def providers() -> None:
    ask = [Message(role="user", content="Hello")]
    for name, make in (("OpenAI-compatible stream", lambda url: OpenAICompatProvider(f"{url}/v1", "m")),
                       ("Anthropic stream", lambda url: AnthropicProvider(url, "m", "sk-ant-bench"))):
        server = HeldHeadersServer()
        provider = make(server.url)
        cancel = CancelToken()
        report(name, *timed_stop(server, lambda p=provider, c=cancel: list(p.stream_chat(ask, cancel=c)), cancel))
        provider.close()
        server.close()
    server = HeldHeadersServer(hold_lists=True)
    provider = OpenAICompatProvider(f"{server.url}/v1", "m")
    cancel = CancelToken()
    try:
        from precis.core.providers.transport import cancellable
    except ImportError:  # before the fix: nothing could cancel a model list
        def listing() -> object:
            return provider.list_models()
    else:
        def listing() -> object:
            with cancellable(cancel):
                return provider.list_models()
    report("model list (Test connection)", *timed_stop(server, listing, cancel))
    provider.close()
    server.close()


def window() -> None:
    from precis.core.settings import SUMMARIZATION_KEY
    from precis.core.storage.store import open_store
    from precis.gui.app import application
    from precis.gui.main_window import MainWindow

    app = application()
    for case in ("Stop", "close the window"):
        server = HeldHeadersServer()
        with tempfile.TemporaryDirectory() as home:
            store = open_store(home)
            store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
            chat_id = store.create_chat("held")
            view = MainWindow(store, provider=OpenAICompatProvider(f"{server.url}/v1", "m"), load_model=False)
            view.show()
            view.open_chat(chat_id)
            while view.chat.snapshot is None or view.chat.chat_runner.busy:
                app.processEvents()
            releaser = threading.Timer(HOLD, server.release)
            releaser.start()
            view.submit("Hello")
            while not server.asked.is_set():
                app.processEvents()
            started = time.monotonic()
            if case == "Stop":
                view.chat.stop()
                while view.chat.reply_job is not None or view.chat.chat_runner.busy:
                    app.processEvents()
                ended = time.monotonic() - started
                kept = [m.role for m in store.load_messages(chat_id)]
                view.close()
                view.chat.finish_background_work()
            else:
                view.close()
                view.chat.finish_background_work()
                ended = time.monotonic() - started
                kept = [m.role for m in store.load_messages(chat_id)]
            releaser.cancel()
            left = server.left_at - started if server.left_at is not None else None
            report(f"window: {case} to ready/closed (chat keeps {kept})", ended, left)
            store.close()
        server.close()


def real_server() -> None:
    import socket
    import subprocess

    import httpx
    from precis.core.providers.local import find_model_path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "precis.core.providers.model_server", "--model",
                               str(find_model_path()), "--n_threads", "2", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.25)
        provider = OpenAICompatProvider(url, "m")

        def ask(text: str, stop_after: float | None = None) -> tuple[float, float | None]:
            cancel = CancelToken()
            asked = [Message(role="user", content=text)]
            started = time.monotonic()
            thread = threading.Thread(target=lambda: _quietly(
                lambda: list(provider.stream_chat(asked, cancel=cancel, max_tokens=1))))
            thread.start()
            stopped = None
            if stop_after is not None:
                time.sleep(stop_after)
                stopped = time.monotonic()
                cancel.cancel()
            thread.join()
            return time.monotonic() - started, (time.monotonic() - stopped if stopped is not None else None)

        def long_prompt(word: str) -> str:  # a different text each time: no prompt cache
            return " ".join(f"{word} {i}: the keeper of the light saw {i} boats." for i in range(250)) + "\nSummarize."

        ask("Say hi.")
        _, stop = ask(long_prompt("Row"), stop_after=1.0)
        after, _ = ask("Say hi.")
        whole, _ = ask(long_prompt("Entry"))
        print(f"real llama.cpp server, ~3,300-token prompt: Stop to the call ending {stop * 1000:.0f} ms; a short "
              f"request right after answered in {after:.1f} s; the same prompt unstopped took {whole:.1f} s")
        provider.close()
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    providers()
    window()
    if "--model" in sys.argv:
        real_server()
