"""Reading a big bundle's files on several cores, with the result of reading them in one.

A 512-rank NCCL_DEBUG=INFO bundle is 512 files that can be read independently: a pool of
worker processes reads contiguous groups of them, in the order of the bundle, each group
exactly as run.py reads files one after another (its own Sink numbering from 0, its own
meter); the parent merges the groups in order, giving events the numbers the single
process would have given (an offset per group: numbers consumed by a group are counted,
not guessed).  Reading in one process and reading here give the same artifacts, events
(order, lines, counts, data, seq), stacks, facts and notes (tests/test_parallel.py).

Why `fork`: a worker needs the bundle's entries (openers on descriptors of the bundle's
folder, which cannot be pickled), the loaded knowledge and the compiled patterns; forked,
it starts in about 10 ms with all of them, where `spawn` or `forkserver` would import and
load everything again (~0.25 s per worker, as much as the whole gain on a 140 MB bundle).
Plain os.fork and os.pipe, not multiprocessing: importing multiprocessing and making its
pipes cost ~8.5 ms before the first worker starts, all of it on the serial path.
The worker touches no lock another thread of the parent could hold (its stdout and stderr
are /dev/null, it logs nothing) and exits with the pool.  Where `fork` does not exist the
bundle is read in one process.

Budgets stay exact: a group is taken only if, merged in order, it stays within the bundle's
byte and event budgets and its worker did not stop on one; otherwise the pool is dropped
and the rest is read in this process, as it would have been.  The time limit is kept by
the workers (they check the same monotonic clock) and by the parent, which kills the
workers when they overrun it; the files not read then say so.  A worker that dies (killed,
out of memory) or fails outside the per-artifact guard makes the rest be read in this
process: every artifact still gets its own clear message, never a traceback.
"""
from __future__ import annotations

import itertools
from collections import deque
from itertools import accumulate, repeat
from operator import attrgetter
import os
import struct
import sys
import time
from typing import Callable

from postmortem import fold
from postmortem.budget import Meter
from postmortem.model import Event, Ref, Severity

# Folder bundles at least this big (sum of the sizes of their files) are read by a pool;
# below, process start and result transfer cost more than a second core gives back
# (measured on 3,000-line rank files: even at 8.8 MB, 21% faster at 17.6 MB, 31% at 141 MB).
MIN_BYTES = 16 << 20
GROUPS_PER_JOB = 6           # groups per worker: small enough to balance, big enough to amortise
GRACE_S = 5.0                # a worker past the time limit by this much is killed
# This process's share of the groups, relative to a worker's.  Equal: it also takes the workers'
# results in, but that is cheap (callgrind counts on 512 ranks, 12 groups of ~0.6 G instructions:
# with 5 groups here the parent was done ~1.2 G before the worker; with 6 they end together).
PARENT_SHARE = 1.0

_SEVERITY = {s.value: s for s in Severity}


def auto_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worth_it(entries: list, jobs: int, meter: Meter) -> bool:
    """A pool only for several files of a folder bundle, big enough together, within the
    byte budget as sized on disk, where `fork` exists and the clock is the real one."""
    if jobs < 2 or len(entries) < 2 or not hasattr(os, "fork"):
        return False
    if any(e.disk_path is None or e.size is None for e in entries):
        return False  # archive members share one file object: read in one process
    total = sum(e.size for e in entries)
    return total >= MIN_BYTES and meter.bytes + total <= meter.budget.bytes and meter.clock is time.monotonic


def groups(sizes: list[int], jobs: int) -> list[tuple[int, int]]:
    """Contiguous (start, stop) ranges of about equal bytes, GROUPS_PER_JOB per worker."""
    want = max(1, min(len(sizes), jobs * GROUPS_PER_JOB))
    target = sum(sizes) / want
    out, start, have = [], 0, 0
    for i, size in enumerate(sizes):
        have += size
        if have >= target and len(out) < want - 1:
            out.append((start, i + 1))
            start, have = i + 1, 0
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out


# -- the worker side -------------------------------------------------------------------------

_STATE: tuple | None = None  # (entries, options, k, read_one, meter) for forked workers


def _quiet() -> None:
    """A worker: Ctrl-C is the parent's business; nothing of it reaches the terminal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the worker
    sys.stdout = sys.stderr = devnull


def _encode(events: list[Event]) -> list[tuple]:
    """Events as plain tuples: pickling frozen slotted dataclasses is 4x slower."""
    return [(e.kind, e.text, e.ref.path, e.ref.line, e.ref.offset, e.ref.text, e.ref.record, e.severity.value,
             e.stamp, e.host, e.pid, e.tid, e.rank, e.data, e.when, e.seq) for e in events]


# An event as columns (a group's events cross the pipe field by field, see _columns): the
# fields of its Ref, then its own, in the order _decode sets them.
_REF_FIELDS = ("path", "line", "offset", "text", "record")
_EVENT_FIELDS = ("kind", "text", "severity", "stamp", "host", "pid", "tid", "rank", "data", "when", "seq")
_COLUMNS = tuple(attrgetter(f"ref.{f}") for f in _REF_FIELDS) + tuple(
    attrgetter("severity.value" if f == "severity" else f) for f in _EVENT_FIELDS)


def _columns(events: list[Event]) -> list[list]:
    """A file's events for the pipe, field by field (_decode makes them again column by column)."""
    return [list(map(get, events)) for get in _COLUMNS]


def _read_group(start: int, stop: int, bytes_before: int) -> tuple:
    from postmortem.run import _Collected

    entries, options, k, read_one, parent_meter = _STATE  # type: ignore[misc]
    meter = Meter(parent_meter.budget, parent_meter.time_limit, parent_meter.clock)
    meter.started, meter.bytes = parent_meter.started, bytes_before
    numbering = itertools.count()
    got = _Collected(numbering=numbering, meter=meter)
    got.line_classes = _classes()
    per_entry = []
    for entry in entries[start:stop]:
        marks = (len(got.events), len(got.stacks), len(got.facts), len(got.artifacts), meter.bytes)
        read_one(entry, got, options, k)
        per_entry.append([got.artifacts[marks[3]:], len(got.events) - marks[0], got.stacks[marks[1]:],
                          got.facts[marks[2]:], meter.bytes - marks[4]])
    # Routine INFO copies of the group's files folded (fold.py) before they cross the pipe;
    # the parent folds the groups again.
    # (the copies folded as read, fold.AsRead, are in got.folded; their leaders grow here).
    parts, folded = fold.fold_parts(got.early.apply(got.events), list(accumulate(made for _, made, *_ in per_entry)))
    for row, part in zip(per_entry, parts):
        row[1] = _columns(part)
    return per_entry, next(numbering), meter.notes, meter.stopped, folded + got.folded


_CLASSES: dict[str, int] = {}


def _classes() -> dict[str, int]:
    """One class cache per worker, kept across its groups (scan.scan_text's `shared`)."""
    return _CLASSES


# -- the parent side -------------------------------------------------------------------------

_NEW = object.__new__
_REF_SET = tuple(getattr(Ref, f).__set__ for f in _REF_FIELDS)
_EVENT_SET = tuple(getattr(Event, f).__set__ for f in _EVENT_FIELDS)
_SET_REF = Event.ref.__set__


def _decode(cols: list[list], base: int) -> list[Event]:
    """The events of _columns(events), numbered from `base`: each Ref and Event given its
    fields column by column through the slots' own setters (the fields the dataclass's
    __init__ would set one object.__setattr__ call at a time; half the time for the
    ~5,800 events a worker reads at 512 ranks, all of it on the serial path here)."""
    n = len(cols[0])
    if not n:
        return []
    refs = list(map(_NEW, repeat(Ref, n)))
    for put, col in zip(_REF_SET, cols):
        deque(map(put, refs, col), 0)
    own = cols[len(_REF_FIELDS):]   # in _EVENT_FIELDS' order
    own[2] = map(_SEVERITY.__getitem__, own[2])
    own[-1] = [base + seq for seq in own[-1]]
    events = list(map(_NEW, repeat(Event, n)))
    deque(map(_SET_REF, events, refs), 0)
    for put, col in zip(_EVENT_SET, own):
        deque(map(put, events, col), 0)
    return events


def read_entries(entries: list, got, options, k, jobs: int, read_one: Callable,
                 meanwhile: Callable[[], object] | None = None) -> int:
    """Read `entries` into `got` with this process and `jobs - 1` worker processes, in the
    bundle's order; returns the index of the first entry not read (the caller reads the
    rest in this process).

    This process reads the first groups itself, as one process would, while the workers
    read the others (it would otherwise idle: one worker fewer to start, and its results
    cross no pipe).  Group g of the rest goes to worker g % workers, which sends its
    groups' results, in order, down its own pipe; a thread per pipe drains it meanwhile
    (a full pipe would stop the worker), and the parent takes the results in the
    bundle's order.  `meanwhile` is called once this process would otherwise wait for a
    worker's result (work of its own that needs no result: run.py's later imports).  No
    executor: a worker killed (by us past the time limit, or by
    anything else) leaves nothing behind that could wait for it, and a pipe whose writer
    died reads as ended."""
    global _STATE, _LAST_WORKERS
    meter: Meter = got.meter
    spans = groups([e.size for e in entries], jobs)
    own = _own_groups(len(spans), jobs)
    workers_n = min(jobs - 1, len(spans) - own)
    if workers_n < 1:
        return 0
    starts, expected = [], meter.bytes
    for start, stop in spans:
        starts.append(expected)
        expected += sum(e.size for e in entries[start:stop])
    _STATE = (entries, _without_progress(options), k, read_one, meter)
    _CLASSES.clear()
    _CLASSES.update(got.line_classes)
    pipes = [os.pipe() for _ in range(workers_n)]   # (read end, write end) per worker
    workers: list[int] = []   # their pids
    drains = []
    writers_open, complete = True, False
    try:
        for w in range(workers_n):
            mine = [(g, spans[g][0], spans[g][1], starts[g]) for g in range(own + w, len(spans), workers_n)]
            pid = os.fork()
            if pid == 0:  # the worker: it never returns into the parent's code
                _in_worker(mine, w, pipes)
            workers.append(pid)
        _close_writers(pipes)  # the workers hold the only writers: a dead worker's pipe ends
        writers_open = False
        drains = [_Drain(reader) for reader, _ in pipes]  # after the forks: no thread is forked
        mine_stop = spans[own - 1][1] if own else 0
        for entry in entries[:mine_stop]:  # this process's share, exactly as one process reads it
            read_one(entry, got, options, k)
        if meter.stopped:  # a budget or the time limit reached here: the rest as one process goes on
            return mine_stop
        for g in range(own, len(spans)):
            start, stop = spans[g]
            drain = drains[(g - own) % workers_n]
            if meanwhile is not None and drain.results.empty():
                meanwhile()
                meanwhile = None
            got_it = drain.take(meter)
            if got_it is None:  # past the time limit, dead, or failed outside the artifact guard
                meter.out_of_time()
                return start
            per_entry, used, notes, stopped, folded = got_it
            events = sum(len(r[1][0]) for r in per_entry) + folded  # copies folded into an event count (fold.py)
            bytes_read = sum(r[4] for r in per_entry)
            budget_stop = stopped is not None and not stopped.startswith("time limit")
            if budget_stop or len(got.events) + got.folded + events > meter.budget.events \
                    or meter.bytes + bytes_read > meter.budget.bytes:
                return start  # a budget reached inside the group: read it as one process would
            base = _advance(got)
            for entry, (artifacts, rows, stacks, facts, nbytes) in zip(entries[start:stop], per_entry):
                if options.progress:
                    options.progress(entry.path)
                got.artifacts.extend(artifacts)
                got.events.extend(_decode(rows, base))
                got.stacks.extend(stacks)
                got.facts.extend(facts)
                meter.bytes += nbytes
            got.folded += folded
            meter.events = len(got.events) + got.folded
            got.numbering = itertools.count(base + used)
            for note in notes:
                meter.note(note)
            if stopped is not None:  # the time limit, reached inside the group
                meter.stop(stopped)
                return stop
        complete = True
        return len(entries)
    finally:
        _STATE = None
        if writers_open:  # a fork failed: no drain started
            _close_writers(pipes)
        _end_workers(workers, wait_s=1.0 if complete else 0.0)  # sent everything: exiting
        for drain in drains:
            drain.thread.join()  # the writers are gone: each drain has read to the end
        for reader, _ in pipes[len(drains):]:
            os.close(reader)  # pipes whose drain never started
        _LAST_WORKERS = tuple(workers)


def _close_writers(pipes: list[tuple[int, int]]) -> None:
    for _, writer in pipes:
        os.close(writer)


_LAST_WORKERS: tuple[int, ...] = ()  # the pids of the last pool, all reaped (tests look)


def _end_workers(pids: list[int], wait_s: float) -> None:
    """Every worker reaped: given up to `wait_s` to exit by itself, then killed."""
    import signal

    deadline = time.monotonic() + wait_s
    alive = list(pids)
    while alive:
        alive = [pid for pid in alive if not _reaped(pid)]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.001)
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _reaped(pid: int) -> bool:
    """Whether the worker has exited (and is reaped now, if it had not been)."""
    try:
        return os.waitpid(pid, os.WNOHANG) != (0, 0)
    except ChildProcessError:  # reaped already
        return True


def _own_groups(n_groups: int, jobs: int) -> int:
    """How many of the first groups this process reads itself (PARENT_SHARE of a worker's
    share; at least one group is left to the workers)."""
    return min(n_groups - 1, max(0, int(n_groups * PARENT_SHARE / jobs)))


class _Drain:
    """A thread reading one worker's pipe to its end, so the worker never waits on a full
    pipe while this process reads its own share; `take` gives the next result in order."""

    def __init__(self, reader: int) -> None:
        import queue
        import threading

        self.reader = os.fdopen(reader, "rb")
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        """Frames of _send until the pipe ends (the worker finished, died or was killed); a
        frame cut short is a worker that died while writing it."""
        with self.reader as pipe:
            while True:
                head = pipe.read(_FRAME.size)
                if len(head) < _FRAME.size:
                    break
                (size,) = _FRAME.unpack(head)
                body = pipe.read(size)
                if len(body) < size:
                    break
                self.results.put(body)
        self.results.put(None)

    def take(self, meter: Meter) -> tuple | None:
        """The next result, or None: past the time limit (plus grace), the worker dead or failed."""
        import pickle
        import queue

        deadline = None if meter.time_limit is None else meter.started + meter.time_limit + GRACE_S
        left = None if deadline is None else max(0.0, deadline - meter.clock())
        try:
            raw = self.results.get(timeout=left)
        except queue.Empty:
            return None  # the caller kills the workers
        if raw is None:
            self.results.put(None)  # ended: every later take says so too
            return None
        try:
            status, payload = pickle.loads(raw)
        except Exception:  # noqa: BLE001 - a result that does not unpickle
            return None
        return payload if status == "ok" else None


_FRAME = struct.Struct("!Q")  # a result's length, before its pickled bytes


def _in_worker(mine: list[tuple], w: int, pipes: list[tuple[int, int]]) -> None:
    """A forked worker's whole life: read its groups, send each result down its pipe, exit
    without running anything the parent registered (atexit, buffered output)."""
    code = 1
    try:
        for i, (reader, writer) in enumerate(pipes):
            os.close(reader)
            if i != w:
                os.close(writer)
        _worker(mine, pipes[w][1])
        code = 0
    finally:
        os._exit(code)


def _worker(mine: list[tuple], writer: int) -> None:
    _quiet()
    with os.fdopen(writer, "wb") as pipe:
        try:
            for _, start, stop, bytes_before in mine:
                try:
                    result = ("ok", _read_group(start, stop, bytes_before))
                except BaseException as exc:  # noqa: BLE001 - said to the parent, which reads the rest itself
                    result = ("failed", f"{type(exc).__name__}: {exc}")
                _send(pipe, result)
                if result[0] != "ok":
                    return
        except (BrokenPipeError, OSError):
            return  # the parent stopped listening (it reads the rest itself, or it is gone)


def _send(pipe, result: tuple) -> None:
    import pickle

    body = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_FRAME.pack(len(body)))
    pipe.write(body)
    pipe.flush()


def _receive(reader, meter: Meter) -> tuple | None:
    """The next result of one worker, or None: past the time limit (plus grace), the worker
    dead or failed (ranges.py, whose parent only waits)."""
    from multiprocessing.connection import wait

    deadline = None if meter.time_limit is None else meter.started + meter.time_limit + GRACE_S
    while True:
        left = None if deadline is None else max(0.0, deadline - meter.clock())
        ready = wait([reader], left)
        if not ready:
            return None  # the caller kills the workers
        try:
            status, payload = reader.recv()
        except (EOFError, OSError):
            return None  # the worker died
        except Exception:  # noqa: BLE001 - a result that does not unpickle
            return None
        return payload if status == "ok" else None


def _advance(got) -> int:
    """The next number of got's numbering, consumed: the group's numbers start there."""
    base = next(got.numbering)
    got.numbering = itertools.count(base)
    return base


def _without_progress(options):
    """A worker's options: no progress line, and no pool of its own (ranges.splits)."""
    import dataclasses

    return dataclasses.replace(options, progress=None, jobs=1)

