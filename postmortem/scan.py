"""The scanning stage for big text artifacts: whole buffers, each distinct line parsed once.

A 512-rank NCCL_DEBUG=INFO bundle is millions of lines that say the same few things
(channel set-up, affinity, plugin banners), one rank after another.  Offering each of
them to every parser and to the message matcher (parsers/__init__.py) costs microseconds
a line.  Here a big artifact is read in large newline-aligned blocks; within a block the
lines are split and counted by C code (readlines, dict, Counter), and each distinct line
(a leading `[date time] ` stamp stripped for the count) is classified once, by asking the
real parsers and the message matcher:

* inert: no parser's prefilter and no known message wants it -> counted as a line;
* routine: a plain NCCL INFO line whose repeats only add to counts (unstructured INFO,
  channel lines) -> handed to the NCCL parser once per run, with its count (and to the
  message matcher only if a known message is in it: quiet otherwise);
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

import bisect
import re
from io import BytesIO
from collections import Counter
from typing import Iterable, Iterator

from postmortem import bundle, fold, knowledge
from postmortem.budget import Meter
from postmortem.parsers import _SEEN_CAP, TextResult, _feed, _instances, _is_busy, _note, _offer, _safely, _wants, read_as
from postmortem.parsers.base import Line, LineParser, Sink
from postmortem.parsers.messages import MessageMatcher
from postmortem.parsers.nccl import _ABORT, _INFO_MARK, _INFO_PREFIX, NcclParser, fast_chain, info_parts, plain_shape
from postmortem.parsers.wrappers import CALLSTACK_KEY, clean, strip

# Artifacts at least this big go through the scanning stage; smaller ones line by line.
# (a rank's file of 300 INFO lines, 26 KB, reads 2.4x faster scanned; 65 lines break even)
SCAN_MIN_BYTES = 8 << 10
BLOCK_BYTES = 1 << 20     # bytes decoded at once (newline-aligned); bounds memory per file
DISTINCT_SHARE = 0.5      # a piece with more distinct lines than this share is read line by line
_KINDS_CAP = 1 << 18      # distinct lines whose class is remembered across blocks
_HEADS_CAP = 1 << 12      # distinct `host:pid:tid` prefixes remembered per file

INERT, ROUTINE, CONTEXT, ONE_BY_ONE = 0, 1, 2, 3
# A routine line no known message matches (most of them): the matcher is not asked again
# (its keyword prefilter costs microseconds a line, as much as the NCCL parser's work).
QUIET = 4
# A quiet line whose message is an unstructured INFO one (NcclParser._plain_info): a copy of
# another file's may be folded as read (fold.AsRead, NcclParser.fold_copy).
PLAIN = 5

# `host:pid:tid ` at the start of an NCCL line; its digits are masked in the key of the
# bundle-wide class cache (_Reader.kind), so rank 7's line finds rank 3's class.
_THREAD = re.compile(r"(?<![^\s:\[\]])[^\s:\[\]]+:\d+:\d+ ")   # a start only where a run begins: linear under search too
_DIGITS = str.maketrans("0123456789", "\0" * 10)  # NUL: never in a line read (split_lines drops it)

# NCCL 2.26+ prefixes every line with `[%F %T] ` (optionally with a fraction): repeats of
# one line differ only there.  Digits and punctuation only, so no parser keys on it.
_LEADING_STAMP = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\] ", re.M)
# The same stamp after a newline: searched with its literal `\n[` first (`^` with re.M is
# tried at every byte); with a match of _LEADING_STAMP at 0 it finds what that search finds.
_STAMP_AFTER_NEWLINE = re.compile(rb"\n\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\] ")


# Line shape (see _Reader.kind) -> nccl.info_parts of its lines: the same for every rank's copy,
# whose text after the `host:pid:tid ` prefix is the same.
_PARTS: dict[str, tuple | None] = {}
_UNREAD = object()


def _feed_parts(sink: Sink, nccl: NcclParser, read, line: Line, thread: tuple, parts: tuple) -> bool:
    """parsers._feed for NcclParser's pre-split paths (feed_info, said_copy): a parser bug costs
    one line and a note."""
    try:
        return read(line, thread, parts)
    except Exception as exc:  # noqa: BLE001
        _note(sink, nccl, f"{line.path}:{line.no}", exc)
        return False


def _index(items: list[str], item: str, start: int) -> int | None:
    try:
        return items.index(item, start)
    except ValueError:
        return None


def blocks(chunks: Iterable[bytes], size: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The chunks joined into pieces of about `size` bytes, each ending after a newline (or at EOF).

    A line longer than a piece is yielded as its first `size` bytes or more (readers cut it
    to the line cap anyway) and the rest of it, up to its newline, is skipped unjoined:
    memory and time stay linear however long a line is (8 KB of text, then a 100 GB hole)."""
    parts: list[bytes] = []
    have = 0
    skipping = False
    for chunk in chunks:
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk, skipping = chunk[newline + 1:], False
            if not chunk:
                continue
        parts.append(chunk)
        have += len(chunk)
        if have < size:
            continue
        data = b"".join(parts)
        cut = data.rfind(b"\n")
        if cut < 0:
            yield data + b"\n"      # the line's newline, skipped below, ends its head here
            parts, have, skipping = [], 0, True
            continue
        rest = data[cut + 1:]
        parts, have = ([rest] if rest else []), len(rest)
        yield data[: cut + 1]
    if parts:
        yield b"".join(parts)


def split_lines(text: str, cap: int = bundle.MAX_LINE_CHARS) -> tuple[list[str], int]:
    """What bundle.Lines yields for `text`, each line cleaned (no newline, no NUL), and
    how many lines were cut at `cap` characters."""
    lines = _split(text)
    return _capped(lines, cap) if lines and max(map(len, lines)) > cap else (lines, 0)


def _split(text: str) -> list[str]:
    """split_lines without the cap."""
    if "\r" in text:  # universal newlines, as bundle.Lines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _capped(lines: list[str], cap: int) -> tuple[list[str], int]:
    return [line[:cap] for line in lines], sum(1 for line in lines if len(line) > cap)


class _Decoded:
    """The lines of a piece split as bytes (each key a line with its newline), as text: each
    distinct line decoded once, without its newline.

    Decoding a line alone gives what decoding the piece gives for it: a newline byte is
    never part of a UTF-8 sequence, so an invalid sequence is replaced alike either way."""

    __slots__ = ("keys", "text")

    def __init__(self, keys: list[bytes], distinct: Iterable[bytes]) -> None:
        self.keys = keys   # each with its newline (_counted)
        self.text = {key: key[:-1].decode("utf-8", "replace") for key in distinct}

    def __getitem__(self, i: int) -> str:
        return self.text[self.keys[i]]

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[str]:
        return map(self.text.__getitem__, self.keys)


def _counted(data: bytes, cap: int) -> tuple[list, Counter, list[str] | _Decoded, int]:
    """The keys the piece's lines are counted by (the lines, each without a leading stamp;
    as bytes with their newline when split as bytes),
    the count of each key in order of first appearance, the lines as split_lines gives
    them, and how many were cut.

    A piece without stamps, carriage returns or NULs is split and counted as bytes and
    only its distinct lines are decoded (most pieces of a big log): whether a line starts
    with a stamp is asked of the distinct lines (and of the first line before splitting:
    stamped lines are all distinct); no line is cut when none is longer than the cap in
    bytes (never fewer bytes than characters)."""
    if _LEADING_STAMP.match(data) is None and b"\r" not in data and b"\x00" not in data:
        # Each key keeps its newline: BytesIO's readlines finds newlines with memchr, twice as
        # fast as bytes.split's byte-by-byte loop (issue 17: 12% of the instructions at 512 ranks).
        keys = BytesIO(data).readlines()
        if keys and keys[-1][-1:] != b"\n":
            keys[-1] += b"\n"   # the last line without one: the same key as its copies with one
        counts = Counter(keys)
        if not any(key[:1] == b"[" and _LEADING_STAMP.match(key) is not None for key in counts) \
                and (not counts or max(map(len, counts)) <= cap + 1):
            return keys, counts, _Decoded(keys, counts), 0
    if _LEADING_STAMP.match(data) is not None or _STAMP_AFTER_NEWLINE.search(data) is not None:
        lines, cut = split_lines(data.decode("utf-8", "replace"), cap)
        keys, _ = split_lines(_LEADING_STAMP.sub(b"", data).decode("utf-8", "replace"), cap)
        if len(keys) != len(lines):  # cannot happen with the anchored pattern; be safe
            keys = lines
        return keys, Counter(keys), lines, cut
    lines, cut = split_lines(data.decode("utf-8", "replace"), cap)
    return lines, Counter(lines), lines, cut


class _Reader:
    """The state of one artifact's reading: the parsers, the matcher, the block they are in."""

    def __init__(self, path: str, host: str | None, k: knowledge.Knowledge | None,
                 numbering: Iterator[int] | None, shared: dict[str, int] | None = None,
                 early: fold.AsRead | None = None) -> None:
        self.path, self.host = path, host
        self.sink = Sink(numbering=numbering) if numbering is not None else Sink()
        # Stand-ins for parsers whose modules are not imported yet, as parse_text has them
        # (parsers/__init__.py, index.json): a bundle of NCCL logs never imports the others.
        self.parsers = _instances(path, self.sink)
        self.nccl = next(p for p in self.parsers if isinstance(p, NcclParser))
        self.early = self.nccl.early = early
        # Whether the NCCL parser can be inside a block at all (`busy` is only ever False
        # unless a subclass overrides it): asked after each line it claims only if so.
        self.nccl_blocks = type(self.nccl).busy is not LineParser.busy
        self.matcher = MessageMatcher(path, self.sink, k)
        self.used: set[str] = set()
        self.in_block: list = []
        self.n = self.unclaimed = 0
        self.cap = bundle.MAX_LINE_CHARS
        # Copies of one identical line read one by one; the rest counted (Budget.repeats).
        self.repeats: int | None = None
        self.seen: dict[int, int] = {}
        self.repeated = 0
        self.heads: dict[str, tuple[str, tuple]] = {}  # see kind
        self.last_head: tuple[str, tuple] | None = None
        self.kinds: dict[str | bytes, tuple[int, tuple | None, str | None]] = {}  # by the keys of _counted
        self.targets: dict[str | bytes, list] = {}  # routine line -> what its repeats add to
        # Classes shared with the bundle's other files, unless a parser wants this file's
        # lines whatever they say (ClockParser on clock.json): then its classes are its own.
        blank = Line(path, 0, "", "", host)
        self.shared = shared if not any(_wants(self.sink, p, blank) for p in self.parsers) else None

    # -- line by line, exactly as parsers.parse_text ---------------------------------------

    def one(self, raw: str, no: int):
        claimed_by = None
        for line in read_as(self.path, no, raw, self.host):
            claimed_by = _offer(self.parsers, self.in_block, line, self.sink)
            if claimed_by:
                self.used.add(claimed_by.name)
            elif any(_wants(self.sink, p, line) for p in self.parsers):
                self.unclaimed += 1
            if self.matcher.feed(line):
                self.used.add(self.matcher.name)
        return claimed_by

    def quick(self, raw: str, no: int, kind: int, thread: tuple | None = None, shape: str | None = None):
        """`one` for a routine or context line while no parser is inside a block: its class
        says what `one` would find (the line is not wrapped, only the NCCL parser wants a
        routine line, no parser wants a context line), so the wrapper strip and the other
        parsers' prefilters are skipped."""
        parts = None
        if thread is not None and shape is not None:  # the prefix read once per line shape (nccl.info_parts)
            parts = _PARTS.get(shape, _UNREAD)
            if parts is _UNREAD:
                if len(_PARTS) >= _KINDS_CAP:
                    _PARTS.clear()
                parts = _PARTS[shape] = info_parts(raw, thread)
        if kind == PLAIN and thread is not None and self.early is not None \
                and self.nccl.fold_copy(self.path, no, raw, self.host, thread, parts):
            self.used.add(self.nccl.name)  # a plain copy of another file's INFO line: deferred (fold.AsRead)
            return self.nccl
        line = Line(self.path, no, raw, raw, self.host)
        claimed = None
        if kind == ROUTINE or kind == QUIET or kind == PLAIN:
            nccl = self.nccl
            # (another rank's copy of an Init or network line: NcclParser.said_copy, without the general path)
            if parts is None:
                fed = _feed(self.sink, nccl, line)
            else:
                fed = (kind == QUIET and _feed_parts(self.sink, nccl, nccl.said_copy, line, thread, parts)
                       or _feed_parts(self.sink, nccl, nccl.feed_info, line, thread, parts))
            if fed:
                self.used.add(nccl.name)
                if self.nccl_blocks and _is_busy(self.sink, nccl):
                    self.in_block[:] = [nccl]
                claimed = nccl
            else:
                self.unclaimed += 1
        if kind != QUIET and kind != PLAIN and self.matcher.feed(line, shape):  # a routine line may carry a context message (a version)
            self.used.add(self.matcher.name)
        return claimed

    def line_by_line(self, lines: Iterable[str], base: int) -> None:
        repeats, seen = self.repeats, self.seen
        for i, raw in enumerate(lines):
            if repeats is not None and not self.in_block:  # the budget's `repeats`, as parse_text
                h = hash(raw)
                times = seen.get(h, 0) + 1
                if times > repeats:
                    self.repeated += 1
                    continue
                if len(seen) < _SEEN_CAP:
                    seen[h] = times
            self.one(raw, base + i + 1)

    # -- distinct lines ---------------------------------------------------------------------

    def kind(self, raw: str) -> tuple[int, tuple | None, str | None]:
        """The class of a distinct line, for a routine NCCL line its thread (host, pid, tid), and
        the line's shape when it has a `host:pid:tid` prefix (its digits masked: the key of
        `shared`, and of the message matcher's candidates, MessageMatcher.candidates).

        Ranks print the same lines behind their own `host:pid:tid`: a class found for one
        rank's line is reused for another's when the lines differ only in the digits of
        that prefix (`shared`, one per analysis; not for files whose parsers want lines by
        the file's name).  A routine line's thread is still read from its own prefix."""
        shared = self.shared
        if shared is None:
            return self.classify(raw) + (None,)
        last = self.last_head  # most lines of a file have the previous line's prefix: no regex then
        if last is not None and raw.startswith(last[0]):  # `host:pid:tid `, the whole of _THREAD's match
            prefix, known = last
        else:
            head = _THREAD.match(raw)
            if head is None:
                return self.classify(raw) + (None,)
            prefix = head[0]
            heads = self.heads  # a file has a few threads: each prefix masked and split once
            known = heads.get(prefix)
            if known is None:
                if len(heads) >= _HEADS_CAP:
                    heads.clear()
                # `host:pid:tid ` (no `:` in the host): what _INFO_PREFIX reads from it
                known = heads[prefix] = (prefix.translate(_DIGITS), tuple(prefix[:-1].split(":")))
            self.last_head = (prefix, known)
        key = known[0] + raw[len(prefix):]
        got = shared.get(key)
        if got is None:
            got = self.classify(raw)
            if len(shared) < _KINDS_CAP:
                shared[key] = got[0]
            return got + (key,)
        if got != ROUTINE and got != QUIET and got != PLAIN:
            return got, None, key
        return got, known[1], key

    def classify(self, raw: str) -> tuple[int, tuple | None]:
        text, rank, wrapped_host, stamp = strip(raw)
        if text != raw or rank is not None or wrapped_host or stamp is not None or CALLSTACK_KEY in text:
            return ONE_BY_ONE, None
        said = self.matcher.matches(text)
        if said == 2:
            return ONE_BY_ONE, None
        line = Line(self.path, 0, text, raw, self.host)
        wanted = [p for p in self.parsers if _wants(self.sink, p, line)]
        if not wanted:
            return (CONTEXT, None) if said else (INERT, None)
        if wanted != [self.nccl]:
            return ONE_BY_ONE, None
        head, mark, msg = text.partition(_INFO_MARK)
        m = _INFO_PREFIX.fullmatch(head) if mark else None
        if m is None or fast_chain(msg) is not None or _ABORT.search(msg):
            return ONE_BY_ONE, None
        if said:
            return ROUTINE, (m["host"], m["pid"], m["tid"])
        return (PLAIN if m["ts"] is None and plain_shape(msg) is not None else QUIET), (m["host"], m["pid"], m["tid"])

    def block(self, data: bytes) -> int:
        """One newline-aligned piece of the artifact.

        Read one by one: lines of other classes than inert and routine, every line while
        a parser is inside a block or while the NCCL parser waits for the next line of a
        thread (an error chain, a WARN), and the first line of each routine class (its
        event).  Skipped: inert lines, and repeats of routine lines, which are counted
        (Counter) and added to their event at the end of the piece."""
        keys, counts, lines, cut = _counted(data, self.cap)
        base, total = self.n, len(lines)
        self.n += total
        if len(self.kinds) > _KINDS_CAP:
            self.kinds.clear()
            self.targets.clear()
        kinds, targets = self.kinds, self.targets
        if len(counts) > DISTINCT_SHARE * total:  # mostly distinct: classifying them would only add work
            self.line_by_line(lines, base)
            return cut
        # Each distinct line's first place: the Counter holds them in order of first appearance,
        # so each is found by a C-level search from the previous one (the piece is scanned once,
        # up to its last new line, however late that comes).
        first: dict = {}
        at = 0
        index = keys.index
        for key in counts:
            at = first[key] = index(key, at)
        todo: list[int] = []  # positions to read one by one while no parser waits
        routine_here = []
        # A line by its key (one dict lookup, not _Decoded.__getitem__) when the lines are the keys decoded.
        text_of = lines.text.__getitem__ if type(lines) is _Decoded else None
        for key, i in first.items():
            got = kinds.get(key)
            if got is None:
                got = kinds[key] = self.kind(lines[i] if text_of is None else text_of(key))
            if got[0] == ONE_BY_ONE:
                todo.append(-1 - i)  # marks the key's class: all its positions are wanted
            elif got[0] != INERT:
                routine_here.append(key)
                if key not in targets:
                    todo.append(i)
        if any(i < 0 for i in todo):
            wanted = {keys[-1 - i] for i in todo if i < 0}
            todo = sorted([i for i in todo if i >= 0] + [i for i, key in enumerate(keys) if key in wanted])
        else:
            todo.sort()
        processed: dict = {}
        nccl, matcher = self.nccl, self.matcher
        repeats, seen = self.repeats, self.seen
        i = t = 0
        n_todo = len(todo)
        while i < total:
            if not (self.in_block or nccl._chains or nccl._last_warn):
                while t < n_todo and todo[t] < i:
                    t += 1
                if t == n_todo:
                    break
                i = todo[t]
            key = keys[i]
            kind, thread, shape = kinds[key]
            if kind == QUIET or kind == PLAIN or kind == ROUTINE or kind == CONTEXT:
                if key in targets and not self.in_block and thread not in nccl._chains \
                        and thread not in nccl._last_warn:
                    i += 1
                    continue  # a repeat: counted below
                processed[key] = processed.get(key, 0) + 1
                nccl.repeat_target = None
                matcher.repeat_targets = []
                raw = lines[i] if text_of is None else text_of(key)
                claimed = self.one(raw, base + i + 1) if self.in_block else \
                    self.quick(raw, base + i + 1, kind, thread, shape)
                if key in targets:
                    pass
                elif kind == CONTEXT or claimed is nccl:
                    found = [(data, "lines") for data in matcher.repeat_targets] if matcher.repeat_targets else []
                    if kind != CONTEXT and nccl.repeat_target is not None:
                        data = nccl.repeat_target
                        found.append((data, "count" if "count" in data else "channel_lines"))
                    targets[key] = found
                else:  # a busy parser took it: the next one makes the event
                    nxt = _index(keys, key, i + 1)
                    if nxt is not None:
                        bisect.insort(todo, nxt)
                        n_todo += 1
            elif kind == ONE_BY_ONE or self.in_block:
                if repeats is not None and not self.in_block:  # the budget's `repeats`, as parse_text
                    h = hash(lines[i])
                    times = seen.get(h, 0) + 1
                    if times > repeats:
                        self.repeated += 1
                        i += 1
                        continue
                    if len(seen) < _SEEN_CAP:
                        seen[h] = times
                self.one(lines[i], base + i + 1)
            i += 1
        if routine_here:
            for key in routine_here:
                extra = counts[key] - processed.get(key, 0)
                if extra:
                    for target, field in targets[key]:
                        target[field] += extra
        return cut

    def read(self, lines: bundle.Lines, meter: Meter | None, block_bytes: int = BLOCK_BYTES) -> str:
        """Every block of `lines` (its budgeted byte source); why reading stopped early, or ""."""
        self.cap = lines.cap
        self.repeats = meter.budget.repeats if meter is not None else None
        # (scan_text reads plain files only: see applies)
        for data in blocks(lines._chunks(plain=True), block_bytes):  # noqa: SLF001 - the budgeted byte source
            if meter is not None:
                if meter.events + len(self.sink.events) + len(self.nccl.deferred) > meter.budget.events:
                    meter.stop(f"event budget of {meter.budget.events} events reached")
                if meter.out_of_time():
                    return f"stopped at line {self.n}: {meter.stopped}"
            lines.cut_lines += self.block(data)
        return ""

    def finish(self, stopped: str = "") -> TextResult:
        for p in self.parsers:
            _safely(self.sink, p, p.finish)
        if self.early is not None:  # plain INFO copies folded into earlier files' events (fold.AsRead)
            nccl = self.nccl
            kept = self.early.parser_done(self.sink.events, nccl.deferred)
            if kept is None:
                nccl.materialize()
            else:
                self.sink.events[:] = kept
                nccl.deferred = []
        return TextResult(self.sink, self.n, self.unclaimed, tuple(sorted(self.used)), self.repeated, stopped)


def applies(entry: bundle.Entry, compressed: bool, encoding: str | None) -> bool:
    """Big plain UTF-8 files go through the scanning stage; the rest is read line by line."""
    return not compressed and not encoding and entry.size is not None and entry.size >= SCAN_MIN_BYTES


def scan_text(path: str, lines: bundle.Lines, host: str | None = None, k: knowledge.Knowledge | None = None,
              numbering: Iterator[int] | None = None, meter: Meter | None = None,
              block_bytes: int = BLOCK_BYTES, shared: dict[str, int] | None = None,
              early: fold.AsRead | None = None) -> TextResult:
    """Read one text artifact through the scanning stage; the same result as parse_text.
    `lines` supplies the bytes (bundle.Lines keeps the bundle's byte and time budget and
    notes a stream that breaks off) and receives the count of cut lines.  `shared`: one
    dict per analysis (and knowledge) for classes of lines shared between its files.
    `early`: one per process's reading, to fold plain INFO copies as they are read (the
    result's events are then what fold.AsRead.file_done keeps)."""
    reader = _Reader(path, host, k, numbering, shared, early)
    return reader.finish(reader.read(lines, meter, block_bytes))
