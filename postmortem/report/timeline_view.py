"""The timeline as the reports draw it: collapsed rows, swimlanes and marks.

Events fold into rows with `rows.shape` (the same folding as the JSON
`timeline_rows`): the same message from 64 ranks is one row.  Each row's events in
one lane become one mark, so a million repeated lines cost a handful of marks.

Big bundles stay small: every row holding a root, warning or error event is kept;
the other rows are capped and the cut is counted, so the report can say how many
it left out.  Nothing here formats HTML; `svg.py` and the templates do that.
"""
from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import chain, compress, repeat
from operator import add, mul
from typing import Iterable

from postmortem.knowledge import registry
from postmortem.model import Analysis, Basis, Event, Ref, Severity
from postmortem.report import rows
from postmortem.report.rows import shape  # noqa: F401 - the folding, named here for callers
# Lanes are named in rows.py, which the JSON report imports without this module (startup time).
from postmortem.report.rows import OTHER_LANE, lane_key_of, lane_label, lane_of  # noqa: F401

# Where an event came from: the labels, and the label of each kind prefix in signals.toml [source].
SOURCES = ("kernel", "nccl", "python", "launcher", "core", "messages", "system")
SEVERITY_ORDER = {Severity.DEBUG: 0, Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3, Severity.FATAL: 4}
SEVERE = frozenset({Severity.WARNING, Severity.ERROR, Severity.FATAL})

MAX_INFO_ROWS = 400      # rows without a root, warning or error event, beyond which rows are cut
MAX_OCCURRENCES = 12     # single events listed when a row is expanded
MAX_LANES = 32           # more lanes are merged into one "other" lane
MAX_INFO_MARKS = 1500    # info marks drawn; root and severe marks are always drawn

PLACED, UNPLACED = "placed", "unplaced"


def source_of(kind: str) -> str:
    return registry.source_labels().get(kind.split(".", 1)[0], "system")


def ref_key(r: Ref) -> tuple:
    return (r.path, r.line, r.offset, r.record)


@dataclass
class Row:
    """One collapsed row: every event of the same kind and masked text."""

    number: int                  # timeline order; the anchor is `row-N`
    kind: str
    source: str
    severity: Severity
    text: str
    first: Event
    last: Event
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    lanes: set[int] = field(default_factory=set)
    sample: list[Event] = field(default_factory=list)   # the first MAX_OCCURRENCES events
    is_root: bool = False
    context: str = ""                                   # outside the job (job.py): why, e.g. "kernel history before the job"
    cited: bool = False                                 # some evidence item cites one of its lines
    evidence: list[int] = field(default_factory=list)   # those items' numbers, filled in by the page

    @property
    def anchor(self) -> str:
        return f"row-{self.number}"

    @property
    def kept_always(self) -> bool:
        return self.is_root or self.cited or (self.severity in SEVERE and not self.context)


@dataclass(frozen=True)
class Lane:
    number: int
    label: str


@dataclass
class Mark:
    """One row's events in one lane and band, drawn as one dot (a span when repeated)."""

    row: Row
    lane_key: tuple
    band: str                    # PLACED (on the clock) or UNPLACED (reading order only)
    first: float                 # POSIX seconds (placed) or ordinal (unplaced)
    last: float
    uncertainty: float = 0.0
    count: int = 0
    is_root: bool = False
    context: bool = False        # the row is context (history), drawn in the history band
    lane: int = 0                # filled in once lanes are numbered


@dataclass
class TimelineView:
    rows: list[Row]              # kept rows, timeline order
    lanes: list[Lane]
    marks: list[Mark]            # kept marks
    event_count: int
    cut_rows: int                # info rows not shown
    cut_marks: int               # info marks not drawn
    placed_range: tuple[float, float] | None
    unplaced_count: int
    row_of_ref: dict[tuple, Row]  # cited ref -> the row holding its event
    sources: list[str]           # the sources present, in SOURCES order
    job_range: tuple[float, float] | None = None   # the job's own placed events (and the root): the default view
    history_range: tuple[float, float] | None = None  # placed context events (kernel history ...)
    folded: dict[str, int] = field(default_factory=dict)  # context events per reason, for the folded line


@dataclass(frozen=True)
class TimeCell:
    """How a time is shown: inferred times are marked, never passed off as measured."""

    text: str                    # "2024-05-01 10:00:03" or "—"
    approx: bool                 # True unless measured
    basis: str
    plus_minus: str              # "±60 s" or ""
    iso: str                     # machine-readable, for <time datetime>


_last: tuple[Analysis, tuple, "TimelineView"] | None = None  # the CLI renders one analysis twice


def build(analysis: Analysis, cited: Iterable[Ref] = ()) -> TimelineView:
    """Rows, lanes and marks for the analysis; `cited` refs get their row looked up.
    The terminal and the HTML report ask for the same view: it is built once."""
    global _last
    cited = tuple(cited)
    if _last is not None and _last[0] is analysis and _last[1] == cited:
        return _last[2]
    with rows.without_gc():
        view = _build(analysis, cited)
    _last = (analysis, cited, view)
    return view


def _build(analysis: Analysis, cited: tuple[Ref, ...]) -> TimelineView:
    verdict = analysis.verdict
    root_keys = {ref_key(r) for r in (verdict.root.evidence if verdict.root else ())}
    root_seq = verdict.root.first_seq if verdict.root else None
    cited_keys = {ref_key(r) for r in cited}
    return _fold(rows.digest(analysis.case.events), root_keys, root_seq, cited_keys, _window(analysis))


def _window(analysis: Analysis) -> tuple[float | None, float | None]:
    """The job's window as the timeline found it (facts job.start / job.end), POSIX seconds."""
    out: dict[str, float] = {}
    for f in analysis.case.facts:
        if f.name in ("job.start", "job.end") and f.name not in out:
            try:
                out[f.name] = datetime.fromisoformat(str(f.value)).timestamp()
            except (ValueError, OverflowError, OSError):
                continue
    return out.get("job.start"), out.get("job.end")


def _events_on(d: rows.Digest, keys: set[tuple]) -> list[int]:
    """Indices of the events whose ref_key is in `keys` (a handful of cited lines)."""
    ev = d.events
    return [i for i in d.events_at({k[0] for k in keys}) if ref_key(ev[i].ref) in keys]


def _fold(d: rows.Digest, root_keys: set, root_seq: int | None, cited_keys: set,
          window: tuple[float | None, float | None]) -> TimelineView:
    """Rows, lanes and marks from the digest, column by column: only aggregates are kept,
    so memory follows rows and marks, not events."""
    ev, n, timed = d.events, len(d.events), d.timed
    roots = set(_events_on(d, root_keys)) if root_keys else set()
    if root_seq is not None:
        roots.update(compress(range(n), map(root_seq.__eq__, d.column("seq"))))
    severities, ranks, hosts = d.column("severity"), d.column("rank"), d.column("host")
    row_list: list[Row] = []
    folded: dict[str, int] = {}
    for r, (key, m) in enumerate(zip(d.keys, d.members)):
        first = ev[m[0]]
        row = Row(r + 1, first.kind, source_of(first.kind), max(set(d.of_row(r, severities)), key=SEVERITY_ORDER.__getitem__),
                  first.text, first, ev[m[-1]], count=d.count(r), context=key[2],
                  ranks=set(d.of_row_all(r, "rank")) - {None}, hosts=set(d.of_row_all(r, "host")) - {None, ""},
                  sample=[ev[i] for i in m[:MAX_OCCURRENCES]])
        if key[2]:
            folded[key[2]] = folded.get(key[2], 0) + row.count
        row_list.append(row)
    row_of = d.row_of
    for i in roots:
        row_list[row_of[i]].is_root = True
    row_of_ref: dict[tuple, Row] = {}
    for i in (_events_on(d, cited_keys) if cited_keys else ()):
        key = ref_key(ev[i].ref)
        if key not in row_of_ref:
            row_of_ref[key] = row_list[row_of[i]]
            row_list[row_of[i]].cited = True

    # Lanes: one per process; the loud ones (a root or severe event) are kept when merging.
    ids = list(zip(hosts, ranks, d.column("pid"), d.column("ref.path")))
    lane_of_id = {i: lane_key_of(*i) for i in dict.fromkeys(ids)}
    lane_keys = list(map(lane_of_id.__getitem__, ids))
    del ids
    loud = {lane_keys[i] for i in roots}
    for r, row in enumerate(row_list):
        if row.severity in SEVERE:
            loud.update(d.of_row(r, lane_keys))
    lanes, lane_number = _number_lanes(set(lane_of_id.values()), loud)

    # Marks: one per row, drawn lane and band (placed on the clock or not), numbered
    # ((row * lanes) + lane) * 2 + band.  Timed events come first and in time order, so a
    # mark's first and last events are its earliest and latest; untimed ones are placed by
    # their ordinal.
    stride = 2 * (len(lanes) + 1)
    groups = list(map(add, map(add, map(mul, row_of, repeat(stride)), map(mul, map(lane_number.__getitem__, lane_keys), repeat(2))),
                      chain(repeat(0, timed), repeat(1, n - timed))))
    counts = Counter(groups)
    last = dict(zip(groups, range(n)))
    first_of: dict[int, int] = dict(zip(reversed(groups), range(n - 1, -1, -1)))
    positions: list[float] = [e.when.at.timestamp() for e in ev[:timed]]  # type: ignore[union-attr]
    spread = [0.0 if e.when.basis is Basis.MEASURED else (e.when.uncertainty_s or 0.0)  # type: ignore[union-attr]
              for e in ev[:timed]]
    widest: dict[int, float] = {}
    for i in range(timed):
        if spread[i] > widest.get(groups[i], 0.0):
            widest[groups[i]] = spread[i]
    root_groups = {groups[i] for i in roots}
    marks = []
    for g in dict.fromkeys(groups):
        r, rest = divmod(g, stride)
        lane, band = divmod(rest, 2)
        row, i, j = row_list[r], first_of[g], last[g]
        a, b = (positions[i], positions[j]) if band == 0 else (float(i - timed), float(j - timed))
        row.lanes.add(lane)
        marks.append(Mark(row, lane_keys[i], PLACED if band == 0 else UNPLACED, a, b, widest.get(g, 0.0),
                          counts[g], g in root_groups, bool(row.context), lane))
    del lane_keys
    t_min = t_max = None
    job_span: list[float] = []
    history_span: list[float] = []
    if timed:
        t_min = min(p - u for p, u in zip(positions, spread))
        t_max = max(p + u for p, u in zip(positions, spread))
        for span, context in ((job_span, False), (history_span, True)):
            inside = [p for p, r in zip(positions, row_of) if bool(row_list[r].context) is context]
            if inside:
                span[:] = [min(inside), max(inside)]
    kept_rows, cut_rows = _keep_rows(row_list)
    kept_marks, cut_marks = _keep_marks(marks, {r.number for r in kept_rows})
    present = {r.source for r in row_list}
    lo, hi = window
    points = job_span + [t for t in (lo, hi) if t is not None]
    return TimelineView(kept_rows, lanes, kept_marks, n, cut_rows, cut_marks,
                        (t_min, t_max) if t_min is not None else None, n - timed, row_of_ref,
                        [s for s in SOURCES if s in present], (min(points), max(points)) if points else None,
                        tuple(history_span) if history_span else None, folded)  # type: ignore[arg-type]


def _number_lanes(keys: set[tuple], loud: set[tuple]) -> tuple[list[Lane], dict[tuple, int]]:
    """Lanes sorted (hosts and ranks first, then files); past MAX_LANES the quiet ones merge.

    Lanes holding a root or severe event (`loud`) are kept before quiet ones, so a fault
    never hides in the merged lane."""
    if len(keys) > MAX_LANES:  # the first MAX_LANES - 1 in lane order, loud ones first
        chosen = heapq.nsmallest(MAX_LANES - 1, keys & loud, key=_lane_order)
        chosen += heapq.nsmallest(MAX_LANES - 1 - len(chosen), keys - loud, key=_lane_order)
        chosen.sort(key=_lane_order)
        numbers = {k: i for i, k in enumerate(chosen)}
        other = len(chosen)
        lane_number = {k: numbers.get(k, other) for k in keys}
        lanes = [Lane(i, lane_label(k)) for i, k in enumerate(chosen)] + [Lane(other, f"other lanes ({len(keys) - len(chosen)})")]
        return lanes, lane_number
    ordered = sorted(keys, key=_lane_order)
    lane_number = {k: i for i, k in enumerate(ordered)}
    return [Lane(i, lane_label(k)) for i, k in enumerate(ordered)], lane_number


def _lane_order(key: tuple) -> tuple:
    return key[0] != "id", key[1:]


def _keep_rows(rows: list[Row]) -> tuple[list[Row], int]:
    kept, info = [], 0
    for row in rows:
        if row.kept_always:
            kept.append(row)
        elif info < MAX_INFO_ROWS:
            kept.append(row)
            info += 1
    return kept, len(rows) - len(kept)


def _keep_marks(marks: Iterable[Mark], kept_rows: set[int]) -> tuple[list[Mark], int]:
    kept, info, cut = [], 0, 0
    for mark in marks:
        if mark.row.number not in kept_rows:
            cut += 1
        elif mark.is_root or mark.row.kept_always:
            kept.append(mark)
        elif info < MAX_INFO_MARKS:
            kept.append(mark)
            info += 1
        else:
            cut += 1
    return kept, cut


def rows_around_root(view: TimelineView, limit: int) -> tuple[list[Row], int, int]:
    """Up to `limit` of the job's rows that matter (root, cited, warnings, errors), centred on
    the root: a third before it, the rest after.  Returns (rows, left out before, after)."""
    rows = [r for r in view.rows if r.kept_always and not r.context]
    if len(rows) <= limit:
        return rows, 0, 0
    root = next((i for i, r in enumerate(rows) if r.is_root), 0)
    start = max(0, min(root - limit // 3, len(rows) - limit))
    return rows[start:start + limit], start, len(rows) - start - limit


# ---------------------------------------------------------------------------- display helpers

def time_cell(e: Event) -> TimeCell:
    w = e.when
    if w is None or w.at is None:
        return TimeCell("—", True, (w.basis.value if w else Basis.ORDER_ONLY.value), "", "")
    at = w.at.astimezone(timezone.utc) if w.at.tzinfo else w.at
    text = at.strftime("%Y-%m-%d %H:%M:%S") + (f".{at.microsecond // 1000:03d}" if at.microsecond else "")
    if w.at.tzinfo:
        text += " UTC"
    approx = w.basis is not Basis.MEASURED
    plus_minus = f"±{_seconds(w.uncertainty_s)}" if approx and w.uncertainty_s else ""
    return TimeCell(text, approx, w.basis.value, plus_minus, at.isoformat())


def _seconds(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    return f"{s:.3g} s"


def ranges(numbers: Iterable[int]) -> str:
    """0,1,2,3,5 -> '0-3,5'."""
    out: list[str] = []
    run: list[int] = []
    for n in sorted(numbers):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(map(str, run)))
        run = [n]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(map(str, run)))
    return ",".join(out)


def utc_text(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
