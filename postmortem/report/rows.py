"""Timeline rows: repetitions collapsed.

The same message from 64 ranks is one row with its rank set, count and first/last
time.  Messages are compared after masking numbers, hex ids and addresses, so
`[Rank 3] ... SeqNum=2` and `[Rank 5] ... SeqNum=2` fold together.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from postmortem.model import Event

_MASK = re.compile(r"0x[0-9a-fA-F]+|\d+")


def shown_events(events: Iterable[Event]) -> list[Event]:
    """Events as a timeline shows them: a known-message event (`msg.*`) on a line that a
    format parser also read is the same line twice, so only the parser's event stays."""
    events = list(events)
    parsed: dict[str, set[int]] = {}  # path -> lines; no tuple per event (big bundles)
    for e in events:
        if e.ref.line is not None and not e.kind.startswith("msg."):
            lines = parsed.get(e.ref.path)
            if lines is None:
                lines = parsed[e.ref.path] = set()
            lines.add(e.ref.line)
    empty: set[int] = set()
    return [e for e in events if not (e.kind.startswith("msg.") and e.ref.line in parsed.get(e.ref.path, empty))]


def shape(e: Event) -> tuple[str, str]:
    return e.kind, _MASK.sub("#", e.text)[:300]


def row_key(e: Event) -> tuple[str, str, str]:
    """The row an event folds into: kind, masked text and context (the job's own lines never
    fold into the history's)."""
    return (*shape(e), str(e.data.get("context") or ""))


def timeline_rows(events: Iterable[Event], keep_all_severe: bool = True,
                  keys: list[tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """Collapsed rows in timeline order; the events must come sorted.  `keys`: their
    row_key()s when the caller has them already."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    order: list[tuple[str, str, str]] = []
    member: dict[tuple[str, str, str], tuple[set, set, set]] = {}
    for n, e in enumerate(events):
        key = keys[n] if keys is not None else row_key(e)
        context = key[2]
        row = rows.get(key)
        at = e.when.at.isoformat() if e.when and e.when.at else None
        if row is None:
            row = rows[key] = {
                "kind": e.kind, "severity": e.severity.value, "text": e.text, "count": 0,
                "first_ts": at, "last_ts": at, "ts_basis": e.when.basis.value if e.when else "order-only",
                "uncertainty_s": e.when.uncertainty_s if e.when else None,
                "ranks": [], "hosts": [], "sources": [], "first_line": e.ref.line, "first_source": e.ref.path,
                "seq": e.seq, "context": context or None,
            }
            order.append(key)
        row["count"] += 1
        if at:
            row["last_ts"] = at
            row["first_ts"] = row["first_ts"] or at
        # Membership in sets beside the lists: list membership made this quadratic in ranks.
        seen = member.get(key)
        if seen is None:
            seen = member[key] = (set(), set(), set())
        if e.rank is not None and e.rank not in seen[0]:
            seen[0].add(e.rank)
            row["ranks"].append(e.rank)
        if e.host and e.host not in seen[1]:
            seen[1].add(e.host)
            row["hosts"].append(e.host)
        if e.ref.path not in seen[2]:
            seen[2].add(e.ref.path)
            row["sources"].append(e.ref.path)
    return [rows[k] for k in order]
