"""Folding the routine INFO lines every rank prints alike into one event (issue 17).

A 512-rank NCCL_DEBUG=INFO bundle makes ~51 events per rank; 30 of them are unstructured
INFO messages (`NET/Plugin : No plugin found`, `Setting affinity ...`) that the NCCL
parser already collapses within one file (parsers/nccl.py, `_plain_info`: the first
line of each message shape is an event with a `count` and `pids`).  Across files they
are the same message again and again: placing, classifying and rendering 15,000 copies
was most of the serial work after parsing.

Here the copies from later files are folded into the bundle's first event of the shape:

* only plain `nccl.info` events fold (data exactly msg, dev, count, pids; INFO; no time
  printed, no rank from a wrapper): no rule reads them (rules read messages through the
  `msg.*` events of the message matcher, and WARNs, errors, Init, network, transport and
  ring events are never folded);
* the folded event keeps its own line, text and citation; its `count` becomes every
  copy's lines, its `pids` the union (first 64); `folded` says how many events it
  stands for besides itself, and `fold_members` (a tuple, so the JSON leaves it out)
  holds each folded copy's (path, line, host, pid, tid, rank) in reading order, so the
  timeline rows keep their full counts, rank, host and source sets (report/rows.py);
* never in an artifact with a printed time: its untimed lines are placed between its
  timed ones, and a folded copy would lose that place.

`fold` is associative (a worker folds its group's files, the parent folds the groups
again: tests/test_fold.py) and takes events in reading order.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Sequence

from postmortem.model import Event, Severity

FOLDED = "folded"              # data: how many other events this one stands for
MEMBERS = "fold_members"       # data: their (path, line, host, pid, tid, rank), a tuple (not in the JSON)
MAX_PIDS = 64                  # as NcclParser's _MAX_LISTED
KIND = "nccl.info"             # the only kind that folds (so the only one that carries MEMBERS)
_PLAIN_KEYS = frozenset(("msg", "dev", "count", "pids"))
_FOLD_KEYS = _PLAIN_KEYS | {FOLDED, MEMBERS}
# Numbers and hex ids masked, as NcclParser._about's shape (the parser's own key for a plain message).
_SHAPE = re.compile(r"0x[0-9a-fA-F]+|\d+")
_SHAPES: dict[str, str] = {}   # msg -> shape: every rank's copy is the same message
_SHAPES_CAP = 1 << 14


def _shape(msg: str) -> str:
    got = _SHAPES.get(msg)
    if got is None:
        if len(_SHAPES) >= _SHAPES_CAP:
            _SHAPES.clear()
        got = _SHAPES[msg] = _SHAPE.sub("#", msg)
    return got


def foldable(e: Event) -> bool:
    """A plain NCCL INFO event whose copies say nothing a rule reads."""
    if e.kind != KIND or e.severity is not Severity.INFO or e.stamp is not None or e.rank is not None \
            or e.when is not None:
        return False
    keys = e.data.keys()
    return _PLAIN_KEYS <= keys and keys <= _FOLD_KEYS and isinstance(e.data["msg"], str) \
        and isinstance(e.data["count"], int) and isinstance(e.data["pids"], list)


def member(e: Event) -> tuple:
    return (e.ref.path, e.ref.line, e.host, e.pid, e.tid, e.rank)


def fold(events: Sequence[Event]) -> tuple[list[Event], int]:
    """The events with each foldable copy folded into the first event of its shape from
    another artifact, and how many events were folded away.  Copies within one artifact
    are the parser's business (they are one event already)."""
    kept, away = _folded(events)
    return [e for _, e in kept], away


def fold_parts(events: Sequence[Event], ends: Sequence[int]) -> tuple[list[list[Event]], int]:
    """fold() of `events`, cut back into the parts that end at `ends` (indices into
    `events`): what each part keeps."""
    kept, away = _folded(events)
    parts: list[list[Event]] = [[] for _ in ends]
    p = 0
    for i, e in kept:
        while i >= ends[p]:
            p += 1
        parts[p].append(e)
    return parts, away


def _folded(events: Sequence[Event]) -> tuple[list[tuple[int, Event]], int]:
    """(index, event) of every event kept, a folded one with its new data; how many folded away."""
    timed = {e.ref.path for e in events if e.stamp is not None}  # placed between timed lines: never folded
    leaders: dict[str, int] = {}        # shape -> index in `out` of its first event
    grown: dict[int, dict] = {}         # index in `out` -> the leader's new data
    out: list[tuple[int, Event]] = []
    away = 0
    for i, e in enumerate(events):
        if e.kind != KIND or not foldable(e) or e.ref.path in timed:  # (the kind first: most events are others)
            out.append((i, e))
            continue
        shape = _shape(e.data["msg"])
        at = leaders.get(shape)
        if at is None or out[at][1].ref.path == e.ref.path:
            if at is None:
                leaders[shape] = len(out)
            out.append((i, e))
            continue
        data = grown.get(at)
        if data is None:
            data = grown[at] = _growing(out[at][1].data)
        _absorb(data, e.data, member(e), e.data.get(FOLDED, 0), e.data.get(MEMBERS, ()))
        away += 1
    for at, data in grown.items():
        data[MEMBERS] = tuple(data[MEMBERS])
        i, e = out[at]
        out[at] = (i, dataclasses.replace(e, data=data))
    return out, away


def _growing(lead: dict) -> dict:
    """A copy of a leader's data that copies can be folded into (fold() and AsRead share it, so
    folding as read gives exactly what folding afterwards gives)."""
    return {**lead, "pids": list(lead["pids"]), FOLDED: lead.get(FOLDED, 0), MEMBERS: list(lead.get(MEMBERS, ()))}


def _absorb(data: dict, more: dict, one: tuple, folded: int, members_: Iterable[tuple]) -> None:
    """Fold one copy (its data `more`, its place `one`, what was already folded into it) into `data`."""
    data["count"] += more["count"]
    pids = data["pids"]
    for pid in more["pids"]:
        if len(pids) >= MAX_PIDS:
            break
        if pid not in pids:
            pids.append(pid)
    data[MEMBERS].append(one)
    data[MEMBERS].extend(members_)
    data[FOLDED] += 1 + folded


def weight(e: Event) -> int:
    """How many events `e` stands for (1, or more for a folded event)."""
    return 1 + e.data.get(FOLDED, 0)


def members(e: Event) -> Iterable[tuple]:
    return e.data.get(MEMBERS, ())


class AsRead:
    """fold() done while a process reads its files (issue 17): a plain INFO line whose shape
    already has its leader in an earlier, finished file makes no event at all.

    The NCCL parser hands such a line's would-be event over as `defer` (its number in the
    reading order drawn as the event's would be, its data growing with the file's repeats);
    at the end of the file, if no event of the file has a printed time, each is folded
    into its leader here exactly as fold() would fold the event (count, pids, member, in
    reading order), and otherwise the parser makes the events after all, with their numbers
    (parsers/nccl.py, `materialize`).  A finished file with no printed time offers its
    plain events as leaders of the shapes that have none yet: the first in reading order,
    as fold() picks.  `apply` gives the leaders their grown data; fold() then folds the
    rest (other processes' groups) on top, which it does alike (associative).  One per
    process and group of files (run._Collected).  Off (`on` False) for a bundle that holds
    one path twice (archive members of one name): fold() tells printed times by path, which
    only the end of the bundle settles."""

    __slots__ = ("leaders", "grown", "folded", "on")

    def __init__(self, on: bool = True) -> None:
        self.leaders: dict[str, Event] = {}   # shape -> its leading event (an earlier file's)
        self.grown: dict[int, tuple[Event, dict]] = {}  # id(leader) -> (leader, its new data)
        self.folded = 0                       # lines' events folded here instead of made
        self.on = on

    def leader(self, shape: str, path: str) -> bool:
        """Whether a plain event of `shape` read in `path` would be folded into another file's."""
        lead = self.leaders.get(shape)
        return lead is not None and lead.ref.path != path and self.on

    def file_done(self, events: list[Event], deferred: Sequence[tuple] = ()) -> list[Event] | None:
        """The end of one file: its events in reading order, and the (path, line, host, pid, tid,
        rank, shape, data) of the plain events its parser deferred.  The events it keeps (the
        rest folded here, as fold() folds them), or None when the file has a printed time:
        then nothing folds and the caller makes the deferred events."""
        if not self.on or any(e.stamp is not None for e in events):
            return None
        leaders = self.leaders
        kept = []
        for e in events:
            if e.kind == KIND and foldable(e):
                shape = _shape(e.data["msg"])
                lead = leaders.get(shape)
                if lead is None:
                    leaders[shape] = e
                elif lead.ref.path != e.ref.path:
                    self._add(lead, e.data, member(e), e.data.get(FOLDED, 0), e.data.get(MEMBERS, ()))
                    continue
            kept.append(e)
        for path, line, host, pid, tid, rank, shape, more in deferred:
            self._add(leaders[shape], more, (path, line, host, pid, tid, rank), 0, ())
        self.folded += len(events) - len(kept) + len(deferred)
        return kept

    def parser_done(self, events: list[Event], deferred: Sequence[tuple]) -> list[Event] | None:
        """file_done for the NCCL parser's own deferred entries ((seq, place, where, shape, data),
        parsers/nccl.py): the same result, each copy folded without an intermediate tuple and
        with _absorb's work for a copy that stands for itself alone (issue 17: ~15,000 copies at
        512 ranks)."""
        kept = self.file_done(events)
        if kept is None or not deferred:
            return kept
        leaders, grown = self.leaders, self.grown
        for _, place, where, shape, more in deferred:
            lead = leaders[shape]
            got = grown.get(id(lead))
            if got is None:
                got = grown[id(lead)] = (lead, _growing(lead.data))
            data = got[1]
            data["count"] += more["count"]
            pids = data["pids"]
            if len(pids) < MAX_PIDS:
                for pid in more["pids"]:
                    if len(pids) >= MAX_PIDS:
                        break
                    if pid not in pids:
                        pids.append(pid)
            data[MEMBERS].append((place[0], place[1], where["host"], where["pid"], where["tid"], place[5]))
            data[FOLDED] += 1
        self.folded += len(deferred)
        return kept

    def _add(self, lead: Event, more: dict, one: tuple, folded: int, members_: Iterable[tuple]) -> None:
        got = self.grown.get(id(lead))
        if got is None:
            got = self.grown[id(lead)] = (lead, _growing(lead.data))
        _absorb(got[1], more, one, folded, members_)

    def apply(self, events: list[Event]) -> list[Event]:
        """`events` (this process's, in reading order) with each leader carrying what was folded into it."""
        if not self.grown:
            return events
        new = {}
        for key, (lead, data) in self.grown.items():
            data[MEMBERS] = tuple(data[MEMBERS])
            new[key] = dataclasses.replace(lead, data=data)
        self.grown, self.leaders = {}, {}  # the end of reading: nothing more folds here
        return [new.get(id(e), e) for e in events]
