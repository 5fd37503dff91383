"""The events of a case by kind, for the rules and the counter-evidence.

Every rule reads a few kinds (timeouts, deaths, NCCL WARNs ...).  Walking all events for
each would cost ~30 walks of 400,000 events at 8,192 ranks; the index is made in one
pass per case and answers each rule's kinds in the case's own order.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Iterable

from postmortem import intpool
from postmortem.model import Case, Event


class _KindIndex:
    """Each kind's positions in one case's events, made in one pass: rules ask for the few
    kinds they read instead of each walking every event (at 8,192 ranks: 400,000 events,
    some 30 walks)."""

    def __init__(self, events: tuple[Event, ...]) -> None:
        self.events = events
        self.positions: dict[str, list[int]] = {}
        for i, kind in zip(intpool.upto(len(events)), map(_KIND, events)):
            got = self.positions.get(kind)
            if got is None:
                got = self.positions[kind] = []
            got.append(i)

    def of(self, kinds: Iterable[str]) -> list[Event]:
        found = [self.positions[k] for k in set(kinds) if k in self.positions]
        if not found:
            return []
        at = found[0] if len(found) == 1 else sorted(i for p in found for i in p)
        events = self.events
        return [events[i] for i in at]


_KIND = attrgetter("kind")
# The last two cases' indexes: one analysis classifies its case and the case without its
# context (classify.job_only), one at a time.
_indexes: list[_KindIndex] = []


def _index_of(case: Case) -> _KindIndex:
    index = next((x for x in _indexes if x.events is case.events), None)
    if index is None:
        index = _KindIndex(case.events)
        _indexes[:] = [index, *_indexes[:1]]
    return index


def events_of(case: Case, kinds: str | Iterable[str]) -> list[Event]:
    """The case's events of these kinds, in the case's order: the same as
    `[e for e in case.events if e.kind in kinds]`."""
    return _index_of(case).of((kinds,) if isinstance(kinds, str) else kinds)


def kinds_in(case: Case) -> list[str]:
    """The kinds the case's events have, in the order each first occurs."""
    return list(_index_of(case).positions)
