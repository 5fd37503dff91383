"""net.peer_answers_ping: the host the job's c10d store client could not reach with the kernel's
no-path answer (errno 113 / 101) answered this host's ping -- the peer was up, so the weak store-connect
reading's 'peer down' is ruled out by a second program's observation.  REAL:
fixtures/validation28/lab-c/lab10-node1-fwmark-nodeport-range-policy-route-dead-gw (policy routing by
fwmark sends the store port to a dead gateway; ping to the peer is answered).  Near misses:
fixtures/lab/ping_refused/make.sh (a closed port on a live host: c10d retries the refusals and prints
only 'has timed out after'), and a ping answered by another address (other_ping.txt of the same
script, beside the fwmark case's node1.log)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_FWMARK = ROOT / "fixtures/validation28/lab-c/lab10-node1-fwmark-nodeport-range-policy-route-dead-gw/bundle"
_REFUSED = ROOT / "fixtures/lab/ping_refused/bundle"
_OTHER_PING = ROOT / "fixtures/lab/ping_refused/other_ping.txt"


def test_store_unreachable_peer_that_answers_ping_claims_the_network():
    a = analyze(_FWMARK)
    v = a.verdict
    assert v.cause == "nccl_network", v.trace
    assert any(t.startswith("peer-answers-ping: 10.97.0.1 answered") for t in v.trace), v.trace
    assert "node1_checks.txt:12" in {r.describe() for r in v.root.evidence}, v.root.evidence


def test_near_miss_refused_store_on_a_live_host_is_not_read():
    a = analyze(_REFUSED)
    assert any(f.name == "net.ping" and f.value["received"] == 2 for f in a.case.facts)
    assert not any(t.startswith("peer-answers-ping") for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "unknown"


def test_near_miss_ping_answered_by_another_address(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(_FWMARK / "node1.log", bundle / "node1.log")
    shutil.copy(_OTHER_PING, bundle / "node1_ping.txt")
    a = analyze(bundle)
    assert any(f.name == "net.ping" and f.value["addr"] == "127.0.0.2" and f.value["received"] == 2 for f in a.case.facts)
    assert not any(t.startswith("peer-answers-ping") for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "unknown"
