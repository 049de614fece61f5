"""A job that fails hands its handlers the exception itself, so the window can tell a refusal (worded for the user
by whoever raised it) from a fault in Precis (whose bare text, a KeyError's "'role'", means nothing to a user)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.storage.errors import StoreConflict
from precis.gui.wording import failure_text
from precis.gui.workers import Runner

from tests.timing import WAIT_MS


def test_a_failed_job_hands_over_the_exception_that_ended_it(qtbot):
    runner = Runner()
    raised = KeyError("role")

    def work(_job):
        raise raised

    job = runner.submit("read the message", work)
    with qtbot.waitSignal(job.failed, timeout=WAIT_MS) as failed:
        pass
    assert failed.args[0] is raised
    assert failed.args[0].__traceback__ is None  # its frames (what the work held) are not kept alive with it
    runner.wait()


@given(st.text(min_size=1).filter(lambda text: text.strip() and not text.startswith("could not ")))
def test_a_refusal_says_its_own_words_and_a_fault_says_it_is_one(words):
    assert failure_text(ValueError(words)) == words
    assert failure_text(StoreConflict(words), "rename the chat") == f"Could not rename the chat: {words}"
    fault = failure_text(KeyError(words), "rename the chat")
    assert fault.startswith("Could not rename the chat: an error inside Precis (KeyError: ")
    assert fault.endswith("please report it")


def test_a_refusal_that_already_says_what_failed_is_not_prefixed_again():
    said = "could not rename the chat: the database is read-only"
    assert failure_text(StoreConflict(said), "rename the chat") == "Could not rename the chat: the database is read-only"


def test_the_window_says_a_fault_is_one_and_a_refusal_in_its_own_words(qtbot, make_window, tmp_path, monkeypatch):
    window = make_window()
    shown: list[str] = []
    window.job_failed.connect(shown.append)

    gone = tmp_path / "gone.jsonl"
    window.import_transcript(str(gone))
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert shown.pop() == f"cannot read {gone}: No such file or directory"

    def broken_import(_store, _path):
        """Fault injection: a bug in the importer (no real file makes a correct importer raise KeyError)."""
        raise KeyError("role")

    monkeypatch.setattr("precis.gui.controller.import_file", broken_import)
    window.import_transcript(str(gone))
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert shown[0] == "An error inside Precis (KeyError: 'role'); please report it"
    assert window.statusBar().currentMessage() == shown[0]
