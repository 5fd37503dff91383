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
* events without a time only: a folded copy would lose its place on the clock.

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
_PLAIN_KEYS = frozenset(("msg", "dev", "count", "pids"))
_FOLD_KEYS = _PLAIN_KEYS | {FOLDED, MEMBERS}
# Numbers and hex ids masked, as NcclParser._about's shape (the parser's own key for a plain message).
_SHAPE = re.compile(r"0x[0-9a-fA-F]+|\d+")


def foldable(e: Event) -> bool:
    """A plain NCCL INFO event whose copies say nothing a rule reads."""
    if e.kind != "nccl.info" or e.severity is not Severity.INFO or e.stamp is not None or e.rank is not None \
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
    leaders: dict[str, int] = {}        # shape -> index in `out` of its first event
    grown: dict[int, dict] = {}         # index in `out` -> the leader's new data
    out: list[Event] = []
    away = 0
    for e in events:
        if not foldable(e):
            out.append(e)
            continue
        shape = _SHAPE.sub("#", e.data["msg"])
        at = leaders.get(shape)
        if at is None or out[at].ref.path == e.ref.path:
            if at is None:
                leaders[shape] = len(out)
            out.append(e)
            continue
        data = grown.get(at)
        if data is None:
            lead = out[at].data
            data = grown[at] = {**lead, "pids": list(lead["pids"]), FOLDED: lead.get(FOLDED, 0),
                                MEMBERS: list(lead.get(MEMBERS, ()))}
        more = e.data
        data["count"] += more["count"]
        pids = data["pids"]
        for pid in more["pids"]:
            if len(pids) >= MAX_PIDS:
                break
            if pid not in pids:
                pids.append(pid)
        data[MEMBERS].append(member(e))
        data[MEMBERS].extend(more.get(MEMBERS, ()))
        data[FOLDED] += 1 + more.get(FOLDED, 0)
        away += 1
    for at, data in grown.items():
        data[MEMBERS] = tuple(data[MEMBERS])
        out[at] = dataclasses.replace(out[at], data=data)
    for at in leaders.values():  # folded while reading (NcclParser.shared_plain): a list until now
        data = out[at].data
        if type(data.get(MEMBERS)) is list:
            data[MEMBERS] = tuple(data[MEMBERS])  # type: ignore[index]
    return out, away


def weight(e: Event) -> int:
    """How many events `e` stands for (1, or more for a folded event)."""
    return 1 + e.data.get(FOLDED, 0)


def members(e: Event) -> Iterable[tuple]:
    return e.data.get(MEMBERS, ())
