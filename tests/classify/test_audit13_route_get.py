"""Audit 13 H1: `ip route get PEER` refused is the route lookup connect(2) already made
(tcp_v4_connect -> ip_route_connect -> fib_lookup); beside the job's connects that printed the same
answer it adds no second sign.  REAL: fixtures/lab/audit13/route_get/make.sh (noprefix: an address with
no connected route, errno 101; unreachable: an `unreachable` route, errno 113)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_LAB = ROOT / "fixtures/lab/audit13/route_get"


@pytest.mark.parametrize("mode, answer", [("noprefix", "Network is unreachable"), ("unreachable", "No route to host")])
def test_the_refusal_restating_the_connects_errno_is_not_counted(tmp_path, mode, answer):
    v = analyze(_LAB / mode).verdict
    assert any(t.startswith("peer-unroutable: not counted: `ip route get` 10.139.1.1 answered "
                            f"'{answer}'") for t in v.trace), v.trace
    assert not any(t.startswith("peer-unroutable: the host's kernel has no route") for t in v.trace), v.trace
    # the connect's final failure carries the errno: the catalog's reading still claims alone
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_without_the_errno_lines_the_refusal_is_read(tmp_path):
    """Near miss: the same bundle without the connect attempts' errno (only the final 'failed to connect
    to any network address' wrapper kept) -- the route-get is then the only answer the bundle shows."""
    bundle = tmp_path / "bundle"
    shutil.copytree(_LAB / "noprefix", bundle)
    log = bundle / "node1.log"
    log.write_text("".join(l for l in log.read_text(encoding="utf-8").splitlines(keepends=True)
                           if "errno: 101" not in l), encoding="utf-8")
    v = analyze(bundle).verdict
    assert any(t.startswith("peer-unroutable: the host's kernel has no route to the job's peer 10.139.1.1")
               for t in v.trace), v.trace


_BACK = ROOT / "fixtures/lab/audit13/route_back/bundle"


def test_the_store_hosts_refusal_beside_the_peers_timeouts_is_a_second_sign():
    """REAL route_back: node0 (the store's host) has no route back to node1, whose connects time out.
    node1's address is named by no job line, only by node1's `ip -br addr`; node0's refusal and node1's
    timeouts are two hosts' observations: they claim the network."""
    v = analyze(_BACK).verdict
    assert any(t.startswith("peer-unroutable: the host's kernel has no route to the job's peer 10.139.2.2")
               for t in v.trace), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_without_the_peers_listing_the_refused_address_is_not_read(tmp_path):
    """Near miss: the same bundle without node1's `ip -br addr`: nothing says 10.139.2.2 is the job's."""
    bundle = tmp_path / "bundle"
    shutil.copytree(_BACK, bundle)
    (bundle / "node1_ip.txt").unlink()
    v = analyze(bundle).verdict
    assert v.cause == "unknown", v.trace
    assert any("an address the job's lines do not name" in t for t in v.trace), v.trace
