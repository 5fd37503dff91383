"""Cross-rank matching of Flight Recorder dumps, per process group.

Every rank numbers the collectives of a process group 1, 2, 3 ... (`collective_seq_id`),
so sequence number N on one rank is the same call as N on every other rank of the group.
For each N this says which ranks entered it, which completed it, and which never got
there; where ranks disagree on the operation, the tensor sizes or the dtypes (a desync:
the ranks are no longer running the same program); the last collective every rank
completed; and the ranks behind, with the Python frames their last entry recorded.

Dumps of different jobs must not be matched together: ranks are grouped by what they
say about the job (process groups and their ranks, Flight Recorder version, comm
library, time span) and the largest consistent group is matched; the others are named.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from postmortem.model import Fact, Frame, Ref
from postmortem.parsers.flightrec import FrEntry, RankTrace, Shape

SHOWN_SEQS = 8                 # sequence numbers per group kept for the report's grid
SAME_JOB_GAP_NS = 6 * 3600 * 10**9   # dumps whose recorded spans lie further apart are separate runs


@dataclass(frozen=True, slots=True)
class Cell:
    """One rank at one sequence number."""

    rank: int
    state: str                    # completed | started | waiting (entered, not completed) | not-arrived | no-dump | before-window
    entry: FrEntry | None
    mismatch: str = ""            # what differs from the other ranks (desync)


@dataclass(frozen=True, slots=True)
class Row:
    seq: int
    op: str                       # the operation most ranks called
    shape: str
    cells: tuple[Cell, ...]       # one per expected rank, in rank order

    def ranks(self, *states: str) -> list[int]:
        return [c.rank for c in self.cells if c.state in states]


@dataclass(frozen=True, slots=True)
class Desync:
    seq: int
    rank: int
    expected: str                 # what the other ranks called
    got: str                      # what this rank called
    ref: Ref
    others: tuple[Ref, ...]


@dataclass(frozen=True, slots=True)
class Behind:
    rank: int
    last_seq: int | None          # the last collective it entered (None: none in the window)
    entry: FrEntry | None
    frames: tuple[Frame, ...]
    ref: Ref | None


@dataclass(frozen=True, slots=True)
class GroupMatch:
    pg: str
    desc: str
    ranks: tuple[int, ...]        # expected members
    dumped: tuple[int, ...]       # members whose dump was read
    frontier: int | None          # the highest sequence number any rank entered
    last_all_completed: int | None
    rows: tuple[Row, ...]         # the last SHOWN_SEQS sequence numbers
    behind: tuple[Behind, ...]    # ranks that never entered the frontier collective
    waiting: tuple[int, ...]      # ranks inside the frontier collective, not completed
    stuck_all: bool               # every dumped rank entered the frontier and none completed it
    desyncs: tuple[Desync, ...]
    waiting_refs: tuple[Ref, ...]
    missing_dumps: tuple[int, ...]

    def summary(self) -> str:
        parts = [f"process group {self.pg}{f' ({self.desc})' if self.desc else ''}, ranks {_span(self.ranks)}"]
        if self.last_all_completed is not None:
            parts.append(f"last collective every rank completed: #{self.last_all_completed}")
        if self.desyncs:
            d = self.desyncs[0]
            parts.append(f"desync at #{d.seq}: rank {d.rank} called {d.got} where the others called {d.expected}")
        if self.behind and self.frontier is not None:
            waiting = f"rank(s) {_span(self.waiting)} wait in #{self.frontier} {self._frontier_op()}" if self.waiting else ""
            behind = ", ".join(f"rank {b.rank} (last entered #{b.last_seq})" for b in self.behind[:4])
            parts.append(f"{waiting}{'; ' if waiting else ''}never arrived: {behind}")
        elif self.stuck_all and self.frontier is not None and not self.desyncs:
            parts.append(f"every rank entered #{self.frontier} {self._frontier_op()} and none completed it")
        if self.missing_dumps:
            parts.append(f"no dump from rank(s) {_span(self.missing_dumps)}")
        return "; ".join(parts)

    def _frontier_op(self) -> str:
        row = next((r for r in self.rows if r.seq == self.frontier), None)
        return row.op if row else ""


@dataclass(frozen=True, slots=True)
class Matching:
    groups: tuple[GroupMatch, ...]
    traces: tuple[RankTrace, ...]
    notes: tuple[str, ...]        # dumps left out (other jobs, no rank, duplicates), in words


def traces_of(facts: Iterable[Fact]) -> list[RankTrace]:
    return [f.value for f in facts if f.name == "flightrec.dump" and isinstance(f.value, RankTrace)]


def match(traces: Iterable[RankTrace]) -> Matching:
    traces = list(traces)
    kept, notes = _one_job(traces)
    groups = tuple(g for g in (_match_group(pg, kept) for pg in _group_names(kept)) if g is not None)
    return Matching(groups, tuple(kept), tuple(notes))


# ----------------------------------------------------------------------- one job only

def _job_key(t: RankTrace) -> tuple:
    return (t.version, t.comm_lib_version, tuple(sorted((k, v) for k, v in t.pg_ranks.items())))


def _one_job(traces: list[RankTrace]) -> tuple[list[RankTrace], list[str]]:
    notes: list[str] = []
    placed = [t for t in traces if t.rank is not None]
    for t in traces:
        if t.rank is None:
            notes.append(f"{t.path}: no rank in the file name; left out of the cross-rank matching")
    if not placed:
        return [], notes
    by_key: dict[tuple, list[RankTrace]] = {}
    for t in placed:
        by_key.setdefault(_job_key(t), []).append(t)
    main_key = max(by_key, key=lambda k: len(by_key[k]))
    kept = by_key[main_key]
    for key, ts in by_key.items():
        if key is not main_key:
            notes.append(f"{', '.join(t.path for t in ts[:4])}: process groups / version differ from the other "
                         f"{len(kept)} dump(s) ({_describe_key(key)} vs {_describe_key(main_key)}): another job, left out")
    kept = _one_span(kept, notes)
    seen: dict[int, RankTrace] = {}
    for t in sorted(kept, key=lambda t: t.path):
        if t.rank in seen:
            notes.append(f"{t.path}: a second dump of rank {t.rank} (first: {seen[t.rank].path}); the first is used")
        else:
            seen[t.rank] = t
    return [seen[r] for r in sorted(seen)], notes


def _describe_key(key: tuple) -> str:
    version, lib, pgs = key
    return f"v{version or '?'}{' ' + lib if lib else ''}, {len(pgs)} group(s)"


def _one_span(traces: list[RankTrace], notes: list[str]) -> list[RankTrace]:
    """Dumps whose recorded times lie hours apart are different runs of the job."""
    spans = []
    for t in traces:
        times = [c for c in t.created if c > 0]
        spans.append((min(times), max(times)) if times else None)
    timed = [(s, t) for s, t in zip(spans, traces) if s is not None]
    if len(timed) < 2:
        return traces
    timed.sort(key=lambda x: x[0][1])
    clusters: list[list[tuple]] = [[timed[0]]]
    for s, t in timed[1:]:
        if s[0] - max(x[0][1] for x in clusters[-1]) > SAME_JOB_GAP_NS:
            clusters.append([(s, t)])
        else:
            clusters[-1].append((s, t))
    if len(clusters) == 1:
        return traces
    main = max(clusters, key=lambda c: (len(c), c[-1][0][1]))
    for c in clusters:
        if c is not main:
            notes.append(f"{', '.join(t.path for _, t in c[:4])}: recorded hours apart from the other dumps: "
                         "another run, left out")
    drop = {id(t) for c in clusters if c is not main for _, t in c}
    return [t for t in traces if id(t) not in drop]


# ----------------------------------------------------------------------- one group

def _group_names(traces: list[RankTrace]) -> list[str]:
    names: dict[str, int] = {}
    for t in traces:
        for n in set(t.pg):
            name = t.strings[n]
            names[name] = names.get(name, 0) + 1
    return sorted(names, key=lambda n: (-names[n], n))


def _expected(pg: str, desc: str, traces: list[RankTrace], present: set[int]) -> tuple[int, ...]:
    configs = [t.pg_ranks[pg] for t in traces if t.pg_ranks.get(pg)]
    if configs:
        return tuple(sorted(set(Counter(configs).most_common(1)[0][0]) | present))
    if desc == "default_pg" or pg == "0":   # gloo writes the default group's config under ''
        widest = max((r for t in traces for r in t.pg_ranks.values()), key=len, default=())
        return tuple(sorted(set(widest) | present))
    return tuple(sorted(present))


class _RankView:
    """One rank's collective entries of one group: sequence number -> column index."""

    __slots__ = ("trace", "by_seq", "first", "last")

    def __init__(self, trace: RankTrace, pg_id: int) -> None:
        self.trace = trace
        by_seq: dict[int, int] = {}
        pg_col, seq_col, p2p_col = trace.pg, trace.seq, trace.p2p
        for i in range(len(seq_col)):
            if pg_col[i] == pg_id and not p2p_col[i] and seq_col[i] >= 0:
                by_seq[seq_col[i]] = i
        self.by_seq = by_seq
        self.first = min(by_seq) if by_seq else None
        self.last = max(by_seq) if by_seq else None


def _match_group(pg: str, traces: list[RankTrace]) -> GroupMatch | None:
    views: dict[int, _RankView] = {}
    desc = ""
    for t in traces:
        try:
            pg_id = t.strings.index(pg)
        except ValueError:
            continue
        view = _RankView(t, pg_id)
        if view.by_seq:
            views[t.rank] = view
            if not desc:
                desc = t.strings[t.pg_desc[next(iter(view.by_seq.values()))]]
    if not views:
        return None
    expected = _expected(pg, desc, traces, set(views))
    dumped_all = {t.rank for t in traces}
    missing = tuple(r for r in expected if r not in dumped_all)
    frontier = max(v.last for v in views.values())
    seqs = sorted({s for v in views.values() for s in v.by_seq})
    desyncs = _desyncs(seqs, views)
    last_all = None
    for s in reversed(seqs):
        if all(s in v.by_seq and v.trace.done[v.by_seq[s]] == 2 for v in views.values()):
            last_all = s
            break
    shown = seqs[-SHOWN_SEQS:]
    bad = {(d.seq, d.rank): d for d in desyncs}
    rows = tuple(_row(s, expected, views, dumped_all, bad) for s in shown)
    behind = tuple(_behind(r, views.get(r)) for r in sorted(views) if views[r].last < frontier)
    waiting = tuple(r for r in sorted(views) if views[r].last == frontier
                    and views[r].trace.done[views[r].by_seq[frontier]] < 2)
    stuck_all = not behind and not missing and len(waiting) == len(views)
    waiting_refs = tuple(views[r].trace.entry(views[r].by_seq[frontier]).ref(views[r].trace.path) for r in waiting[:3])
    return GroupMatch(pg=pg, desc=desc, ranks=expected, dumped=tuple(sorted(views)), frontier=frontier,
                      last_all_completed=last_all, rows=rows, behind=behind, waiting=waiting, stuck_all=stuck_all,
                      desyncs=tuple(desyncs), waiting_refs=waiting_refs, missing_dumps=missing)


def _call(v: _RankView, i: int) -> tuple[str, Shape]:
    t = v.trace
    return t.strings[t.op[i]], t.shapes[t.shape[i]]


def _desyncs(seqs: list[int], views: dict[int, _RankView]) -> list[Desync]:
    out: list[Desync] = []
    for s in seqs:
        calls = {r: _call(v, v.by_seq[s]) for r, v in views.items() if s in v.by_seq}
        if len(calls) < 2:
            continue
        kinds = Counter(calls.values())
        if len(kinds) == 1:
            continue
        (op, shape), _ = kinds.most_common(1)[0]
        usual = [r for r, c in calls.items() if c == (op, shape)]
        for r, (got_op, got_shape) in sorted(calls.items()):
            if (got_op, got_shape) == (op, shape):
                continue
            what = _difference(op, shape, got_op, got_shape)
            v = views[r]
            others = tuple(views[o].trace.entry(views[o].by_seq[s]).ref(views[o].trace.path) for o in usual[:2])
            out.append(Desync(s, r, f"{op} {shape.describe()}", f"{got_op} {got_shape.describe()}",
                              v.trace.entry(v.by_seq[s]).ref(v.trace.path), others))
            if len(out) >= 64:
                return out
    return out


def _difference(op: str, shape: Shape, got_op: str, got_shape: Shape) -> str:
    if op != got_op:
        return "operation"
    if shape.in_dtypes != got_shape.in_dtypes or shape.out_dtypes != got_shape.out_dtypes:
        return "dtype"
    return "sizes"


def _row(seq: int, expected: tuple[int, ...], views: dict[int, _RankView], dumped: set[int],
         bad: dict[tuple[int, int], Desync]) -> Row:
    cells = []
    ops: Counter = Counter()
    for r in expected:
        v = views.get(r)
        if r not in dumped:
            cells.append(Cell(r, "no-dump", None))
            continue
        if v is None or v.last is None or seq > v.last:
            cells.append(Cell(r, "not-arrived", None))
            continue
        if seq not in v.by_seq:
            cells.append(Cell(r, "before-window", None))
            continue
        i = v.by_seq[seq]
        e = v.trace.entry(i)
        ops[(e.op, e.shape.describe())] += 1
        state = "completed" if e.completed else "started" if e.started else "waiting"
        d = bad.get((seq, r))
        cells.append(Cell(r, state, e, d.got if d else ""))
    (op, shape), _ = ops.most_common(1)[0] if ops else (("?", ""), 0)
    return Row(seq, op, shape, tuple(cells))


def _behind(rank: int, view: _RankView | None) -> Behind:
    if view is None or view.last is None:
        return Behind(rank, None, None, (), None)
    e = view.trace.entry(view.by_seq[view.last])
    return Behind(rank, view.last, e, e.frames, e.ref(view.trace.path))


def _span(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    rs = sorted(set(ranks))
    out, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ",".join(out)
