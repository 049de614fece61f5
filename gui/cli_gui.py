"""`precis open` (the default: the window) and `precis screenshot FILE` (the window rendered offscreen to a PNG)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from ..core.cli.group import cli, data_dir_option
from ..core.cli.store import BAD_INPUT


def _open_store(data_dir: str | None, *, in_a_box: bool = False):
    """The store, or None once the reason was told: on stderr, and with `in_a_box` in a message box too (someone
    who started the app from a menu has no terminal to read it in). What opening found is said on stderr (and by the
    window's status bar)."""
    from ..core.cli.opening import open_cli_store
    from ..core.storage.paths import data_dir as resolve_data_dir
    from ..core.storage.store import StoreCorrupt, StoreError, StoreTooNew

    try:
        return open_cli_store(data_dir)
    except StoreError as exc:
        print(f"precis: {exc}", file=sys.stderr)
        if in_a_box:
            from PySide6.QtWidgets import QMessageBox

            from .app import application
            from .store_trouble import TITLE, offer_newer_export, offer_recovery

            application()
            if isinstance(exc, StoreTooNew):
                offer_newer_export(str(exc), resolve_data_dir(data_dir))
            elif not isinstance(exc, StoreCorrupt):
                QMessageBox.critical(None, TITLE, str(exc))
            elif offer_recovery(str(exc), resolve_data_dir(data_dir)):
                return _open_store(data_dir, in_a_box=True)  # the recovered store
        return None


@cli.command("open")
@data_dir_option
def open_window(data_dir: str | None) -> int:
    """Open the window (the default)."""
    why_not = _no_display()
    if why_not:
        print(f"precis: {why_not}", file=sys.stderr)
        return 1
    store = _open_store(data_dir, in_a_box=True)
    if store is None:
        return 1
    _launch_configured_model(store)
    from .app import application
    from .closing import close_on_signals
    from .main_window import MainWindow

    app = application()
    window = MainWindow(store)
    window.show()
    close_on_signals(window, window.close_guard)
    try:
        return app.exec()
    finally:
        window.chat.finish_background_work()  # the window is gone: work under way is saved before the store closes
        window.chat.model.stop()
        store.close()


def _no_display() -> str | None:
    """Why the window cannot be shown here, or None. On Linux without a display Qt aborts the process (a core dump,
    'no Qt platform plugin could be initialized'), which reads as a broken install."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return ("there is no display to show the window on (neither DISPLAY nor WAYLAND_DISPLAY is set). The other "
            "commands work without one (precis --help), and precis screenshot draws the window offscreen.")


def _launch_configured_model(store) -> None:
    """Start the local model's process loading before Qt is imported and the window built, so its model is loaded
    by the time the window is up (the window's provider, made from the same setting, finds that process)."""
    from ..core.providers.registry import launch
    from ..core.settings import PROVIDER_KEY, ProviderChoice

    launch(ProviderChoice.from_setting(store.get_setting(PROVIDER_KEY)))


def _parse_size(_ctx, _param, text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"must look like 1500x950, not {text!r}") from None
    if not (320 <= width <= 8000 and 240 <= height <= 8000):
        raise click.BadParameter(f"{text} is out of range (320x240 to 8000x8000)")
    return width, height


def _writable_target(_ctx, _param, file: str) -> str:
    """The picture's path, refused before anything is drawn when it cannot be a file (written whole at the end)."""
    target = Path(file)
    if not file.strip():
        raise click.BadParameter("no file name given")
    if target.is_dir():
        raise click.BadParameter(f"{file} is a folder; give a file name such as {target / 'precis.png'}")
    if not target.parent.is_dir():
        raise click.BadParameter(f"cannot write {file}: there is no folder {target.parent}")
    return file


@cli.command(short_help="Render the window offscreen to a PNG file.")
@click.argument("file", callback=_writable_target)
@click.option("--chat", help="chat id (or unique prefix, or title) to show; default: the most recent")
@click.option("--size", default="1500x950", show_default=True, callback=_parse_size, help="window size WxH")
@click.option("--no-inspector", is_flag=True, help="hide the context inspector")
@click.option("--theme", "theme_choice", type=click.Choice(["light", "dark"]),
              help="render in this theme (default: the saved choice)")
@data_dir_option
def screenshot(file: str, chat: str | None, size: tuple[int, int], no_inspector: bool, theme_choice: str | None,
               data_dir: str | None) -> int:
    """Render the window offscreen to a PNG FILE (the chats are left as they were)."""
    from .app import application, offscreen

    offscreen()
    from ..core.storage.store import ChatNotFound, StoreError

    app = application()
    store = _open_store(data_dir)
    if store is None:
        return 1
    try:
        chat_id = None
        if chat:
            try:
                chat_id = store.find_chat(chat).id
            except ChatNotFound as exc:
                print(f"precis screenshot: {exc}", file=sys.stderr)
                return BAD_INPUT
        # The picture is taken on a copy: opening a chat past its trigger summarizes it, and a screenshot must
        # leave the chats as they were.
        with tempfile.TemporaryDirectory(prefix="precis-screenshot-") as scratch:
            try:
                copy = store.copy_to(Path(scratch))
            except StoreError as exc:
                print(f"precis screenshot: {exc}", file=sys.stderr)
                return 1
            try:
                return _render(app, copy, file, chat_id, size, not no_inspector, theme_choice)
            finally:
                copy.close()
    finally:
        store.close()


def _render(app, store, file: str, chat_id: str | None, size: tuple[int, int], inspector: bool,
            theme_choice: str | None) -> int:
    from PySide6.QtCore import QBuffer, QByteArray, QEventLoop, QIODevice, QTimer

    from ..core.providers.local import LocalProvider
    from ..core.storage.exporters import write_export
    from . import theme
    from .main_window import MainWindow

    # The screenshot shows stored chats: the model is not loaded for it.
    window = MainWindow(store, provider=LocalProvider(), load_model=False)
    window.remembers_size = False  # the picture's size is not the one the user's window opens at
    try:
        if theme_choice:
            theme.choose(theme_choice)  # for this picture only: the saved choice is left as it is
        window.resize(*size)
        window.inspector.setVisible(inspector)
        window.show()
        if chat_id is not None:
            window.open_chat(chat_id)
        # Wait until the chat is open and its work done (counting, a summary it was due): nothing half-drawn.
        loop = QEventLoop()
        poll = QTimer()
        poll.setInterval(50)
        poll.timeout.connect(lambda: _settled(window) and loop.quit())
        poll.start()
        window.job_failed.connect(lambda _error: QTimer.singleShot(300, loop.quit))
        QTimer.singleShot(60_000, loop.quit)
        loop.exec()
        poll.stop()
        if window.inspector.chain.count():
            window.inspector.chain.setCurrentRow(0)  # the newest summary, with its text and facets
        # Painted until two paints agree (at most ten): the first paint measures the visible rows, the next lay them
        # out exactly, and the inspector's parts take the height their text and rows need.
        painted = window.grab().toImage()
        for _ in range(10):
            pause = QEventLoop()
            QTimer.singleShot(50, pause.quit)  # and the timers of lazy layouts fire
            pause.exec()
            again = window.grab().toImage()
            if again == painted:
                break
            painted = again
        if (window.width(), window.height()) != size:
            print(f"precis screenshot: the window cannot be {size[0]}x{size[1]} (its parts need "
                  f"{window.minimumSizeHint().width()}x{window.minimumSizeHint().height()}): the picture is "
                  f"{window.width()}x{window.height()}", file=sys.stderr)
        picture = QByteArray()
        buffer = QBuffer(picture)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        window.grab().save(buffer, "PNG")
        try:
            write_export([bytes(picture.data())], file)
        except OSError as exc:
            print(f"precis screenshot: {exc}", file=sys.stderr)
            return 1
        print(file)
        return 0
    finally:
        window.close()
        window.chat.finish_background_work()


def _settled(window) -> bool:
    """The chat to be shown is open and counted and no work on it is under way. Without --chat that is the chat
    list's first, opened once the list is read: until then no chat is open and nothing runs on a chat, which looked
    settled, and the store was closed under the counting that followed ("unable to open database file")."""
    chat = window.chat
    if chat.store_calls.busy or chat.busy:
        return False
    return chat.session is None or chat.snapshot is not None
