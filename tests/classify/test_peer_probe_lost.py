"""A ping from one of the job's hosts that got no reply, beside the job's failure (parsers/ping.py,
rules/peer_path.py PeerProbeLost, signals.toml net.peer_probe_lost).  Bundles are real lab runs
in fixtures/ (validation28, 30, 31); near misses are those bundles with one line changed at test
time (marked where it is done)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.parsers.base import Line, Sink
from postmortem.parsers.system import SystemParser
from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
ARP_DROP = FIX / "validation30/lab-b/lab12-node1-arp-hardening-arptables-default-drop-neigh-flush-midrun/bundle"
PARTITION = FIX / "validation31/lab-b/lab13-switch-port-profile-isolated-on-node1-node2-ports-midrun-3-node-partial-partition/bundle"
REDIRECT = FIX / "validation28/lab-c/lab10-rack-router-static-route-typo-nexthop-node0-midrun/bundle"


def _pings(path: Path) -> list[dict]:
    sink = Sink()
    p = SystemParser(path.name, sink)
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        p.feed(Line(path.name, i, line, line))
    p.finish()
    return [f.value for f in sink.facts if f.name == "net.ping"]


def test_ping_runs_parse_with_their_counts_and_icmp_errors():
    got = _pings(ARP_DROP / "node1_net.txt")
    assert [(g["addr"], g["transmitted"], g["received"], g["errors"], g["unreachable_from"]) for g in got] == [
        ("10.122.0.1", 3, 0, 3, ["10.122.0.2"])]
    # one answered run, one not, in one file
    got = _pings(PARTITION / "node1_ping.txt")
    assert [(g["addr"], g["received"], g["loss_pct"]) for g in got] == [("10.132.0.1", 2, 0.0), ("10.132.0.3", 0, 100.0)]
    # 'From 10.97.0.254: icmp_seq=1 Redirect Host(New nexthop: 10.97.0.1)': the router's address, no colon
    got = _pings(REDIRECT / "node0_checks.txt")
    assert [(g["addr"], g["received"], g["unreachable_from"]) for g in got] == [("10.97.1.2", 0, ["10.97.0.254"])]


def _fired(v) -> bool:
    return any(t.startswith("peer-probe-lost: ") and not t.startswith(("peer-probe-lost: not counted", "peer-probe-lost: paired"))
               for t in v.trace)


def test_a_lost_probe_to_the_peer_beside_level_timeouts_is_the_network():
    v = analyze(ARP_DROP).verdict
    assert _fired(v), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any("net.peer_probe_lost, timeout.ranks_level" in t for t in v.trace), v.trace


def test_a_partial_partition_reads_the_unanswered_probe_not_the_answered_one():
    v = analyze(PARTITION).verdict
    assert any(t.startswith("peer-probe-lost: a ping to 10.132.0.3") for t in v.trace), v.trace
    assert v.cause == "nccl_network", v.trace


def _changed(tmp_path: Path, name: str, old: str, new: str) -> Path:
    bundle = shutil.copytree(ARP_DROP, tmp_path / "bundle")
    text = (bundle / name).read_text(encoding="utf-8")
    assert old in text
    (bundle / name).write_text(text.replace(old, new), encoding="utf-8")
    return bundle


def test_an_answered_probe_adds_nothing(tmp_path):
    # near miss, changed at test time: the same run with its replies counted
    bundle = _changed(tmp_path, "node1_net.txt", "3 packets transmitted, 0 received, +3 errors, 100% packet loss",
                      "3 packets transmitted, 3 received, 0% packet loss")
    v = analyze(bundle).verdict
    assert not _fired(v), v.trace
    assert v.cause == "nccl_timeout", v.trace


def test_a_lost_probe_to_an_address_off_the_jobs_network_is_not_read(tmp_path):
    # near miss, changed at test time: the probe aimed at a public address (hosts may refuse ICMP from outside)
    bundle = _changed(tmp_path, "node1_net.txt", "10.122.0.1", "8.8.8.8")
    v = analyze(bundle).verdict
    assert not _fired(v), v.trace
    assert any(t.startswith("peer-probe-lost: not counted: ping to 8.8.8.8") for t in v.trace), v.trace
    assert v.cause == "nccl_timeout", v.trace


def test_the_older_summary_wording_parses(tmp_path):
    # verbatim from Craig Hunt, TCP/IP Network Administration 3rd ed., ch. 13.3 (O'Reilly; a Linux ping of
    # its day: 'N packets received', 'round trip'), https://docstore.mik.ua/orelly/networking_2ndEd/tcp/ch13_03.htm
    text = ("PING ns.uu.net (137.39.1.3) from 172.16.12.3 : 56(84) bytes of data.\n"
            "64 bytes from ns.UU.NET (137.39.1.3): icmp_seq=0 ttl=244 time=98.283 msec\n"
            "64 bytes from ns.UU.NET (137.39.1.3): icmp_seq=1 ttl=244 time=94.114 msec\n"
            "--- ns.uu.net ping statistics ---\n"
            "5 packets transmitted, 5 packets received, 0% packet loss\n"
            "round trip min/avg/max/mdev = 24.301/64.064/98.283/29.634 ms\n")
    path = tmp_path / "ping.txt"
    path.write_text(text, encoding="utf-8")
    assert [(g["name"], g["addr"], g["transmitted"], g["received"], g["loss_pct"]) for g in _pings(path)] == [
        ("ns.uu.net", "137.39.1.3", 5, 5, 0.0)]
