"""iproute2 `ss -t -i` (parsers/ss.py): real outputs of iproute2 6.1.0 made here
(fixtures/system/make_ss_fixtures.sh: a bulk transfer with and without 30% packet drop) and a lab
bundle's own file (validation23 lab5-routed-path-packet-loss, state column present)."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text
from postmortem.parsers.ss import FACT

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = ROOT / "fixtures" / "system"


def _connections(path: Path) -> list[dict]:
    result = parse_text(path.name, path.read_text(encoding="utf-8").splitlines())
    assert not result.sink.problems
    return [f.value for f in result.sink.facts if f.name == FACT]


def test_a_lossy_senders_details_are_read_without_a_state_column():
    conns = _connections(SYSTEM / "ss_tin_lossy.txt")
    assert len(conns) == 2
    sender = next(c for c in conns if c["peer"] == "127.0.0.1:39119")
    assert sender["state"] == "" and sender["send_q"] > 0
    assert sender["info"]["lost"] >= 1 and sender["info"]["retrans_total"] > 0


def test_a_healthy_transfer_has_no_lost_segments():
    conns = _connections(SYSTEM / "ss_tin_healthy.txt")
    assert len(conns) == 2
    assert all("lost" not in c["info"] for c in conns)
    sender = next(c for c in conns if c["peer"] == "127.0.0.1:39119")
    assert sender["info"]["retrans"] == 0   # retrans:0/N is printed on a healthy link too


def test_state_column_and_ipv4_mapped_endpoints():
    path = ROOT / "fixtures" / "validation23" / "lab-b" / "lab5-routed-path-packet-loss" / "bundle" / "node1_ss_tin.txt"
    conns = _connections(path)
    assert [c["state"] for c in conns] == ["ESTAB"] * 3
    assert conns[0]["send_q"] == 1382796 and conns[0]["info"]["lost"] == 85 and conns[0]["info"]["backoff"] == 2
    assert conns[1]["peer"] == "[::ffff:10.97.1.10]:29705" and "lost" not in conns[1]["info"]
