"""The unit of work: one bundle in, one picklable BundleResult out, never an exception.

Runs in a local worker process or on a Dask worker, so it takes and returns plain
values only; the HTML report travels back as text (a remote worker cannot write into
the caller's --out folder).
"""
from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from postmortem.model import Basis
from postmortem.triage.discover import Task

ERROR_REASON_CHARS = 80
BUNDLE_SECONDS = 60.0     # default time budget of one bundle (triage --time-limit)
TIMEOUT_SIGNATURE = "timeout"


@dataclass(frozen=True, slots=True)
class Settings:
    tz: str | None = None
    rules: tuple[str, ...] = ()
    html: bool = True
    time_limit: float | None = BUNDLE_SECONDS   # per bundle; None: no limit


@dataclass(frozen=True, slots=True)
class BundleResult:
    name: str
    path: str
    signature: str
    category: str
    cause: str
    confidence: float = 0.0
    summary: str = ""
    hosts: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()          # "host pci" (host '?' when the bundle names none)
    seen: str | None = None             # ISO time: the crash time, else earliest event, else earliest file mtime
    seen_basis: str | None = None       # "crash" | "event" | "file-mtime"
    crash_time: str | None = None       # ISO time of the first failure, from a log's own clock (never a file time)
    timed_out: bool = False             # the bundle hit its time budget: grouped under "timeout"
    explain: tuple[str, ...] = ()
    html: str | None = field(default=None, repr=False)
    error: str | None = None
    seconds: float = 0.0


class BundleTimeout(Exception):
    """The hard stop: an analysis that did not end at its own time limit."""


def analyze_one(task: Task, settings: Settings) -> BundleResult:
    started = time.perf_counter()
    try:
        with _hard_stop(settings.time_limit):
            result = _analyze_task(task, settings)
    except BundleTimeout:
        result = timeout_result(task, settings.time_limit, partial=None)
    except Exception as exc:  # noqa: BLE001 - one bad bundle never stops the batch
        result = error_result(task, exc)
    return _with_seconds(result, time.perf_counter() - started)


class _hard_stop:
    """The analysis stops itself at its time limit (run.Options.time_limit) between files;
    this alarm is the backstop for one file that never yields (2x the limit + 30 s).  Only
    in a process's main thread (a pool worker, or triage --jobs 1); Dask threads rely on
    the soft limit."""

    def __init__(self, limit: float | None):
        self.limit = None if limit is None else limit * 2 + 30
        self.armed = False

    def __enter__(self):
        if self.limit is None or threading.current_thread() is not threading.main_thread():
            return self
        try:
            self.previous = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.limit)
            self.armed = True
        except (ValueError, OSError, AttributeError):
            pass
        return self

    @staticmethod
    def _fire(signum, frame):
        raise BundleTimeout()

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def _analyze_task(task: Task, settings: Settings) -> BundleResult:
    from postmortem.classify.signature import explain_signature
    from postmortem.run import Options, analyze

    analysis = analyze(Path(task.path), Options(tz=settings.tz, rules=tuple(Path(r) for r in settings.rules),
                                                time_limit=settings.time_limit))
    v = analysis.verdict
    crash = crash_time(analysis)
    seen, basis = (crash, "crash") if crash else _seen(analysis, Path(task.path))
    if any("time limit" in note for note in analysis.limits):
        return timeout_result(task, settings.time_limit, partial=v, hosts=tuple(analysis.hosts), seen=seen,
                              basis=basis, crash=crash, html=_html(analysis) if settings.html else None)
    explained = explain_signature(v.cause, v.category.value, v.root, analysis.case)
    return BundleResult(
        name=task.name, path=task.path, signature=v.signature, category=v.category.value, cause=v.cause,
        confidence=v.confidence, summary=v.summary, hosts=tuple(analysis.hosts), gpus=_gpus(analysis),
        seen=seen, seen_basis=basis, crash_time=crash, explain=explained.notes,
        html=_html(analysis) if settings.html else None)


def timeout_result(task: Task, limit: float | None, partial=None, hosts: tuple[str, ...] = (),
                   seen: str | None = None, basis: str | None = None, crash: str | None = None,
                   html: str | None = None) -> BundleResult:
    """A bundle that used up its time budget is its own group, whatever it had read by then."""
    said = f"; from what was read: {partial.category.value}/{partial.cause}" if partial is not None else ""
    return BundleResult(name=task.name, path=task.path, signature=TIMEOUT_SIGNATURE, category="timeout",
                        cause="timeout", summary=f"stopped at the {limit:g} s time budget{said}", hosts=hosts,
                        seen=seen, seen_basis=basis, crash_time=crash, timed_out=True, html=html)


def crash_time(analysis) -> str | None:
    """When the first failure happened, by a log's own clock: the root finding's first
    time, else the last error or fatal line's.  Never a file time, and never a boot time
    (a kernel `[  12.3]` converts through the boot time, but the line's own moment is
    what counts; a line that only has a file time gives nothing)."""
    timed = [e for e in analysis.case.events if e.when and e.when.at and e.when.basis is not Basis.MTIME]
    root = analysis.verdict.root
    if root is not None and root.first_at is not None:
        if any(e.when.at == root.first_at for e in timed):
            return _iso(root.first_at)
    severe = [e for e in timed if e.severity.value in ("error", "fatal")]
    return _iso(max(severe, key=lambda e: _utc(e.when.at)).when.at) if severe else None


def _html(analysis) -> str:
    from postmortem.report import render_text
    return render_text("html", analysis)   # the renderer registry, by name


def _gpus(analysis) -> tuple[str, ...]:
    """PCI bus ids of the GPUs the kernel blamed (Xid lines), as `host pci`."""
    found = []
    for e in analysis.case.events:
        pci = e.data.get("pci") if e.kind in ("kernel.xid", "msg.nvrm_xid") else None
        if isinstance(pci, str) and pci:
            found.append(f"{e.host or '?'} {normalize_pci(pci)}")
    return tuple(dict.fromkeys(found))


def normalize_pci(pci: str) -> str:
    """`0000:09:00.0` and `0000:09:00` name the same GPU: keep domain:bus:device, lower case."""
    return pci.lower().split(".")[0]


def _seen(analysis, path: Path) -> tuple[str | None, str | None]:
    timed = [e.when for e in analysis.case.events if e.when and e.when.at]
    if timed:
        first = min(timed, key=lambda w: _utc(w.at))
        return _iso(first.at), "file-mtime" if first.basis is Basis.MTIME else "event"
    mtimes = [a.mtime for a in analysis.case.artifacts if a.mtime]
    if mtimes:
        return _iso(min(mtimes, key=_utc)), "file-mtime"
    try:
        return _iso(datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)), "file-mtime"
    except OSError:
        return None, None


def _utc(t: datetime) -> datetime:
    # Naive times (local zone unknown) are compared as if UTC; good enough to order bundles.
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return _utc(t).astimezone(timezone.utc).isoformat()


def error_result(task: Task, exc: BaseException) -> BundleResult:
    reason = short_reason(exc, task.path)
    return BundleResult(name=task.name, path=task.path, signature=f"error:{reason}", category="error",
                        cause="error", summary=f"cannot analyse: {type(exc).__name__}: {exc}", error=str(exc))


def short_reason(exc: BaseException, path: str) -> str:
    """What went wrong, without the bundle's own path or run-specific numbers, so the
    same failure on many bundles forms one group."""
    from postmortem.bundle import BundleError
    from postmortem.stacks import scrub

    text = str(exc).replace(path, "").replace(str(Path(path).resolve()), "").lstrip(": ").strip()
    if not isinstance(exc, BundleError):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    text = scrub(text)
    return (text[:ERROR_REASON_CHARS] or type(exc).__name__).replace("\n", " ")


def _with_seconds(result: BundleResult, seconds: float) -> BundleResult:
    from dataclasses import replace
    return replace(result, seconds=round(seconds, 3))
