"""TCP connections losing packets (ss -ti `lost:`) beside collective timeouts (rule
tcp-connection-losses, sign net.tcp_segments_lost).  Bundles: the development case
validation23 lab5-routed-path-packet-loss as stored, and the same bundle with its ss output
replaced by a real healthy one made here (fixtures/system/make_ss_fixtures.sh)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

from tests.classify.arrange import claims_without as _claims_without

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "fixtures" / "validation23" / "lab-b" / "lab5-routed-path-packet-loss" / "bundle"
SYSTEM = ROOT / "fixtures" / "system"


def _fired(verdict) -> bool:
    return any(line.startswith("tcp-connection-losses: ") and "not the job's path" not in line for line in verdict.trace)


# torch's c10d INFO line (TORCH_CPP_LOG_LEVEL=INFO), GENERATED here from the format string in the torch 2.13
# wheel's libtorch_cpu.so ("The client socket has connected to {} on {}.") with the lab case's addresses:
# the line that names the peer a job connected to.  Marked as generated; not a fixture.
_CONNECTED = ("[I1201 21:50:36.906624057 socket.cpp:872] [c10d] The client socket has connected to [10.97.1.10]:29705"
              " on SocketImpl(fd=3, addr=[10.97.2.10]:49598, remote=[10.97.1.10]:29705).\n")


def _with_connect_line(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(CASE, bundle)
    log = bundle / "node1.log"
    log.write_text(_CONNECTED + log.read_text(encoding="utf-8"), encoding="utf-8")
    return bundle


def test_lost_segments_to_the_jobs_peer_beside_timeouts_claim_the_transport(tmp_path):
    v = analyze(_with_connect_line(tmp_path)).verdict
    assert v.cause == "nccl_timeout", v.trace
    assert _fired(v) and any("net.tcp_segments_lost" in line for line in v.trace)


def test_lost_segments_on_a_connection_the_logs_never_name_are_not_the_jobs():
    """audit 6 M12: the stored lab bundle's logs name no address, so the lossy connection is not tied to the job."""
    v = analyze(CASE).verdict
    assert not _fired(v)
    assert any("not the job's path" in line for line in v.trace)
    assert _claims_without(v, "net.tcp_segments_lost"), v.trace


def test_a_lossy_loopback_connection_to_another_service_is_not_the_jobs(tmp_path):
    """audit 6 M12 (probe n1b): a real lossy loopback capture to port 2049, beside the job's connect line."""
    bundle = _with_connect_line(tmp_path)
    (bundle / "node1_ss_tin.txt").write_text((SYSTEM / "ss_tin_nfs_port_lossy.txt").read_text(encoding="utf-8"),
                                             encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v)
    assert _claims_without(v, "net.tcp_segments_lost"), v.trace


def test_a_healthy_connection_snapshot_adds_nothing(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(CASE, bundle)
    (bundle / "node1_ss_tin.txt").write_text((SYSTEM / "ss_tin_healthy.txt").read_text(encoding="utf-8"), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v)
    assert _claims_without(v, "net.tcp_segments_lost"), v.trace


def test_lost_segments_without_any_timeout_are_no_sign(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(SYSTEM / "ss_tin_lossy.txt", bundle / "ss.txt")
    v = analyze(bundle).verdict
    assert not _fired(v)
