"""The pipeline, one direction: bundle -> parsers -> timeline -> classify.

`analyze(path, options)` returns an Analysis and never raises on bundle content:
whatever cannot be read becomes an Artifact with status skipped/error and a message.
It raises BundleError only when the bundle as a whole cannot be opened.
"""
from __future__ import annotations

import dataclasses
import gc
import io
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from postmortem import bundle, fold, knowledge, parallel, ranges, scan
from postmortem.budget import Budget, Meter
from postmortem.model import Analysis, Artifact, ArtifactStatus, Case
from postmortem.parsers import parse_text
from postmortem.parsers.base import Sink


@dataclass(frozen=True)
class Options:
    tz: str | None = None                      # zone for local times that print none
    rules: tuple[Path, ...] = ()               # extra knowledge files (--rules)
    use_gdb: bool = False                      # add a symbolized gdb backtrace for cores
    progress: Callable[[str], None] | None = None
    # Wall-time limit for one analysis, in seconds (None: no limit).  When it is reached,
    # reading stops, the verdict is made from what was read, and Analysis.limits says so.
    time_limit: float | None = None
    budget: Budget = Budget()                  # sizes and counts one bundle may cost
    allow_hardlinks: bool = False              # read files with more than one hard link
    clock: Callable[[], float] = time.monotonic  # for the time limit (tests pass a fake clock)
    # Worker processes reading a big folder bundle's files (parallel.py): 1 = this process
    # only (the library's default: triage already runs one analysis per core), 0 = one per core.
    jobs: int = 1


@dataclass
class _Collected(Sink):
    """What the whole bundle produced: every artifact's sink merged (its `numbering` gives
    events their reading order across the bundle), the artifacts, and the bundle's meter."""

    artifacts: list[Artifact] = field(default_factory=list)
    meter: Meter = field(default_factory=Meter)
    line_classes: dict[str, int] = field(default_factory=dict)  # scan.scan_text's `shared`
    folded: int = 0   # events folded into others by the workers (fold.py): budgets count them
    early: fold.AsRead = field(default_factory=fold.AsRead)  # folding as this process reads (fold.py)


def analyze(path: Path, options: Options = Options()) -> Analysis:
    # Parsing makes millions of small acyclic objects; the cyclic collector would walk the
    # growing heap again and again on big bundles and find nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _analyze(path, options)
    finally:
        if collecting:
            gc.enable()


def _analyze(path: Path, options: Options) -> Analysis:
    k = knowledge.load(options.rules)
    meter = Meter(options.budget, options.time_limit, options.clock)
    entries, skipped = bundle.open_bundle(path, meter, options.allow_hardlinks)
    got = _Collected(artifacts=list(skipped), meter=meter)
    if len({e.path for e in entries}) != len(entries):  # one path twice: fold.py's folding as read is off
        got.early = fold.AsRead(on=False)
    first = 0
    jobs = parallel.auto_jobs() if options.jobs == 0 else options.jobs
    if parallel.worth_it(entries, jobs, meter):  # several cores, the same result (parallel.py)
        first = parallel.read_entries(entries, got, options, k, jobs, _read_one, meanwhile=_after_reading)
    for entry in entries[first:]:
        _read_one(entry, got, options, k)
    timeline, classify = _after_reading()
    artifacts = tuple(sorted(got.artifacts, key=lambda a: a.path))
    # The case is handed over, not kept here: placement frees each event it replaces (timeline.place).
    placed = timeline.place(Case(bundle.bundle_name(path), _taken_events(got), tuple(got.stacks), tuple(got.facts),
                                 artifacts), tz=options.tz)
    verdict = classify(placed.case, k)
    return Analysis(placed.case, verdict, placed.notes, placed.hosts, tuple(meter.notes))


def _after_reading():
    """The modules only the analysis after reading needs (placement, classification): not
    imported before the workers start (parallel.py, whose parent imports them while it
    waits for a worker's last files) nor by a worker (38 M instructions, ~4 ms, taken off a
    512-rank run's serial part)."""
    from postmortem import timeline
    from postmortem.classify import classify

    return timeline, classify


def _taken_events(got: _Collected) -> tuple:
    """The events read, routine INFO copies of many ranks folded (fold.py)."""
    events, got.events = fold.fold(got.early.apply(got.events))[0], []
    return tuple(events)


def _read_one(entry: bundle.Entry, got: _Collected, options: Options, k) -> None:
    meter = got.meter
    if meter.out_of_time():
        got.artifacts.append(Artifact(path=entry.path, kind="unread", status=ArtifactStatus.SKIPPED,
                                      message=f"not read: {meter.stopped}", size=entry.size,
                                      host=entry.host, mtime=entry.mtime))
        return
    if options.progress:
        options.progress(entry.path)
    got.artifacts.append(_noted(entry, _read_entry(entry, got, options, k)))
    meter.events = len(got.events) + got.folded


def _noted(entry: bundle.Entry, art: Artifact) -> Artifact:
    if not entry.note:
        return art
    return dataclasses.replace(art, message="; ".join(m for m in (entry.note, art.message) if m))


def _read_entry(entry: bundle.Entry, got: _Collected, options: Options, k) -> Artifact:
    base = dict(path=entry.path, size=entry.size, host=entry.host, mtime=entry.mtime)
    try:
        stream = entry.open()
    except Exception as exc:  # noqa: BLE001 - an archive member's header can be anything
        return Artifact(kind="unreadable", status=ArtifactStatus.ERROR, message=f"cannot open: {exc}", **base)
    try:
        with stream:
            head = stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES] if hasattr(stream, "peek") else b""
            if not head:
                stream = io.BufferedReader(stream)  # type: ignore[arg-type]
                head = stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES]
            kind = bundle.sniff(head)
            codec = kind == "binary" and compressed_codec(head)
            if codec:
                return _read_compressed(entry, codec, got, options, base, k)
            if kind == "gzip":
                inner = bundle.gunzip(stream, entry.path)
                try:
                    inner_head = inner.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES]
                except bundle.CUT_ERRORS as exc:
                    return Artifact(kind="gzip", status=ArtifactStatus.ERROR,
                                    message=f"compressed data is cut or corrupt ({type(exc).__name__}: {exc})", **base)
                kind = bundle.sniff(inner_head)
                return _read_content(entry, inner, kind, got, options, base, k, compressed=True,
                                     encoding=bundle.text_encoding(inner_head))
            return _read_content(entry, stream, kind, got, options, base, k, compressed=False,
                                 encoding=bundle.text_encoding(head))
    except Exception as exc:  # noqa: BLE001 - one bad artifact never stops the analysis
        return Artifact(kind="unreadable", status=ArtifactStatus.ERROR,
                        message=f"{type(exc).__name__}: {exc}", **base)


def compressed_codec(head: bytes) -> str | None:
    from postmortem.core.compressed import codec_of

    return codec_of(head)


def _read_compressed(entry, codec: str, got: _Collected, options: Options, base: dict, k) -> Artifact:
    """zstd, lz4 or xz (systemd-coredump's ways of storing cores): read through a seekable,
    budgeted decompressor, like a gzip member."""
    from postmortem.core import compressed

    why_not = compressed.missing_module(codec)
    if why_not:
        return Artifact(kind=f"binary ({codec})", status=ArtifactStatus.SKIPPED, message=why_not, **base)
    with compressed.Decompressed(entry.open, codec, entry.path) as raw:
        stream = io.BufferedReader(raw)
        try:
            inner_head = stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES]
        except Exception as exc:  # noqa: BLE001 - any decompressor's error on bad data
            return Artifact(kind=codec, status=ArtifactStatus.ERROR,
                            message=f"compressed data is cut or corrupt ({type(exc).__name__}: {exc})", **base)
        kind = bundle.sniff(inner_head)
        if kind == "core":
            return _read_core(entry, raw, got, options, base, f"core ({codec})")
        return _read_content(entry, stream, kind, got, options, base, k, compressed=True,
                             encoding=bundle.text_encoding(inner_head), codec=codec)


def _read_content(entry, stream, kind: str, got: _Collected, options: Options, base: dict, k,
                  compressed: bool, encoding: str | None = None, codec: str = "gzip") -> Artifact:
    label = f"{kind} ({codec})" if compressed else kind
    if kind == "text":
        if encoding:
            label = f"text ({encoding})" + (f" ({codec})" if compressed else "")
        lines = bundle.iter_lines(stream, got.meter, encoding)
        early, folded_before, done_early = got.early, got.early.folded, False
        if scan.applies(entry, compressed, encoding):  # big: the scanning stage
            jobs = parallel.auto_jobs() if options.jobs == 0 else options.jobs
            result = None
            if ranges.splits(entry, jobs, got.meter):  # one big file on several cores, or None
                result = ranges.read(entry, lines, got, k, jobs)
            if result is None:
                result = scan.scan_text(entry.path, lines, host=entry.host, k=k, numbering=got.numbering,
                                        meter=got.meter, shared=got.line_classes, early=early)
                done_early = True
        else:
            result = parse_text(entry.path, lines, host=entry.host, k=k, numbering=got.numbering, meter=got.meter)
        events = result.sink.events
        if not done_early:  # routine INFO copies folded into earlier files' events as they are read
            kept = early.file_done(events)
            events = events if kept is None else kept
        got.events.extend(events)
        got.folded += early.folded - folded_before
        got.stacks.extend(result.sink.stacks)
        got.facts.extend(result.sink.facts)
        said = []
        if lines.ended.startswith("the data breaks off"):
            said.append(f"file is cut: read up to line {result.lines} ({lines.ended})")
        elif lines.ended:
            said.append(f"read stopped at line {result.lines}: {lines.ended}")
        if result.stopped:
            said.append(result.stopped)
        if lines.cut_lines:
            said.append(f"{lines.cut_lines} line(s) longer than {lines.cap} characters cut")
        if lines.blank_skipped > 1000:
            said.append(f"{lines.blank_skipped} blank lines counted, not read one by one")
        if result.repeated:
            said.append(f"{result.repeated} repeats of identical lines counted, not parsed again")
        said.extend(result.sink.problems[:3])
        message = "; ".join(said)
        if len(result.sink.problems) > 3:
            message += f"; and {len(result.sink.problems) - 3} more"
        status = ArtifactStatus.ERROR if lines.ended.startswith("the data breaks off") else ArtifactStatus.OK
        return Artifact(kind=label, status=status, message=message, parsers=result.parsers,
                        lines=result.lines, unclaimed=result.unclaimed, **base)
    if kind == "core":
        return _read_core(entry, stream, got, options, base, label)
    if kind in ("pickle", "flightrec-json"):
        return _read_flightrec(entry, stream, got, base, label)
    if kind == "empty":
        return Artifact(kind="empty", status=ArtifactStatus.OK, message="empty file", **base)
    if kind == "elf":
        return Artifact(kind="elf", status=ArtifactStatus.SKIPPED,
                        message="ELF executable or library (kept for symbols, not a log)", **base)
    return Artifact(kind=label, status=ArtifactStatus.SKIPPED,
                    message="binary data that is neither a log nor an ELF core; not read", **base)


def _add_gdb_backtrace(entry, result, got: _Collected, label: str) -> str:
    """--gdb: a symbolized `thread apply all bt` from gdb, read like any gdb output.
    gdb needs the core and the executable as files: an uncompressed core of a directory
    bundle, and the executable the core names, found by base name inside the bundle only."""
    from postmortem import core
    from postmortem.core.gdb import executable_in_bundle

    if entry.disk_path is None or label != "core":
        return "--gdb: gdb needs the core as an uncompressed file in a directory bundle"
    exe_names = [str(f.value) for f in result.facts if f.name in ("core.exe", "core.execfn") and f.value]
    exe = executable_in_bundle(_bundle_folders(entry), exe_names)
    if exe is None:
        return (f"--gdb: executable {exe_names[0] if exe_names else '(unknown)'} not found in the bundle "
                f"(put a copy beside the core or at the bundle's top)")
    text = core.gdb_backtrace(entry.disk_path, exe)
    if text is None:
        return "--gdb: gdb is not installed, or it failed or timed out"
    parsed = parse_text(f"{entry.path} (gdb)", text.splitlines(), host=entry.host, numbering=got.numbering)
    got.events.extend(parsed.sink.events)
    got.stacks.extend(parsed.sink.stacks)
    return ""


def _bundle_folders(entry) -> list[Path]:
    """The core's own folder, then the bundle's top folder (both on disk)."""
    folder = entry.disk_path.parent
    depth = len(Path(entry.path).parts) - 1
    top = folder.parents[depth - 1] if depth > 0 else folder
    return [folder] if top == folder else [folder, top]


def _read_flightrec(entry, stream, got: _Collected, base: dict, label: str) -> Artifact:
    """A PyTorch Flight Recorder dump (parsers/flightrec.py); never unpickled the ordinary way."""
    from postmortem.parsers import flightrec

    data = stream.read(flightrec.MAX_DUMP_BYTES + 1)
    try:
        trace = flightrec.read(data, entry.path, host=entry.host)
    except flightrec.DumpError as exc:
        what = "Flight Recorder dump" if kind_is_dump(label, data) else "pickle"
        return Artifact(kind=label, status=ArtifactStatus.ERROR, message=f"{what} not read: {exc}", **base)
    events, facts = flightrec.to_case(trace, got.numbering)
    got.events.extend(events)
    got.facts.extend(facts)
    message = "; ".join(trace.problems[:3])
    return Artifact(kind=f"flightrec ({label})", status=ArtifactStatus.OK, message=message, parsers=("flightrec",),
                    lines=len(trace), **base)


def kind_is_dump(label: str, data: bytes) -> bool:
    return label.startswith("flightrec") or b"entries" in data[:1 << 16]


def _read_core(entry, stream, got: _Collected, options: Options, base: dict, label: str) -> Artifact:
    try:
        from postmortem import core
    except ImportError:  # pragma: no cover - core reader ships with the package
        return Artifact(kind=label, status=ArtifactStatus.SKIPPED, message="core reader unavailable", **base)
    seekable = stream if stream.seekable() else io.BytesIO(stream.read(64 << 20))
    # Libraries and executables shipped in the bundle beside the core give frames their names.
    search = tuple(_bundle_folders(entry)) if entry.disk_path is not None else ()
    result = core.read_core(seekable, entry.path, search_dirs=search)
    got.events.extend(dataclasses.replace(e, seq=next(got.numbering)) for e in result.events)
    got.stacks.extend(result.stacks)
    got.facts.extend(result.facts)
    status = ArtifactStatus.OK if not result.truncated else ArtifactStatus.ERROR
    problems = list(result.problems)
    if options.use_gdb:
        problems.append(_add_gdb_backtrace(entry, result, got, label))
    message = "; ".join(p for p in problems[:4] if p)
    if result.truncated and "truncated" not in message:
        message = ("core is truncated; " + message).rstrip("; ")
    return Artifact(kind=label, status=status, message=message, parsers=("core",), **base)
