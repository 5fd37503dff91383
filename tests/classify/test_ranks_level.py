"""Every rank timed out in the same collective AND every rank's own log last reported the same
step: no rank was behind, the collective stopped moving (signals.toml timeout.ranks_level, a
second sign independent of the timeouts).  A named network fault beside it is the root
(causes.toml nccl_network explains nccl_timeout).  Bundles are real lab runs in fixtures/."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
BLACKHOLE = FIX / "validation22" / "lab4-midrun-blackhole-timeout" / "bundle"
PORT_DOWN = FIX / "validation21" / "lab3-switch-port-down" / "bundle"


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / "bundle"
    shutil.copytree(src, dst)
    return dst


def test_every_rank_timed_out_at_the_same_logged_step_claims_the_stuck_collective(tmp_path):
    v = analyze(_copy(tmp_path, BLACKHOLE)).verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_timeout"), v.trace
    assert 0.35 <= v.confidence < 0.8
    assert any("rests on 2 independent weak signs" in t and "timeout.ranks_level" in t for t in v.trace), v.trace


def test_ranks_at_different_logged_steps_only_lean(tmp_path):
    # near miss, derived at test time from the real logs: rank 1's last progress line removed,
    # so rank 1 last reported step 25 and rank 0 step 30 -- not level, one weak sign only
    bundle = _copy(tmp_path, BLACKHOLE)
    node1 = bundle / "node1.log"
    lines = node1.read_text(encoding="utf-8").splitlines(keepends=True)
    last_step = max(i for i, line in enumerate(lines) if " rank 1 step " in line)
    node1.write_text("".join(lines[:last_step] + lines[last_step + 1:]), encoding="utf-8")
    v = analyze(bundle).verdict
    assert v.cause == "unknown", v.trace
    assert not any("timeout.ranks_level" in t for t in v.trace)


def test_a_rank_without_a_progress_line_only_leans(tmp_path):
    # near miss: rank 1's log keeps its timeout but none of its step lines (derived at test time)
    bundle = _copy(tmp_path, BLACKHOLE)
    node1 = bundle / "node1.log"
    kept = [line for line in node1.read_text(encoding="utf-8").splitlines(keepends=True) if " step " not in line]
    node1.write_text("".join(kept), encoding="utf-8")
    assert analyze(bundle).verdict.cause == "unknown"


def test_a_named_network_fault_stays_the_root_beside_level_timeouts(tmp_path):
    # lab3-switch-port-down: eth0 NO-CARRIER and the bridge port disabled, and every rank timed
    # out at the same logged step: the link is why the collective stopped
    v = analyze(_copy(tmp_path, PORT_DOWN)).verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_rank_step_reads_the_rank_and_step_of_a_real_progress_line():
    from postmortem import knowledge
    m = next(m for m in knowledge.load().messages if m.id == "rank_step")
    hit = m.regex.search("2026-12-01 19:36:26,510 vm INFO rank 0 step 30 loss 2.1138 step_time 0.534s")
    assert hit and hit.group("rank") == "0" and hit.group("step") == "30"
    # near misses from the same real log: a rank line with no step counter, and a step_time field
    assert not m.regex.search("2026-12-01 19:36:01,673 vm INFO rank 0 model has 595464 parameters")
    assert not m.regex.search("loss 2.1138 step_time 0.534s")
    # nccl-tests' header names a step factor but no rank: no rank to place it on
    hit = m.regex.search("# nThread 1 nGpus 4 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5")
    assert hit is None or hit.group("rank") is None


FROZEN = FIX / "validation23" / "lab-c" / "lab5-node1-container-paused-freezer" / "bundle"


def test_level_steps_with_timeouts_expiring_far_apart_do_not_count(tmp_path):
    # near miss, a real lab run: both ranks logged step 20, then node 1's container was frozen;
    # rank 0 failed at 22:34:02 and rank 1 at 22:34:28 with a 20 s timeout -- rank 1 entered the
    # collective late.  Without the ps capture (the freezer's own record) nothing claims.
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name in ("node0.log", "node1.log"):
        shutil.copy(FROZEN / name, bundle / name)
    v = analyze(bundle).verdict
    assert v.cause == "unknown", v.trace
    assert any("expired far apart" in t for t in v.trace), v.trace
