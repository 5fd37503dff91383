"""Stopped versus slow: a TCP connection whose retransmissions went unanswered (ss -ti `backoff:` >= 3
with data unacknowledged; rule tcp-retransmissions-unanswered, sign net.tcp_retransmissions_unanswered)
beside collectives that timed out on every rank.  Bundles: real lab runs made here by
fixtures/lab/stopped_vs_slow/make.sh (the same gloo job, faulted after step 20 by a mid-run DROP rule,
a switch port set down, or a rate limit that times the same allreduce out), and the development case
validation23 lab5-routed-path-packet-loss (a lossy path, backoff:2)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.parsers.base import Line, Sink
from postmortem.parsers.system import SystemParser
from postmortem.run import analyze

from tests.classify.arrange import claims_without

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "stopped_vs_slow" / "output"
LOSSY = ROOT / "fixtures" / "validation23" / "lab-b" / "lab5-routed-path-packet-loss" / "bundle"
RULE = "tcp-retransmissions-unanswered"
SIGN = "net.tcp_retransmissions_unanswered"


def _fired(v) -> bool:
    return any(t.startswith(f"{RULE}: TCP connection") for t in v.trace)


def _bundle(tmp_path: Path, run: str, keep: tuple[str, ...]) -> Path:
    """The run's own files, only those named (the logs and one ss snapshot, as a collector would bring)."""
    bundle = tmp_path / run
    bundle.mkdir()
    for name in keep:
        shutil.copy(LAB / run / name, bundle / name)
    return bundle


def test_backoff_and_unacked_parse_as_numbers():
    # real line: stop_drop-1/ss_node0_12s.txt (12 s after a mid-run iptables DROP)
    text = (LAB / "stop_drop-1" / "ss_node0_12s.txt").read_text(encoding="utf-8")
    sink = Sink()
    p = SystemParser("ss.txt", sink)
    for i, line in enumerate(text.splitlines(), 1):
        p.feed(Line("ss.txt", i, line, line))
    p.finish()
    conns = [f.value for f in sink.facts if f.name == "net.tcp_connection"]
    gloo = next(c for c in conns if c["local"] == "10.110.0.1:43513")
    assert (gloo["info"]["backoff"], gloo["info"]["unacked"], gloo["send_q"]) == (5, 727, 2986576)


def test_a_path_that_stopped_delivering_mid_run_is_the_network(tmp_path):
    # both ranks: gloo 'Timed out waiting 20000ms for recv' after logging step 21; node 0's gloo connection
    # backoff:5 with 727 segments unacknowledged
    v = analyze(_bundle(tmp_path, "stop_drop-1", ("node0.log", "node1.log", "ss_node0_12s.txt"))).verdict
    assert _fired(v), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any(f"rests on 2 independent weak signs: {SIGN}, timeout.ranks_level" in t for t in v.trace), v.trace


def test_a_rate_limited_path_that_still_acknowledges_is_not_read_as_stopped(tmp_path):
    # near miss, real: a tbf rate limit times the same allreduce out; the connections keep ACKs coming
    # (backoff 0, one at backoff:1 with ACKs 12 ms old)
    v = analyze(_bundle(tmp_path, "slow_tbf-1", ("node0.log", "node1.log", "ss_node0_12s.txt",
                                                 "ss_node1_12s.txt"))).verdict
    assert not _fired(v), v.trace
    assert v.cause != "nccl_network", v.trace


def test_a_lossy_path_below_the_black_hole_threshold_stays_the_timeout_reading():
    # near miss, real: 'backoff:2' with 179 unacked on a lossy routed path (labelled nccl_timeout)
    v = analyze(LOSSY).verdict
    assert not _fired(v), v.trace
    assert claims_without(v, SIGN), v.trace


def test_unanswered_retransmissions_without_any_timeout_are_no_sign(tmp_path):
    # the stopped path's ss snapshot alone: no collective timed out, nothing to explain
    v = analyze(_bundle(tmp_path, "stop_drop-1", ("ss_node0_12s.txt",))).verdict
    assert not _fired(v)
    assert v.cause == "unknown"


def test_connections_to_addresses_the_job_does_not_name_are_not_its_path(tmp_path):
    # real: stop_reject-1, rank 0 names its peer ('Read error [10.110.0.2]:31404: Connection reset by peer');
    # node 1's backed-off connections go to 10.110.0.1, an address no line of the job names
    v = analyze(_bundle(tmp_path, "stop_reject-1", ("node0.log", "node1.log", "ss_node1_12s.txt"))).verdict
    assert not _fired(v), v.trace
    assert any(t.startswith(f"{RULE}: not counted") and "not the job's path" in t for t in v.trace), v.trace


def test_a_stopped_path_outlasting_the_kernels_retransmission_limit_prints_etimedout(tmp_path):
    # tcp_retries2=6 (give-up ~25 s) under a 60 s pg timeout: the kernel abandons the connection first and
    # gloo prints 'Read error [peer]: Connection timed out' on both ranks (messages.toml gloo_established_socket_error)
    v = analyze(_bundle(tmp_path, "stop_drop-r2_6-1", ("node0.log", "node1.log"))).verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any("gloo_established_socket_error" in t for t in v.trace), v.trace
