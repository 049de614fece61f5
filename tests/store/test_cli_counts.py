"""The command line counts a stored chat's tokens as the window does: with the chosen model's own vocabulary where
it is at hand (the embedded model), with the correction that model's replies taught, and says "estimated" where
only cl100k's estimate is possible (a hosted model)."""

from __future__ import annotations

import json
import re

from precis.core.chat.session import ChatSession
from precis.core.cli.main import main
from precis.core.providers.registry import make_provider
from precis.core.settings import CALIBRATION_KEY, PROVIDER_KEY
from precis.core.storage.chats import calibration_name, counter_for
from precis.core.storage.store import open_store

from tests.conftest import TRANSCRIPTS_DIR


def window_total(data: str, chat: str) -> tuple[int, bool]:
    """The chat's context as the window's chat core counts it (no model process: counting needs the vocabulary)."""
    with open_store(data) as store:
        session = ChatSession(store, chat, make_provider("local"))
        try:
            usage = session.build_engine(estimate=False).usage
        finally:
            session.close()
    assert usage is not None
    return usage.total, usage.exact


def test_context_prompt_and_summarize_count_as_the_window_does(tmp_path, capsys):
    """They counted with cl100k while the window counted with SmolLM2's vocabulary: 7-20% fewer tokens for the same
    chat, so a prompt the command line said was within the budget was over it for the model."""
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "import", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl")]) == 0
    chat = capsys.readouterr().out.strip()
    with open_store(data) as store:  # what the model's replies taught the window: its counts run 4% short
        provider = make_provider("local")
        store.set_setting(CALIBRATION_KEY, {calibration_name(provider, counter_for(provider)): [1.04, 3]})
    total, exact = window_total(data, chat)
    assert exact

    assert main(["--data-dir", data, "context", chat]) == 0
    shown = re.search(r"context: ([\d,]+) / [\d,]+ tokens \(\d+%, (\w+)\)", capsys.readouterr().out)
    assert shown is not None and (int(shown[1].replace(",", "")), shown[2]) == (total, "exact")

    assert main(["--data-dir", data, "prompt", chat, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens_exact"] is True

    assert main(["--data-dir", data, "summarize", chat, "--mode", "rule"]) == 0
    assert "estimated" not in capsys.readouterr().out
    with open_store(data) as store:
        [record] = store.load_records(chat)
    assert record.tokens_before == total  # the chat holds no question to recall for: the same context


def test_a_hosted_models_counts_are_said_to_be_estimates(tmp_path, capsys):
    """Settings → Provider names a hosted model, whose tokenizer Precis does not have: cl100k's estimate, said so."""
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "import", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl")]) == 0
    chat = capsys.readouterr().out.strip()
    with open_store(data) as store:
        store.set_setting(PROVIDER_KEY, {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert main(["--data-dir", data, "context", chat]) == 0
    assert re.search(r"context: [\d,]+ / [\d,]+ tokens \(\d+%, estimated\)", capsys.readouterr().out)
    assert main(["--data-dir", data, "prompt", chat]) == 0
    assert "tokens (estimated)" in capsys.readouterr().out
    assert main(["--data-dir", data, "summarize", chat, "--mode", "rule"]) == 0
    assert "(token counts estimated)" in capsys.readouterr().out.splitlines()[0]
