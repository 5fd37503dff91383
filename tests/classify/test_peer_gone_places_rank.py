"""Under gloo a rank's wait raises in the call it waited in (work.wait()), also when the peer that
timed out goes away ("Connection closed by peer"): that traceback places the rank.  Real lines:
validation27 lab9-accelerate-save-state-main-process-only (rank 0 times out in save_state's barrier,
rank 1's peer-gone error is raised in the gradient all-reduce of backward) and validation28
lab10-pipeline-p2p-tag-scheme-differs-between-stages-fr (rank 1's recv times out, rank 0's peer-gone
error is raised in its send with a tag the recv never matches).  The near miss: a peer-gone traceback
alone, with no hang sign beside it (a rank that died), places nothing (lab-stack-smash has none)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
SAVE_STATE = FIX / "validation27/lab-a/lab9-accelerate-save-state-main-process-only/bundle"
PIPE_TAGS = FIX / "validation28/lab-b/lab10-pipeline-p2p-tag-scheme-differs-between-stages-fr/bundle"
DIED = FIX / "validation30/lab-c/lab12-node1-empty-review-span-packer-cpp-length-error-abort-core/bundle"


def test_a_barrier_against_a_peers_gradient_all_reduce_is_a_desync():
    v = analyze(SAVE_STATE).verdict
    assert (v.category.value, v.cause) == ("config", "collective_desync"), v.trace
    assert "rank 1 waited in the gradient all-reduce" in v.summary and "barrier" in v.summary, v.summary


def test_a_recv_that_timed_out_against_a_peers_unmatched_send_is_placed_by_the_peer_gone_error():
    v = analyze(PIPE_TAGS).verdict
    assert (v.category.value, v.cause) == ("config", "collective_desync"), v.trace
    assert "rank 0 waited in send" in v.summary and "rank 1 waited in recv" in v.summary, v.summary


def test_a_peer_gone_error_after_a_death_places_no_rank_without_a_hang_sign():
    # rank 1 died of SIGABRT; rank 0's 'Connection reset by peer' is its fallout, no timeout anywhere
    v = analyze(DIED).verdict
    assert not any(t.startswith("stacks-at-timeout") for t in v.trace), v.trace
