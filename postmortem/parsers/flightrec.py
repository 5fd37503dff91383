"""PyTorch Flight Recorder dumps (pickle and JSON, every version torch has shipped).

Flight Recorder keeps the last N collectives of every process group of a rank
(`TORCH_FR_BUFFER_SIZE`, formerly `TORCH_NCCL_TRACE_BUFFER_SIZE`) and writes them on a
timeout (`TORCH_FR_DUMP_ON_TIMEOUT` / `TORCH_NCCL_DUMP_ON_TIMEOUT`) to
`<TORCH_FR_DUMP_TEMP_FILE><rank>` (default `/tmp/nccl_trace_rank_<rank>`), or on demand
(`torch._C._distributed_c10d._dump_fr_trace()` / `_dump_fr_trace_json()`).  The rank is in
the file name only, as torch's own loader (torch/distributed/flight_recorder/components/
loader.py) reads it: the trailing digits.

A dump is a dict: `version` ("1.x" .. "2.10" so far; minor = added fields), `entries`,
`pg_config` (name -> {name, desc, ranks}), `pg_status` (pg_id -> last enqueued / started /
completed collective), `comm_lib_version` or `nccl_version`.  An entry has `record_id`,
`pg_id`, `process_group` (name, desc), `collective_seq_id`, `p2p_seq_id`, `op_id`,
`profiling_name` ("nccl:all_reduce"), `input_sizes`/`input_dtypes`/`output_sizes`/
`output_dtypes`, `state` (scheduled/started/completed), `time_created_ns`,
`time_discovered_started_ns`/`..._completed_ns`, `timeout_ms`, `retired`, `is_p2p`,
`frames` ([{name, filename, line}], pickle only).  Fields appeared over the versions, so
every one is optional here; an entry without `profiling_name` is skipped with a note.

Dumps are untrusted input.  A pickle is never given to `pickle.load`: it is read by an
Unpickler whose `find_class` and `persistent_load` always refuse, so the only objects it
can build are dicts, lists, tuples, sets, strings, bytes, numbers, booleans and None --
no import, no call, no code.  Size is capped before reading; the result is then read
through a fixed schema (known keys, checked types, capped lengths), so no deep or odd
structure reaches the rest of the tool.

The dump is kept in columns (`RankTrace`, flightrec_trace.py): 1,024 ranks x 2,000 entries
must fit in a few hundred MB; the bytes are loaded by flightrec_load.py.  Gloo in torch 2.13 leaves `state` at "scheduled" for every entry and records
completion in `pg_status`; an entry counts as completed when its state says so or its
sequence number is at or below the group's `last_completed_collective`.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Iterator

from postmortem.model import ClockKind, Event, Fact, Ref, Severity, Stamp
from postmortem.parsers.flightrec_load import (  # noqa: F401 - also this module's interface
    MAX_DUMP_BYTES,
    DumpError,
    load,
    looks_like_json_dump,
    looks_like_pickle,
)
from postmortem.parsers.flightrec_trace import (  # noqa: F401 - also this module's interface
    FrEntry,
    RankTrace,
    Shape,
    _fill,
    _fill_fast,
    _is_int,
    _text,
)

MAX_ENTRIES = 200_000          # per dump; torch's ring buffer default is 2,000
TAIL_EVENTS = 24               # entries per rank and process group placed on the timeline
KNOWN_MAJOR = (1, 2)           # "1.x" (2.2 era) .. "2.10" (torch 2.13); a newer major changed fields

_RANK_IN_NAME = re.compile(r"(\d+)(?:\.(?:pkl|pickle|json|bin|dump))?$", re.I)
_RANK_WORD = re.compile(r"rank[_-]?(\d+)", re.I)


def rank_from_name(path: str) -> int | None:
    """torch names a dump `<prefix><rank>`; a `rank<N>` elsewhere in the path is the fallback."""
    base = path.rsplit("/", 1)[-1]
    m = _RANK_IN_NAME.search(base)
    if m:
        return int(m.group(1))
    m = _RANK_WORD.search(path)
    return int(m.group(1)) if m else None


def read(data: bytes, path: str, host: str | None = None) -> RankTrace:
    """One dump file -> RankTrace; DumpError when it is not a readable dump at all."""
    raw = load(data)
    version = _text(raw.get("version"))
    trace = RankTrace(path=path, rank=rank_from_name(path), version=version,
                      comm_lib_version=_text(raw.get("comm_lib_version", raw.get("nccl_version", ""))), host=host)
    _check_version(version, trace)
    if trace.rank is None:
        trace.problems.append("no rank in the file name (torch names dumps <prefix><rank>); "
                              "cross-rank matching cannot place this dump")
    trace.pg_ranks = _pg_ranks(raw.get("pg_config"), trace)
    statuses = _pg_status(raw.get("pg_status"))
    entries = raw.get("entries")
    if entries is None:
        entries = []
        trace.problems.append("the dump has no 'entries' (dumped with includeCollectives off?)")
    if not isinstance(entries, list):
        raise DumpError(f"'entries' is a {type(entries).__name__}, not a list")
    if len(entries) > MAX_ENTRIES:
        trace.problems.append(f"{len(entries)} entries; only the last {MAX_ENTRIES} were read")
        entries = entries[-MAX_ENTRIES:]
        offset = len(raw["entries"]) - MAX_ENTRIES
    else:
        offset = 0
    if not _fill_fast(trace, entries, offset, statuses):
        _fill(trace, entries, offset, statuses)
    trace.pg_status = statuses
    return trace


def _check_version(version: str, trace: RankTrace) -> None:
    m = re.fullmatch(r"(\d+)\.(\d+)", version)
    if not m:
        trace.problems.append(f"unknown Flight Recorder version {version!r}; read by field names, as far as they go")
    elif int(m.group(1)) not in KNOWN_MAJOR:
        trace.problems.append(f"Flight Recorder version {version} is newer than the versions this reader knows "
                              f"(1.x-2.x); a new major version changes fields: read by field names, check the result")


def _pg_ranks(config: Any, trace: RankTrace) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    if not isinstance(config, dict):
        return out
    for key, value in list(config.items())[:4096]:
        if not isinstance(value, dict):
            continue
        name = _text(value.get("name", key)) or _text(key)
        ranks = value.get("ranks")
        if isinstance(ranks, str):   # torch writes the list as its string form, "[0, 1, 2]"
            ranks = [int(x) for x in re.findall(r"-?\d+", ranks[:1 << 20])]
        if isinstance(ranks, list):
            out[name] = tuple(int(r) for r in ranks[:1 << 20] if _is_int(r))
    return out


def _pg_status(status: Any) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    if not isinstance(status, dict):
        return out
    for key, value in list(status.items())[:4096]:
        if isinstance(value, dict):
            out[_text(key)] = {k: int(v) for k, v in value.items()
                               if isinstance(k, str) and _is_int(v)}
    return out


def stamp_of(ns: int | None) -> Stamp | None:
    if ns is None or ns <= 0:
        return None
    try:
        at = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return Stamp(ClockKind.WALL, wall=at, resolution_s=1e-6)


def to_case(trace: RankTrace, numbering: Iterator[int]) -> tuple[list[Event], list[Fact]]:
    """The dump as the pipeline sees it: one fact holding the whole trace (for cross-rank
    matching), and events for the last TAIL_EVENTS entries of each process group, placed at
    their measured creation, start and completion times."""
    fact = Fact(name="flightrec.dump", value=trace, ref=Ref(trace.path, text=str(trace)), host=trace.host,
                text=str(trace))
    events: list[Event] = []
    last: dict[int, list[int]] = {}
    for i in range(len(trace)):
        last.setdefault(trace.pg[i], []).append(i)
    for pg, rows in last.items():
        for i in rows[-TAIL_EVENTS:]:
            e = trace.entry(i)
            base = dict(pg=e.pg, seq=e.seq, p2p_seq=e.p2p_seq, op=e.op, backend=e.backend, state=e.state,
                        completed=e.completed, record=e.index, sizes=e.shape.describe())
            severity = Severity.INFO if e.completed else Severity.WARNING
            for kind, ns, what in (("fr.created", e.created_ns, "entered"), ("fr.started", e.started_ns, "started"),
                                   ("fr.completed", e.completed_ns, "completed")):
                if ns is None and kind != "fr.created":
                    continue
                events.append(Event(kind=kind, text=f"rank {trace.rank} {what} {e.describe()}", ref=e.ref(trace.path),
                                    severity=severity if kind == "fr.created" else Severity.INFO,
                                    stamp=stamp_of(ns), host=trace.host, rank=trace.rank, data=base,
                                    seq=next(numbering)))
    return events, [fact]
