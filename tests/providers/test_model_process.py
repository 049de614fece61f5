"""The local model runs in a child process: killing it (a real os.kill of the real process) mid-reply keeps the
partial reply, names the signal, and the next request restarts it; cancel leaves the process in step; a junk
file is refused with its name."""

from __future__ import annotations

import io
import os
import signal

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.providers.base import Cancelled, CancelToken, ProviderUnavailable, complete
from precis.core.providers.local import LocalProvider
from precis.core.providers.model_process import ModelProcessDied

pytestmark = pytest.mark.model

PROMPT = [Message("user", "Write a long story about a lighthouse keeper.")]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_killing_the_model_mid_reply_keeps_the_partial_reply_and_names_the_signal(local_provider, sig):
    pid = local_provider.load().pid
    received = []
    with pytest.raises(ModelProcessDied) as died:
        for chunk in local_provider.stream_chat(PROMPT, max_tokens=400, temperature=0):
            received.append(chunk.text)
            if len(received) == 3:
                os.kill(pid, sig)
    assert f"killed by {sig.name}" in str(died.value)
    assert died.value.partial.startswith("".join(received[:3])) and died.value.partial
    # The next request starts a new model process and answers.
    assert complete(local_provider, [Message("user", "Name a colour.")], max_tokens=8, temperature=0).text
    assert local_provider.process.pid not in (None, pid)


@pytest.mark.slow
def test_cancel_stops_the_reply_and_the_next_one_is_its_own(local_provider):
    cancel = CancelToken()
    with pytest.raises(Cancelled) as cancelled:
        for chunk in local_provider.stream_chat(PROMPT, max_tokens=400, temperature=0, cancel=cancel):
            if chunk.text:
                cancel.cancel()
    assert cancelled.value.partial
    messages = [Message("system", "You are brief."), Message("user", "Name a colour.")]
    reply = complete(local_provider, messages, max_tokens=16, temperature=0)
    assert reply.usage.completion_tokens == local_provider.count_tokens(reply.text)


def test_a_junk_gguf_is_refused_naming_the_file(tmp_path):
    junk = tmp_path / "x.gguf"
    junk.write_bytes(b"not a model at all" * 100)
    with pytest.raises(ProviderUnavailable, match="x.gguf"):
        LocalProvider(model_path=junk).load()


class KillOnFirstWrite(io.StringIO):
    """stdout of `precis chat` that kills the model process when the first piece of the reply is printed."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid

    def write(self, text: str) -> int:
        if text and self.pid:
            os.kill(self.pid, signal.SIGKILL)
            self.pid = 0
        return super().write(text)


@pytest.mark.slow
def test_precis_chat_reports_the_killed_model_and_the_next_chat_restarts_it(capsys, monkeypatch, local_provider):
    out = KillOnFirstWrite(local_provider.load().pid)
    monkeypatch.setattr("sys.stdout", out)
    code = main(["chat", "--max-tokens", "300", "--temperature", "0", "Write a long story about a ship."])
    err = capsys.readouterr().err
    assert code == 1
    assert "killed by SIGKILL" in err and "partial reply was kept" in err
    assert out.getvalue().strip()
    monkeypatch.undo()
    assert main(["chat", "--max-tokens", "16", "--temperature", "0", "Name a fruit."]) == 0
    assert capsys.readouterr().out.strip()
