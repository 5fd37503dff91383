"""Reading a bundle's files in worker processes (postmortem/parallel.py) gives the result of
reading them in one: every fixture bundle, a many-rank bundle of real NCCL lines, bundles
that reach the event or byte budget, a worker that dies, workers that overrun the time limit."""
from __future__ import annotations

import gzip
import os
import re
import signal
from pathlib import Path

import pytest

from postmortem import parallel, run, scan
from postmortem.budget import Budget

from conftest import FIXTURES, ROOT
from test_scan import _bundles, _nccl_lines

PREFIX = re.compile(r"^(\S+?):(\d+):(\d+) ")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _everything(a) -> tuple:
    c = a.case
    return (c.artifacts, [(e.kind, e.ref, e.text, e.stamp, e.host, e.pid, e.tid, e.rank, e.severity, dict(e.data),
                           e.when, e.seq) for e in c.events],
            c.stacks, c.facts, a.limits, a.timeline_notes, a.hosts, a.verdict)


def _both(path: Path, monkeypatch, budget: Budget = Budget(), scan_min: int | None = None) -> tuple:
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "GROUPS_PER_JOB", 50)  # small groups: a boundary after most files
    if scan_min is not None:
        monkeypatch.setattr(scan, "SCAN_MIN_BYTES", scan_min)
    one = run.analyze(path, run.Options(budget=budget, jobs=1))
    pools = []
    read_entries = parallel.read_entries
    monkeypatch.setattr(parallel, "read_entries", lambda *a, **kw: pools.append(1) or read_entries(*a, **kw))
    two = run.analyze(path, run.Options(budget=budget, jobs=2))
    monkeypatch.setattr(parallel, "read_entries", read_entries)
    return one, two, bool(pools)


def _folder_bundles() -> list[Path]:
    return [b for b in _bundles() if sum(1 for p in b.rglob("*") if p.is_file()) >= 2]


def test_every_fixture_bundle_reads_alike_in_workers(monkeypatch):
    bundles = _folder_bundles()
    assert len(bundles) > 25
    used = 0
    for b in bundles:
        one, two, pooled = _both(b, monkeypatch, scan_min=0)
        assert _everything(two) == _everything(one), b
        used += pooled
    assert used > 25


def _ranks(into: Path, ranks: int = 24, lines: int = 300, gz: bool = False) -> Path:
    """Real NCCL lines (WARNs and error chains included) behind each rank's own prefix."""
    base = [line for line in _nccl_lines() if PREFIX.match(line)][:lines]
    into.mkdir()
    for r in range(ranks):
        text = "".join(PREFIX.sub(f"node{r // 8:03d}:{1000 + r}:{1007 + r} ", line) + "\n" for line in base) * 2
        if gz:
            (into / f"nccl_rank{r}.log.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        else:
            (into / f"nccl_rank{r}.log").write_text(text)
    return into


def test_many_ranks_read_alike_in_workers(tmp_path, monkeypatch):
    one, two, pooled = _both(_ranks(tmp_path / "b"), monkeypatch)
    assert pooled
    assert len(one.case.events) > 1000
    assert _everything(two) == _everything(one)


@pytest.mark.parametrize("budget,gz", [(Budget(events=1500), False), (Budget(bytes=400_000), True)])
def test_a_budget_reached_in_a_worker_ends_where_one_process_ends(tmp_path, monkeypatch, budget, gz):
    """gz: sized small on disk, the files reach the byte budget when read (in a worker)."""
    one, two, pooled = _both(_ranks(tmp_path / "b", gz=gz), monkeypatch, budget)
    assert pooled
    assert one.limits  # the budget was reached
    assert _everything(two) == _everything(one)


def _dies(*args):
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_dead_worker_leaves_the_rest_to_this_process(tmp_path, monkeypatch):
    bundle = _ranks(tmp_path / "b", ranks=6, lines=50)
    one = run.analyze(bundle, run.Options(jobs=1))
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "_read_group", _dies)  # the forked workers inherit it
    two = run.analyze(bundle, run.Options(jobs=2))
    assert _everything(two) == _everything(one)
    assert parallel._LAST_WORKERS and all(_gone(pid) for pid in parallel._LAST_WORKERS)


def _hangs(*args):
    signal.pause()


def test_workers_past_the_time_limit_are_killed(tmp_path, monkeypatch):
    bundle = _ranks(tmp_path / "b", ranks=6, lines=50)
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "GRACE_S", 0.2)
    monkeypatch.setattr(parallel, "_read_group", _hangs)
    a = run.analyze(bundle, run.Options(jobs=2, time_limit=0.3))
    assert parallel._LAST_WORKERS and all(_gone(pid) for pid in parallel._LAST_WORKERS)
    assert any("time limit of 0.3 s reached" in note for note in a.limits)
    # this process read its own share (the first groups); the files the workers held say why they were not read
    unread = [art.path for art in a.case.artifacts if art.message == "not read: time limit of 0.3 s reached"]
    read = [art.path for art in a.case.artifacts if art.path not in unread]
    assert unread and read
    assert {art.message for art in a.case.artifacts if art.path in read} == {""}
    assert max(read) < min(unread)  # nccl_rank0 .. 5: name order is the bundle's order


def test_cli_takes_jobs(tmp_path):
    import subprocess
    import sys

    bundle = _ranks(tmp_path / "b", ranks=4, lines=40)
    out = subprocess.run([sys.executable, "-m", "postmortem", "analyze", str(bundle), "--html", "-", "-q",
                          "--jobs", "2"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    bad = subprocess.run([sys.executable, "-m", "postmortem", "analyze", str(bundle), "--jobs", "-1"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "--jobs" in bad.stderr


def _gone(pid: int) -> bool:
    """The worker exited and was reaped by the pool (no zombie left for anyone to wait for)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False
