"""Records replies kept before the compact form of sent_record.py, read so that their What was sent still shows:
"c=<checksum, hex>;s=<setup key>;f=<factor>;r=<places: runs "first+more" in base 36>", the setup and factor only
where they differed from the reply before's, and the setup itself ({"chain": summary ids, "pinned": message ids,
"settings": PromptSettings.key}, JSON) kept in the store's prompt_setup under its key.

Read only. A reply written since keeps the compact form, and the first one after an old record states everything
itself, so neither form leans on the other. An older Precis reads a compact record as one it cannot read (it has
no "="), says so for that reply, and its next reply states everything in the old form: no schema change either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .sent_record import SentRecord, summary_ref


@dataclass(frozen=True)
class OldRecord:
    setup: str  # the key of the setup's row in prompt_setup
    factor: float
    recalled: tuple[int, ...]
    check: int

    @staticmethod
    def is_old(kept: str) -> bool:
        return kept.startswith("c=")

    @classmethod
    def decode(cls, kept: str, earlier: Iterable[str]) -> OldRecord:
        """The record a reply keeps (`kept`), with the setup and factor it leaves to the old records of the replies
        before it (`earlier`, newest first)."""
        fields = _fields(kept)
        for older in filter(cls.is_old, earlier):
            if "s" in fields and "f" in fields:
                break
            for name, value in _fields(older).items():
                if name in ("s", "f"):
                    fields.setdefault(name, value)
        if "s" not in fields or "f" not in fields:
            raise ValueError("the record names no setup or factor, nor does any reply before it")
        return cls(fields["s"], float(fields["f"]), _places(fields.get("r", "")), int(fields["c"], 16))

    def upgraded(self, setup: str, position: Mapping[str, int]) -> SentRecord:
        """The record in today's terms, given its setup's JSON and the places of the chat's messages by id."""
        data = json.loads(setup)
        missing = [i for i in data["pinned"] if i not in position]
        if missing:
            raise ValueError(f"the pinned message {missing[0][:8]} is no longer in the chat")
        return SentRecord(self.check, self.recalled, tuple(map(summary_ref, data["chain"])),
                          tuple(sorted(position[i] for i in data["pinned"])), data["settings"], self.factor)


def _fields(kept: str) -> dict[str, str]:
    fields = dict(field.split("=", 1) for field in kept.split(";"))
    if "c" not in fields:
        raise ValueError(f"{kept[:20]!r} has no checksum")
    return fields


def _places(runs: str) -> tuple[int, ...]:
    out: list[int] = []
    for run in filter(None, runs.split(",")):
        first, _, more = run.partition("+")
        out.extend(range(int(first, 36), int(first, 36) + int(more or 0) + 1))
    return tuple(out)
