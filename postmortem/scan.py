"""The scanning stage for big text artifacts: whole buffers, each distinct line parsed once.

A 512-rank NCCL_DEBUG=INFO bundle is millions of lines that say the same few things
(channel set-up, affinity, plugin banners), one rank after another.  Offering each of
them to every parser and to the message matcher (parsers/__init__.py) costs microseconds
a line.  Here a big artifact is read in large newline-aligned blocks; within a block the
lines are split and counted by C code (str.split, dict, Counter), and each distinct line
(a leading `[date time] ` stamp stripped for the count) is classified once, by asking the
real parsers and the message matcher:

* inert: no parser's prefilter and no known message wants it -> counted as a line;
* routine: a plain NCCL INFO line whose repeats only add to counts (unstructured INFO,
  channel lines) -> handed to the NCCL parser once per run, with its count;
* anything else (WARNs, error chains, Init/network/version lines, known messages,
  block openers of tracebacks, faulthandler, gdb ...) -> read line by line at its
  place, with the lines after it while a parser is inside a multi-line block.

Runs of inert and routine lines between two lines read one by one are counted together,
their distinct lines handed over in the order they first appear, so events are created
in the same order, at the same lines, with the same counts as line by line reading
(tests/test_scan.py compares both paths on every fixture).  A block is decoded whole,
with the same newline handling (universal newlines, over-long lines cut) and the same
UTF-8 replacement as bundle.iter_lines.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import BinaryIO, Iterator

from postmortem import bundle, knowledge
from postmortem.parsers import PARSERS, TextResult, _offer, _safely, _wants
from postmortem.parsers.base import Line, Sink
from postmortem.parsers.messages import MessageMatcher
from postmortem.parsers.nccl import _ABORT, _GRAMMAR_WORTHY, _INFO_MARK, _INFO_PREFIX, NcclParser, fast_chain
from postmortem.parsers.wrappers import clean, strip

# Artifacts at least this big go through the scanning stage; smaller ones line by line.
SCAN_MIN_BYTES = 64 << 10
BLOCK_BYTES = 16 << 20    # bytes decoded at once (newline-aligned); bounds memory per file
_KINDS_CAP = 1 << 18      # distinct lines whose class is remembered across blocks

INERT, ROUTINE, ONE_BY_ONE = 0, 1, 2

# NCCL 2.26+ prefixes every line with `[%F %T] ` (optionally with a fraction): repeats of
# one line differ only there.  Digits and punctuation only, so no parser keys on it.
_LEADING_STAMP = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\] ", re.M)


def blocks(stream: BinaryIO, size: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The stream in pieces of about `size` bytes, each ending after a newline (or at EOF)."""
    rest = b""
    while True:
        data = stream.read(size)
        if not data:
            if rest:
                yield rest
            return
        data = rest + data
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1:]
        yield data[: cut + 1]


def split_lines(text: str) -> list[str]:
    """What bundle.iter_lines yields for `text`, each line cleaned (no newline, no NUL)."""
    if "\r" in text:  # universal newlines, as io.TextIOWrapper(newline=None)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cap = bundle.MAX_LINE_CHARS
    if lines and max(map(len, lines)) >= cap:
        lines = [line[:cap] for line in lines]
    return lines


class _Reader:
    """The state of one artifact's reading: the parsers, the matcher, the block they are in."""

    def __init__(self, path: str, host: str | None, k: knowledge.Knowledge | None,
                 counter: Iterator[int] | None) -> None:
        self.path, self.host = path, host
        self.sink = Sink(counter=counter) if counter is not None else Sink()
        self.parsers = [cls(path, self.sink) for cls in PARSERS]
        self.nccl = next(p for p in self.parsers if isinstance(p, NcclParser))
        self.matcher = MessageMatcher(path, self.sink, k)
        self.used: set[str] = set()
        self.in_block: list = []
        self.n = self.unclaimed = 0
        self.kinds: dict[str, int] = {}

    # -- line by line, exactly as parsers.parse_text ---------------------------------------

    def one(self, raw: str, no: int) -> None:
        text, rank, wrapped_host, stamp = strip(raw)
        line = Line(self.path, no, text, raw, wrapped_host or self.host, rank, stamp)
        claimed_by = _offer(self.parsers, self.in_block, line, self.sink)
        if claimed_by:
            self.used.add(claimed_by.name)
        elif any(_wants(self.sink, p, line) for p in self.parsers):
            self.unclaimed += 1
        if self.matcher.feed(line):
            self.used.add(self.matcher.name)

    # -- distinct lines ---------------------------------------------------------------------

    def kind(self, raw: str) -> int:
        text, rank, wrapped_host, stamp = strip(raw)
        if text != raw or rank is not None or wrapped_host or stamp is not None:
            return ONE_BY_ONE
        if self.matcher.matches(text):
            return ONE_BY_ONE
        line = Line(self.path, 0, text, raw, self.host)
        wanted = [p for p in self.parsers if _wants(self.sink, p, line)]
        if not wanted:
            return INERT
        if wanted != [self.nccl]:
            return ONE_BY_ONE
        head, mark, msg = text.partition(_INFO_MARK)
        if not mark or _INFO_PREFIX.fullmatch(head) is None:
            return ONE_BY_ONE
        if fast_chain(msg) is not None or _GRAMMAR_WORTHY.match(msg) or _ABORT.search(msg):
            return ONE_BY_ONE
        return ROUTINE

    def counted(self, lines: list[str], keys: list[str], a: int, b: int, base: int) -> None:
        """Lines a..b-1 of the block, none of them read one by one and no block open."""
        if a >= b:
            return
        run = keys[a:b]
        counts = Counter(run)
        first = dict(zip(reversed(run), range(b - 1, a - 1, -1)))
        order = sorted(first.values()) if len(first) > 1 else list(first.values())
        for i in order:
            key = keys[i]
            if self.kinds.get(key) != ROUTINE:
                continue
            line = Line(self.path, base + i + 1, lines[i], lines[i], self.host)
            try:
                if self.nccl.feed_repeated(line, counts[key]):
                    self.used.add(self.nccl.name)
                else:
                    self.unclaimed += counts[key]
            except Exception as exc:  # noqa: BLE001 - a parser bug costs one line and a note
                self.sink.problems.append(f"nccl parser failed at {self.path}:{line.no}: {type(exc).__name__}: {exc}")

    def block(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        lines = split_lines(text)
        if _LEADING_STAMP.search(data) is not None:
            keys = split_lines(_LEADING_STAMP.sub(b"", data).decode("utf-8", "replace"))
            if len(keys) != len(lines):  # a stamp-like run across a stray CR: do not strip
                keys = lines
        else:
            keys = lines
        base, total = self.n, len(lines)
        self.n += total
        if len(self.kinds) > _KINDS_CAP:
            self.kinds.clear()
        kinds = self.kinds
        first = dict(zip(reversed(keys), range(total - 1, -1, -1)))
        one_by_one = set()
        for key, i in first.items():
            kind = kinds.get(key)
            if kind is None:
                kind = kinds[key] = self.kind(lines[i])
            if kind == ONE_BY_ONE:
                one_by_one.add(key)
        # Stamps differ between repeats: the class of a line must not depend on its stamp.
        at = [i for i, key in enumerate(keys) if key in one_by_one] if one_by_one else []
        i = 0
        while i < total and self.in_block:  # a block left open by the previous piece
            self.one(lines[i], base + i + 1)
            i += 1
        for p in at:
            if p < i:
                continue
            self.counted(lines, keys, i, p, base)
            i = p
            self.one(lines[i], base + i + 1)
            i += 1
            while i < total and self.in_block:
                self.one(lines[i], base + i + 1)
                i += 1
        self.counted(lines, keys, i, total, base)

    def finish(self) -> TextResult:
        for p in self.parsers:
            _safely(self.sink, p, p.finish)
        return TextResult(self.sink, self.n, self.unclaimed, tuple(sorted(self.used)))


def scan_text(path: str, stream: BinaryIO, host: str | None = None, k: knowledge.Knowledge | None = None,
              counter: Iterator[int] | None = None, block_bytes: int = BLOCK_BYTES) -> TextResult:
    """Read one text artifact through the scanning stage; same result as parse_text."""
    reader = _Reader(path, host, k, counter)
    for data in blocks(stream, block_bytes):
        reader.block(data)
    return reader.finish()
