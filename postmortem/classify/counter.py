"""Counter-evidence: measured state that speaks against a cause.

Returns cause -> (factor, reasons): the factor multiplies the cause's support, and each
reason cites the fact it rests on ("/dev/shm is 16G and 3% used (df.txt:2)").
"""
from __future__ import annotations

from postmortem.model import Case, Event, Fact, Finding

GIB = 1 << 30


def _facts(case: Case, name: str) -> list[Fact]:
    return [f for f in case.facts if f.name == name]


def _num(f: Fact) -> float | None:
    try:
        return float(f.value)
    except (TypeError, ValueError):
        return None


# Kernel history older than this before the job's first log line is someone else's story.
BEFORE_JOB_S = 300


def job_start(case: Case) -> Event | None:
    """The earliest timed line of the job's own logs (anything but the kernel's)."""
    timed = [e for e in case.events if e.when and e.when.at and not e.kind.startswith(("kernel.", "core."))
             and e.ref.path and not _is_kernel_log(e, case)]
    return min(timed, key=lambda e: e.when.at) if timed else None  # type: ignore[union-attr]


def _is_kernel_log(e: Event, case: Case) -> bool:
    return e.kind.startswith("msg.") and e.stamp is not None and e.stamp.clock.value in ("boot", "delta")


def before_the_job(findings: list[Finding], case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Causes whose every sign ended long before the job started logging: a kernel log
    keeps the whole boot's history, and an OOM kill an hour earlier did not kill this job."""
    start = job_start(case)
    if start is None:
        return {}
    out: dict[str, tuple[float, tuple[str, ...]]] = {}
    by_cause: dict[str, list[Finding]] = {}
    for f in findings:
        by_cause.setdefault(f.cause, []).append(f)
    for cause, fs in by_cause.items():
        lasts = [f.last_at for f in fs]
        if not all(lasts):
            continue
        gap = (start.when.at - max(lasts)).total_seconds()  # type: ignore[operator,union-attr]
        if gap > BEFORE_JOB_S:
            reason = (f"every sign of {cause} is {gap / 60:.0f} min older than the job's first log line "
                      f"({start.ref.describe()}): earlier history of the host")
            trace.append(f"counter: {reason}")
            out[cause] = (0.25, (reason,))
    return out


def counter_evidence(case: Case, trace: list[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    out: dict[str, tuple[float, tuple[str, ...]]] = {}
    sizes = [(f, _num(f)) for f in _facts(case, "shm.size_bytes")]
    uses = [(f, _num(f)) for f in _facts(case, "shm.use_pct")]
    big = [(f, v) for f, v in sizes if v is not None and v >= GIB]
    low_use = [(f, v) for f, v in uses if v is not None and v < 50]
    if big and low_use:
        f, v = big[0]
        u, pct = low_use[0]
        reason = (f"/dev/shm is {v / GIB:.1f} GiB and {pct:.0f}% used "
                  f"({f.ref.describe()}): shared-memory exhaustion unlikely (unless it was full at crash time)")
        trace.append(f"counter: {reason}")
        out["shm_exhausted"] = (0.55, (reason,))
    elif big:
        f, v = big[0]
        reason = f"/dev/shm is {v / GIB:.1f} GiB ({f.ref.describe()}), larger than container defaults"
        trace.append(f"counter: {reason}")
        out["shm_exhausted"] = (0.8, (reason,))
    return out
