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

from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, replace
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
            behind = ", ".join(f"rank {b.rank} (last entered #{b.last_seq})" if b.last_seq is not None
                               else f"rank {b.rank} (entered none)" for b in self.behind[:4])
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
    call_ids: dict = {}
    by_group: dict[str, dict[int, _RankView]] = {}
    for t in kept:
        for g, rows in _RankView.rows_by_group(t).items():
            by_group.setdefault(t.strings[g], {})[t.rank] = _RankView(t, rows, call_ids)
    calls = {v: k for k, v in call_ids.items()}
    names = sorted(by_group, key=lambda n: (-len(by_group[n]), n))
    groups = tuple(_match_group(pg, by_group[pg], kept, calls) for pg in names)
    groups, held = _held_in_other_groups(groups)
    return Matching(groups, tuple(kept), tuple(notes) + held)


def _held_in_other_groups(groups: tuple[GroupMatch, ...]) -> tuple[tuple[GroupMatch, ...], tuple[str, ...]]:
    """A rank that never entered group A's collective is not "behind" when it waits inside
    another group's collective that every member of that group entered and none completed:
    it is held there, and the hang is that group's (audit 7 M6: a subgroup's collective stuck
    on a partition between two of its members keeps them out of the world's next one)."""
    stuck = {r: g for g in groups if g.stuck_all and len(g.dumped) >= 2 for r in g.waiting}
    out, notes = [], []
    for g in groups:
        held = [b for b in g.behind if b.rank in stuck and stuck[b.rank] is not g]
        if held:
            other = stuck[held[0].rank]
            notes.append(f"process group {g.pg}: rank(s) {_span(b.rank for b in held)} did not enter #{g.frontier} "
                         f"because they wait in process group {other.pg}'s #{other.frontier}, which all its members "
                         "entered and none completed: not behind")
            g = replace(g, behind=tuple(b for b in g.behind if b not in held))
        out.append(g)
    return tuple(out), tuple(notes)


# ----------------------------------------------------------------------- one job only

def _job_key(t: RankTrace) -> tuple:
    return (t.version, t.comm_lib_version)


def _consistent(t: RankTrace, groups: dict[str, tuple]) -> bool:
    """One job's dumps agree on every group they both name with its ranks: a member of a
    subgroup records that group too, and gloo records the default group's ranks on some ranks
    only (an empty list elsewhere) -- so equal pg_ranks is no test of one job (audit 7 M6)."""
    return all(not ranks or not groups.get(name) or tuple(groups[name]) == tuple(ranks)
               for name, ranks in t.pg_ranks.items())


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
            notes.append(f"{', '.join(t.path for t in ts[:4])}: version differs from the other "
                         f"{len(kept)} dump(s) ({_describe_key(key)} vs {_describe_key(main_key)}): another job, left out")
    # the groups most dumps agree on; a dump naming one of them with other ranks is another job's
    groups: dict[str, tuple] = {}
    for name in {n for t in kept for n in t.pg_ranks}:
        seen = Counter(tuple(t.pg_ranks[name]) for t in kept if t.pg_ranks.get(name))
        if seen:
            groups[name] = seen.most_common(1)[0][0]
    other = [t for t in kept if not _consistent(t, groups)]
    if other:
        notes.append(f"{', '.join(t.path for t in other[:4])}: process groups differ from the other "
                     f"{len(kept) - len(other)} dump(s) (the same group with other ranks): another job, left out")
        kept = [t for t in kept if t not in other]
    kept = _one_span(kept, notes)
    seen: dict[int, RankTrace] = {}
    for t in sorted(kept, key=lambda t: t.path):
        if t.rank in seen:
            notes.append(f"{t.path}: a second dump of rank {t.rank} (first: {seen[t.rank].path}); the first is used")
        else:
            seen[t.rank] = t
    return [seen[r] for r in sorted(seen)], notes


def _describe_key(key: tuple) -> str:
    version, lib = key
    return f"v{version or '?'}{' ' + lib if lib else ''}"


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

def _expected(pg: str, desc: str, traces: list[RankTrace], present: set[int]) -> tuple[int, ...]:
    configs = [t.pg_ranks[pg] for t in traces if t.pg_ranks.get(pg)]
    if configs:
        return tuple(sorted(set(Counter(configs).most_common(1)[0][0]) | present))
    if desc == "default_pg" or pg == "0":   # gloo writes the default group's config under ''
        widest = max((r for t in traces for r in t.pg_ranks.values()), key=len, default=())
        return tuple(sorted(set(widest) | present))
    return tuple(sorted(present))


# What torch's Flight Recorder analyser compares between ranks at one collective (torch 2.13
# torch/distributed/flight_recorder/components/types.py Op.match / dtype_mismatch): input sizes
# except for all_to_all and scatter, output sizes except for all_to_all and gather (their
# per-rank sizes differ by design: uneven splits, the root's list), input dtypes except for
# scatter and broadcast, output dtypes except for gather (audit 6 H11).
_SIZES_PER_RANK = {"in": ("all_to_all", "scatter"), "out": ("all_to_all", "gather")}
_DTYPES_PER_RANK = {"in": ("scatter", "broadcast"), "out": ("gather",)}


def comparable(op: str, shape: Shape) -> tuple[str, Shape]:
    """(op, the parts of its shape that must agree across ranks)."""
    base = op.split(" ", 1)[0]
    family = "all_to_all" if base.startswith(("all_to_all", "alltoall")) else base
    if family not in _SIZES_PER_RANK["in"] + _SIZES_PER_RANK["out"] + _DTYPES_PER_RANK["in"]:
        return op, shape
    return op, Shape(() if family in _SIZES_PER_RANK["in"] else shape.in_sizes,
                     () if family in _DTYPES_PER_RANK["in"] else shape.in_dtypes,
                     () if family in _SIZES_PER_RANK["out"] else shape.out_sizes,
                     () if family in _DTYPES_PER_RANK["out"] else shape.out_dtypes)


class _RankView:
    """One rank's collective entries of one group, ordered by sequence number; looked up by
    offset when the numbers are contiguous (the usual case), else by bisection."""

    __slots__ = ("trace", "seqs", "rows", "first", "last", "contiguous", "calls")

    def __init__(self, trace: RankTrace, rows: list[int], call_ids: dict) -> None:
        self.trace = trace
        seq_col = trace.seq
        seqs = [seq_col[i] for i in rows]
        if any(a >= b for a, b in zip(seqs, seqs[1:])):     # out of order or repeated: sort, later wins
            by_seq = dict(sorted(zip(seqs, rows)))
            seqs, rows = list(by_seq), list(by_seq.values())
        self.seqs = array("q", seqs)
        self.rows = array("i", rows)
        self.first = self.seqs[0] if seqs else None
        self.last = self.seqs[-1] if seqs else None
        self.contiguous = bool(seqs) and self.last - self.first == len(seqs) - 1
        # (operation, sizes, dtypes) as one int shared by all ranks, so ranks compare by number
        keys = list(zip([trace.op[i] for i in rows], [trace.shape[i] for i in rows]))
        local = {key: call_ids.setdefault(comparable(trace.strings[key[0]], trace.shapes[key[1]]), len(call_ids))
                 for key in set(keys)}
        self.calls = array("i", map(local.__getitem__, keys))

    @staticmethod
    def rows_by_group(trace: RankTrace) -> dict[int, list[int]]:
        """Column indexes of the collective (not p2p) entries of each group, in dump order."""
        out: dict[int, list[int]] = {}
        for i, (g, seq, p2p) in enumerate(zip(trace.pg, trace.seq, trace.p2p)):
            if not p2p and seq >= 0:
                rows = out.get(g)
                if rows is None:
                    rows = out[g] = []
                rows.append(i)
        return out

    def pos(self, seq: int) -> int:
        """Position of `seq` in this view, or -1."""
        if self.first is None or seq < self.first or seq > self.last:
            return -1
        if self.contiguous:
            return seq - self.first
        j = bisect_left(self.seqs, seq)
        return j if j < len(self.seqs) and self.seqs[j] == seq else -1

    def row(self, seq: int) -> int:
        """Column index in the trace of `seq`, or -1."""
        j = self.pos(seq)
        return self.rows[j] if j >= 0 else -1

    def __contains__(self, seq: int) -> bool:
        return self.pos(seq) >= 0


def _match_group(pg: str, views: dict[int, _RankView], traces: list[RankTrace], calls: dict[int, tuple]) -> GroupMatch:
    views = dict(sorted(views.items()))
    first = next(iter(views.values()))
    desc = first.trace.strings[first.trace.pg_desc[first.rows[0]]]
    expected = _expected(pg, desc, traces, set(views))
    dumped_all = {t.rank for t in traces}
    missing = tuple(r for r in expected if r not in dumped_all)
    frontier = max(v.last for v in views.values())
    lowest = min(v.first for v in views.values())
    desyncs = _desyncs(lowest, frontier, views, calls)
    last_all = None
    # Only numbers some rank recorded: the dump's numbers are bundle data, and a gap of 10**12
    # between two of them must not be walked.
    present = _present_seqs(views)
    for s in reversed(present):
        if all(v.trace.done[i] == 2 if (i := v.row(s)) >= 0 else False for v in views.values()):
            last_all = s
            break
    seen = present[-SHOWN_SEQS:][::-1]
    bad = {(d.seq, d.rank): d for d in desyncs}
    rows = tuple(_row(s, expected, views, dumped_all, bad) for s in reversed(seen))
    behind = tuple(_behind(r, views[r]) for r in sorted(views) if views[r].last < frontier)
    # A member whose own dump holds no entry of this group at all had issued none of its
    # collectives: the process was alive to write the dump (torch's Flight Recorder dumps from
    # the rank's own process) and never got to #1 -- behind, not unknown (a rank with no dump is).
    behind += tuple(_never_entered(t) for t in traces
                    if t.rank in expected and t.rank not in views and not t.problems and len(t.seq) == 0)
    behind = tuple(sorted(behind, key=lambda b: b.rank))
    waiting = tuple(r for r in sorted(views) if views[r].last == frontier
                    and views[r].trace.done[views[r].row(frontier)] < 2)
    stuck_all = not behind and not missing and len(waiting) == len(views)
    waiting_refs = tuple(_entry(views[r], frontier).ref(views[r].trace.path) for r in waiting[:3])
    return GroupMatch(pg=pg, desc=desc, ranks=expected, dumped=tuple(sorted(views)), frontier=frontier,
                      last_all_completed=last_all, rows=rows, behind=behind, waiting=waiting, stuck_all=stuck_all,
                      desyncs=tuple(desyncs), waiting_refs=waiting_refs, missing_dumps=missing)


def _entry(v: _RankView, seq: int) -> FrEntry:
    return v.trace.entry(v.row(seq))


def _present_seqs(views: dict[int, _RankView]) -> list[int]:
    """Every sequence number some rank recorded, ascending."""
    return sorted(set().union(*(v.seqs for v in views.values())))


def _suspect_seqs(lowest: int, frontier: int, views: dict[int, _RankView]) -> list[int]:
    """Sequence numbers where some rank's call differs from the first rank's: whole runs of
    numbers are compared as arrays (C speed); only differing runs are walked one by one."""
    ref = next(iter(views.values()))
    if not ref.contiguous:
        return _present_seqs(views)
    out: set[int] = set()
    for v in views.values():
        if v is ref:
            continue
        if not v.contiguous:
            return _present_seqs(views)
        lo, hi = max(v.first, ref.first), min(v.last, ref.last)
        if lo > hi:
            continue
        mine, theirs = v.calls[lo - v.first:hi - v.first + 1], ref.calls[lo - ref.first:hi - ref.first + 1]
        if mine != theirs:
            out.update(lo + j for j, (a, b) in enumerate(zip(mine, theirs)) if a != b)
    return sorted(out)


def _desyncs(lowest: int, frontier: int, views: dict[int, _RankView], calls: dict[int, tuple]) -> list[Desync]:
    """Sequence numbers where the ranks' (operation, sizes, dtypes) differ; the usual call is
    the one most ranks made."""
    out: list[Desync] = []
    items = list(views.items())
    for s in _suspect_seqs(lowest, frontier, views):
        ids = []
        for r, v in items:
            j = v.pos(s)
            if j >= 0:
                ids.append((r, v.calls[j]))
        if len(ids) < 2 or all(c == ids[0][1] for _, c in ids):
            continue
        usual_id, _ = Counter(c for _, c in ids).most_common(1)[0]
        op, shape = calls[usual_id]
        usual = [r for r, c in ids if c == usual_id]
        for r, c in ids:
            if c == usual_id:
                continue
            got_op, got_shape = calls[c]
            others = tuple(_entry(views[o], s).ref(views[o].trace.path) for o in usual[:2])
            out.append(Desync(s, r, f"{op} {shape.describe()}", f"{got_op} {got_shape.describe()}",
                              _entry(views[r], s).ref(views[r].trace.path), others))
            if len(out) >= 64:
                return out
    return out


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
        i = v.row(seq)
        if i < 0:
            cells.append(Cell(r, "before-window", None))
            continue
        e = v.trace.entry(i)
        ops[(e.op, e.shape.describe())] += 1
        state = "completed" if e.completed else "started" if e.started else "waiting"
        d = bad.get((seq, r))
        cells.append(Cell(r, state, e, d.got if d else ""))
    (op, shape), _ = ops.most_common(1)[0] if ops else (("?", ""), 0)
    return Row(seq, op, shape, tuple(cells))


def _never_entered(trace: RankTrace) -> Behind:
    return Behind(trace.rank, None, None, (), Ref(trace.path, record="entries", text="no entries: no collective issued"))


def _behind(rank: int, view: _RankView) -> Behind:
    e = _entry(view, view.last)
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
