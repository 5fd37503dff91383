"""The timeline as the reports draw it: collapsed rows, swimlanes and marks.

Events fold into rows with `rows.shape` (the same folding as the JSON
`timeline_rows`): the same message from 64 ranks is one row.  Each row's events in
one lane become one mark, so a million repeated lines cost a handful of marks.

Big bundles stay small: every row holding a root, warning or error event is kept;
the other rows are capped and the cut is counted, so the report can say how many
it left out.  Nothing here formats HTML; `svg.py` and the templates do that.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable

from postmortem.knowledge import registry
from postmortem.model import Analysis, Basis, Event, Ref, Severity
from postmortem.report.rows import shape, shown_events
from postmortem.timeline import sort_key

# Where an event came from: the labels, and the label of each kind prefix in signals.toml [source].
SOURCES = ("kernel", "nccl", "python", "launcher", "core", "messages", "system")
SEVERITY_ORDER = {Severity.DEBUG: 0, Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3, Severity.FATAL: 4}
SEVERE = frozenset({Severity.WARNING, Severity.ERROR, Severity.FATAL})

MAX_INFO_ROWS = 400      # rows without a root, warning or error event, beyond which rows are cut
MAX_OCCURRENCES = 12     # single events listed when a row is expanded
MAX_LANES = 32           # more lanes are merged into one "other" lane
MAX_INFO_MARKS = 1500    # info marks drawn; root and severe marks are always drawn

PLACED, UNPLACED = "placed", "unplaced"
OTHER_LANE = ("~other",)


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
    view = _build(analysis, cited)
    _last = (analysis, cited, view)
    return view


def _build(analysis: Analysis, cited: tuple[Ref, ...]) -> TimelineView:
    verdict = analysis.verdict
    root_keys = {ref_key(r) for r in (verdict.root.evidence if verdict.root else ())}
    root_seq = verdict.root.first_seq if verdict.root else None
    cited_keys = {ref_key(r) for r in cited}
    builder = _Builder(root_keys, root_seq, cited_keys)
    builder.window = _window(analysis)
    for event in sorted(shown_events(analysis.case.events), key=sort_key):
        builder.add(event)
    return builder.finish()


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


class _Builder:
    """One pass over the sorted events; keeps only aggregates, so memory follows rows, not events."""

    def __init__(self, root_keys: set, root_seq: int | None, cited_keys: set) -> None:
        self.root_keys, self.root_seq, self.cited_keys = root_keys, root_seq, cited_keys
        self.rows: dict[tuple[str, str], Row] = {}
        self.marks: dict[tuple, Mark] = {}
        self.lane_keys: set[tuple] = set()
        self.row_of_ref: dict[tuple, Row] = {}
        self.events = 0
        self.unplaced = 0
        self.t_min = self.t_max = None
        self.job_span: list[float] = []      # [min, max] of the job's placed events
        self.history_span: list[float] = []
        self.folded: dict[str, int] = {}
        self.window: tuple[float | None, float | None] = (None, None)

    def add(self, e: Event) -> None:
        self.events += 1
        row = self._row(e)
        is_root = self._is_root(e)
        row.is_root = row.is_root or is_root
        key = ref_key(e.ref)
        if key in self.cited_keys and key not in self.row_of_ref:
            self.row_of_ref[key] = row
            row.cited = True
        lane_key = _lane_key(e)
        self.lane_keys.add(lane_key)
        self._mark(row, lane_key, e, is_root)

    def _row(self, e: Event) -> Row:
        context = str(e.data.get("context") or "")
        key = (*shape(e), context)
        if context:
            self.folded[context] = self.folded.get(context, 0) + 1
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = Row(len(self.rows) + 1, e.kind, source_of(e.kind), e.severity, e.text, e, e,
                                       context=context)
        row.count += 1
        row.last = e
        if SEVERITY_ORDER[e.severity] > SEVERITY_ORDER[row.severity]:
            row.severity = e.severity
        if e.rank is not None:
            row.ranks.add(e.rank)
        if e.host:
            row.hosts.add(e.host)
        if len(row.sample) < MAX_OCCURRENCES:
            row.sample.append(e)
        return row

    def _is_root(self, e: Event) -> bool:
        return ref_key(e.ref) in self.root_keys or (self.root_seq is not None and e.seq == self.root_seq)

    def _mark(self, row: Row, lane_key: tuple, e: Event, is_root: bool) -> None:
        at = e.when.at if e.when else None
        if at is not None:
            band, position = PLACED, at.timestamp()
            uncertainty = (e.when.uncertainty_s or 0.0) if e.when.basis is not Basis.MEASURED else 0.0
            self.t_min = min(self.t_min, position - uncertainty) if self.t_min is not None else position - uncertainty
            self.t_max = max(self.t_max, position + uncertainty) if self.t_max is not None else position + uncertainty
            span = self.history_span if row.context else self.job_span
            span[:] = [min(span[0], position), max(span[1], position)] if span else [position, position]
        else:
            band, position, uncertainty = UNPLACED, float(self.unplaced), 0.0
            self.unplaced += 1
        mark = self.marks.get((row.number, lane_key, band))
        if mark is None:
            mark = self.marks[(row.number, lane_key, band)] = Mark(row, lane_key, band, position, position,
                                                                   context=bool(row.context))
        mark.first, mark.last = min(mark.first, position), max(mark.last, position)
        mark.uncertainty = max(mark.uncertainty, uncertainty)
        mark.count += 1
        mark.is_root = mark.is_root or is_root

    def finish(self) -> TimelineView:
        lanes, lane_number = _number_lanes(self.lane_keys, self.marks.values())
        # Processes merged into one drawn lane ("other lanes") share one mark per row and
        # band: thousands of ranks printing the same WARN are one span, not thousands of dots.
        drawn: dict[tuple, Mark] = {}
        for mark in self.marks.values():
            mark.lane = lane_number[mark.lane_key]
            mark.row.lanes.add(mark.lane)
            key = (mark.row.number, mark.lane, mark.band)
            same = drawn.get(key)
            if same is None:
                drawn[key] = mark
                continue
            same.first, same.last = min(same.first, mark.first), max(same.last, mark.last)
            same.uncertainty = max(same.uncertainty, mark.uncertainty)
            same.count += mark.count
            same.is_root = same.is_root or mark.is_root
        rows, cut_rows = _keep_rows(list(self.rows.values()))
        marks, cut_marks = _keep_marks(drawn.values(), {r.number for r in rows})
        present = {r.source for r in self.rows.values()}
        placed = (self.t_min, self.t_max) if self.t_min is not None else None
        return TimelineView(rows, lanes, marks, self.events, cut_rows, cut_marks, placed, self.unplaced,
                            self.row_of_ref, [s for s in SOURCES if s in present],
                            self._job_range(), tuple(self.history_span) if self.history_span else None,  # type: ignore[arg-type]
                            dict(self.folded))

    def _job_range(self) -> tuple[float, float] | None:
        """The job's placed events, widened to its window (job.start/job.end facts)."""
        lo, hi = self.window
        points = list(self.job_span) + [t for t in (lo, hi) if t is not None]
        return (min(points), max(points)) if points else None


def _lane_key(e: Event) -> tuple:
    """One swimlane per process (the timeline joined its rank, pid and host aliases), per
    host for a host's other lines; events that name none get their artifact's lane."""
    if e.rank is not None or e.pid is not None:
        return ("id", e.host or "", 0 if e.rank is not None else 1, e.rank if e.rank is not None else -1,
                e.pid if e.pid is not None else -1)
    if e.host:
        return ("id", e.host, 2, -1, -1)
    return ("file", e.ref.path)


def lane_of(e: Event) -> str:
    """The lane an event is drawn in, by name: `host · rank N · pid P`."""
    return lane_label(_lane_key(e))


def lane_label(key: tuple) -> str:
    if key == OTHER_LANE:
        return "other lanes"
    if key[0] == "file":
        return key[1]
    _, host, _what, rank, pid = key
    parts = [host, f"rank {rank}" if rank >= 0 else "", f"pid {pid}" if pid >= 0 else ""]
    return " · ".join(p for p in parts if p)


def _number_lanes(keys: set[tuple], marks: Iterable[Mark]) -> tuple[list[Lane], dict[tuple, int]]:
    """Lanes sorted (hosts and ranks first, then files); past MAX_LANES the quiet ones merge.

    Lanes holding a root or severe mark are kept before quiet ones, so a fault never hides
    in the merged lane."""
    loud = {m.lane_key for m in marks if m.is_root or m.row.severity in SEVERE}
    ordered = sorted(keys, key=lambda k: (k[0] != "id", k[1:]))
    if len(ordered) > MAX_LANES:
        chosen = [k for k in ordered if k in loud][: MAX_LANES - 1]
        chosen += [k for k in ordered if k not in loud][: MAX_LANES - 1 - len(chosen)]
        chosen = [k for k in ordered if k in set(chosen)]
        numbers = {k: i for i, k in enumerate(chosen)}
        other = len(chosen)
        lane_number = {k: numbers.get(k, other) for k in keys}
        lanes = [Lane(i, lane_label(k)) for i, k in enumerate(chosen)] + [Lane(other, f"other lanes ({len(keys) - len(chosen)})")]
        return lanes, lane_number
    lane_number = {k: i for i, k in enumerate(ordered)}
    return [Lane(i, lane_label(k)) for i, k in enumerate(ordered)], lane_number


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
