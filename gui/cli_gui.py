"""`precis open` (the default: the window) and `precis screenshot FILE` (the window rendered offscreen to a PNG)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    open_cmd = subparsers.add_parser("open", help="open the window (the default)")
    open_cmd.set_defaults(func=run_open)
    shot = subparsers.add_parser("screenshot", help="render the window offscreen to a PNG")
    shot.add_argument("file", help="PNG file to write")
    shot.add_argument("--chat", help="chat id (or unique prefix, or title) to show; default: the most recent")
    shot.add_argument("--size", default="1500x950", help="window size WxH (default 1500x950)")
    shot.add_argument("--no-inspector", action="store_true", help="hide the context inspector")
    shot.set_defaults(func=run_screenshot)


def _open_store(args):
    from ..core.storage.store import StoreError, open_store

    try:
        return open_store(args.data_dir)
    except StoreError as exc:
        print(f"precis: {exc}", file=sys.stderr)
        return None


def run_open(args: argparse.Namespace) -> int:
    from .app import application
    from .main_window import MainWindow

    app = application()
    store = _open_store(args)
    if store is None:
        return 1
    window = MainWindow(store)
    window.show()
    try:
        return app.exec()
    finally:
        store.close()


def _parse_size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"precis screenshot: --size must look like 1500x950, not {text!r}") from None
    if not (320 <= width <= 8000 and 240 <= height <= 8000):
        raise SystemExit(f"precis screenshot: --size {text} is out of range (320x240 to 8000x8000)")
    return width, height


def run_screenshot(args: argparse.Namespace) -> int:
    from .app import application, offscreen

    offscreen()
    width, height = _parse_size(args.size)
    from PySide6.QtCore import QEventLoop, QTimer

    from ..core.providers.local import LocalProvider
    from ..core.storage.store import ChatNotFound
    from .main_window import MainWindow

    app = application()
    store = _open_store(args)
    if store is None:
        return 1
    try:
        chat_id = None
        if args.chat:
            try:
                chat_id = store.find_chat(args.chat).id
            except ChatNotFound as exc:
                print(f"precis screenshot: {exc}", file=sys.stderr)
                return 1
        # The screenshot shows stored chats: the model is not loaded for it.
        window = MainWindow(store, provider=LocalProvider(), load_model=False)
        window.resize(width, height)
        window.inspector.setVisible(not args.no_inspector)
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
        if window.inspector.chain.rowCount():
            window.inspector.chain.selectRow(0)  # the newest summary, with its text and facets
        # Paint twice: the first paint measures the visible rows, the second lays them out exactly.
        for _ in range(3):
            app.processEvents()
            window.grab()
        if not window.grab().save(args.file, "PNG"):
            print(f"precis screenshot: could not write {args.file}", file=sys.stderr)
            return 1
        print(args.file)
        window.close()
        return 0
    finally:
        store.close()


def _settled(window) -> bool:
    if window.runner.busy:
        return False
    return window.session is None or (window.snapshot is not None and not window.chat_runner.busy)
