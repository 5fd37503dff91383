"""Report rendering at scale: a synthetic Analysis of 1,000,000 events (model objects,
not fake logs) rendered to HTML, terminal and Markdown.  Prints render time, HTML size
and peak RSS.

    .venv/bin/python bench/report_bench.py [EVENTS]

The mix is shaped like a big multi-node NCCL job: 64 ranks on 8 hosts, mostly INFO
chatter (5,000 distinct message shapes, so the info-row cap is exercised), 1 % warnings,
0.1 % errors, one Xid as the root; half the events measured, a quarter with inferred
times (±2 s), a quarter with no time at all.
"""
from __future__ import annotations

import io
import resource
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from postmortem.model import (Analysis, Artifact, ArtifactStatus, Basis, Case, Category, Event, Finding,  # noqa: E402
                              Ref, Severity, Verdict, When)

START = datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)


def _word(i: int) -> str:
    """A letters-only word per number (digits would be masked away when rows collapse)."""
    return "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3))


WORDS = [f"tensor_{_word(i)}" for i in range(5000)]


def synthetic_analysis(n: int = 1_000_000) -> Analysis:
    events = [_event(i, n) for i in range(n)]
    root = events[n // 2]
    finding = Finding("gpu_fell_off_bus", Category.HARDWARE, 0.97, "xid", root.text, (root.ref,),
                      first_seq=root.seq, first_at=root.when.at if root.when else None, discriminator="xid79")
    verdict = Verdict(Category.HARDWARE, "gpu_fell_off_bus", 0.97, "GPU fell off the bus (Xid 79)",
                      "The GPU stopped answering on PCIe.", finding, (), (), ("Drain the node",),
                      ("nvidia-smi -q",), (), "sig2:hardware:gpu_fell_off_bus:xid79:-", ("rule xid: matched",))
    artifacts = tuple(Artifact(f"host{h}/rank{r}.log", "text", ArtifactStatus.OK, parsers=("nccl",),
                               lines=n // 64, host=f"host{h}") for h in range(8) for r in range(8))
    return Analysis(Case("synthetic-1m", tuple(events), (), (), artifacts), verdict)


def _event(i: int, n: int) -> Event:
    rank = i % 64
    host = f"host{rank // 8}"
    ref = Ref(f"{host}/rank{rank % 8}.log", i // 64 + 1, text="")
    if i == n // 2:
        return Event("kernel.xid", "NVRM: Xid (PCI:0000:09:00): 79, GPU has fallen off the bus.", ref,
                     Severity.FATAL, host=host, rank=rank, when=_when(i), seq=i)
    if i % 1000 == 7:
        kind, severity, text = "nccl.warn", Severity.ERROR, f"NCCL WARN Call to ibv_modify_qp failed with error {i % 13} code {i % 5}"
    elif i % 100 == 3:
        kind, severity, text = "nccl.warn", Severity.WARNING, f"NCCL WARN NET/IB : Got async event : port {i % 50} error {i}"
    else:
        kind, severity, text = "nccl.info", Severity.INFO, f"NCCL INFO Channel {i % 32:02d}/32 : {WORDS[i % len(WORDS)]} via P2P/IPC"
    return Event(kind, f"{host}:{1000 + rank}:{2000 + rank} [{rank % 8}] {text}", ref, severity,
                 host=host, pid=1000 + rank, rank=rank, when=_when(i), seq=i)


def _when(i: int) -> When:
    at = START + timedelta(milliseconds=i * 3)
    if i % 4 in (0, 1):
        return When(at, Basis.MEASURED)
    if i % 4 == 2:
        return When(at, Basis.CONVERTED, 2.0, "synthetic")
    return When(None, Basis.ORDER_ONLY)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    from postmortem.report import html, markdown, terminal

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    t = time.perf_counter()
    a = synthetic_analysis(n)
    built, rss_model = time.perf_counter() - t, peak_rss_mib()
    print(f"model: {n:,} events built in {built:.1f} s; peak RSS {rss_model:.0f} MiB")

    t = time.perf_counter()
    page = html.render(a)
    print(f"html: {time.perf_counter() - t:.2f} s, {len(page.encode()) / 1e6:.2f} MB, peak RSS {peak_rss_mib():.0f} MiB")
    Path("/tmp/report_bench.html").write_text(page, encoding="utf-8")

    t = time.perf_counter()
    terminal.render(a, out=io.StringIO())
    print(f"terminal: {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    text = markdown.render(a)
    print(f"markdown: {time.perf_counter() - t:.3f} s, {len(text)} chars")
    print(f"peak RSS overall {peak_rss_mib():.0f} MiB; HTML written to /tmp/report_bench.html")


if __name__ == "__main__":
    main()
