"""Audit 13 M1: a peer rank's socket answering with a reset is the peer ending, read like the orderly
close (messages.toml peer_closed_connection): Linux closes a dead process's sockets through __tcp_close,
which sends RST instead of FIN when data was still unread (RFC 2525 2.17).  REAL:
fixtures/lab/audit13/peer_ends/make.sh -- kill1 (rank 1 SIGKILLed mid all_reduce: rank 0 prints gloo's
'Read error [addr]:port: Connection reset by peer'), kill0 (rank 0 SIGKILLed: rank 1 prints 'Connection
closed by peer')."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from postmortem.parsers import parse_text
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_LAB = ROOT / "fixtures/lab/audit13/peer_ends"


def _survivor(tmp_path: Path, run: str, log: str) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(_LAB / run / log, bundle / log)
    return bundle


@pytest.mark.parametrize("run, log", [("kill1", "node0_torchrun.log"), ("kill0", "node1_torchrun.log")])
def test_the_survivor_of_a_killed_peer_reads_alike_reset_or_close(tmp_path, run, log):
    """Only the survivor's log: the reset and the close are the same fallout, no network lean, and the
    verdict asks for the log of the process at the address the line names."""
    a = analyze(_survivor(tmp_path, run, log))
    v = a.verdict
    assert any(e.kind == "msg.peer_closed_connection" for e in a.case.events), v.trace
    assert not any(e.kind == "msg.nccl_connection_closed" for e in a.case.events), v.trace
    assert v.cause == "unknown" and "nccl_network" not in v.summary, (v.summary, v.trace)
    assert any(c.startswith("the log of the process at 127.0.0.1:") for c in v.collect), v.collect


def _kinds(name: str, line: str) -> list[str]:
    return [e.kind for e in parse_text(name, [line]).sink.events if e.kind.startswith("msg.")]


def test_nccls_per_peer_recv_reset_is_the_peer_ending():
    # fixtures/validation6 remote-error-ib-nodes-nccl2076-02 (NVIDIA/nccl#2076), NCCL socket.cc socketProgressOpt
    line = "socketProgressOpt: Call to recv from 172....<33759> failed : Connection reset by peer"
    assert "msg.peer_closed_connection" in _kinds("rank0.log", line)


def test_a_reset_outside_the_collective_libraries_stays_a_weak_network_reading():
    """Near miss: c10d's store client (a reset of the store's connection, not a peer rank's socket) and
    ncclRemoteError's text keep their reading.  Real lines: validation26 lab8-node0-agent-nofile-store-accept,
    validation6 remote-error-ib-nodes-nccl2076-02."""
    store = ("[W1202 06:18:00.364406270 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=3, "
             "addr=[1801::b8ff:ffff:ffff:ffff]:34322, remote=[fdff:ffff:df55:0:1042:e955:df55:0]:20713): Connection reset by peer")
    remote = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
              "remote process exited or there was a network error, NCCL version 2.21.5")
    for line in (store, remote):
        kinds = _kinds("rank0.log", line)
        assert "msg.nccl_connection_closed" in kinds and "msg.peer_closed_connection" not in kinds, (line, kinds)
