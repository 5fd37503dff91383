"""What the errno / address family in a gloo transport error says about the network.

Real lines from lab bundles made on this machine (fixtures/validation24, torch 2.13 gloo in
network namespaces); each reading is tested on the line that motivated it and on a real line
of another cause that must not fire it.
"""
from __future__ import annotations

from pathlib import Path

from postmortem.knowledge import load
from postmortem.run import analyze

V24 = Path(__file__).resolve().parents[2] / "fixtures" / "validation24"
_FAMILY = V24 / "lab-b/lab6-node1-data-nic-no-ipv4/bundle"     # node 1's data NIC without IPv4
_FLAP = V24 / "lab-c/lab6-node1-tcp-retries2-short-flap/bundle"  # tcp_retries2=3 + 8 s link loss


def _matching(line: str) -> list[str]:
    return [m.id for m in load().messages
            if any(k in line for k in m.keywords) and m.regex.search(line)]


def _line(path: Path, needle: str) -> str:
    return next(l for l in path.read_text(encoding="utf-8").splitlines() if needle in l)


def _bundle(tmp_path: Path, files: dict[str, Path]):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name, src in files.items():
        (bundle / name).write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    return analyze(bundle).verdict


# ---------------------------------------------------------------- gloo device.cc address families

def test_peers_bound_to_different_address_families_is_the_network_setup(tmp_path):
    line = _line(_FAMILY / "gpu-b01_torchrun.log", "ss_family")
    assert _matching(line)[:1] == ["gloo_address_family_mismatch"]
    v = _bundle(tmp_path, {"gpu-b01_torchrun.log": _FAMILY / "gpu-b01_torchrun.log"})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_nccl_family_neither_inet_line_is_not_the_gloo_mismatch():
    # Near miss: NCCL's socket.cc on an address never set (family 0), a different failure
    # (NVIDIA/nccl#1267, the report behind corpus nccl-version-mismatch-01).
    line = "ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)"
    assert "gloo_address_family_mismatch" not in _matching(line)


# ---------------------------------------------------------------- gloo pair.cc errno on an established pair

def test_an_established_pair_the_kernel_abandoned_is_the_network(tmp_path):
    line = _line(_FLAP / "node1.log", "Read error")
    assert _matching(line)[:1] == ["gloo_established_socket_error"]
    v = _bundle(tmp_path, {"node1.log": _FLAP / "node1.log"})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert v.root.signal == "msg.gloo_established_socket_error", v.trace


def test_a_reset_by_the_peer_is_not_the_abandoned_connection(tmp_path):
    # Near miss: the other rank's real 'Read error ...: Connection reset by peer' -- a peer
    # process that exits resets its connections exactly the same way.
    line = _line(_FLAP / "node0.log", "Read error")
    assert "Connection reset by peer" in line
    assert "gloo_established_socket_error" not in _matching(line)
    v = _bundle(tmp_path, {"node0.log": _FLAP / "node0.log"})
    assert not (v.root and v.root.signal == "msg.gloo_established_socket_error"), v.trace


def test_gloos_own_recv_timeout_is_not_the_abandoned_connection():
    # Near miss: unbound_buffer.cc's wait that expired (a straggler prints it as well).
    line = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
            "unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation to complete")
    assert "gloo_established_socket_error" not in _matching(line)
