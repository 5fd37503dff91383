"""A peer's orderly close (recv() returned 0: gloo pair.cc "Connection closed by peer [addr]:port",
NCCL socket.cc "Connection closed by remote peer addr<port>") says the peer's process ended first
-- the kernel closes a dead process's sockets -- not that the path broke.  It is context
(messages.toml peer_closed_connection): it never leans the verdict to the network, and an
unknown verdict asks first for the log of the peer it names.  Resets and NCCL's remote-error text,
which a broken path prints too, stay a weak network sign (nccl_connection_closed)."""
from __future__ import annotations

from pathlib import Path

from postmortem.knowledge import load
from postmortem.parsers import parse_text
from postmortem.run import Options, analyze

ROOT = Path(__file__).resolve().parents[2]
# real: a lab run (fixtures/validation23 README), rank 1 on node 1 raised in DDP's constructor; only node 0's log kept
PEER_DIED = ROOT / "fixtures/validation23/lab-a/lab5-node1-stale-config-ddp-shapes/bundle"
# real: NVIDIA/nccl#2076, nodes with InfiniBand issues: "Call to recv from ... failed : Connection reset by peer"
RESET = ROOT / "fixtures/validation6/remote-error-ib-nodes-nccl2076-02/bundle"


def _kinds(text: str) -> dict[str, dict]:
    sink = parse_text("log", [text], k=load()).sink
    return {e.kind: e.data for e in sink.events}


def test_gloo_and_nccl_orderly_closes_name_the_peer():
    gloo = _kinds(next(line for line in (PEER_DIED / "node0_torchrun.log").read_text().splitlines()
                       if "Connection closed by peer" in line))
    assert gloo["msg.peer_closed_connection"]["peer"] == "10.95.0.2"
    assert gloo["msg.peer_closed_connection"]["port"] == "33415"
    assert "msg.nccl_connection_closed" not in gloo
    # NCCL's format 'socketProgress: Connection closed by remote peer %s' with an address in its
    # own address<port> notation (ncclSocketToString)
    nccl = _kinds("NCCL WARN socketProgress: Connection closed by remote peer 10.1.2.3<45678>")
    assert (nccl["msg.peer_closed_connection"]["npeer"], nccl["msg.peer_closed_connection"]["nport"]) == ("10.1.2.3", "45678")


def test_a_peer_that_ended_first_is_not_read_as_the_network():
    v = analyze(PEER_DIED, Options()).verdict
    assert v.cause == "unknown"
    assert not any(f.cause == "nccl_network" for f in v.alternatives), [f.cause for f in v.alternatives]
    assert v.collect[0].startswith("the log of the process at 10.95.0.2:33415"), v.collect[:2]


def test_a_reset_stays_a_weak_network_sign():
    v = analyze(RESET, Options()).verdict
    assert v.cause == "unknown" and v.alternatives and v.alternatives[0].cause == "nccl_network"
    assert v.alternatives[0].signal == "msg.nccl_connection_closed"
