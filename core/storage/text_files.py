"""A file a user hands Precis as JSON text (a chat to import, questions to probe with), as UTF-8 bytes.

Text with a UTF-16 or UTF-32 byte-order mark (what Windows PowerShell's `>` writes) is read as such; a file that is
not text at all is bad input said as such, not 'line 1: not valid JSON (Expecting value at column 1)'.
"""

from __future__ import annotations

import codecs

from .interchange import TranscriptError

# UTF-32's little-endian mark begins with UTF-16's, so it is looked for first.
_MARKS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
          (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))
# Bytes of the file's start looked at to tell UTF-16 without its mark (every other byte NUL) from a binary file.
_SAMPLE = 4096


def as_utf8(data: bytes, source: str) -> bytes:
    """`data` with any UTF-16 or UTF-32 text re-encoded as UTF-8 (line for line, so errors name the same lines).
    TranscriptError (file, line) for a file with a NUL byte, which JSON text never holds: a binary file, or UTF-16
    without its byte-order mark."""
    for mark, codec in _MARKS:
        if data.startswith(mark):
            try:
                return data.decode(codec.lower()).encode("utf-8")
            except UnicodeDecodeError as exc:
                line = data[:exc.start].decode(codec.lower(), "replace").count("\n") + 1
                raise TranscriptError(source, line, f"not valid {codec} text, though the file starts with {codec}'s "
                                                    f"byte-order mark ({exc.reason})") from None
    nul = data.find(b"\0")
    if nul < 0:
        return data
    line = data.count(b"\n", 0, nul) + 1
    sample = data[:_SAMPLE]
    if max(sample[0::2].count(0), sample[1::2].count(0)) > len(sample) // 4:
        raise TranscriptError(source, line, "UTF-16 text without a byte-order mark, which is not read: save the "
                                            "file as UTF-8")
    raise TranscriptError(source, line, f"not a text file: byte {nul + 1} is NUL, which JSON text never holds "
                                        "(the file must be JSON text, UTF-8)")
