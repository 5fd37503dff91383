"""Counter-evidence: measured state that speaks against a cause.

Returns cause -> (factor, reasons): the factor multiplies the cause's support, and each
reason cites the fact it rests on ("/dev/shm is 16G and 3% used (df.txt:2)").
"""
from __future__ import annotations

from postmortem.model import Case, Fact

GIB = 1 << 30


def _facts(case: Case, name: str) -> list[Fact]:
    return [f for f in case.facts if f.name == name]


def _num(f: Fact) -> float | None:
    try:
        return float(f.value)
    except (TypeError, ValueError):
        return None


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
