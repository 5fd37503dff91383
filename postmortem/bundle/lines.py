"""Decoded lines of one text stream, memory and time bounded (`Lines`, `iter_lines`).

Owns line splitting for every text artifact: universal newlines, over-long lines cut at
the budget's `line_chars`, runs of blank lines counted without being split, and reading
stopped (with what it has) when the stream breaks off or the byte or time budget is spent.
"""
from __future__ import annotations

import codecs
import io
from typing import BinaryIO, Iterator

from postmortem.budget import BudgetExhausted, Meter
from postmortem.bundle.entry import MAX_LINE_CHARS, READ_CHUNK, cut_errors


_BLANK = b"\n\r\t \x00"


class Lines:
    """The decoded lines of one text stream, memory and time bounded.

    `numbered()` yields (line number, text) and is what the parsers read: a line
    longer than the budget's `line_chars` is cut (the rest skipped), a chunk holding
    only blank lines yields one empty line and then jumps the numbering past the
    rest, and reading stops, with what it has, when the stream breaks off or the
    bundle's byte budget is spent.  Iterating gives every line, numbered by position.
    Afterwards `cut_lines`, `ended` and `blank_skipped` say what happened.
    """

    def __init__(self, stream: BinaryIO, meter: Meter | None = None, encoding: str | None = None,
                 line_chars: int | None = None) -> None:
        self.stream = stream
        self.meter = meter
        self.encoding = encoding or "utf-8"
        self.cap = line_chars or (meter.budget.line_chars if meter else MAX_LINE_CHARS)
        self.cut_lines = 0
        self.blank_skipped = 0
        self.ended = ""   # why reading stopped before the end of the stream, if it did

    def __iter__(self) -> Iterator[str]:
        n = 0
        for no, line in self.numbered():
            while n + 1 < no:
                n += 1
                yield "\n"
            n = no
            yield line

    def _read(self, n: int) -> bytes:
        read1 = getattr(self.stream, "read1", None)
        return read1(n) if read1 is not None else self.stream.read(n)

    def _chunks(self, plain: bool = False) -> Iterator[bytes]:
        """The stream's bytes in chunks of up to READ_CHUNK, within the budget.  `plain`: the
        caller reads the bytes as they are (no decompressor); when the stream is a file on disk
        (a buffered FileIO) each chunk is then filled with read(), so the bytes a sniffer peeked
        are not a chunk of their own that the scanning stage would join to the rest (a copy of
        every file, issue 17).  Anything else (an archive member) is read with read1 as always."""
        plain = plain and isinstance(getattr(self.stream, "raw", None), io.FileIO)
        while True:
            if self.meter is not None and self.meter.out_of_time():
                self.ended = self.meter.stopped or "stopped"
                return
            try:
                # read1: one decompressor step at a time, so a stream cut short still
                # yields everything before the cut.
                chunk = self.stream.read(READ_CHUNK) if plain else self._read(READ_CHUNK)
            except BudgetExhausted as exc:
                self.ended = str(exc)
                return
            except cut_errors() as exc:
                self.ended = f"the data breaks off here ({type(exc).__name__}: {exc})"
                return
            if not chunk:
                return
            if self.meter is not None and not self.meter.take_bytes(len(chunk)):
                self.ended = self.meter.stopped or "read budget reached"
                return
            yield chunk

    def numbered(self) -> Iterator[tuple[int, str]]:
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        utf8 = self.encoding == "utf-8"
        cap = self.cap
        no = 0
        pending = ""          # start of a line not yet ended
        skipping = False      # inside the rest of an over-long line
        last_blank = False
        cr = False            # the previous chunk ended with '\r' (maybe half of '\r\n')
        for chunk in self._chunks():
            if utf8 and not pending and not skipping and not cr and not chunk.translate(None, _BLANK):
                # Only blank lines: one is enough for the parsers (it ends blocks).
                count = chunk.count(b"\n")
                if b"\r" in chunk:
                    count += chunk.count(b"\r") - chunk.count(b"\r\n")
                if count:
                    if not last_blank:
                        no += 1
                        yield no, "\n"
                        count -= 1
                    no += count
                    self.blank_skipped += count
                    last_blank = True
                cr = chunk.endswith(b"\r")
                continue
            text = decoder.decode(chunk)
            if cr and text.startswith("\n"):
                text = text[1:]
            cr = text.endswith("\r")
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            parts = text.split("\n")
            tail = parts.pop()
            for part in parts:
                if skipping:
                    skipping = False
                    continue
                if pending:
                    part = pending + part
                    pending = ""
                if len(part) > cap:
                    part = part[:cap]
                    self.cut_lines += 1
                no += 1
                last_blank = not part.strip()
                yield no, part + "\n"
            if skipping:
                continue
            pending += tail
            if len(pending) > cap:
                no += 1
                self.cut_lines += 1
                last_blank = False
                yield no, pending[:cap]
                pending, skipping = "", True
        tail = decoder.decode(b"", final=True)
        if tail and not skipping:
            pending += tail.replace("\r\n", "\n").replace("\r", "\n")
        if pending and not skipping:
            for part in pending.split("\n"):
                if part:
                    no += 1
                    yield no, part[:cap]


def iter_lines(stream: BinaryIO, meter: Meter | None = None, encoding: str | None = None) -> Lines:
    """Decoded lines, memory bounded: a line longer than the cap is cut."""
    return Lines(stream, meter, encoding)
