"""One TCP connection seen from both hosts whose sender's segments (ss mss + the least header) are
larger than the receiving end's path MTU (ss pmtu), with the sender's data unacknowledged past its
retransmission timer: the receiver's interface MTU was lowered after the connection chose its mss,
so the full segments and their retransmissions are dropped on arrival (signals.toml
net.segments_exceed_receiver_mtu).  Real runs: fixtures/lab/mtu_mismatch/make.sh (lower_one: node
1's eth0 1500 -> 1450 mid-run; lower_both: both nodes, the near miss); development:
fixtures/validation26/lab-b/lab8-node1-mtu-lowered-midrun-hang."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_RUNS = ROOT / "fixtures/lab/mtu_mismatch/output"
_SIGN = "net.segments_exceed_receiver_mtu"


def _signals(v) -> set[str]:
    return {f.signal for f in (v.root, *v.alternatives) if f is not None}


def test_an_mtu_lowered_on_the_receiver_claims_the_network():
    v = analyze(_RUNS / "lower_one-1").verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), (v.cause, v.summary)
    assert v.root is not None and v.root.signal == _SIGN
    assert "1448" in v.summary and "1450" in v.summary


def test_the_development_case_hung_the_same_way():
    v = analyze(ROOT / "fixtures/validation26/lab-b/lab8-node1-mtu-lowered-midrun-hang/bundle").verdict
    assert v.cause == "nccl_network" and v.root.signal == _SIGN, (v.cause, v.summary)


def test_the_same_mtu_on_both_hosts_is_no_sign():
    """Near miss: both interfaces lowered -- each sender's route MTU drops with its own interface and
    TCP lowers its mss (1398 on both ends); the job completes."""
    v = analyze(_RUNS / "lower_both-1").verdict
    assert _SIGN not in _signals(v)


def test_one_end_alone_is_no_sign(tmp_path):
    """Near miss: without the receiver's own capture of the connection nothing says its path MTU."""
    bundle = tmp_path / "lower_one"
    shutil.copytree(_RUNS / "lower_one-1", bundle)
    for f in bundle.glob("ss_node1_*"):
        f.unlink()
    v = analyze(bundle).verdict
    assert _SIGN not in _signals(v)
