"""Under gloo a rank's wait raises in the call it waited in (work.wait()), also when the peer that
timed out goes away ("Connection closed by peer"): that traceback places the rank, so a rank timing
out in a barrier while its peer's peer-gone error is raised in the gradient all-reduce of backward
shows the ranks in different collectives (collective_desync).  A send and a recv are each other's
match, never "different collectives".  Real lines: validation27 lab9-accelerate-save-state-main-
process-only (save_state's barrier on the main process only) and, the near miss, validation28
lab10-pipeline-p2p-tag-scheme-differs-between-stages-fr (send on one stage, recv on the other)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
SAVE_STATE = FIX / "validation27/lab-a/lab9-accelerate-save-state-main-process-only/bundle"
PIPE_TAGS = FIX / "validation28/lab-b/lab10-pipeline-p2p-tag-scheme-differs-between-stages-fr/bundle"


def test_a_barrier_against_a_peers_gradient_all_reduce_is_a_desync():
    v = analyze(SAVE_STATE).verdict
    assert (v.category.value, v.cause) == ("config", "collective_desync"), v.trace
    assert "rank 1 waited in the gradient all-reduce" in v.summary and "barrier" in v.summary, v.summary


def test_a_send_against_a_recv_is_no_different_collectives_reading():
    v = analyze(PIPE_TAGS).verdict
    assert v.cause != "collective_desync" or "different collectives" not in v.summary, v.summary
    assert any("complementary calls" in t for t in v.trace), v.trace
