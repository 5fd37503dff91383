"""Timeline rows: repetitions collapsed.

The same message from 64 ranks is one row with its rank set, count and first/last
time.  Messages are compared after masking numbers, hex ids and addresses, so
`[Rank 3] ... SeqNum=2` and `[Rank 5] ... SeqNum=2` fold together.

`digest` folds an analysis's events into rows once; the JSON, HTML and terminal
renderers all read that one digest (at 8,192 ranks there are ~400,000 events, and each
renderer walking them again cost seconds).  It works column by column with C-level
builtins (attrgetter, zip, dict.fromkeys, Counter) rather than a Python loop per event.
"""
from __future__ import annotations

import gc
import re
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, itemgetter, methodcaller, not_
from typing import Any, Iterable, Sequence

from postmortem import fold, intpool
from postmortem.model import Event

_MASK = re.compile(r"0x[0-9a-fA-F]+|\d+")
_TEXT_CUT = 300
# The mask treats `0`, the other ASCII digits, `x` and hex letters differently, and every
# digit 1-9 alike: a text with 2-9 written as 1 masks to the same row text.  Many texts
# differ only in such digits (ranks, pids, addresses), so they are masked once.
_ONE_FOR_DIGITS = bytes.maketrans(b"23456789", b"11111111")
# Without an `x` no hex literal can start, so `0` masks like any digit too (rank and pid
# prefixes differ in where their zeros are: 681 digit patterns at 512 ranks, 48 rows).
_ONE_FOR_ZERO = bytes.maketrans(b"0", b"1")
_SEQ, _KIND, _WHEN = attrgetter("seq"), attrgetter("kind"), attrgetter("when")
_CONTEXT = methodcaller("get", "context")
_MEMBERS = methodcaller("get", fold.MEMBERS)
_IS_MSG = methodcaller("startswith", "msg.")
_REF_AT, _MEMBER_AT = attrgetter("ref.path", "ref.line"), itemgetter(0, 1)
_MEMBER_FIELD = {"ref.path": 0, "ref.line": 1, "host": 2, "pid": 3, "tid": 4, "rank": 5}  # fold.member's order


OTHER_LANE = ("~other",)


def lane_key(e: Event) -> tuple:
    """One swimlane per process (the timeline joined its rank, pid and host aliases), per
    host for a host's other lines; events that name none get their artifact's lane."""
    return lane_key_of(e.host, e.rank, e.pid, e.ref.path)


def lane_key_of(host: str | None, rank: int | None, pid: int | None, path: str) -> tuple:
    if rank is not None or pid is not None:
        return ("id", host or "", 0 if rank is not None else 1, rank if rank is not None else -1,
                pid if pid is not None else -1)
    if host:
        return ("id", host, 2, -1, -1)
    return ("file", path)


def lane_of(e: Event) -> str:
    """The lane an event is drawn in, by name: `host · rank N · pid P`."""
    return lane_label(lane_key(e))


def lane_label(key: tuple) -> str:
    if key == OTHER_LANE:
        return "other lanes"
    if key[0] == "file":
        return key[1]
    _, host, _what, rank, pid = key
    parts = [host, f"rank {rank}" if rank >= 0 else "", f"pid {pid}" if pid >= 0 else ""]
    return " · ".join(p for p in parts if p)


def shown_events(events: Iterable[Event]) -> list[Event]:
    """Events as a timeline shows them: a known-message event (`msg.*`) on a line that a
    format parser also read is the same line twice, so only the parser's event stays.
    Column by column: the few known-message lines are looked up among the parsers' lines
    (and the lines of the copies folded into their events, fold.py) by C-level set code."""
    events = list(events)
    kinds = list(map(_KIND, events))
    is_msg = list(map(_IS_MSG, kinds))
    if not any(is_msg):
        return events
    msg_at = set(map(_REF_AT, compress(events, is_msg)))      # (path, line) of each known-message event
    # (the lines of every other event met by C code; then only the few in common are looked at)
    read = {at for at in msg_at.intersection(map(_REF_AT, compress(events, map(not_, is_msg)))) if at[1] is not None}
    # Only folded events carry members (fold.KIND); reading every event's data would cost more
    # than the rest of this function (one dict each, scattered in memory).
    for e in compress(events, map(fold.KIND.__eq__, kinds)):
        held = e.data.get(fold.MEMBERS)
        if held and e.ref.line is not None:
            read.update(msg_at.intersection(map(_MEMBER_AT, held)))
    if not read:
        return events
    return [e for e, msg in zip(events, is_msg) if not (msg and _REF_AT(e) in read)]


def timeline_order(events: Iterable[Event]) -> list[Event]:
    """sorted(events, key=timeline.sort_key), without a Python call per untimed event:
    timed events first by (time, seq), then the untimed ones by seq."""
    from postmortem.timeline import sort_key

    events = list(events)
    has_time = [w is not None and w.at is not None for w in map(_WHEN, events)]
    timed = sorted(compress(events, has_time), key=sort_key)
    untimed = sorted(compress(events, map(not_, has_time)), key=_SEQ)
    return timed + untimed


def shape(e: Event) -> tuple[str, str]:
    return e.kind, _MASK.sub("#", e.text)[:_TEXT_CUT]


def row_key(e: Event) -> tuple[str, str, str]:
    """The row an event folds into: kind, masked text and context (the job's own lines never
    fold into the history's)."""
    return (*shape(e), str(e.data.get("context") or ""))


def masked_texts(texts: Sequence[str]) -> list[str]:
    """`shape`'s masked text of each text, each distinct digit pattern masked once."""
    one = _ONE_FOR_DIGITS
    keys = [t.encode("utf-8", "surrogatepass").translate(one) for t in texts]
    alike = {k: k if b"x" in k else k.translate(_ONE_FOR_ZERO) for k in dict.fromkeys(keys)}
    masked = {k: _MASK.sub("#", k.decode("utf-8", "surrogatepass"))[:_TEXT_CUT] for k in dict.fromkeys(alike.values())}
    return list(map(masked.__getitem__, map(alike.__getitem__, keys)))


def row_keys(events: Sequence[Event]) -> list[tuple[str, str, str]]:
    """row_key() of each event, column by column."""
    contexts = list(map(_CONTEXT, map(attrgetter("data"), events)))
    contexts = [str(c) if c else "" for c in contexts] if any(contexts) else repeat("")
    return list(zip(map(_KIND, events), masked_texts(list(map(attrgetter("text"), events))), contexts))


@dataclass
class Digest:
    """The shown events in timeline order, folded into rows (rows in order of their first
    event).  Indices are into `events`."""

    events: list[Event]
    row_of: list[int]               # event -> its row
    keys: list[tuple[str, str, str]]  # row -> row_key
    members: list[list[int]]        # row -> its events, in order
    timed: int                      # events[:timed] have a time, the rest do not
    _columns: dict[str, list] = field(default_factory=dict)

    def column(self, name: str) -> list:
        """One attribute of every event (`rank`, `ref.path` ...), read once by C code."""
        got = self._columns.get(name)
        if got is None:
            got = self._columns[name] = list(map(attrgetter(name), self.events))
        return got

    def of_row(self, r: int, column: list) -> list:
        """A column's values for row r's events, in order."""
        m = self.members[r]
        return [column[m[0]]] if len(m) == 1 else list(itemgetter(*m)(column))

    def folded(self) -> dict[int, tuple]:
        """Event index -> the copies folded into it (fold.py), for the events that have any."""
        got = self._columns.get("folded")
        if got is None:
            held = list(map(_MEMBERS, map(attrgetter("data"), self.events)))
            got = self._columns["folded"] = {i: m for i, m in enumerate(held) if m} if any(held) else {}
        return got  # type: ignore[return-value]

    def count(self, r: int) -> int:
        """Row r's events, each folded copy counted (fold.py)."""
        m, f = self.members[r], self.folded()
        return len(m) + sum(len(f[i]) for i in m if i in f) if f else len(m)

    def of_row_all(self, r: int, name: str) -> list:
        """of_row(r, column(name)) with each folded copy's value after its event's
        (`name`: ref.path, ref.line, host, pid, tid or rank)."""
        m, f = self.members[r], self.folded()
        values = self.of_row(r, self.column(name))
        if not f or not any(i in f for i in m):
            return values
        k = _MEMBER_FIELD[name]
        out = []
        for i, v in zip(m, values):
            out.append(v)
            if i in f:
                out.extend(x[k] for x in f[i])
        return out

    def events_at(self, paths: set[str]) -> list[int]:
        """Indices of the events read from these artifacts."""
        return list(compress(range(len(self.events)), map(paths.__contains__, self.column("ref.path"))))

    def first_events(self, per_row: int) -> list[int]:
        """The first `per_row` events of every row, in timeline order."""
        out = [i for m in self.members for i in m[:per_row]]
        out.sort()
        return out


_last: tuple[Any, Digest] | None = None   # the CLI renders one analysis three times


def digest(events: Sequence[Event]) -> Digest:
    """The rows of these events (an analysis's `case.events`), made once per analysis."""
    global _last
    if _last is not None and _last[0] is events:
        return _last[1]
    with without_gc():
        made = _digest(events)
    _last = (events, made)
    return made


@contextmanager
def without_gc():
    """The folding makes hundreds of thousands of acyclic tuples and lists: the cyclic
    collector would walk them again and again and find nothing (as in run.analyze)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _fold(keys: list[tuple[str, str, str]]) -> tuple[list[int], list[tuple[str, str, str]], list[list[int]]]:
    """Events' row keys folded into rows in order of first appearance: each event's row, each
    row's key, each row's events."""
    numbers = dict.fromkeys(keys)
    for n, key in enumerate(numbers):
        numbers[key] = n
    row_of = list(map(numbers.__getitem__, keys))
    members: list[list[int]] = [[] for _ in numbers]
    for i, r in zip(intpool.upto(len(row_of)), row_of):
        members[r].append(i)
    return row_of, list(numbers), members


def _digest(events: Sequence[Event]) -> Digest:
    shown = timeline_order(shown_events(events))
    keys = row_keys(shown)
    row_of, folded_keys, members = _fold(keys)
    timed = sum(1 for w in map(_WHEN, shown) if w is not None and w.at is not None)
    return Digest(shown, row_of, folded_keys, members, timed)


def _unique(values: Iterable) -> list:
    """Distinct values in order of first appearance, None and empty left out."""
    return [v for v in dict.fromkeys(values) if v is not None and v != ""]


def timeline_rows(events: Iterable[Event] | Digest, keep_all_severe: bool = True,
                  keys: list[tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """Collapsed rows in timeline order (the JSON's `timeline_rows`).  `events`: a Digest,
    or events already sorted (`keys`: their row_key()s when the caller has them)."""
    if not isinstance(events, Digest):
        events = list(events)
        keys = keys if keys is not None else row_keys(events)
        row_of, folded_keys, members = _fold(keys)
        timed = 0
        while timed < len(events) and events[timed].when is not None and events[timed].when.at is not None:
            timed += 1
        if any(e.when is not None and e.when.at is not None for e in events[timed:]):
            timed = -1  # not in timeline order: find times event by event
        events = Digest(events, row_of, folded_keys, members, timed)
    d = events
    ev = d.events
    out = []
    for r, (key, m) in enumerate(zip(d.keys, d.members)):
        e = ev[m[0]]
        first_at, last_at = _first_last_time(d, m)
        out.append({
            "kind": e.kind, "severity": e.severity.value, "text": e.text, "count": d.count(r),
            "first_ts": first_at, "last_ts": last_at, "ts_basis": e.when.basis.value if e.when else "order-only",
            "uncertainty_s": e.when.uncertainty_s if e.when else None,
            "ranks": _unique(d.of_row_all(r, "rank")), "hosts": _unique(d.of_row_all(r, "host")),
            "sources": list(dict.fromkeys(d.of_row_all(r, "ref.path"))),
            "first_line": e.ref.line, "first_source": e.ref.path, "seq": e.seq, "context": key[2] or None,
        })
    return out


def _first_last_time(d: Digest, m: list[int]) -> tuple[str | None, str | None]:
    """ISO times of a row's first and last timed events."""
    ev = d.events
    if d.timed < 0:
        times = [ev[i].when.at for i in m if ev[i].when is not None and ev[i].when.at is not None]
        return (times[0].isoformat(), times[-1].isoformat()) if times else (None, None)
    last = bisect_left(m, d.timed) - 1   # timed events come first
    if last < 0:
        return None, None
    return ev[m[0]].when.at.isoformat(), ev[m[last]].when.at.isoformat()
