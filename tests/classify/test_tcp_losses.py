"""TCP connections losing packets (ss -ti `lost:`) beside collective timeouts (rule
tcp-connection-losses, sign net.tcp_segments_lost).  Bundles: the development case
validation23 lab5-routed-path-packet-loss as stored, and the same bundle with its ss output
replaced by a real healthy one made here (fixtures/system/make_ss_fixtures.sh)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "fixtures" / "validation23" / "lab-b" / "lab5-routed-path-packet-loss" / "bundle"
SYSTEM = ROOT / "fixtures" / "system"


def _fired(verdict) -> bool:
    return any(line.startswith("tcp-connection-losses: ") for line in verdict.trace)


def test_lost_segments_beside_timeouts_on_every_rank_claim_the_transport(tmp_path):
    v = analyze(CASE).verdict
    assert v.cause == "nccl_timeout", v.trace
    assert _fired(v) and any("net.tcp_segments_lost" in line for line in v.trace)


def test_a_healthy_connection_snapshot_adds_nothing(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(CASE, bundle)
    (bundle / "node1_ss_tin.txt").write_text((SYSTEM / "ss_tin_healthy.txt").read_text(encoding="utf-8"), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v)
    assert v.cause == "unknown", v.trace   # all ranks timing out alone is one weak sign


def test_lost_segments_without_any_timeout_are_no_sign(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(SYSTEM / "ss_tin_lossy.txt", bundle / "ss.txt")
    v = analyze(bundle).verdict
    assert not _fired(v)
