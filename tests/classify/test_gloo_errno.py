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
    # node 0 (the far end) reads the reset after the link came back: alive, reporting its own side
    v = _bundle(tmp_path, {"node1.log": _FLAP / "node1.log", "node0.log": _FLAP / "node0.log"})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert v.root.signal == "msg.gloo_established_socket_error" and v.root.strength == "strong", v.trace


# audit 10 H1: REAL probe c2 (fixtures/lab/audit10/c2/mk_c2/make.sh): node 1 "loses power" (its
# processes frozen, its port down) -- node 0 reads the same ETIMEDOUT a stopped path gives, and
# node 1's log just ends at its last step.  A dead peer host is no network fault.
_DEAD_PEER = Path(__file__).resolve().parents[2] / "fixtures/lab/audit10/c2/bundle"


def test_a_peer_host_that_died_is_not_claimed_as_the_network(tmp_path):
    line = _line(_DEAD_PEER / "node0.log", "Read error")
    assert "Connection timed out" in line and _matching(line)[:1] == ["gloo_established_socket_error"]
    v = _bundle(tmp_path, {"node0.log": _DEAD_PEER / "node0.log", "node1.log": _DEAD_PEER / "node1.log"})
    assert v.category.value == "unknown", v.trace
    assert any("gloo_established_socket_error: weak" in t for t in v.trace), v.trace


def test_the_survivors_timeout_alone_is_one_weak_sign(tmp_path):
    # Without the far end's log nothing tells a stopped path from a dead host: leaning, not claimed.
    for i, (src, name) in enumerate(((_DEAD_PEER, "node0.log"), (_FLAP, "node1.log"))):
        (tmp_path / str(i)).mkdir()
        v = _bundle(tmp_path / str(i), {name: src / name})
        assert v.category.value == "unknown" and "leaning nccl_network" in v.summary, v.trace


def test_a_reset_by_the_peer_is_not_the_abandoned_connection(tmp_path):
    # Near miss: the other rank's real 'Read error ...: Connection reset by peer' -- a peer
    # process that exits resets its connections exactly the same way.
    line = _line(_FLAP / "node0.log", "Read error")
    assert "Connection reset by peer" in line
    assert "gloo_established_socket_error" not in _matching(line)
    v = _bundle(tmp_path, {"node0.log": _FLAP / "node0.log"})
    assert not (v.root and v.root.signal == "msg.gloo_established_socket_error"), v.trace


# validation27 (ninth sweep, development half): an agent on node 1 destroys the job's TCP
# sockets mid-run (`ss -K`): node 1 reads ECONNABORTED, node 0 the resulting reset.
_ABORT = Path(__file__).resolve().parents[2] / "fixtures/validation27/lab-b/lab9-node1-security-agent-kills-sockets-midrun/bundle"


def test_a_connection_this_host_tore_down_is_the_network(tmp_path):
    # ECONNABORTED on an established socket: only tcp_abort() sets it (SOCK_DESTROY, bpf_sock_destroy).
    line = _line(_ABORT / "node1.log", "Read error")
    assert "Software caused connection abort" in line
    assert _matching(line)[:1] == ["gloo_established_socket_error"]
    v = _bundle(tmp_path, {"node1.log": _ABORT / "node1.log"})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_the_peer_side_of_a_torn_down_connection_reads_only_a_reset(tmp_path):
    # Near miss: node 0's real 'Connection reset by peer' for the same connection stays weak.
    line = _line(_ABORT / "node0.log", "Read error")
    assert "Connection reset by peer" in line
    assert "gloo_established_socket_error" not in _matching(line)
    v = _bundle(tmp_path, {"node0.log": _ABORT / "node0.log"})
    assert v.cause != "nccl_network" or v.root.signal != "msg.gloo_established_socket_error", v.trace


def test_gloos_own_recv_timeout_is_not_the_abandoned_connection():
    # Near miss: unbound_buffer.cc's wait that expired (a straggler prints it as well).
    line = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
            "unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation to complete")
    assert "gloo_established_socket_error" not in _matching(line)


# ---------------------------------------------------------------- gloo's remote on a host-only interface

_DOCKER0 = V24 / "lab-a/lab6-docker0-address-advertised/bundle"   # host name -> docker0's 172.17.0.1


def _rules(v) -> set[str]:
    """The rules that reported a finding (their trace lines), merged findings included."""
    return {line.split(":", 1)[0] for line in v.trace}


def test_a_failed_gloo_connect_to_a_bridge_address_is_the_interface_setup(tmp_path):
    v = _bundle(tmp_path, {"node0.log": _DOCKER0 / "node0.log", "node1_host.txt": _DOCKER0 / "node1_host.txt",
                           "node1.log": _DOCKER0 / "node1.log"})
    assert "gloo-host-only-remote" in _rules(v), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert "net.gloo_remote_host_only" in (v.root.signs or (v.root.signal,)) or any(
        "net.gloo_remote_host_only" in line for line in v.trace), v.trace


def test_a_failed_gloo_connect_to_an_address_on_a_real_nic_is_not_read_as_host_only(tmp_path):
    # Near miss: the same failed connects beside another node's real `ip -br addr` whose
    # addresses are all on its data/management NICs (validation24 lab6-node1-data-nic-no-ipv4).
    v = _bundle(tmp_path, {"node0.log": _DOCKER0 / "node0.log",
                           "gpu-b02_ip_addr.txt": _FAMILY / "gpu-b02_ip_addr.txt"})
    assert "gloo-host-only-remote" not in _rules(v), v.trace


# ---------------------------------------------------------------- torchelastic's SignalException is teardown

def test_an_agent_told_to_stop_is_not_a_crashed_peer(tmp_path):
    # node1.log's real 'SignalException: Process 28507 got signal: 15': the agent received SIGTERM
    # (api.py _terminate_process_handler) -- a teardown, not a fault its peers' errors follow from.
    from postmortem.classify.counter_evidence import crashed_peer
    case = analyze(_copy(tmp_path, {"node1.log": _DOCKER0 / "node1.log"})).case
    trace: list[str] = []
    assert crashed_peer(case, trace) == {}, trace


def test_a_rank_that_died_of_its_own_exception_is_still_a_crashed_peer(tmp_path):
    # Near miss: a real rank that died of its own IndexError while its peer saw the pair
    # closed (fixtures/bundles/lab-torchrun-app-exception, made here) keeps the peer reading.
    src = V24.parent / "bundles/lab-torchrun-app-exception/bundle/train.log"
    from postmortem.classify.counter_evidence import crashed_peer
    case = analyze(_copy(tmp_path, {src.name: src})).case
    assert crashed_peer(case, []) != {}


def _copy(tmp_path: Path, files: dict[str, Path]) -> Path:
    bundle = tmp_path / "b"
    bundle.mkdir()
    for name, src in files.items():
        (bundle / name).write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    return bundle


# ---------------------------------------------------------------- gloo device.cc: no address for the named interface

_IFNAME = (Path(__file__).resolve().parents[2] / "fixtures" / "validation25"
           / "lab-b/lab7-gloo-ifname-nccl-exclude-syntax/bundle")   # GLOO_SOCKET_IFNAME=^docker0,lo (run here)
_LOOPBACK = (Path(__file__).resolve().parents[2] / "fixtures" / "validation21"
             / "eks-lws-vllm-two-node-gloo-loopback-no-socket-ifname-08/bundle")


def test_an_interface_gloo_cannot_find_is_the_transport_setup(tmp_path):
    line = _line(_IFNAME / "node0.log", "Unable to find address")
    assert _matching(line) == ["gloo_device_address_not_found"]
    v = _bundle(tmp_path, {"node0.log": _IFNAME / "node0.log"})
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert v.root.signal == "msg.gloo_device_address_not_found" and v.root.strength == "strong", v.trace


def test_gloos_loopback_fallback_warning_is_not_a_missing_interface():
    # Near miss (real, kubernetes-sigs/lws report): gloo could not resolve the host name and fell
    # back to loopback -- a different message with its own (weak) reading.
    path = next(p for p in _LOOPBACK.iterdir() if "Unable to resolve hostname" in p.read_text(encoding="utf-8"))
    line = _line(path, "Unable to resolve hostname")
    assert "gloo_device_address_not_found" not in _matching(line)
