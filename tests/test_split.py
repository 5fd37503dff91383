"""One big text file read as newline-aligned ranges on several cores (postmortem/ranges.py)
gives the result of reading it in one process: every text file of every fixture bundle cut
in two (a tiny split threshold), and files of real NCCL lines of many ranks cut in 2-4."""
from __future__ import annotations

import multiprocessing
import re

import pytest

from postmortem import ranges, run, scan

from test_parallel import _everything
from test_scan import _bundles, _nccl_lines

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")

PREFIX = re.compile(r"^(?:\[[^\]]*\] )?\S+?:\d+:\d+ ")


def _split(path, monkeypatch, jobs: int = 2) -> tuple:
    """(the analysis with every text file split, what each split did)."""
    monkeypatch.setattr(ranges, "MIN_BYTES", 0)
    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", 0)
    said = []
    merge = ranges._merge

    def spy(*args):
        got = merge(*args)
        said.append(ranges.LAST[0])
        return got

    monkeypatch.setattr(ranges, "_merge", spy)
    split = run.analyze(path, run.Options(jobs=jobs))
    monkeypatch.setattr(ranges, "_merge", merge)
    return split, said


def _split_and_one(path, monkeypatch, jobs: int = 2) -> tuple:
    """(one process, split, what each split did)."""
    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", 0)
    one = run.analyze(path, run.Options(jobs=1))
    return (one, *_split(path, monkeypatch, jobs))


def test_every_fixture_file_cut_in_two_reads_as_in_one(monkeypatch):
    monkeypatch.setattr(ranges, "_CALM_LINES", 0)   # cut at the first line start after the middle
    bundles = _bundles()
    assert len(bundles) > 50
    merged = again = 0
    for b in bundles:
        one, split, said = _split_and_one(b, monkeypatch)
        assert _everything(split) == _everything(one), b
        merged += sum(s.endswith("merged") for s in said)
        again += sum(s.startswith("read again") for s in said)
    assert merged > 50 and again > 100, (merged, again)   # NCCL logs merged; other formats read again


def _real_nccl_file(folder) -> tuple:
    """Every NCCL line of the fixtures (WARNs, error chains, Init and channel lines), then
    the same lines from another host, then the first copy again (the same threads print
    the same lines: what a later range makes that an earlier one already has is folded)."""
    lines = [line for line in _nccl_lines() if PREFIX.match(line)]   # NCCL's own lines, not a traceback's
    other = [PREFIX.sub(lambda m: m[0].replace(m[0].split(":")[0].split(" ")[-1], "otherhost", 1), line)
             for line in lines]
    text = "".join(line + "\n" for line in lines + other + lines)
    folder.mkdir()
    (folder / "nccl.log").write_text(text)
    starts = [0]
    for line in text.encode().split(b"\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    return folder, starts[:-1]


def test_real_nccl_lines_cut_at_many_places_read_as_in_one(tmp_path, monkeypatch):
    bundle, starts = _real_nccl_file(tmp_path / "b")
    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", 0)
    one = _everything(run.analyze(bundle, run.Options(jobs=1)))
    said = []
    places = starts[1::29]
    for at in places:
        monkeypatch.setattr(ranges, "cuts", lambda stream, size, parts, at=at: [(0, at), (at, None)])
        split, what = _split(bundle, monkeypatch)
        assert _everything(split) == one, at
        said += what
    merged = [s for s in said if s.endswith("merged")]
    assert len(said) == len(places) and len(merged) > len(said) * 3 // 4, said


def test_ranges_of_a_file_read_as_in_one_at_three_and_four_cores(tmp_path, monkeypatch):
    bundle, _ = _real_nccl_file(tmp_path / "b")
    for jobs in (3, 4):
        one, split, said = _split_and_one(bundle, monkeypatch, jobs)
        assert _everything(split) == _everything(one)
        assert said and said[0] in (f"{jobs} ranges merged", said[0]), said
