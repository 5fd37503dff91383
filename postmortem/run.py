"""The pipeline, one direction: bundle -> parsers -> timeline -> classify.

`analyze(path, options)` returns an Analysis and never raises on bundle content:
whatever cannot be read becomes an Artifact with status skipped/error and a message.
It raises BundleError only when the bundle as a whole cannot be opened.
"""
from __future__ import annotations

import dataclasses
import gc
import io
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from postmortem import bundle, knowledge, scan, timeline
from postmortem.classify import classify
from postmortem.model import Analysis, Artifact, ArtifactStatus, Case, Event, Fact, Stack
from postmortem.parsers import parse_text


@dataclass(frozen=True)
class Options:
    tz: str | None = None                      # zone for local times that print none
    rules: tuple[Path, ...] = ()               # extra knowledge files (--rules)
    use_gdb: bool = False                      # add a symbolized gdb backtrace for cores
    progress: Callable[[str], None] | None = None


@dataclass
class _Collected:
    events: list[Event] = field(default_factory=list)
    stacks: list[Stack] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    counter: Iterator[int] = field(default_factory=itertools.count)  # reading order of events


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
    entries, skipped = bundle.open_bundle(path)
    got = _Collected(artifacts=list(skipped))
    for entry in entries:
        if options.progress:
            options.progress(entry.path)
        got.artifacts.append(_read_entry(entry, got, options, k))
    events = tuple(got.events)
    artifacts = tuple(sorted(got.artifacts, key=lambda a: a.path))
    case = Case(bundle.bundle_name(path), events, tuple(got.stacks), tuple(got.facts), artifacts)
    placed = timeline.place(case, tz=options.tz)
    verdict = classify(placed.case, k)
    return Analysis(placed.case, verdict, placed.notes, placed.hosts)


def _read_entry(entry: bundle.Entry, got: _Collected, options: Options, k) -> Artifact:
    base = dict(path=entry.path, size=entry.size, host=entry.host, mtime=entry.mtime)
    try:
        stream = entry.open()
    except OSError as exc:
        return Artifact(kind="unreadable", status=ArtifactStatus.ERROR, message=f"cannot open: {exc}", **base)
    try:
        with stream:
            head = stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES] if hasattr(stream, "peek") else b""
            if not head:
                stream = io.BufferedReader(stream)  # type: ignore[arg-type]
                head = stream.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES]
            kind = bundle.sniff(head)
            if kind == "gzip":
                inner = bundle.gunzip(stream, entry.path)
                inner_head = inner.peek(bundle.SNIFF_BYTES)[: bundle.SNIFF_BYTES]
                kind = bundle.sniff(inner_head)
                return _read_content(entry, inner, kind, got, options, base, k, compressed=True)
            return _read_content(entry, stream, kind, got, options, base, k, compressed=False)
    except Exception as exc:  # noqa: BLE001 - one bad artifact never stops the analysis
        return Artifact(kind="unreadable", status=ArtifactStatus.ERROR,
                        message=f"{type(exc).__name__}: {exc}", **base)


def _read_content(entry, stream, kind: str, got: _Collected, options: Options, base: dict, k,
                  compressed: bool) -> Artifact:
    label = f"{kind} (gzip)" if compressed else kind
    if kind == "text":
        if entry.size is not None and entry.size >= scan.SCAN_MIN_BYTES:  # big: the scanning stage
            result = scan.scan_text(entry.path, stream, host=entry.host, k=k, counter=got.counter)
        else:
            result = parse_text(entry.path, bundle.iter_lines(stream), host=entry.host, k=k, counter=got.counter)
        got.events.extend(result.sink.events)
        got.stacks.extend(result.sink.stacks)
        got.facts.extend(result.sink.facts)
        message = "; ".join(result.sink.problems[:3])
        if len(result.sink.problems) > 3:
            message += f"; and {len(result.sink.problems) - 3} more"
        return Artifact(kind=label, status=ArtifactStatus.OK, message=message, parsers=result.parsers,
                        lines=result.lines, unclaimed=result.unclaimed, **base)
    if kind == "core":
        return _read_core(entry, stream, got, options, base, label)
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
    bundle, and the executable the core names, in the bundle or on this machine."""
    from postmortem import core

    if entry.disk_path is None or "gzip" in label:
        return "--gdb: gdb needs the core as an uncompressed file in a directory bundle"
    exe_names = [str(f.value) for f in result.facts if f.name in ("core.exe", "core.execfn") and f.value]
    candidates = [p for name in exe_names for p in (entry.disk_path.parent / Path(name).name, Path(name))]
    exe = next((p for p in candidates if p.is_file()), None)
    if exe is None:
        return f"--gdb: executable {exe_names[0] if exe_names else '(unknown)'} not found in the bundle or on this machine"
    text = core.gdb_backtrace(entry.disk_path, exe)
    if text is None:
        return "--gdb: gdb is not installed, or it failed or timed out"
    parsed = parse_text(f"{entry.path} (gdb)", text.splitlines(), host=entry.host, counter=got.counter)
    got.events.extend(parsed.sink.events)
    got.stacks.extend(parsed.sink.stacks)
    return ""


def _read_core(entry, stream, got: _Collected, options: Options, base: dict, label: str) -> Artifact:
    try:
        from postmortem import core
    except ImportError:  # pragma: no cover - core reader ships with the package
        return Artifact(kind=label, status=ArtifactStatus.SKIPPED, message="core reader unavailable", **base)
    seekable = stream if stream.seekable() else io.BytesIO(stream.read(64 << 20))
    # Libraries and executables shipped in the bundle beside the core give frames their names.
    search = (entry.disk_path.parent,) if entry.disk_path is not None else ()
    result = core.read_core(seekable, entry.path, search_dirs=search)
    got.events.extend(dataclasses.replace(e, seq=next(got.counter)) for e in result.events)
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
