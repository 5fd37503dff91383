"""One big text file read on several cores: newline-aligned ranges, merged exactly.

A 1 GB NCCL log is one file, so parallel.py (which shares a bundle's files out) cannot
help it.  Here it is cut into one range per core at line starts (`cuts`); the first range
is read in this process and the others by forked workers (see parallel.py for why
`fork`), each by the scanning stage (scan.py) from its line 1 with parsers of its own.
A range's reader does not know what the ranges before it left behind, so the results are
merged into what one reader would have made (tests/test_split.py compares both):

* line numbers: a range's lines are numbered from 1 and shifted by the lines the ranges
  before it counted (so universal newlines and cut lines agree with one reader);
* events a later range made for something an earlier one had already recorded (the NCCL
  parser's collapsed INFO shapes, connections, Init/network/version lines per thread,
  rings per process; the message matcher's repeated context lines) are folded into the
  earlier event (_FOLDS: counts added, channel sets and pid lists joined) and dropped,
  with the fact the dropped line made;
* NCCL error chains and WARNs open at a cut: a chain a thread left open continues into
  the chain that thread starts the next range with (same return code), or is closed
  where the thread's next line is, or at the end of the file, in the one reader's order;
  a WARN left waiting becomes the origin of the chain the thread starts the next range
  with (`_first_lines` notes each thread's first line of a range);
* events are numbered in the one reader's order.

What cannot be merged exactly makes the caller read the file again in one process: any
parser but the NCCL parser and the message matcher at work (tracebacks, faulthandler and
gdb dumps, kernel or launcher lines: block-structured formats whose state crosses lines;
measured on the fixtures, such files are rarely big), a parser inside a block at a cut,
a parser failure, more than the budget's `repeats` copies of one line across a cut, the
event budget.  A range that stops on the time limit is the last one taken.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Callable

from postmortem.budget import Meter
from postmortem.model import Event, Ref
from postmortem.parallel import _SEVERITY, _advance, _encode, _quiet, _receive

# A single file at least this big is split: below, forking and sending a range's events
# back cost more than the second core gives (bench/scale_bench.py --only big prints both).
MIN_BYTES = 64 << 20
_CUT_SEARCH = 1 << 20        # bytes looked through after a cut's target for a calm place
_CALM_LINES = 16             # lines without an error-chain link before a cut
_MERGEABLE = frozenset({"nccl", "messages"})   # the readers whose carried state is merged here

LAST: list[str] = []         # what the last `read` did, in words (tests, bench)


def splits(entry, jobs: int, meter: Meter) -> bool:
    """A big plain file of a folder (the caller checked it goes through the scanning stage),
    several cores, `fork`, the real clock, and the whole file within the byte budget."""
    if not (jobs >= 2 and entry.disk_path is not None and entry.size is not None and entry.size >= MIN_BYTES):
        return False
    import multiprocessing  # only for a file big enough to split: its import is ~6 ms of every start

    return ("fork" in multiprocessing.get_all_start_methods()
            and meter.clock is time.monotonic and not meter.stopped
            and meter.bytes + entry.size <= meter.budget.bytes)


def cuts(stream, size: int, parts: int) -> list[tuple[int, int | None]]:
    """(start, stop) byte ranges of about equal size, each starting at a line's start; the
    last one reads to the end of the file (None), as one reader would."""
    starts = [0]
    for i in range(1, parts):
        target = max(size * i // parts - 1, starts[-1])
        stream.seek(target)
        at = _calm_point(stream.read(_CUT_SEARCH))
        if at is not None and starts[-1] < target + at < size:
            starts.append(target + at)
    return [(a, b) for a, b in zip(starts, starts[1:] + [None])]


def _calm_point(window: bytes) -> int | None:
    """Where in `window` (read from anywhere in a file) a range may start: after the first
    run of _CALM_LINES whole lines none of which is an NCCL error-chain link (`-> rc`).
    Not needed for exactness (open chains are carried over), it keeps the carrying rare.
    None: no such place."""
    at = window.find(b"\n") + 1
    if at == 0:
        return None
    calm = 0
    while calm < _CALM_LINES:
        end = window.find(b"\n", at)
        if end < 0:
            return None
        calm = 0 if window.find(b" -> ", at, end) >= 0 else calm + 1
        at = end + 1
    return at


class _Slice:
    """At most `left` bytes of a file from where it stands (None: to its end)."""

    def __init__(self, f, left: int | None) -> None:
        self.f, self.left = f, left

    def read(self, n: int) -> bytes:
        if self.left is None:
            return self.f.read(n)
        data = self.f.read(min(n, self.left))
        self.left -= len(data)
        return data


# -- what a later range's event adds to the earlier one it repeats ---------------------------

def _fold_plain(into: dict, more: dict) -> None:
    from postmortem.parsers.nccl import _MAX_LISTED

    into["count"] += more["count"]
    pids = into["pids"]
    for pid in more["pids"]:
        if len(pids) >= _MAX_LISTED:
            break
        if pid not in pids:
            pids.append(pid)


def _fold_channels(into: dict, more: dict) -> None:
    into["channels"][:] = sorted(set(into["channels"]).union(more["channels"]))
    into["channel_lines"] += more["channel_lines"]


def _adds(name: str) -> Callable[[dict, dict], None]:
    def fold(into: dict, more: dict) -> None:
        into[name] += more[name]
    return fold


def _keeps_first(into: dict, more: dict) -> None:
    return None


# By the table of carried state a key is in (nccl.py and messages.py say what each collapses).
_FOLDS: dict[str, Callable[[dict, dict], None]] = {
    "plain": _fold_plain,           # NcclParser._plain: INFO shape -> first nccl.info (count, pids)
    "connections": _fold_channels,  # NcclParser._connections: connection -> nccl.transport
    "said": _adds("count"),         # NcclParser._said: an Init/network/version line of a thread
    "rings": _keeps_first,          # NcclParser._rings: the first ring line of a process
    "context": _adds("lines"),      # MessageMatcher._context: a context message's line
}


def _carried(reader) -> dict[tuple, int]:
    """(table, key) -> index in the reader's events of the event that key collapses into."""
    events = reader.sink.events
    at = {id(e.data): i for i, e in enumerate(events)}
    nccl, out = reader.nccl, {}
    for table, entries in (("plain", nccl._plain), ("connections", nccl._connections), ("said", nccl._said),
                           ("context", reader.matcher._context)):
        for key, data in entries.items():
            if id(data) in at:
                out[(table, key)] = at[id(data)]
    if nccl._rings:
        for i, e in enumerate(events):
            if e.kind == "nccl.info" and "ring" in e.data and (e.host, e.pid) in nccl._rings:
                out.setdefault(("rings", (e.host, e.pid)), i)
    return out


# -- reading one range -----------------------------------------------------------------------

def _first_lines(nccl, sink) -> dict[tuple, tuple]:
    """Fills, as the parser reads, thread -> (line number if the thread's first line of the
    range is an error-chain link else None, that link's return code, events made before
    that line).  Every NCCL line of a thread passes through NcclParser._link (a chain
    link) or _end_chain (any other line) before it makes an event."""
    firsts: dict[tuple, tuple] = {}
    link, end_chain = nccl._link, nccl._end_chain

    def _link(line, key, found, where):
        if key not in firsts:
            firsts[key] = (line.no, found["rc"], len(sink.events))
        return link(line, key, found, where)

    def _end_chain(key):
        if key not in firsts:
            firsts[key] = (None, None, len(sink.events))
        return end_chain(key)

    nccl._link, nccl._end_chain = _link, _end_chain
    return firsts


def _read_range(entry, start: int, stop: int | None, k, meter: Meter, classes: dict, numbering) -> dict:
    """One range read by the scanning stage, with what merging it needs."""
    from postmortem import bundle, scan

    reader = scan._Reader(entry.path, entry.host, k, numbering, classes)
    nccl = reader.nccl
    firsts = _first_lines(nccl, reader.sink)
    bytes_before = meter.bytes
    with entry.open() as f:
        f.seek(start)
        lines = bundle.iter_lines(_Slice(f, None if stop is None else stop - start), meter, None)
        stopped = reader.read(lines, meter)
    in_block = bool(reader.in_block)
    open_chains = list(nccl._chains.items())   # finish() closes them: the merge does, in order
    waiting = {key: (w["file"], w["line"], w["msg"]) for key, w in nccl._last_warn.items()}
    finish_at = len(reader.sink.events)
    result = reader.finish(stopped)
    sink = result.sink
    return {"events": sink.events, "stacks": sink.stacks, "facts": sink.facts, "problems": sink.problems,
            "lines": result.lines, "unclaimed": result.unclaimed, "used": result.parsers,
            "repeated": result.repeated, "stopped": stopped, "why": meter.stopped or "",
            "cut_lines": lines.cut_lines, "ended": lines.ended, "blank_skipped": lines.blank_skipped,
            "in_block": in_block, "seen": reader.seen, "carried": _carried(reader),
            "bytes": meter.bytes - bytes_before, "open": open_chains, "finish_at": finish_at,
            "waiting": waiting, "firsts": firsts}


def _range_worker(conn, entry, start, stop, k, meter: Meter, classes: dict) -> None:
    _quiet()
    try:
        got = _read_range(entry, start, stop, k, meter, classes, itertools.count())
        got["events"] = _encode(got["events"])
        result = ("ok", got)
    except BaseException as exc:  # noqa: BLE001 - said to the parent, which reads the file itself
        result = ("failed", f"{type(exc).__name__}: {exc}")
    try:
        conn.send(result)
    except (BrokenPipeError, OSError):
        pass
    finally:
        conn.close()


def _meter_copy(meter: Meter, bytes_before: int) -> Meter:
    copy = Meter(meter.budget, meter.time_limit, meter.clock)
    copy.started, copy.bytes, copy.events = meter.started, bytes_before, meter.events
    return copy


def _ended(part: dict) -> bool:
    return bool(part["stopped"] or part["ended"])


# -- the parent side -------------------------------------------------------------------------

def read(entry, lines, got, k, jobs: int):
    """Read one big text file as `jobs` ranges; returns its TextResult, with `lines` (the
    one-process reader's Lines, unread) told what reading found, or None: the caller
    reads the file in one process (LAST says why)."""
    from postmortem.parsers import TextResult

    meter: Meter = got.meter
    with entry.open() as f:
        spans = cuts(f, entry.size, jobs)
    if len(spans) < 2:
        return _not_split("no place to cut")
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    workers, pipes = [], []
    done = False
    try:
        for start, stop in spans[1:]:
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_range_worker, daemon=True,
                               args=(writer, entry, start, stop, k, _meter_copy(meter, meter.bytes + start),
                                     got.line_classes))
            proc.start()
            writer.close()
            workers.append(proc)
            pipes.append(reader)
        base = _advance(got)
        first = _meter_copy(meter, meter.bytes)
        parts = [_read_range(entry, spans[0][0], spans[0][1], k, first, got.line_classes, itertools.count(base))]
        for reader in pipes:
            if _ended(parts[-1]):
                break
            part = _receive(reader, meter)
            if part is None:
                return _not_split("a worker failed, died or ran out of time")
            parts.append(part)
        done = True
    finally:
        for proc in workers:
            if done:
                proc.join(1.0)
            if proc.is_alive():
                proc.kill()
            proc.join()
        for reader in pipes:
            reader.close()
    merged = _merge(parts, base, entry.path, meter)
    if merged is None:
        return None
    sink, n = merged
    got.numbering = itertools.count(base + len(sink.events))
    meter.bytes += sum(p["bytes"] for p in parts)
    last = parts[-1]
    if last["why"]:
        meter.stop(last["why"])
    lines.cut_lines = sum(p["cut_lines"] for p in parts)
    lines.blank_skipped = sum(p["blank_skipped"] for p in parts)
    lines.ended = last["ended"]
    stopped = f"stopped at line {n}: {last['why']}" if last["stopped"] else ""
    return TextResult(sink, n, sum(p["unclaimed"] for p in parts),
                      tuple(sorted({u for p in parts for u in p["used"]})), sum(p["repeated"] for p in parts),
                      stopped)


def _not_split(why: str) -> None:
    LAST[:] = [f"read again in one process: {why}"]
    return None


def _unmergeable(parts: list[dict], meter: Meter) -> str:
    """Why the ranges cannot be merged into one reader's result, or ""."""
    from postmortem.parsers import _SEEN_CAP

    seen: dict[int, int] = {}   # the budget's `repeats`: copies of a line, over the ranges read
    for j, part in enumerate(parts):
        if part["why"].startswith("event budget"):
            return "the event budget was reached"
        if not set(part["used"]) <= _MERGEABLE:
            return f"read by {', '.join(sorted(set(part['used']) - _MERGEABLE))}"
        if j + 1 < len(parts) and part["in_block"]:
            return f"a parser inside a block at the end of range {j + 1}"
        if len(part["events"]) - part["finish_at"] != len(part["open"]):
            return "events made at the end of a range besides the open chains"
        if j and (part["stacks"] or part["problems"]):
            return "stacks or parser problems in a later range"
        if len(part["seen"]) >= _SEEN_CAP:
            return "too many distinct lines read one by one in a range"
        for h, times in part["seen"].items():
            total = seen.get(h, 0) + times
            if j and total > meter.budget.repeats:
                return f"more than {meter.budget.repeats} copies of one line across a cut"
            seen[h] = total
    if len(seen) >= _SEEN_CAP and any(part["repeated"] for part in parts[1:]):
        # One reader stops remembering new lines at the cap: a line a later range counted
        # (not read) after `repeats` copies might have been read by it.
        return "too many distinct lines read one by one"
    return ""


def _merge(parts: list[dict], base: int, path: str, meter: Meter):
    """The ranges' results as one reader's (Sink, lines read), or None where that is not exact."""
    from postmortem.parsers.base import Sink

    why = _unmergeable(parts, meter)
    if why:
        return _not_split(why)
    first = parts[0]
    events = first["events"][:first["finish_at"]]   # numbered base, base + 1, ... already
    sink = Sink(events=events, stacks=list(first["stacks"]), facts=list(first["facts"]),
                problems=list(first["problems"]))
    carried = {key: events[i] for key, i in first["carried"].items()}
    waiting = dict(first["waiting"])   # thread -> the WARN its next chain would start from
    chains = {key: chain for key, chain in first["open"]}   # open at the cut, in opening order
    shift = first["lines"]
    for part in parts[1:]:
        rows = part["events"][:part["finish_at"]]
        own = [(key, _shifted_chain(chain, shift)) for key, chain in part["open"]]
        _give_origins(rows, own, part["firsts"], waiting, shift)
        for key in part["firsts"]:
            waiting.pop(key, None)
        waiting.update(part["waiting"])
        before, instead = _close_chains(rows, own, part["firsts"], chains, shift, path)
        dropped, new = set(), {}
        for key, i in part["carried"].items():
            earlier = carried.get(key)
            if earlier is None:
                new.setdefault(i, []).append(key)
            elif i < len(rows):
                _FOLDS[key[0]](earlier.data, rows[i][13])
                dropped.add(i)
        refs = {rows[i][2:7] for i in dropped}
        for i in range(len(rows) + 1):
            for ev in before.get(i, ()):
                events.append(dataclasses.replace(ev, seq=base + len(events)))
            if i == len(rows) or i in dropped:
                continue
            if i in instead:
                ev = dataclasses.replace(instead[i], seq=base + len(events))
            else:
                kind, text, path_, line, offset, rtext, record, sev, stamp, host, pid, tid, rank, data, when, _ = rows[i]
                ev = Event(kind, text, Ref(path_, None if line is None else line + shift, offset, rtext, record),
                           _SEVERITY[sev], stamp, host, pid, tid, rank, data, when, base + len(events))
            events.append(ev)
            for key in new.get(i, ()):
                carried[key] = ev
        for fact in part["facts"]:
            ref = fact.ref
            if (ref.path, ref.line, ref.offset, ref.text, ref.record) in refs:
                continue  # made by a line whose event was folded into an earlier one
            sink.facts.append(dataclasses.replace(fact, ref=_shift(ref, shift)))
        chains.update(own)
        shift += part["lines"]
    for key, chain in chains.items():   # the one reader's finish(): what is still open, in order
        events.append(dataclasses.replace(_chain_event(path, key, chain), seq=base + len(events)))
    if meter.events + len(events) > meter.budget.events:
        return _not_split("the event budget was reached")
    LAST[:] = [f"{len(parts)} ranges merged"]
    return sink, shift


def _shift(ref: Ref, shift: int) -> Ref:
    return dataclasses.replace(ref, line=None if ref.line is None else ref.line + shift)


def _shifted_chain(chain, shift: int):
    return dataclasses.replace(chain, first=dataclasses.replace(chain.first, no=chain.first.no + shift))


def _chain_event(path: str, key: tuple, chain) -> Event:
    """The event NcclParser._end_chain makes of `chain` (its first line numbered already)."""
    from postmortem.parsers.base import Sink
    from postmortem.parsers.nccl import NcclParser

    sink = Sink()
    parser = NcclParser(path, sink)
    parser._chains[key] = chain
    parser._end_chain(key)
    return sink.events[0]


def _thread(key: tuple) -> tuple:
    """NcclParser's thread key (host, pid, tid as printed) as an event's (host, pid, tid)."""
    return key[0], int(key[1]) if key[1] else None, int(key[2]) if key[2] else None


def _give_origins(rows: list[tuple], own: list, firsts: dict, waiting: dict, shift: int) -> None:
    """A chain a range starts a thread with takes the WARN the ranges before it left waiting
    on that thread, as NcclParser._link would have: `origin` and `origin_msg`."""
    starts = {(*_thread(key), first[0]): key for key, first in firsts.items()
              if first[0] is not None and key in waiting}
    if not starts:
        return
    for row in rows:
        key = starts.get((row[9], row[10], row[11], row[3])) if row[0] == "nccl.error_chain" else None
        if key is not None:
            file, line, msg = waiting[key]
            row[13]["origin"] = f"{file}:{line}" if file else None
            row[13]["origin_msg"] = msg
    for key, chain in own:   # shifted already
        if key in waiting and firsts.get(key, (None,))[0] is not None and chain.origin is None \
                and chain.first.no == firsts[key][0] + shift:
            file, line, msg = waiting[key]
            chain.origin = {"file": file, "line": line, "msg": msg}


def _close_chains(rows: list[tuple], own: list, firsts: dict, chains: dict, shift: int,
                  path: str) -> tuple[dict, dict]:
    """What the chains open at the cut become in this range, as one reader would have them:
    continued by the chain the thread starts the range with (same return code; its event,
    or its open chain, becomes the joined chain), or closed before the thread's first
    line.  Returns events to put before row i, and events to put instead of row i;
    updates `chains` (still open, in opening order) and `own` (this range's open chains)."""
    before: dict[int, list] = {}
    instead: dict[int, Event] = {}
    for key in [key for key in chains if key in firsts]:
        chain = chains[key]
        no, rc, made_before = firsts[key]
        if no is not None and rc == chain.rc:   # the first line continues the chain
            went_on = next((i for i, (k, c) in enumerate(own) if k == key and c.first.no == no + shift), None)
            if went_on is not None:   # still open at this range's end: joined, it keeps its place
                more = own.pop(went_on)[1]
                chains[key] = dataclasses.replace(chain, links=chain.links + more.links,
                                                  funcs=chain.funcs + more.funcs, thread=more.thread)
                continue
            host, pid, tid = _thread(key)
            i = next(i for i, row in enumerate(rows) if row[0] == "nccl.error_chain" and row[3] == no
                     and (row[9], row[10], row[11]) == (host, pid, tid))
            data = rows[i][13]
            joined = dataclasses.replace(chain, links=chain.links + data["chain"],
                                         funcs=chain.funcs + data.get("funcs", []), thread=data["thread"])
            instead[i] = _chain_event(path, key, joined)
        else:
            before.setdefault(made_before, []).append(_chain_event(path, key, chain))
        del chains[key]
    return before, instead
