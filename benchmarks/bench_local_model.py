"""The embedded local model's speed: model-process cold start, time to first token (warm and from a cold app),
tokens/s with llama.cpp's extra buffer types off (the default) and on, and the median and slowest summary.

Run: python benchmarks/bench_local_model.py [--runs 5] [--cold-only] [--profile]
Prints medians (goal: first token from a cold app within 1.5 s on 2 cores). The machine must be otherwise idle:
llama.cpp's threads slow down many times over when other processes compete for the two cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.model.messages import Message  # noqa: E402
from precis.core.providers.base import token_counter  # noqa: E402
from precis.core.providers.local import LocalProvider  # noqa: E402
from precis.core.providers.model_process import ModelProcessDied  # noqa: E402
from precis.core.storage.interchange import read_transcript  # noqa: E402

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts"
PROMPT = [Message("system", "You are a helpful assistant."),
          Message("user", "Explain in a few sentences why the sky is blue.")]


def measure_stream(provider: LocalProvider, max_tokens: int) -> tuple[float, float, int]:
    """(seconds to first token, tokens/s after it, completion tokens) of one streamed reply."""
    start = time.perf_counter()
    first = None
    usage = None
    for chunk in provider.stream_chat(PROMPT, max_tokens=max_tokens, temperature=0):
        if chunk.text and first is None:
            first = time.perf_counter()
        if chunk.done:
            usage = chunk.usage
    end = time.perf_counter()
    tokens = usage.completion_tokens if usage else 0
    rate = (tokens - 1) / (end - first) if first and end > first and tokens > 1 else float("nan")
    return (first or end) - start, rate, tokens


def summary_times(provider: LocalProvider, per_transcript: int = 2, size: int = 30) -> str:
    """Median and slowest hybrid summary (as the app makes them) of 30-message stretches of every shared
    transcript, with the machine's load average beside them (goal: every one under 10 s on 2 cores)."""
    from precis.core.summary.summarize import SummaryRequest, make_summarizer

    transcripts = sorted(p for p in TRANSCRIPTS.glob("*.jsonl") if not p.name.endswith(".raw.jsonl"))
    if not transcripts:
        return f"summary time: skipped (no transcripts in {TRANSCRIPTS})"
    counter = token_counter(provider)
    timed = []
    for path in transcripts:
        transcript = read_transcript(path)
        for n in range(per_transcript):
            messages = transcript[n * size:(n + 1) * size]
            if not messages:
                break
            start = time.perf_counter()
            draft = make_summarizer("hybrid", provider).summarize(
                SummaryRequest(messages=messages, max_tokens=400, counter=counter))
            timed.append((time.perf_counter() - start, f"{path.name} messages {n * size + 1}-{n * size + len(messages)}",
                          draft))
    seconds, where, draft = max(timed, key=lambda t: t[0])
    how = f"the rules: {draft.fallback_reason}" if draft.fallback_used else "the model's"
    fallbacks = sum(t[2].fallback_used for t in timed)
    return (f"summary time (hybrid, {len(timed)} summaries of {size} messages over {len(transcripts)} transcripts): "
            f"median {statistics.median(t[0] for t in timed):.2f} s, slowest {seconds:.2f} s ({where}, {how}); "
            f"{fallbacks} written by the rules; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


COLD_APP = """
import sys, time
from precis.core.model.messages import Message
from precis.core.providers.local import LocalProvider
for chunk in LocalProvider().stream_chat([Message("user", "Name a colour.")], max_tokens=4, temperature=0):
    if chunk.text:
        print("first", flush=True)
        break
"""


# The window as `precis` opens it (core/cli/main.py, then gui/cli_gui.py's open_window: the model process started
# before the commands' imports), offscreen on a fresh data folder; a message is sent the moment its chat is open, as
# by a user who types at once. Prints when the chat is shown and when the reply's first text arrives.
COLD_WINDOW = """
import os, sys, tempfile
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ["PRECIS_HOME"] = tempfile.mkdtemp()
from precis.core.cli import main
main.start_local_model_early()
main.load_commands()
from precis.core.storage.store import open_store
from precis.gui.cli_gui import _launch_configured_model
store = open_store(None)
_launch_configured_model(store)
from precis.gui.app import application
from precis.gui.main_window import MainWindow
app = application()
window = MainWindow(store)
window.show()
chat_id = store.create_chat("bench")
rows = window.conversation.conversation

def opened(_chat_id):
    print("shown", flush=True)
    window.submit("Name a colour.")

def streamed(number):
    if rows.row_at(number).message.content:
        print("first", flush=True)
        os._exit(0)

window.chat.chat_opened.connect(opened)
rows.row_streamed.connect(streamed)
window.open_chat(chat_id)
app.exec()
"""


# Where a cold app's first token goes, phase by phase (wall and this process's CPU seconds): the app's imports, the
# model process started, the vocabulary loaded here meanwhile, the wait for the model process to be ready, the first
# token.
PROFILE = """
import resource, sys, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
marks = [("python started", float(sys.argv[1]), 0.0)]
def mark(what):
    marks.append((what, time.time(), cpu()))
from precis.core.model.messages import Message
from precis.core.providers.local import LocalProvider, load_vocabulary
mark("precis imported")
provider = LocalProvider()
provider.launch()
mark("model process started")
load_vocabulary(provider.path)
mark("vocabulary loaded here")
provider.process.start()
mark("model process ready")
for chunk in provider.stream_chat([Message("user", "Name a colour.")], max_tokens=4, temperature=0):
    if chunk.text:
        break
mark("first token")
for (_, t0, c0), (what, t1, c1) in zip(marks, marks[1:]):
    print(f"  {what:26} +{t1 - t0:5.2f} s  (CPU here {c1 - c0:4.2f} s)")
print(f"  {'total':26} {marks[-1][1] - marks[0][1]:6.2f} s")
"""


def profile_cold_app() -> None:
    print(f"cold app, phase by phase (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    subprocess.run([sys.executable, "-c", PROFILE, repr(time.time())], check=True)


def cold_first_token(script: str) -> dict[str, float]:
    """Seconds from starting a fresh Python to each line the script prints ("first": the first token)."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    marks = {}
    for line in process.stdout:
        marks[line.strip()] = time.perf_counter() - start
        if line.strip() == "first":
            break
    process.wait()
    return marks


def cold_figures(runs: int) -> None:
    for label, script in (("a cold app (core: LocalProvider().stream_chat)", COLD_APP),
                          ("a cold window (precis, message sent as its chat opens)", COLD_WINDOW)):
        marks = [cold_first_token(script) for _ in range(runs)]
        shown = [m["shown"] for m in marks if "shown" in m]
        print(f"first token from {label}: median {statistics.median(m['first'] for m in marks):.2f} s"
              + (f" (chat shown at {statistics.median(shown):.2f} s)" if shown else "")
              + f" ({runs} runs; goal < 1.5 s on 2 cores; load average {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} cores)")


def speed(extra_buffer_types: bool, runs: int, max_tokens: int) -> LocalProvider:
    label = f"extra buffer types {'on' if extra_buffer_types else 'off'}"
    provider = LocalProvider(extra_buffer_types=extra_buffer_types)
    start = time.perf_counter()
    provider.load()
    print(f"[{label}] model process cold start: {time.perf_counter() - start:.2f} s "
          f"({provider.model}, {provider.context_window()} tokens)")
    try:
        measure_stream(provider, 4)  # warm-up: first-call allocations
        timed = [measure_stream(provider, max_tokens) for _ in range(runs)]
    except ModelProcessDied as exc:  # the AMX path on SmolLM2: the reason the default is off
        print(f"[{label}] the model process crashed: {exc}")
        return provider
    print(f"[{label}] time to first token: median {statistics.median(r[0] for r in timed) * 1000:.0f} ms "
          f"({runs} runs, {len(provider.prompt_tokens(PROMPT))}-token prompt)")
    print(f"[{label}] generation: median {statistics.median(r[1] for r in timed):.1f} tokens/s "
          f"(replies of {statistics.median(r[2] for r in timed):.0f} tokens)")
    return provider


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--summaries-only", action="store_true", help="only the summary times")
    parser.add_argument("--cold-only", action="store_true", help="only the first token from a cold app and window")
    parser.add_argument("--profile", action="store_true", help="where a cold app's first token goes, phase by phase")
    args = parser.parse_args()
    if args.summaries_only:
        print(summary_times(LocalProvider()))
        return
    if args.profile:
        profile_cold_app()
        return
    cold_figures(3)
    if args.cold_only:
        return
    speed(True, args.runs, args.max_tokens).close()
    provider = speed(False, args.runs, args.max_tokens)
    print(summary_times(provider))


if __name__ == "__main__":
    main()
