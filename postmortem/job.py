"""The job's own story: its processes, its time window, and what is only context.

A bundle holds more than the job: a kernel log keeps the whole boot's history (other
programs' segfaults, an earlier run's OOM kill) and is often collected twice (`dmesg`
and `dmesg -T`, the journal, syslog).  Here, after the timeline has placed every
event:

* the same kernel line read from two copies of the kernel log becomes one event (the
  copy with the better clock stays; the other is named in `data["copies"]`);
* each process gets one identity: pid, rank and host aliases are joined (NCCL init
  lines, launcher records, `[rankN]:` prefixes, and the container/host pid pairs of
  collect's pid_ns.txt), so a lane is `host · rank N · pid P`;
* the job's window opens at the first line a launcher prints as it starts (torchrun,
  DeepSpeed, Ray, `ray job submit`) or the first NCCL init line, and closes at the
  launcher's last record of the job ending (torchrun's ChildFailedError, `ray job
  submit`'s final status, slurmstepd's CANCELLED AT).  srun prints no timed line as a
  step starts, so a Slurm job's window opens only by the other lines;
* kernel-log events before the window, after it, or from a process the job does not
  own are marked `data["context"]`: kept and shown folded, never a root or a symptom.

Without a launcher start line nothing is marked by time: a training log that begins
late says nothing about when the job began, and a fault before its first line may
well be the job's own.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import attrgetter, methodcaller
from typing import Callable, Sequence

from postmortem import fold, intpool
from postmortem.model import Basis, Event, Fact, Ref

# Lines that show the job under way from its very start.
START_KINDS = ("launcher.start", "nccl.init", "msg.rendezvous_complete")
# Records of the job ending as a whole (not one rank's death: the others may go on):
# torchrun's ChildFailedError, `ray job submit`'s final status, slurmstepd's
# "*** STEP|JOB N ON host CANCELLED AT time ***" (the step's tasks are killed then).
END_KINDS = ("launcher.failed", "launcher.finished", "launcher.cancelled")
# Kernel events name the process they are about by pid; a process of the job dies by these.
SLACK_S = 2.0      # a launcher line and a kernel line of one moment may differ by this much
END_SLACK_S = 5.0  # the launcher notices the end a little after the last process died


@dataclass(frozen=True)
class Window:
    start: datetime | None
    start_ref: Ref | None
    end: datetime | None
    end_ref: Ref | None
    pids: frozenset[int]

    def describe(self) -> str:
        if self.start is None:
            return "job window unknown (no launcher start line)"
        end = f" to {self.end.isoformat()} ({self.end_ref.describe()})" if self.end and self.end_ref else ""
        return f"job window from {self.start.isoformat()} ({self.start_ref.describe()}){end}"  # type: ignore[union-attr]


_KIND, _PID, _HOST = attrgetter("kind"), attrgetter("pid"), attrgetter("host")
_DATA = attrgetter("data")
_MEMBERS = methodcaller("get", fold.MEMBERS)


def of_kinds(events: Sequence[Event], kinds) -> list[Event]:
    """The events of these kinds, in order: `[e for e in events if e.kind in kinds]`."""
    index = _positions_of(events)
    found = [index[k] for k in set(kinds) if k in index]
    if not found:
        return []
    at = found[0] if len(found) == 1 else sorted(i for p in found for i in p)
    return [events[i] for i in at]


def _positions_of(events: Sequence[Event]) -> dict[str, list[int]]:
    """Each kind's positions in the list.  The timeline asks of_kinds a dozen questions of the
    same list (deaths, anchors, the window ...), so they are found once per list.  Between
    calls the list may have events replaced in place, as placement does (a new time, a
    joined rank), but not reordered, resized or given another kind."""
    global _positions
    if _positions is None or _positions[0] is not events or _positions[1] != len(events):
        index: dict[str, list[int]] = {}
        for i, kind in zip(intpool.upto(len(events)), map(_KIND, events)):
            got = index.get(kind)
            if got is None:
                got = index[kind] = []
            got.append(i)
        _positions = (events, len(events), index)
    return _positions[2]


_positions: tuple[Sequence[Event], int, dict[str, list[int]]] | None = None   # the last list's


def kernel_files(events: list[Event]) -> set[str]:
    """Artifacts that are (copies of) the kernel log."""
    return {e.ref.path for e in of_kinds(events, [k for k in _positions_of(events) if k.startswith("kernel.")])}


def _body(e: Event) -> str:
    """The kernel message without its time prefix, the same in every copy of the log."""
    msg = e.data.get("msg")
    if isinstance(msg, str):
        return msg.strip()
    from postmortem.parsers.kernel_prefix import split_prefix

    return split_prefix(e.text.strip())[3].strip()


def _precision(e: Event) -> tuple:
    """Better placed first: measured, then smaller uncertainty, then finer printed resolution."""
    w = e.when
    resolution = e.stamp.resolution_s if e.stamp else 1e9
    if w is None or w.at is None:
        return (2, 1e9, resolution, e.seq)
    unc = round(w.uncertainty_s, 2) if w.uncertainty_s is not None else 1e9
    return (0 if w.basis is Basis.MEASURED else 1, unc, resolution, e.seq)


def merge_copies(events: list[Event]) -> tuple[list[Event], list[str]]:
    """One event per kernel line, however many copies of the kernel log the bundle holds.

    Lines pair by (host, kind, message) and, where both copies are placed, by time (the
    nearest within the two uncertainties and SLACK_S); unplaced lines pair by their order
    of occurrence.  The better-placed copy stays."""
    files = kernel_files(events)
    if len(files) < 2:
        return events, []
    # dmesg prints no host, syslog and the journal do: one named host means they are the same
    named = {e.host for e in events if e.ref.path in files and e.host}
    only = next(iter(named)) if len(named) == 1 else None
    groups: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, e in enumerate(events):
        if e.ref.path in files:
            groups[(e.host or only, e.kind, _body(e))][e.ref.path].append(i)
    drop: set[int] = set()
    copies: dict[int, list[str]] = defaultdict(list)
    pairs = 0
    for by_file in groups.values():
        if len(by_file) < 2:
            continue
        paths = sorted(by_file, key=lambda p: min(_precision(events[i]) for i in by_file[p]))
        keepers = list(by_file[paths[0]])
        for path in paths[1:]:
            free = list(keepers)
            for n, i in enumerate(by_file[path]):
                j = _partner(events, i, free, n)
                if j is None:
                    keepers.append(i)
                    continue
                free.remove(j)
                keep, lose = (j, i) if _precision(events[j]) <= _precision(events[i]) else (i, j)
                if keep == i:
                    keepers[keepers.index(j)] = i
                drop.add(lose)
                copies[keep].append(events[lose].ref.describe())
                copies[keep].extend(copies.pop(lose, []))
                pairs += 1
    if not drop:
        return events, []
    out = []
    for i, e in enumerate(events):
        if i in drop:
            continue
        if i in copies:
            e = dataclasses.replace(e, data={**e.data, "copies": list(copies[i])})
        out.append(e)
    return out, [f"{pairs} kernel line(s) read from more than one copy of the kernel log "
                 f"({', '.join(sorted(files))}) are counted once"]


def _partner(events: list[Event], i: int, free: list[int], n: int) -> int | None:
    e = events[i]
    at = e.when.at if e.when else None
    if at is None:
        unplaced = [j for j in free if not (events[j].when and events[j].when.at)]
        return unplaced[0] if unplaced else (free[0] if free else None)
    best, best_gap = None, None
    for j in free:
        other = events[j].when.at if events[j].when else None
        if other is None:
            continue
        gap = abs((other - at).total_seconds())
        tol = (e.when.uncertainty_s or 0) + (events[j].when.uncertainty_s or 0) + SLACK_S  # type: ignore[union-attr]
        if gap <= tol and (best_gap is None or gap < best_gap):
            best, best_gap = j, gap
    return best


# --------------------------------------------------------------------------- identities

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})
_RANK_SOURCES = ("nccl.init", "launcher.child_failed", "launcher.exit", "launcher.spawned")


def pid_aliases(facts) -> dict[int, int]:
    """inner pid -> outer pid, from the NSpid lines collect records (`process.nspid`, outermost
    first).  An inner pid two containers share names no one process: it is dropped."""
    out: dict[int, int] = {}
    clash: set[int] = set()
    outers = set()
    for f in facts:
        if f.name != "process.nspid" or not isinstance(f.value, list) or len(f.value) < 2:
            continue
        outer = f.value[0]
        outers.add(outer)
        for inner in f.value[1:]:
            if out.setdefault(inner, outer) != outer:
                clash.add(inner)
    return {inner: outer for inner, outer in out.items() if inner not in clash and inner not in outers}


def merge_pid_namespaces(events: list[Event], facts=()) -> list[Event]:
    """A containerised job's logs print its inner pids, the host kernel log (and py-spy run from
    the host) the outer ones: the job's lines take the outer pid, keeping the inner as `ns_pid`."""
    aliases = pid_aliases(facts)
    if not aliases:
        return events
    kfiles = kernel_files(events)
    out = []
    for e in events:
        outer = aliases.get(e.pid) if e.pid is not None and e.ref.path not in kfiles else None
        if outer is not None:
            e = Event(e.kind, e.text, e.ref, e.severity, e.stamp, e.host, outer, e.tid, e.rank,
                      {**e.data, "ns_pid": e.pid}, e.when, e.seq)
        out.append(e)
    return out


def join_identities(events: list[Event], facts=()) -> list[Event]:
    """One identity per process (the list's events are replaced in place).  pid -> rank from
    NCCL init lines and launcher records (ChildFailedError rows, `local_rank: N (pid: P)` on
    a single node); rank -> pid back
    when one pid has that rank; a single-host bundle's unnamed host is that host; a
    container's pid and the host's pid of one process (collect's NSpid lines) are one."""
    events = merge_pid_namespaces(events, facts)
    named_hosts = {h for h in set(map(_HOST, events)) if h}
    real = named_hosts - LOOPBACK
    # torchrun's standalone rendezvous names the one node `localhost`; the logs' own host name wins
    only_host = next(iter(real)) if len(real) == 1 else (
        next(iter(named_hosts)) if len(named_hosts) == 1 else None)

    def host_of(e: Event) -> str | None:
        if e.host in LOOPBACK and len(real) == 1:
            return only_host
        return e.host or only_host

    ranks: dict[tuple[str | None, int], set[int]] = defaultdict(set)
    for e in of_kinds(events, _RANK_SOURCES):
        if e.pid is None:
            continue
        r = e.rank if e.rank is not None else e.data.get("rank")
        if not isinstance(r, int) and e.kind in ("launcher.exit", "launcher.spawned") and len(named_hosts) <= 1:
            r = e.data.get("local_rank")  # one node: local rank is the rank
        if isinstance(r, int) and not isinstance(r, bool):
            ranks[(host_of(e), e.pid)].add(r)
    # A process driving several GPUs (nccl-tests -g 4) has several ranks: no single answer.
    rank_of = {key: next(iter(rs)) for key, rs in ranks.items() if len(rs) == 1}
    pids_of_rank: dict[tuple[str | None, int], set[int]] = defaultdict(set)
    for (host, pid), r in rank_of.items():
        pids_of_rank[(host, r)].add(pid)
    pid_of = {key: next(iter(ps)) for key, ps in pids_of_rank.items() if len(ps) == 1}
    if not rank_of and only_host is None:
        return events
    loopback = len(real) == 1 and bool(named_hosts & LOOPBACK)
    _join_folded(events, facts, rank_of, lambda h: only_host if loopback and h in LOOPBACK else h or only_host)
    for i, e in enumerate(events):  # in place: the old event is freed as its successor is made
        host = only_host if loopback and e.host in LOOPBACK else e.host or only_host  # host_of(e), inline
        rank, pid = e.rank, e.pid
        if rank is None and pid is not None:
            rank = rank_of.get((host, pid))
        if pid is None and rank is not None and not e.kind.startswith("kernel."):
            pid = pid_of.get((host, rank))
        if host != e.host or rank != e.rank or pid != e.pid:
            events[i] = Event(e.kind, e.text, e.ref, e.severity, e.stamp, host, pid, e.tid, rank, e.data, e.when, e.seq)
    return events


def join_stack_ranks(stacks, events: list[Event]) -> tuple:
    """A stack whose source names no rank (py-spy's `Process P:`, a core's pid) takes the rank the
    joined events give its pid -- NCCL init lines, torchrun's failure table (`rank : 1`, `pid: P`),
    `local_rank: N (pid: P)` -- when they give that pid exactly one (on its host, or anywhere when
    the stack names no host)."""
    by_pid: dict[int, set[int]] = defaultdict(set)
    by_host_pid: dict[tuple[str | None, int], set[int]] = defaultdict(set)
    for e in events:
        if e.pid is not None and e.rank is not None and not e.kind.startswith("kernel."):
            by_pid[e.pid].add(e.rank)
            by_host_pid[(e.host, e.pid)].add(e.rank)
    if not by_pid:
        return tuple(stacks)
    out = []
    for s in stacks:
        if s.rank is None and s.pid is not None:
            ranks = by_host_pid.get((s.host, s.pid)) if s.host else by_pid.get(s.pid)
            if ranks and len(ranks) == 1:
                s = dataclasses.replace(s, rank=next(iter(ranks)))
        out.append(s)
    return tuple(out)


def _join_folded(events: list[Event], facts, rank_of: dict, host_of: Callable) -> None:
    """The copies folded into an event (fold.py) are processes too: each copy's host, pid and
    rank become what its own event's would have (in place)."""
    at = [i for i, m in enumerate(map(_MEMBERS, map(_DATA, events))) if m]
    if not at:
        return
    aliases = pid_aliases(facts)
    for i in at:
        e = events[i]
        joined = []
        for path, line, host, pid, tid, rank in e.data[fold.MEMBERS]:
            host = host_of(host)
            pid = aliases.get(pid, pid) if pid is not None else None
            if rank is None and pid is not None:
                rank = rank_of.get((host, pid))
            joined.append((path, line, host, pid, tid, rank))
        events[i] = dataclasses.replace(e, data={**e.data, fold.MEMBERS: tuple(joined)})


# --------------------------------------------------------------------------- the window

def _is_start(e: Event) -> bool:
    return e.kind in START_KINDS


def find_window(events: list[Event], facts: list[Fact] = ()) -> Window:  # type: ignore[assignment]
    kfiles = kernel_files(events)
    marks = [e for e in of_kinds(events, START_KINDS + END_KINDS) if e.when and e.when.at]
    starts = [e for e in marks if e.kind in START_KINDS]
    start = min(starts, key=lambda e: e.when.at) if starts else None  # type: ignore[union-attr]
    ends = [e for e in marks if e.kind in END_KINDS]
    end = max(ends, key=lambda e: e.when.at) if ends else None  # type: ignore[union-attr]
    if start and end and end.when.at < start.when.at:  # type: ignore[union-attr,operator]
        end = None
    pids = ({e.pid for e in events if e.pid is not None and e.ref.path not in kfiles} if kfiles
            else set(map(_PID, events)) - {None})
    pids |= {int(f.value) for f in facts if f.name == "job.pid" and str(f.value).isdecimal()}
    return Window(start.when.at if start else None, start.ref if start else None,  # type: ignore[union-attr]
                  end.when.at if end else None, end.ref if end else None, frozenset(pids))


def mark_context(events: list[Event], window: Window) -> tuple[list[Event], list[str]]:
    """Kernel-log events outside the window, or about a process the job does not own
    (when the kernel and the job are seen to share pids), become context."""
    kfiles = kernel_files(events)
    if not kfiles:
        return events, []
    kernel_pids = {e.pid for e in events if e.pid is not None and e.ref.path in kfiles}
    shared_ns = bool(kernel_pids & window.pids)
    job_comms = {str(e.data.get("comm")) for e in events
                 if e.ref.path in kfiles and e.pid in window.pids and e.data.get("comm")}
    counts: dict[str, int] = defaultdict(int)
    out = []
    for e in events:
        why = _context(e, window, kfiles, shared_ns, job_comms) if e.ref.path in kfiles else None
        if why:
            counts[why] += 1
            e = dataclasses.replace(e, data={**e.data, "context": why})
        out.append(e)
    notes = [f"{why}: {n} event(s), kept as context (never a root or a symptom)" for why, n in counts.items()]
    return out, notes


BEFORE, AFTER, OTHER = "kernel history before the job", "kernel lines after the job", "other processes"


def _context(e: Event, w: Window, kfiles: set[str], shared_ns: bool, job_comms: set[str]) -> str | None:
    at = e.when.at if e.when else None
    if at is not None:
        margin = timedelta(seconds=SLACK_S + (e.when.uncertainty_s or 0.0))  # type: ignore[union-attr]
        if w.start is not None and at + margin < w.start:
            return BEFORE
        if w.end is not None and at - margin - timedelta(seconds=END_SLACK_S) > w.end:
            return AFTER
    comm = e.data.get("comm")
    if (e.pid is not None and shared_ns and w.start is not None and e.pid not in w.pids
            and comm and job_comms and str(comm) not in job_comms):
        return OTHER
    return None


def window_facts(w: Window) -> list[Fact]:
    out = []
    if w.start is not None and w.start_ref is not None:
        out.append(Fact("job.start", w.start.isoformat(), w.start_ref, text="the job's launcher starts"))
    if w.end is not None and w.end_ref is not None:
        out.append(Fact("job.end", w.end.isoformat(), w.end_ref, text="the job's launcher records the end"))
    return out


def is_context(e: Event) -> bool:
    return bool(e.data.get("context"))
