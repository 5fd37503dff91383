"""Parsing speed: a synthetic many-rank NCCL_DEBUG=INFO bundle built from real lines.

Real NCCL lines from fixtures/corpus are repeated with rank-specific host/pid/tid
until the file reaches --mb megabytes (a 512-rank INFO bundle is ~150 MB), then the
whole pipeline (`postmortem.run.analyze`) and `grep -E` over the same file are timed.
Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = re.compile(r"^(\S+?):(\d+):(\d+) ")


def real_nccl_lines(mix: str) -> list[str]:
    """`info`: the INFO lines of real init sequences (what fills a big NCCL_DEBUG=INFO
    bundle); `all`: every NCCL line of the corpus, WARNs and error chains included."""
    files = sorted((ROOT / "fixtures/corpus").glob("*/bundle/*"))
    if mix == "info":
        files += [ROOT / "fixtures/nccl/vllm_deepseek_init_2215.txt", ROOT / "fixtures/nccl/tpgds_init_complete.txt"]
    lines = []
    for f in files:
        for line in f.read_text(errors="replace").splitlines():
            line = line.split("] ", 1)[1] if line.startswith("[20") else line  # drop 2.26 stamps
            if PREFIX.match(line) and " NCCL " in line and (mix == "all" or " NCCL INFO " in line and " -> " not in line):
                lines.append(line)
    return lines


def build(path: Path, mb: float, mix: str = "all") -> int:
    base = real_nccl_lines(mix)
    target = int(mb * (1 << 20))
    size = n = 0
    with open(path, "w") as out:
        rank = 0
        while size < target:
            host, pid = f"node{rank // 8:03d}", 10000 + rank
            for line in base:
                text = PREFIX.sub(f"{host}:{pid}:{pid + 7} ", line) + "\n"
                out.write(text)
                size += len(text)
                n += 1
            rank += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--mix", choices=("info", "all"), default="info")
    args = ap.parse_args()
    from postmortem.run import analyze

    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "bundle"
        bundle.mkdir()
        log = bundle / "nccl.log"
        n = build(log, args.mb, args.mix)
        size = log.stat().st_size / (1 << 20)
        t0 = time.perf_counter()
        subprocess.run(["grep", "-cE", "WARN|Xid|error|Error", str(log)], capture_output=True)
        t_grep = time.perf_counter() - t0
        t0 = time.perf_counter()
        a = analyze(bundle)
        t_pm = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"bundle: {n} lines, {size:.1f} MiB of real NCCL lines (mix {args.mix}, rank-rewritten)")
        print(f"grep -E: {t_grep:.2f} s ({size / t_grep:.0f} MiB/s)")
        print(f"postmortem analyze: {t_pm:.2f} s ({size / t_pm:.1f} MiB/s, {n / t_pm:,.0f} lines/s), "
              f"{len(a.case.events)} events, peak RSS {rss:.0f} MiB, verdict {a.verdict.cause}")


if __name__ == "__main__":
    main()
