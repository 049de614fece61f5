"""The store's errors, each worded for the person using Precis."""

from __future__ import annotations


class StoreError(Exception):
    """A problem with the chat database, worded for the person using Precis."""


class StoreLocked(StoreError):
    pass


class StoreTooNew(StoreError):
    pass


class StoreCorrupt(StoreError):
    pass


class StoreWriteError(StoreError):
    pass


class StoreUnreadable(StoreError):
    """The file could not be read for a reason outside it (a full disk, an I/O error): not known to be damaged."""


class StoreConflict(StoreError):
    """Another Precis changed what a write was based on; nothing was written."""


class ChatNotFound(StoreError):
    pass


class MessageNotFound(StoreError):
    pass
