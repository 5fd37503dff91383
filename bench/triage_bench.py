"""How many bundles per second does `postmortem triage` get through?  Prints figures; not a timed test.

    python bench/triage_bench.py                 # 500 bundles, --jobs 2, then a 2-worker LocalCluster
    python bench/triage_bench.py --bundles 200 --jobs 4 --no-dask

The bundles are copies of the fixtures/corpus bundles under new names (case-NNNN), made
in a temporary folder and deleted afterwards.  Each run is the real command (analysis,
grouping, per-bundle HTML reports, index.html, triage.json) through cli.main.  The Dask
figure excludes the cluster's start-up: triage --dask runs against a cluster that exists.
"""
from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
sys.path.insert(0, str(ROOT))

from postmortem import cli  # noqa: E402


def make_bundles(into: Path, count: int) -> Path:
    """`count` bundles cycling through the corpus cases, each under its own name."""
    batch = into / "bundles"
    batch.mkdir()
    cases = sorted(p.parent for p in CORPUS.glob("*/truth.json"))
    for n, case in zip(range(count), itertools.cycle(cases)):
        shutil.copytree(case / "bundle", batch / f"{case.name}-{n:04d}")
    return batch


def timed_triage(batch: Path, out: Path, *extra: str) -> tuple[float, dict]:
    started = time.perf_counter()
    code = cli.main(["triage", str(batch), "--out", str(out), "-q", *extra])
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"triage exited {code}")
    return seconds, json.loads((out / "triage.json").read_text())


def report(label: str, seconds: float, doc: dict) -> None:
    t = doc["totals"]
    print(f"{label:28} {t['bundles']} bundles in {seconds:6.1f} s = {t['bundles'] / seconds:6.1f} bundles/s"
          f"  ({t['groups']} groups, {t['errors']} errors)")
    for g in doc["groups"]:
        if g["error"]:
            print(f"    {g['count']} x {g['signature']}")


def run_dask(batch: Path, out: Path, workers: int) -> None:
    try:
        from dask.distributed import LocalCluster
    except ImportError:
        print("dask LocalCluster: skipped (pip install 'postmortem[dask]')")
        return
    started = time.perf_counter()
    with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=None, silence_logs=40) as cluster:
        print(f"(LocalCluster with {workers} workers started in {time.perf_counter() - started:.1f} s)")
        seconds, doc = timed_triage(batch, out, "--dask", cluster.scheduler_address)
    report(f"dask LocalCluster x{workers}", seconds, doc)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundles", type=int, default=500)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--no-dask", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="triage-bench-") as tmp:
        tmp_path = Path(tmp)
        batch = make_bundles(tmp_path, args.bundles)
        print(f"{args.bundles} bundles made from {len(list(CORPUS.glob('*/truth.json')))} corpus cases")
        seconds, doc = timed_triage(batch, tmp_path / "local", "--jobs", str(args.jobs))
        report(f"local pool --jobs {args.jobs}", seconds, doc)
        if not args.no_dask:
            run_dask(batch, tmp_path / "dask", args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
