"""The model the chats use: the provider the settings name, loading it off the GUI thread, switching to another once
it works, its state for the status line, and stopping its process once the window is gone.

Apart from the chat controller because it outlives every chat; its jobs run on the controller's shared runner and
show in the same status line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..core.providers.base import Provider
from ..core.providers.registry import make_provider, provider_for
from ..core.settings import PROVIDER_KEY, ProviderChoice
from ..core.storage.store import Store
from .wording import failure_text
from .workers import Job, Runner

# The local model's state while it writes a summary (a reply to the chat waits for it).
SUMMARIZING = "summarizing…"

# Shows a job's work in the status line and hands its outcome on: (job, text, done, failed, report failures).
Track = Callable[[Job, str, Callable[[Any], Any], Callable[[BaseException], Any], bool], Job]


class ModelControl(QObject):
    """`provider` fixes the model (tests): the settings then never replace it."""

    state_changed = Signal(str, str)  # (state, reason): loading…, ready, unavailable, …
    ready = Signal()
    failed = Signal(object)  # the model did not load: the exception
    notice = Signal(str)  # something the user should read in the status bar
    # The model chosen in Settings did not load: (the exception, the name of the one in use, which stays).
    switch_failed = Signal(object, str)

    def __init__(self, store: Store, runner: Runner, track: Track, provider: Provider | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.runner, self.track = runner, track
        self.state = ""
        self._summarizing = False  # this model is writing a summary (see summarizing)
        self.fixed = provider is not None
        self.provider: Provider = provider or make_provider("local")

    def use_configured_provider(self) -> None:
        """The provider the settings name; a bad configuration falls back to the local model and says why."""
        if self.fixed:
            return
        choice = ProviderChoice.from_setting(self.store.get_setting(PROVIDER_KEY))
        try:
            self.provider = provider_for(choice)
        except Exception as exc:  # noqa: BLE001 - a bad configuration must not stop the app opening
            self.notice.emit(f"{choice.kind}: {exc}; using the local model")
            self.provider = make_provider("local")

    def switch_provider(self, choice: ProviderChoice, done: Callable[[bool], Any]) -> None:
        """Use the provider `choice` names once it works: built and (a local model) loaded off the GUI thread, then
        saved and used, and the previous local model's process stopped. One that cannot be built or loaded is
        reported (`failed`, naming why) and the provider in use stays, in use and saved. `done(switched)` follows."""
        if self.fixed:
            self.store.set_setting(PROVIDER_KEY, choice.to_setting())
            done(False)
            return
        previous = self.provider

        def build(_job: Job) -> Provider:
            provider = provider_for(choice)
            load = getattr(provider, "load", None)
            if load is not None:
                load()
            return provider

        def built(provider: Provider) -> None:
            self.store.set_setting(PROVIDER_KEY, choice.to_setting())
            self.provider = provider
            close_previous = getattr(previous, "close", None)
            if close_previous is not None:  # off the GUI thread: a model process takes a moment to stop
                self.runner.submit("stop the previous model", lambda _job: close_previous(keep=provider))
            done(True)
            if getattr(provider, "load", None) is not None:
                self.set_state("ready")
                self.ready.emit()

        def refused(error: BaseException) -> None:
            self.switch_failed.emit(error, f"{previous.name} · {previous.model}")
            done(False)

        job = self.runner.submit("switch the model", build)
        self.track(job, f"Loading {choice.kind} · {choice.model_path or choice.model or 'the default model'}…", built,
                   refused, False)

    def set_state(self, state: str, reason: str = "") -> None:
        self.state = state
        self.state_changed.emit(state, reason)

    def reset_state(self) -> None:
        self.set_state(self._resting_state())

    def _resting_state(self) -> str:
        """A hosted model is not contacted until the first reply: "configured", not "ready". A local one is ready
        once its process runs with it loaded, whoever loaded it (a summary, another window's chat)."""
        if getattr(self.provider, "load", None) is None:
            return "configured"
        return "ready" if getattr(self.provider, "loaded", False) else "not loaded yet"

    def summarizing(self, active: bool) -> None:
        """This local model began (`active`) or ended writing a summary: its state says so, then ready if that loaded
        it. It said "not loaded yet" while the summarizer ran it. Loading, unavailable or stopped stay said."""
        self._summarizing = active
        if getattr(self.provider, "load", None) is None:
            return
        if active and self.state in ("not loaded yet", "ready"):
            self.set_state(SUMMARIZING)
        elif not active and self.state == SUMMARIZING:
            self.set_state(self._resting_state())

    def load(self) -> None:
        """Load a local model in the background; a hosted one is not contacted until the first reply."""
        provider = self.provider
        load = getattr(provider, "load", None)
        if load is None:
            self.ready.emit()
            return

        def loaded(_model) -> None:
            if self.provider is provider:
                self.set_state(SUMMARIZING if self._summarizing else "ready")
                self.ready.emit()

        def not_loaded(error: BaseException) -> None:
            if self.provider is provider:
                self.set_state("unavailable", failure_text(error))
                self.failed.emit(error)

        self.set_state("loading…")
        job = self.runner.submit("load the model", lambda _job: load())
        self.track(job, f"Loading the local model {provider.model}…", loaded, not_loaded, False)

    def stop(self) -> None:
        """Stop the local model's process once the window is gone: after finish_background_work, since stopping it
        earlier would turn a summary still being written into a rule fallback."""
        close_model = getattr(self.provider, "close", None)
        if close_model is not None:
            close_model()
