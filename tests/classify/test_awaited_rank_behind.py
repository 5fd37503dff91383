"""timeout.awaited_rank_behind: the rank that never reported a timeout had logged its own progress
(messages.toml rank_step) up to a lower step than the rank that timed out -- it was behind, its log in
the bundle; a second view beside timeout.silent_ranks.  REAL lab runs: validation23 lab5-shard-fetch-
backoff-straggler (rank 0 'step 31: loaded', rank 1's last 'step 30'), validation28 lab10-rank0-profiler-
stack-table-straggler-fr (rank 1 'step 60', rank 0's last 'step 50').  Near misses: validation27
lab9-node1-docker-starts-midrun-bridge-subnet-covers-master (a network fault: the silent rank had logged
the same step 25), validation26 lab8-rank0-normaliser-fit-15s-timeout-restarts-exhausted (the silent rank
logged no step)."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]


def _verdict(case: str):
    return analyze(ROOT / "fixtures" / case / "bundle").verdict


@pytest.mark.parametrize("case, late", [("validation23/lab-a/lab5-shard-fetch-backoff-straggler", 1),
                                        ("validation28/lab-b/lab10-rank0-profiler-stack-table-straggler-fr", 0)])
def test_silent_rank_behind_by_its_own_steps_claims_the_straggler(case, late):
    v = _verdict(case)
    assert v.cause == "straggler_timeout", v.trace
    assert "timeout.awaited_rank_behind" in v.root.signs and "timeout.silent_ranks" in v.root.signs, v.root.signs
    assert v.root.culprit_ranks == (late,)
    assert f"rank {late} had logged step" in v.root.summary, v.root.summary


def test_near_miss_level_steps_under_a_network_fault_are_not_behind():
    v = _verdict("validation27/lab-a/lab9-node1-docker-starts-midrun-bridge-subnet-covers-master")
    assert any("behind=False" in t for t in v.trace), v.trace
    assert v.cause != "straggler_timeout"


def test_near_miss_silent_rank_without_step_lines():
    v = _verdict("validation26/lab-c/lab8-rank0-normaliser-fit-15s-timeout-restarts-exhausted")
    assert any("behind=False" in t for t in v.trace), v.trace
    assert v.cause == "unknown"
