"""Hangs and timeouts read by what the ranks were doing, and network faults that show only as
timeouts or failed gloo connects (issue 13).  Lines are the real ones from the dev fixtures
(fixtures/validation21, run here or quoted from public reports) or gloo/c10d's format strings."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

V21 = Path(__file__).resolve().parents[2] / "fixtures" / "validation21"


def _bundle(tmp_path: Path, files: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name, text in files.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(text, encoding="utf-8")
    return bundle


def _verdict(tmp_path: Path, files: dict[str, str]):
    return analyze(_bundle(tmp_path, files)).verdict


# --- gloo ------------------------------------------------------------------------------------

# lab3-vocab-size-desync-fr/bundle/torchrun.log lines 7-8 (torch 2.13.0, gloo pair.cc:456)
_GLOO_MISMATCH = (
    "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
    "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
    "op.preamble.length <= op.nbytes. 1988 vs 1540. Received data size doesn't match expected size. "
    "Is there a distributed collective mismatch in your code?\n"
    "Fatal Python error: Aborted\n")
# the peer's fallout in the same log (line 28)
_PEER_RESET = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] "
               "Read error [127.0.0.1]:23984: Connection reset by peer. This is typically caused by a remote "
               "worker hanging or bugs in the application.\n")


def test_gloo_size_mismatch_in_a_terminate_report_is_a_desync_and_explains_the_peers_reset(tmp_path):
    v = _verdict(tmp_path, {"torchrun.log": _GLOO_MISMATCH + _PEER_RESET})
    assert v.cause == "collective_desync", v.trace
    assert v.confidence >= 0.5


def test_the_peers_reset_alone_does_not_claim_a_desync(tmp_path):
    v = _verdict(tmp_path, {"torchrun.log": _PEER_RESET})
    assert v.cause != "collective_desync"


# lab3-gloo-ifname-storage-net/bundle/node1.log (GLOO_SOCKET_IFNAME on an unrouted segment)
_NO_ROUTE = ("[E1201 16:43:09.660246579 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
             "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: "
             "SO_ERROR: No route to host, remote=[10.94.0.1]:11663$1\n")
_REFUSED = ("[E1201 16:43:09.660246579 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
            "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: "
            "SO_ERROR: Connection refused, remote=[10.94.0.1]:11663$1\n")
# eks-lws-vllm-two-node-gloo-loopback-no-socket-ifname-08/bundle/stderr.txt line 1 (public report)
_LOOPBACK = ("[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback\n"
             "        address as fallback. Manually set the network interface with GLOO_SOCKET_IFNAME\n")


def test_gloo_connect_with_no_route_is_the_network(tmp_path):
    v = _verdict(tmp_path, {"node1.log": _NO_ROUTE})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_a_refused_gloo_connect_alone_only_leans_to_the_network(tmp_path):
    # refused: nothing listened (a peer gone, or bound elsewhere): one weak sign, no claim
    v = _verdict(tmp_path, {"node1.log": _REFUSED})
    assert v.cause == "unknown", v.trace


def test_loopback_fallback_beside_a_failed_gloo_connect_is_the_network(tmp_path):
    v = _verdict(tmp_path, {"stderr.txt": _LOOPBACK + _REFUSED})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_loopback_fallback_alone_claims_nothing(tmp_path):
    # printed by every single-host job whose host name does not resolve: harmless there
    v = _verdict(tmp_path, {"stderr.txt": _LOOPBACK})
    assert v.cause == "unknown", v.trace
