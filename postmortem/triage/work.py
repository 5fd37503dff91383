"""The unit of work: one bundle in, one picklable BundleResult out, never an exception.

Runs in a local worker process or on a Dask worker, so it takes and returns plain
values only; the HTML report travels back as text (a remote worker cannot write into
the caller's --out folder).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from postmortem.model import Basis
from postmortem.triage.discover import Task

ERROR_REASON_CHARS = 80


@dataclass(frozen=True, slots=True)
class Settings:
    tz: str | None = None
    rules: tuple[str, ...] = ()
    html: bool = True


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
    seen: str | None = None             # ISO time: earliest event, else earliest file mtime
    seen_basis: str | None = None       # "event" | "file-mtime"
    explain: tuple[str, ...] = ()
    html: str | None = field(default=None, repr=False)
    error: str | None = None
    seconds: float = 0.0


def analyse_one(task: Task, settings: Settings) -> BundleResult:
    started = time.perf_counter()
    try:
        result = _analyse(task, settings)
    except Exception as exc:  # noqa: BLE001 - one bad bundle never stops the batch
        result = error_result(task, exc)
    return _with_seconds(result, time.perf_counter() - started)


def _analyse(task: Task, settings: Settings) -> BundleResult:
    from postmortem.classify.signature import explain_signature
    from postmortem.run import Options, analyze

    analysis = analyze(Path(task.path), Options(tz=settings.tz, rules=tuple(Path(r) for r in settings.rules)))
    v = analysis.verdict
    explained = explain_signature(v.cause, v.category.value, v.root, analysis.case)
    seen, basis = _seen(analysis, Path(task.path))
    return BundleResult(
        name=task.name, path=task.path, signature=v.signature, category=v.category.value, cause=v.cause,
        confidence=v.confidence, summary=v.summary, hosts=tuple(analysis.hosts), gpus=_gpus(analysis),
        seen=seen, seen_basis=basis, explain=explained.notes, html=_html(analysis) if settings.html else None)


def _html(analysis) -> str:
    from postmortem.report import html
    return html.render(analysis)


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
