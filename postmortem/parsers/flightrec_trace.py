"""One rank's Flight Recorder dump in columns (`RankTrace`), and how its entries are read
into them through a fixed schema (see flightrec.py for the format).

1,024 ranks x 2,000 entries must fit in a few hundred MB, so a dump is kept column by
column with interned strings, shapes and stacks; `FrEntry` is one entry built on demand.
Every field is optional, typed and capped (known keys, checked types, capped lengths), so
no deep or odd structure of an untrusted dump reaches the rest of the tool.
"""
from __future__ import annotations

import marshal
from array import array
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Iterator

from postmortem.model import Frame, Ref

MAX_FRAMES = 64                # per entry
MAX_DIMS = 64                  # tensors per entry, and dimensions per tensor
MAX_TEXT = 512                 # characters of any string kept
TAIL_FRAMES = 256              # the last entries of a dump whose Python frames are kept (fast path)

STATES = ("scheduled", "started", "completed")
DONE_STATE = 2


@dataclass(frozen=True, slots=True)
class Shape:
    in_sizes: tuple[tuple[int, ...], ...]
    in_dtypes: tuple[str, ...]
    out_sizes: tuple[tuple[int, ...], ...]
    out_dtypes: tuple[str, ...]

    def describe(self) -> str:
        def sizes(s):
            return ",".join("x".join(map(str, t)) or "scalar" for t in s) or "-"
        return f"in {sizes(self.in_sizes)} {'/'.join(self.in_dtypes) or '-'} -> out {sizes(self.out_sizes)}"


@dataclass(frozen=True, slots=True)
class FrEntry:
    """One recorded collective, built on demand from a RankTrace's columns."""

    index: int                    # position in the dump's `entries`
    record_id: int | None
    pg: str                       # process group name (process_group[0], else pg_id)
    pg_desc: str
    seq: int | None               # collective_seq_id (None for p2p-only entries in old dumps)
    p2p_seq: int | None
    op: str                       # profiling_name without the backend: all_reduce, broadcast, send 0->1
    backend: str                  # nccl, gloo, ...
    state: str                    # as recorded
    completed: bool               # by state, or by pg_status (gloo)
    started: bool
    shape: Shape
    created_ns: int | None
    started_ns: int | None
    completed_ns: int | None
    timeout_ms: int | None
    retired: bool | None
    is_p2p: bool
    frames: tuple[Frame, ...]     # innermost first, as recorded

    def ref(self, path: str) -> Ref:
        return Ref(path, record=f"entries[{self.index}]", text=self.describe())

    def describe(self) -> str:
        where = f"seq {self.seq}" if self.seq is not None else f"p2p seq {self.p2p_seq}"
        state = "completed" if self.completed else self.state
        return (f"entries[{self.index}] record_id {self.record_id}: pg {self.pg} {where} "
                f"{self.backend + ':' if self.backend else ''}{self.op} {self.shape.describe()} {state}")


@dataclass
class RankTrace:
    """One rank's dump, column by column (see module docstring for why)."""

    path: str
    rank: int | None
    version: str
    comm_lib_version: str
    host: str | None = None
    pg_ranks: dict[str, tuple[int, ...]] = field(default_factory=dict)   # pg name -> global ranks
    pg_status: dict[str, dict[str, int]] = field(default_factory=dict)   # pg_id -> last_* counters
    problems: list[str] = field(default_factory=list)
    # interned values
    strings: list[str] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)
    stacks: list[tuple[Frame, ...]] = field(default_factory=list)
    # columns, one item per kept entry
    index: array = field(default_factory=lambda: array("i"))
    record_id: array = field(default_factory=lambda: array("q"))
    pg: array = field(default_factory=lambda: array("i"))
    pg_desc: array = field(default_factory=lambda: array("i"))
    seq: array = field(default_factory=lambda: array("q"))
    p2p_seq: array = field(default_factory=lambda: array("q"))
    op: array = field(default_factory=lambda: array("i"))
    backend: array = field(default_factory=lambda: array("i"))
    state: array = field(default_factory=lambda: array("i"))
    done: array = field(default_factory=lambda: array("b"))       # 0 no, 1 started, 2 completed
    shape: array = field(default_factory=lambda: array("i"))
    created: array = field(default_factory=lambda: array("q"))
    started: array = field(default_factory=lambda: array("q"))
    completed: array = field(default_factory=lambda: array("q"))
    timeout: array = field(default_factory=lambda: array("q"))
    retired: array = field(default_factory=lambda: array("b"))
    p2p: array = field(default_factory=lambda: array("b"))
    frames: array = field(default_factory=lambda: array("i"))

    def __len__(self) -> int:
        return len(self.seq)

    def __str__(self) -> str:
        groups = len(set(self.pg))
        return (f"Flight Recorder dump v{self.version or '?'} of rank {self.rank if self.rank is not None else '?'}: "
                f"{len(self)} entries in {groups} process group(s)")

    __repr__ = __str__

    def entry(self, i: int) -> FrEntry:
        s = self.strings
        opt = _opt
        return FrEntry(
            index=self.index[i], record_id=opt(self.record_id[i]), pg=s[self.pg[i]], pg_desc=s[self.pg_desc[i]],
            seq=opt(self.seq[i]), p2p_seq=opt(self.p2p_seq[i]), op=s[self.op[i]], backend=s[self.backend[i]],
            state=s[self.state[i]], completed=self.done[i] == 2, started=self.done[i] >= 1,
            shape=self.shapes[self.shape[i]], created_ns=opt(self.created[i]), started_ns=opt(self.started[i]),
            completed_ns=opt(self.completed[i]), timeout_ms=opt(self.timeout[i]),
            retired=None if self.retired[i] < 0 else bool(self.retired[i]), is_p2p=bool(self.p2p[i]),
            frames=self.stacks[self.frames[i]])

    def entries(self) -> Iterator[FrEntry]:
        return (self.entry(i) for i in range(len(self)))


def _opt(value: int) -> int | None:
    return None if value < 0 else value


_REQUIRED = ("profiling_name", "collective_seq_id", "state", "time_created_ns", "pg_id", "process_group",
             "input_sizes", "input_dtypes", "output_sizes", "output_dtypes")
_GET_REQUIRED = itemgetter(*_REQUIRED)
_OPTIONAL = ("time_discovered_started_ns", "time_discovered_completed_ns", "record_id", "p2p_seq_id", "timeout_ms",
             "retired", "is_p2p")
_GET_OPTIONAL = itemgetter(*_OPTIONAL)


def _marshal2(value: Any) -> bytes:
    return marshal.dumps(value, 2)


def _fill_fast(trace: RankTrace, entries: list, offset: int, statuses: dict[str, dict[str, int]]) -> bool:
    """The columns of a well-formed dump (every entry has the fields torch 2.3+ writes, with
    their usual types), built with C-level maps instead of a Python loop per field: 2,000
    entries in a few ms.  Python frames are kept for the last TAIL_FRAMES entries only (what
    any report shows).  Returns False, leaving `trace` untouched, at the first surprise; the
    careful per-entry reader then does the work."""
    try:
        rows = list(map(_GET_REQUIRED, entries))
        if not rows:
            return False
        names, seqs, states, created, pg_ids, pgs, isz, idt, osz, odt = zip(*rows)
        if not (set(map(type, names)) == {str} and set(map(type, states)) == {str}
                and set(map(type, pgs)) <= {tuple, list} and set(map(type, pg_ids)) == {int}):
            return False
        seq_col = array("q", seqs)
        created_col = array("q", [-1 if c is None or c <= 0 else c for c in created])
        n = len(rows)
        try:   # the fields every 2.x dump has; older dumps lack some: one .get per entry then
            optional = list(zip(*map(_GET_OPTIONAL, entries)))
        except KeyError:
            optional = [[e.get(k) for e in entries] for k in _OPTIONAL]
        started, completed, record, p2p_seq, timeout, retired, is_p2p = optional
        started_col = array("q", [-1 if c is None or c <= 0 else c for c in started])
        completed_col = array("q", [-1 if c is None or c <= 0 else c for c in completed])
        record_col = array("q", [-1 if c is None else c for c in record])
        p2p_seq_col = array("q", [-1 if c is None else c for c in p2p_seq])
        timeout_col = array("q", [-1 if c is None else c for c in timeout])
        retired_col = array("b", [-1 if r is None else int(r) for r in retired])
        # marshal version 2 (no back-references): equal values give equal bytes, 3x faster than repr
        shape_keys = list(map(_marshal2, zip(isz, idt, osz, odt)))
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError, RecursionError, MemoryError):
        return False
    strings: list[str] = []
    intern: dict[str, int] = {}

    def sid(text: str) -> int:
        text = text[:MAX_TEXT]
        k = intern.get(text)
        if k is None:
            k = intern[text] = len(strings)
            strings.append(text)
        return k

    name_ids: dict[str, tuple[int, int, bool]] = {}
    for name in set(names):
        backend, _, op = name.partition(":") if ":" in name else ("", "", name)
        name_ids[name] = (sid(op), sid(backend), op.split(" ")[0] in ("send", "recv"))
    pg_ids_map: dict = {}
    for pg in set(map(tuple, pgs)):
        if not pg or not all(isinstance(x, str) for x in pg):
            return False
        pg_ids_map[pg] = (sid(pg[0]), sid(pg[1] if len(pg) > 1 else ""))
    state_ids = {st: sid(st) for st in set(states)}
    shapes: list[Shape] = []
    shape_ids: dict[str, int] = {}
    first_of = dict(zip(reversed(shape_keys), range(n - 1, -1, -1)))   # key -> its first entry
    for key, i in first_of.items():
        e = entries[i]
        shape_ids[key] = len(shapes)
        shapes.append(Shape(_sizes(e["input_sizes"]), _dtypes(e["input_dtypes"]),
                            _sizes(e["output_sizes"]), _dtypes(e["output_dtypes"])))
    p2p_col = array("b", [int(p) if isinstance(p, bool) else int(name_ids[nm][2]) for p, nm in zip(is_p2p, names)])
    # completion: the recorded state, else the group's pg_status counters (gloo)
    last_done = {g: statuses.get(str(g), {}).get("last_completed_collective", -1) for g in set(pg_ids)}
    last_started = {g: statuses.get(str(g), {}).get("last_started_collective", -1) for g in set(pg_ids)}
    done = array("b", [2 if st == "completed" or (not p2p and 0 <= seq <= last_done[g])
                       else 1 if st == "started" or (not p2p and 0 <= seq <= last_started[g]) else 0
                       for st, seq, g, p2p in zip(states, seq_col, pg_ids, p2p_col)])
    stacks: list[tuple[Frame, ...]] = [()]
    stack_ids: dict = {}
    frame_cache: dict = {}
    frames_col = array("i", bytes(4 * n))
    for i in range(max(0, n - TAIL_FRAMES), n):
        frames = entries[i].get("frames")
        # torch pickles each distinct frame once and refers to it after, so within this load
        # the frame dicts' identities are a cheap key for "the same stack"
        key = tuple(map(id, frames[:MAX_FRAMES])) if isinstance(frames, list) else None
        k = stack_ids.get(key)
        if k is None:
            k = stack_ids[key] = len(stacks)
            stacks.append(_frames(frames, frame_cache))
        frames_col[i] = k
    trace.strings, trace.shapes, trace.stacks = strings, shapes, stacks
    trace.index = array("i", range(offset, offset + n))
    trace.record_id, trace.seq, trace.p2p_seq = record_col, seq_col, p2p_seq_col
    pg_of = [pg_ids_map[p if type(p) is tuple else tuple(p)] for p in pgs]
    trace.pg = array("i", [p[0] for p in pg_of])
    trace.pg_desc = array("i", [p[1] for p in pg_of])
    name_of = list(map(name_ids.__getitem__, names))
    trace.op = array("i", [x[0] for x in name_of])
    trace.backend = array("i", [x[1] for x in name_of])
    trace.state = array("i", map(state_ids.__getitem__, states))
    trace.done, trace.shape = done, array("i", map(shape_ids.__getitem__, shape_keys))
    trace.created, trace.started, trace.completed = created_col, started_col, completed_col
    trace.timeout, trace.retired, trace.p2p, trace.frames = timeout_col, retired_col, p2p_col, frames_col
    return True


def _fill(trace: RankTrace, entries: list, offset: int, statuses: dict[str, dict[str, int]]) -> None:
    intern: dict[Any, int] = {}
    strings = trace.strings
    shape_ids: dict[Shape, int] = {}
    stack_ids: dict[Any, int] = {}
    frame_cache: dict[tuple, Frame] = {}
    skipped = 0

    def sid(text: str) -> int:
        n = intern.get(text)
        if n is None:
            n = intern[text] = len(strings)
            strings.append(text)
        return n

    cols = (trace.index, trace.record_id, trace.pg, trace.pg_desc, trace.seq, trace.p2p_seq, trace.op,
            trace.backend, trace.state, trace.done, trace.shape, trace.created, trace.started, trace.completed,
            trace.timeout, trace.retired, trace.p2p, trace.frames)
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("profiling_name"), str):
            skipped += 1
            continue
        name = e["profiling_name"][:MAX_TEXT]
        backend, _, op = name.partition(":") if ":" in name else ("", "", name)
        pg_name, pg_desc = _pg_of(e)
        seq = _int(e.get("collective_seq_id"))
        p2p_seq = _int(e.get("p2p_seq_id"))
        is_p2p = e.get("is_p2p")
        is_p2p = bool(is_p2p) if isinstance(is_p2p, bool) else op.split(" ")[0] in ("send", "recv")
        state = _text(e.get("state")) or "?"
        started_ns = _time(e.get("time_discovered_started_ns"))
        completed_ns = _time(e.get("time_discovered_completed_ns"))
        done = 2 if state == "completed" else 1 if state == "started" else 0
        st = statuses.get(str(_int(e.get("pg_id")))) if _int(e.get("pg_id")) >= 0 else None
        if done < 2 and st and seq >= 0 and not is_p2p:
            if st.get("last_completed_collective", -1) >= seq:
                done = 2
            elif st.get("last_started_collective", -1) >= seq:
                done = 1
        shape = Shape(_sizes(e.get("input_sizes")), _dtypes(e.get("input_dtypes")),
                      _sizes(e.get("output_sizes")), _dtypes(e.get("output_dtypes")))
        shape_n = shape_ids.get(shape)
        if shape_n is None:
            shape_n = shape_ids[shape] = len(trace.shapes)
            trace.shapes.append(shape)
        frames = e.get("frames")
        key = _frames_key(frames)
        stack_n = stack_ids.get(key)
        if stack_n is None:
            stack_n = stack_ids[key] = len(trace.stacks)
            trace.stacks.append(_frames(frames, frame_cache))
        retired = e.get("retired")
        values = (offset + i, _int(e.get("record_id")), sid(pg_name), sid(pg_desc), seq, p2p_seq, sid(op),
                  sid(backend), sid(state), done, shape_n, _time(e.get("time_created_ns")), started_ns,
                  completed_ns, _int(e.get("timeout_ms")), -1 if not isinstance(retired, bool) else int(retired),
                  int(is_p2p), stack_n)
        for col, v in zip(cols, values):
            col.append(v)
    if skipped:
        trace.problems.append(f"{skipped} entr{'y' if skipped == 1 else 'ies'} without a profiling_name skipped")


def _pg_of(e: dict) -> tuple[str, str]:
    pg = e.get("process_group")
    if isinstance(pg, (list, tuple)) and len(pg) >= 1:
        return _text(pg[0]), _text(pg[1]) if len(pg) > 1 else ""
    pg_id = e.get("pg_id")
    return (_text(pg_id) if pg_id is not None else "?"), ""


def _frames_key(frames: Any) -> Any:
    if not isinstance(frames, list):
        return None
    return tuple((_text(f.get("name")), _text(f.get("filename")), _int(f.get("line"))) if isinstance(f, dict) else None
                 for f in frames[:MAX_FRAMES])


def _frames(frames: Any, cache: dict) -> tuple[Frame, ...]:
    if not isinstance(frames, list):
        return ()
    out = []
    for f in frames[:MAX_FRAMES]:
        if not isinstance(f, dict):
            continue
        name, filename, line = _text(f.get("name")) or None, _text(f.get("filename")) or None, _int(f.get("line"))
        key = (name, filename, line)
        frame = cache.get(key)
        if frame is None:
            frame = cache[key] = Frame(function=name, file=filename, line=line if line >= 0 else None,
                                       language="python")
        out.append(frame)
    return tuple(out)


def _sizes(value: Any) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, list):
        return ()
    return tuple(tuple(int(d) for d in t[:MAX_DIMS] if _is_int(d)) for t in value[:MAX_DIMS] if isinstance(t, list))


def _dtypes(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(_text(d) for d in value[:MAX_DIMS])


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v: Any) -> int:
    """Non-negative ints as they are; anything else (absent, None, text) as -1."""
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62:
        return v
    if isinstance(v, str) and v.isdigit() and len(v) < 19:
        return int(v)
    return -1


def _time(v: Any) -> int:
    """A nanosecond time; JSON dumps write 0 for "not yet"."""
    n = _int(v)
    return n if n > 0 else -1


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v[:MAX_TEXT]
    if isinstance(v, bytes):
        return v[:MAX_TEXT].decode("utf-8", "replace")
    if v is None:
        return ""
    if isinstance(v, (int, float)):
        return str(v)
    return ""
