"""Flight Recorder at scale: --ranks dumps of --entries entries each, read and matched.

The dumps are synthetic but shaped exactly like a real one: the crash lab's rank-0 dump
(fixtures/bundles/lab-flightrec-straggler/bundle/flightrec/nccl_trace_rank_0, torch 2.13,
version 2.10) gives every key, type and frame; entries are repeated with rising
collective_seq_id / record_id / time_created_ns, a rotating set of call sites (frames) and
tensor sizes, and a second process group; one rank stops one collective early (so the
matching has a rank behind to find).  Written with pickle protocol 2, as torch writes them.

The read runs in a fresh process (`python bench/flightrec_bench.py --read DIR`) so its peak
RSS is the reader's own: parsers.flightrec.read on every file, then collectives.match.
Prints figures; asserts nothing.  Targets (issue 15): 1,024 x 2,000 in < 10 s and < 500 MB.
"""
from __future__ import annotations

import argparse
import copy
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REAL = ROOT / "fixtures/bundles/lab-flightrec-straggler/bundle/flightrec/nccl_trace_rank_0"


def synthetic_dump(real: dict, rank: int, world: int, entries: int, behind: int) -> dict:
    template = real["entries"][-1]
    dump = {k: copy.deepcopy(v) for k, v in real.items() if k != "entries"}
    dump["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))},
                         "1": {"name": "1", "desc": "tp_group", "ranks": str(list(range(world)))}}
    # torch symbolizes each distinct frame once and every entry's list points at those dicts,
    # so its pickle holds each frame once and BINGETs after (checked on the real dump)
    sites = []
    for n in range(8):   # rotating call sites: the real frames with a different caller line
        frames = copy.deepcopy(template["frames"])
        frames[2]["line"] = frames[2]["line"] + n
        sites.append(frames)
    out = []
    seq = {"0": 0, "1": 0}
    t0 = template["time_created_ns"]
    for i in range(entries - behind):
        pg = "1" if i % 4 == 3 else "0"     # every 4th collective on a second group
        seq[pg] += 1
        e = dict(template)
        e.update(record_id=i, collective_seq_id=seq[pg], op_id=seq[pg], pg_id=int(pg),
                 process_group=(pg, "default_pg" if pg == "0" else "tp_group"),
                 time_created_ns=t0 + i * 1_000_000 + rank, input_sizes=[[8 << (i % 3)]],
                 output_sizes=[[8 << (i % 3)]], frames=list(sites[i % 8]), retired=True)
        out.append(e)
    out[-1]["retired"] = False
    dump["pg_status"] = {pg: {"last_enqueued_collective": n, "last_started_collective": -1,
                              "last_completed_collective": n - 1 if pg == out[-1]["process_group"][0] else n}
                         for pg, n in seq.items()}
    dump["entries"] = out
    return dump


def generate(folder: Path, ranks: int, entries: int) -> int:
    from postmortem.parsers import flightrec
    real = flightrec.load(REAL.read_bytes())   # never pickle.load a dump, even our own fixture
    total = 0
    for r in range(ranks):
        data = pickle.dumps(synthetic_dump(real, r, ranks, entries, 1 if r == ranks // 3 else 0), protocol=2)
        (folder / f"nccl_trace_rank_{r}").write_bytes(data)
        total += len(data)
    return total


def read(folder: Path) -> None:
    import gc
    gc.disable()   # as postmortem.run.analyze does while parsing
    from postmortem import collectives
    from postmortem.parsers import flightrec
    t0, c0 = time.perf_counter(), time.process_time()
    traces = [flightrec.read(p.read_bytes(), p.name) for p in sorted(folder.iterdir())]
    t1, c1 = time.perf_counter(), time.process_time()
    m = collectives.match(traces)
    t2, c2 = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    entries = sum(len(t) for t in traces)
    print(f"read {len(traces)} dumps, {entries:,} entries: {t1 - t0:.2f} s wall, {c1 - c0:.2f} s CPU; "
          f"match: {t2 - t1:.2f} s wall, {c2 - c1:.2f} s CPU; "
          f"total {t2 - t0:.2f} s wall, {c2 - c0:.2f} s CPU; peak RSS {rss:.0f} MB; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for g in m.groups:
        print(f"  {g.summary()[:220]}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--entries", type=int, default=2000)
    p.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.read:
        read(args.read)
        return
    folder = Path(tempfile.mkdtemp(prefix="pm-frbench-"))
    try:
        t0 = time.perf_counter()
        size = generate(folder, args.ranks, args.entries)
        print(f"generated {args.ranks} dumps x {args.entries} entries, {size / 2**20:.0f} MB of pickle "
              f"in {time.perf_counter() - t0:.1f} s")
        subprocess.run([sys.executable, __file__, "--read", str(folder)], check=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
