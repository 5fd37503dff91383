"""Stopped versus slow, on real runs made here (fixtures/lab/stopped_vs_slow: make.sh, README.md,
SUMMARY.txt): the same two-node gloo job faulted after step 20 by a path that stops (an iptables DROP,
a switch port set down) or one that only slows (tc tbf / htb rate limits).

What the runs show, and these tests hold:
* while the collective timeout is shorter than the kernel's retransmission give-up, the ranks' own
  lines are the same for both (gloo 'Timed out waiting ...' on every rank after the same step): the
  engine reads both as the stuck-collective reading (nccl_timeout) and says nothing either way;
* a stopped path outlasting the give-up prints ETIMEDOUT / EHOSTUNREACH from the established gloo
  connection (messages.toml gloo_established_socket_error, strong): nccl_network; a slow path under
  the same settings never did (its ACKs restart the retransmission count)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "stopped_vs_slow" / "output"


def _logs(tmp_path: Path, run: str) -> Path:
    """The run's two rank logs only (what a collector of console output brings)."""
    bundle = tmp_path / run
    bundle.mkdir()
    for name in ("node0.log", "node1.log"):
        shutil.copy(LAB / run / name, bundle / name)
    return bundle


def _reading(v) -> tuple[str, str]:
    return v.category.value, v.cause


def test_stopped_and_slow_paths_under_a_short_timeout_read_alike(tmp_path):
    # every rank 'Timed out waiting 20000ms for recv' (stop) / 'Application timeout caused pair closure'
    # (htb rate limit) after logging the same step: nothing in the ranks' lines tells the two apart
    readings = {run: _reading(analyze(_logs(tmp_path, run)).verdict)
                for run in ("stop_drop-1", "stop_down-2", "slow_htb-1")}
    assert set(readings.values()) == {("comms", "nccl_timeout")}, readings


def test_a_stopped_path_outlasting_the_kernels_retransmission_limit_prints_etimedout(tmp_path):
    # tcp_retries2=6 (give-up ~25 s) under a 60 s pg timeout, iptables DROP mid-run: both ranks
    # 'Read error [peer]: Connection timed out' (pair.cc:537)
    v = analyze(_logs(tmp_path, "stop_drop-r2_6-1")).verdict
    assert _reading(v) == ("comms", "nccl_network"), v.trace
    assert any("gloo_established_socket_error" in t for t in v.trace), v.trace


def test_a_port_down_outlasting_it_prints_no_route_or_etimedout(tmp_path):
    # the switch port set down: rank 0 'Connection timed out', rank 1 'No route to host'
    v = analyze(_logs(tmp_path, "stop_down-r2_6-1")).verdict
    assert _reading(v) == ("comms", "nccl_network"), v.trace


def test_a_slow_path_under_the_same_settings_prints_no_socket_error(tmp_path):
    # near miss, real: tbf 512 kbit with tcp_retries2=6 and a 60 s timeout: step 21 took 163 s and
    # completed; nothing failed until the run's own time limit stopped it
    v = analyze(_logs(tmp_path, "slow_tbf-r2_6-1")).verdict
    assert not any("gloo_established_socket_error" in t for t in v.trace), v.trace
    assert v.cause != "nccl_network", v.trace


# -- the peer's reset at its timeout (config.py _reset_at_peers_timeout; signals.toml timeout.all_ranks
#    reset_by_peer): a rank whose own error is gloo's 'Connection reset by peer' when its peer timed out
#    had its data unread at the peer (an RST): it waited in the collective too

def test_a_rank_reset_by_its_timed_out_peer_waited_in_the_collective_too(tmp_path):
    # slow_tbf-1: rank 1 'Application timeout caused pair closure', rank 0 'Read error [10.110.0.2]:48355:
    # Connection reset by peer' 0.2 s later; both logged step 21: the collective itself was stuck
    v = analyze(_logs(tmp_path, "slow_tbf-1")).verdict
    assert _reading(v) == ("comms", "nccl_timeout"), v.trace
    assert any("every rank of the world (0..1) timed out in the same collective" in t for t in v.trace), v.trace


def test_the_development_case_it_came_from_reads_the_same():
    # validation22 lab4-slow-link-allreduce: the same shape on a tbf-shaped link (labelled nccl_timeout)
    v = analyze(ROOT / "fixtures" / "validation22" / "lab4-slow-link-allreduce" / "bundle").verdict
    assert _reading(v) == ("comms", "nccl_timeout"), v.trace


def test_a_straggler_reads_its_peers_fin_and_stays_the_straggler(tmp_path):
    # near miss, real: straggler-1, rank 1 asleep 40 s outside any collective; rank 0 timed out after 20 s,
    # rank 1 then 'Connection closed by peer' (a FIN: it had sent nothing the peer left unread)
    v = analyze(_logs(tmp_path, "straggler-1")).verdict
    assert any("straggler: silent [1]" in t for t in v.trace), v.trace
    assert v.cause == "straggler_timeout", v.trace


def test_a_reset_well_before_the_timeout_is_a_transport_failure_of_its_own(tmp_path):
    # near miss, real: stop_reject-1, a REJECT --reject-with tcp-reset rule answered rank 0 at once, ~20 s
    # before rank 1's timeout: not counted among the timed-out ranks, no stuck-collective claim
    v = analyze(_logs(tmp_path, "stop_reject-1")).verdict
    assert v.cause != "nccl_timeout", v.trace
    assert not any("every rank of the world" in t for t in v.trace), v.trace


def test_a_reset_long_after_the_peers_timeout_is_not_the_collectives(tmp_path):
    # audit 10 L5, derived at test time from slow_tbf-1 (marked as such): rank 0's failure records
    # moved 30 s later -- a reset that long after the peer gave up is another write (a straggler
    # arriving), beyond the agents' polling (threshold.reset_after_peer_exit_s): rank 0 did not wait
    bundle = _logs(tmp_path, "slow_tbf-1")
    log = bundle / "node0.log"
    text = log.read_text(encoding="utf-8")
    assert "E1202 10:33:17.549000" in text and "2026-12-02_10:33:17" in text
    log.write_text(text.replace("E1202 10:33:17.549000", "E1202 10:33:47.549000")
                   .replace("2026-12-02_10:33:17", "2026-12-02_10:33:47"), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not any("every rank of the world (0..1) timed out" in t for t in v.trace), v.trace
