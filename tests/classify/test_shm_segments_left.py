"""shm.nccl_segments_left: `ls -l /dev/shm` listing NCCL's nccl-XXXXXX segments beside NCCL's bare
system error.  NCCL's last attaching process unlinks each segment (src/os/linux.cc ncclOsShmOpen), so a
listed one belongs to a process that died during setup and keeps its tmpfs pages.  Public:
fixtures/validation21/llm-d-dp16-vllm-dev-shm-filled-stale-nccl-segments-crashloop-11.  Near misses: a REAL
listing of a private tmpfs holding only a Python segment (fixtures/lab/shm_listing/make.sh), and the
listing with no failure beside it."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_LLMD = ROOT / "fixtures/validation21/llm-d-dp16-vllm-dev-shm-filled-stale-nccl-segments-crashloop-11/bundle"
_PYTHON_ONLY = ROOT / "fixtures/lab/shm_listing/dev_shm_listing.txt"


def _bundle(tmp_path: Path, *files: tuple[Path, str]) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for src, name in files:
        shutil.copy(src, bundle / name)
    return bundle


def test_nccl_segments_left_beside_the_bare_system_error_claim_shm():
    v = analyze(_LLMD).verdict
    assert v.cause == "shm_exhausted", v.trace
    assert any(t.startswith("shm-nccl-segments-left: /dev/shm still holds 7 NCCL segment(s)") for t in v.trace), v.trace
    assert "dev_shm_listing.txt:1" in {r.describe() for r in v.root.evidence}


def test_the_listing_is_read_with_its_rows_not_dot_entries(tmp_path):
    a = analyze(_bundle(tmp_path, (_PYTHON_ONLY, "dev_shm_listing.txt")))
    listings = [f.value for f in a.case.facts if f.name == "shm.listing"]
    assert listings == [{"entries": [["psm_87340146", "1.0M"]], "total": "total 0"}]


def test_near_miss_a_python_segment_only_is_not_read(tmp_path):
    a = analyze(_bundle(tmp_path, (_LLMD / "stderr.txt", "stderr.txt"), (_PYTHON_ONLY, "dev_shm_listing.txt")))
    assert any(f.name == "shm.listing" for f in a.case.facts)
    assert not any(t.startswith("shm-nccl-segments-left") for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "unknown"


def test_near_miss_segments_without_a_failure_beside_them(tmp_path):
    a = analyze(_bundle(tmp_path, (_LLMD / "dev_shm_listing.txt", "dev_shm_listing.txt")))
    assert not any(t.startswith("shm-nccl-segments-left") for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "unknown"
