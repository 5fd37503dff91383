"""What every parser shares: the numbered line, the sink, and the LineParser protocol.

A text artifact is read once, line by line.  Launcher wrappers (`[rank3]:`, srun `11: `,
CI timestamps, ...) are stripped first (see wrappers.py) and what they carried is kept
on the Line.  Each line is then offered to the parsers:

1. a parser that is inside a multi-line block (a faulthandler dump, a gdb backtrace,
   a ChildFailedError table) sees the next line first, and may decline it, which ends
   its block;
2. otherwise every parser whose cheap `prefilter` regex matches the line gets to try
   it, in registry order, until one claims it.

Only lines passing a prefilter ever reach lark.  A line that passes some prefilter but
that no parser claims is counted as `unclaimed` on its artifact.
"""
from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from typing import ClassVar, Iterator

from postmortem import grammar
from postmortem.intpool import shared as _shared_index
from postmortem.model import Event, Fact, Ref, Severity, Stack, Stamp


@dataclass(frozen=True, slots=True)
class Line:
    path: str                 # artifact path inside the bundle
    no: int                   # 1-based line number
    text: str                 # the line with launcher wrappers, NULs and CR stripped
    raw: str                  # the line as read (decoded), for citing
    host: str | None = None   # from a wrapper (or the bundle's per-host folder)
    rank: int | None = None   # from a wrapper such as `[rank3]:` or `[1,12]<stdout>:`
    stamp: Stamp | None = None  # from a wrapper such as a CI timestamp

    def ref(self) -> Ref:
        return Ref(self.path, self.no, text=self.raw)


# A 512-rank bundle holds hundreds of thousands of events whose hosts, pids and message
# words repeat from rank to rank: each distinct value is kept once (memory, issue 17).
_SHARED_MAX = 512
_shared_str = sys.intern
_INTS: dict[int, int] = {}  # ints outside CPython's small-int cache (-5..256), kept once


@dataclass
class Sink:
    """Collects what the parsers of one artifact produce."""

    events: list[Event] = field(default_factory=list)
    stacks: list[Stack] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Numbers events in reading order across the whole bundle: the pipeline shares one between sinks.
    numbering: Iterator[int] = field(default_factory=itertools.count)
    _line: Line | None = field(default=None, repr=False, compare=False)
    _ref: Ref | None = field(default=None, repr=False, compare=False)

    def event(self, line: Line, kind: str, severity: Severity = Severity.INFO, *,
              stamp: Stamp | None = None, host: str | None = None, pid: int | None = None,
              tid: int | None = None, rank: int | None = None, text: str | None = None,
              data: dict | None = None, **more) -> Event:
        """Record an event at `line`; wrapper-carried host/rank/stamp fill the gaps."""
        if host is None:
            host = line.host
        fields = {**data, **more} if data else more  # `more` is this call's own dict
        intern = _shared_str
        for key, value in fields.items():  # the same words on every rank: kept once
            kind_of = type(value)
            if kind_of is str:
                if len(value) <= _SHARED_MAX:
                    fields[key] = intern(value)
            elif kind_of is list and value and type(value[0]) is str:
                value[:] = [intern(v) if type(v) is str and len(v) <= _SHARED_MAX else v for v in value]
        if line is not self._line:  # a message matched on a line a parser read: one Ref for both
            self._line, self._ref = line, line.ref()
        if rank is None:
            rank = line.rank
        if len(_INTS) > 1 << 16:
            _INTS.clear()
        ev = Event(
            kind,
            line.text if text is None else intern(text) if len(text) <= _SHARED_MAX else text,
            self._ref,
            severity,
            stamp if stamp is not None else line.stamp,
            intern(host) if type(host) is str else host,
            pid if pid is None or -5 <= pid <= 256 else _INTS.setdefault(pid, pid),
            tid if tid is None or -5 <= tid <= 256 else _INTS.setdefault(tid, tid),
            rank if rank is None or -5 <= rank <= 256 else _INTS.setdefault(rank, rank),
            fields,
            None,
            _shared_index(next(self.numbering)),
        )
        self.events.append(ev)
        return ev

    def made_again(self, line: Line, kind: str, stamp: Stamp | None, host: str | None, pid: int | None,
                   tid: int | None, rank: int | None, fields: dict) -> Event:
        """`event(line, kind, stamp=.., host=.., pid=.., tid=.., rank=.., data=fields)` for `fields`
        taken from an event this process made before (its strings already kept once): the
        same event without looking at each field again (NcclParser: every rank's copy of an
        Init or network line)."""
        if line is not self._line:
            self._line, self._ref = line, line.ref()
        if host is None:
            host = line.host
        if rank is None:
            rank = line.rank
        if len(_INTS) > 1 << 16:
            _INTS.clear()
        ev = Event(kind, line.text, self._ref, Severity.INFO, stamp if stamp is not None else line.stamp,
                   _shared_str(host) if type(host) is str else host,
                   pid if pid is None or -5 <= pid <= 256 else _INTS.setdefault(pid, pid),
                   tid if tid is None or -5 <= tid <= 256 else _INTS.setdefault(tid, tid),
                   rank if rank is None or -5 <= rank <= 256 else _INTS.setdefault(rank, rank),
                   fields, None, _shared_index(next(self.numbering)))
        self.events.append(ev)
        return ev

    def fact(self, line: Line, name: str, value, unit: str = "", text: str = "",
             host: str | None = None) -> Fact:
        f = Fact(name=name, value=value, ref=line.ref(), unit=unit,
                 host=host if host is not None else line.host, text=text)
        self.facts.append(f)
        return f

    def stack(self, stack: Stack) -> None:
        self.stacks.append(stack)


def emit(sink, line: Line, kind: str, severity: Severity, *, stamp: Stamp | None = None,
         host: str | None = None, pid: int | None = None, tid: int | None = None,
         rank: int | None = None, text: str | None = None, data: dict) -> Event:
    """Sink.event with `data` as a dict, so it may hold keys named `line` and `rank`."""
    return sink.event(line, kind, severity, stamp=stamp, host=host, pid=pid, tid=tid, rank=rank,
                      text=text, data=data)


class LineParser:
    """One input format.  Subclasses set `name` and `prefilter` and implement `feed`.

    A parser instance lives for one artifact.  `feed` returns True when it claimed the
    line.  `busy` is True while the parser is inside a block and wants to see the next
    line before anyone else.  `finish` flushes an open block at end of file.  A parser
    never raises on bad input: the dispatcher turns an exception into a problem note
    and carries on, but a parser should not rely on that.
    """

    name: ClassVar[str] = "base"
    # Where the parser stands in PARSERS (lower first).  It matters only when two prefilters
    # match the same line: the first parser to claim it wins.
    order: ClassVar[int] = 1000
    prefilter: ClassVar[re.Pattern[str] | None] = None
    # Optional cheap gate in front of `prefilter` (which stays the truth): a line can only
    # pass the prefilter if `gate_start` matches at its start or it contains one of
    # `gate_words`.  Big prefilters with unanchored branches cost tens of microseconds a
    # line; the gate rejects most lines in one or two.
    gate_start: ClassVar[re.Pattern[str] | None] = None
    gate_words: ClassVar[re.Pattern[str] | None] = None
    # The parser's grammar, grammars/<grammar_name>.lark, and the transformer its trees go
    # through: read by `parse_line`.
    grammar_name: ClassVar[str] = ""
    transformer: ClassVar[object | None] = None

    def __init__(self, path: str, sink: Sink) -> None:
        self.path = path
        self.sink = sink

    @property
    def busy(self) -> bool:
        return False

    def wants(self, line: Line) -> bool:
        if self.prefilter is None:
            return False
        text = line.text
        if self.gate_start is not None or self.gate_words is not None:
            if not ((self.gate_start is not None and self.gate_start.match(text))
                    or (self.gate_words is not None and self.gate_words.search(text))):
                return False
        return self.prefilter.search(text) is not None

    def parse_line(self, text: str):
        """`text` read by the parser's grammar (through its transformer); None when the
        grammar does not read it."""
        from lark.exceptions import LarkError  # here, not at the top: lark only once a grammar is used

        try:
            return grammar.load(self.grammar_name, transformer=self.transformer).parse(text)
        except LarkError:
            return None

    def feed(self, line: Line) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self) -> None:
        return None
