"""What every rule shares: the Rule protocol, building a Finding, reading deaths and stacks.

A rule never mutates shared state; it returns findings and appends lines to `trace`.
Knowledge (what a message means, what an Xid means) comes from postmortem/knowledge,
never from literals in a rule.  Order does not matter: classify/__init__.py decides
root versus symptom.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from datetime import datetime
from itertools import compress
from operator import attrgetter, not_
from typing import Iterable

from postmortem import signals
from postmortem.classify.index import events_of  # noqa: F401 - the rules' way to their events
from postmortem.knowledge import Knowledge
from postmortem.knowledge.registry import KIND, LIMIT, Signal, deaths
from postmortem.model import Case, Category, Event, Finding, Ref, Stack
from postmortem.packaged import packaged
from postmortem.parsers import clocks
from postmortem.timeline.anchors import AFTER_PREVIOUS, BEFORE_NEXT

MAX_EVIDENCE = 8


def _span(events: list[Event]) -> tuple[int | None, datetime | None, datetime | None]:
    """First reading position, first and last absolute time of some events."""
    seqs = [e.seq for e in events]
    ats = [e.when.at for e in events if e.when and e.when.at]
    return (min(seqs) if seqs else None), (min(ats) if ats else None), (max(ats) if ats else None)

def _first_bounds(events: list[Event], first: datetime | None) -> tuple[datetime | None, datetime | None]:
    """Between which times the first of some events happened, as the timeline bounds each: a
    printed or converted time +- its uncertainty; an untimed line placed after its file's previous
    timed line at or after that time, up to the next one; one placed before the next timed line
    at or before it.  None on a side without a bound."""
    if first is None:
        return None, None
    low: datetime | None = first
    high: datetime | None = None
    for e in events:
        w = e.when
        if not w or not w.at:
            continue
        unc = w.uncertainty_s
        if w.note == AFTER_PREVIOUS:
            lo, hi = w.at, (None if unc is None else clocks.add_seconds(w.at, unc))
        elif w.note == BEFORE_NEXT:
            lo, hi = None, w.at
        elif unc is None:
            lo = hi = None
        else:
            lo, hi = clocks.add_seconds(w.at, -unc), clocks.add_seconds(w.at, unc)
        low = None if lo is None or low is None else min(low, lo)
        if hi is not None:
            high = hi if high is None else min(high, hi)
    return low, high

def _refs(events: Iterable[Event]) -> tuple[Ref, ...]:
    seen: dict[tuple, Ref] = {}
    for e in events:
        seen.setdefault((e.ref.path, e.ref.line, e.ref.offset, e.ref.record), e.ref)
        if len(seen) >= MAX_EVIDENCE:
            break
    return tuple(seen.values())

def _repeat(weight: float, n: int) -> float:
    """Support from n lines saying the same thing: more lines add a little, not a lot."""
    return 1 - (1 - weight) * (LIMIT.repeat_factor ** max(0, min(n, LIMIT.repeat_max) - 1))

@functools.cache
def _separators() -> tuple[re.Pattern[str], ...]:
    text = packaged("postmortem.knowledge", "separators.txt").read_text(encoding="utf-8")
    return tuple(re.compile(line.strip()) for line in text.splitlines() if line.strip() and not line.startswith("#"))

def says_something(ref: Ref) -> bool:
    """False for banners and headers (knowledge/separators.txt) that only frame evidence."""
    text = ref.text[:400]
    return not any(p.search(text) for p in _separators())

def _telling(refs: tuple[Ref, ...]) -> tuple[Ref, ...]:
    """The refs that say something, or all of them when none does (a claim keeps a citation)."""
    kept = tuple(r for r in refs if says_something(r))
    return kept or refs

def connection_failure_kinds(k: Knowledge) -> frozenset[str]:
    """Message kinds that say the job failed at a connection: a transport error a pattern reads as a
    comms cause, or its peer ending (registry death `peer`: the peer closed or reset it)."""
    return frozenset(f"msg.{m.id}" for m in k.messages
                     if m.cause in k.causes and k.causes[m.cause].category == "comms") | deaths("peer")


def finding(k: Knowledge, cause: str, weight: float, rule: str, summary: str, events: list[Event],
            role: str = "root", discriminator: str = "", extra_refs: tuple[Ref, ...] = (),
            strength: str = "", signal: str = "") -> Finding:
    seq, at, last = _span(events)
    bounds = _first_bounds(events, at)
    category = Category(k.causes[cause].category) if cause in k.causes else Category.UNKNOWN
    return Finding(cause=cause, category=category, confidence=round(min(weight, LIMIT.max_confidence), 3), rule=rule,
                   summary=summary, evidence=_telling(_refs(events) + extra_refs), first_seq=seq, first_at=at, last_at=last,
                   first_earliest=bounds[0], first_latest=bounds[1],
                   discriminator=discriminator, role=role, strength=strength, signal=signal)

def sign_finding(k: Knowledge, sign: Signal, rule: str, summary: str, events: list[Event], discriminator: str = "",
                 extra_refs: tuple[Ref, ...] = (), weight: float | None = None,
                 combined: tuple[Signal, ...] = (), culprits: tuple[int, ...] = ()) -> Finding:
    """A finding for a registered sign: cause, role, strength and weight come from signals.toml.
    A rule that saw several independent signs of one cause passes them as `combined`: their
    support is the noisy-OR of their weights, and the claim counts each of them."""
    signs = tuple(dict.fromkeys((sign, *combined)))
    if weight is None:
        miss = 1.0
        for s in signs:
            miss *= 1 - s.weight
        weight = 1 - miss
    strength = "strong" if any(s.strength == "strong" for s in signs) else sign.strength
    f = finding(k, sign.cause, weight, rule, summary, events, sign.role, discriminator, extra_refs, strength, sign.id)
    if len(signs) > 1:
        f = dataclasses.replace(f, signs=tuple(s.id for s in signs))
    return dataclasses.replace(f, culprit_ranks=tuple(sorted(set(culprits)))) if culprits else f

def handler_fallout(case: Case) -> frozenset[tuple[str, int | None]]:
    """Lines of exceptions raised while handling an earlier one of the same process.

    CPython prints "During handling of the above exception, another exception occurred"
    (Python/pythonrun.c, the implicit __context__) above an exception that a handler or a
    finally: block raised while the first one was propagating: the first is the failure, the
    handler's (a dist.get_rank() in an except:, a cleanup on a state the failure left) is its
    fallout -- no sign of its own, no death of its own (audit 8 H1).  Only when the first one
    is in the bundle too (same file and rank, an earlier line): a paste that starts at the
    marker shows no failure before it."""
    out: set[tuple[str, int | None]] = set()
    seen: set[tuple[str, int | None]] = set()
    for e in sorted(events_of(case, KIND.py_exception), key=lambda e: (e.ref.path, e.ref.line or 0)):
        if e.data.get("chained") == "context" and (e.ref.path, e.rank) in seen:
            out.add((e.ref.path, e.ref.line))
        seen.add((e.ref.path, e.rank))
    return frozenset(out)

def chain_links(case: Case) -> dict[tuple[str, int | None], tuple[Event, ...]]:
    """The earlier links of each chained exception: {(file, line) of a link: the exceptions
    before it in its chain, first one first}.

    CPython prints a chain oldest first (Lib/traceback.py TracebackException.format: the
    __cause__ or __context__, then "The above exception was the direct cause of the following
    exception" / "During handling of the above exception, another exception occurred", then the
    next); the parser marks each link after a marker `chained` (cause | context).  A link's
    earlier ones are the exceptions of the same file and rank just before it, back to the
    first one printed without a marker."""
    out: dict[tuple[str, int | None], tuple[Event, ...]] = {}
    chain: dict[tuple[str, int | None], list[Event]] = {}
    for e in sorted(events_of(case, KIND.py_exception), key=lambda e: (e.ref.path, e.ref.line or 0)):
        key = (e.ref.path, e.rank)
        if e.data.get("chained") in ("cause", "context") and chain.get(key):
            out[(e.ref.path, e.ref.line)] = tuple(chain[key])
            chain[key].append(e)
        else:
            chain[key] = [e]
    return out

class Rule:
    id = "rule"

    def findings(self, case: Case, k: Knowledge, trace: list[str]) -> list[Finding]:
        raise NotImplementedError

def died_of(e: Event, name: str) -> bool:
    """Does this event say a process died of signal `name` (e.g. SIGBUS)?  Parsers and
    message patterns spell it as signal/signame (a name or strsignal text), signo (a
    number) or exitcode (minus the number)."""
    d = e.data
    if _SIGNAL_KEYS.isdisjoint(d):  # most events say nothing about a death: answer fast
        return False
    return (any(signals.name_of(d.get(key)) == name for key in ("signal", "signame", "signo"))
            or signals.of_exitcode(d.get("exitcode")) == name)

_SIGNAL_KEYS = frozenset({"signal", "signame", "signo", "exitcode"})
_DATA = attrgetter("data")


def saying_a_signal(events) -> list[Event]:
    """The events whose data holds a key died_of reads (for every other event it answers
    False), found by C-level code: a rule asking about every event walks ~11,000 at 512 ranks."""
    return list(compress(events, map(not_, map(_SIGNAL_KEYS.isdisjoint, map(_DATA, events)))))

def _stack_mentions(stacks: Iterable[Stack], pattern: re.Pattern[str]) -> list[Stack]:
    return [s for s in stacks if any(pattern.search(f.function or "") or pattern.search(f.module or "")
                                     or pattern.search(f.file or "") for f in s.frames)]

def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("-inf")

def _bad(value) -> bool:
    """A counter above zero, a True flag, or an error text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    return bool(value) and str(value).strip().lower() not in ("0", "no", "none", "n/a", "false")
