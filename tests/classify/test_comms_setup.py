"""Comms set-up: the store's address as the launcher and c10d's connect see it.  Real runs of torch 2.13
(CPU) in network namespaces, made by fixtures/lab/comms_setup/make.sh (one folder per mode):
  crlf_addr  torchrun --master-addr "10.111.0.1\\r" on node 1 (elastic parse_rendezvous_endpoint rejects it)
  bad_name   env:// with a MASTER_ADDR node 1's resolver does not know (getaddrinfo EAI_NONAME until the timeout)
  syn_drop   node 0's firewall DROPs node 1's SYNs to the store port (connect(2) ETIMEDOUT, retried)
  healthy / late_name  near misses: a clean start, and a name that resolves 6 s late (c10d retries, trains)."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.classify import counter_evidence
from postmortem.knowledge import catalog as C
from postmortem.run import analyze

OUT = Path(__file__).resolve().parents[2] / "fixtures/lab/comms_setup/output"


def _verdict(mode: str):
    return analyze(OUT / mode).verdict


def _lines(mode: str, name: str, needle: str) -> list[str]:
    text = (OUT / mode / name).read_text(encoding="utf-8", errors="replace")
    return [line for line in text.replace("\r", "\n").splitlines() if needle in line]


def test_a_rendezvous_endpoint_torchrun_rejects_is_the_store_address():
    v = _verdict("crlf_addr")
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any("pt.rdzv_endpoint_bad_host" in t for t in v.trace)


def test_the_rejected_endpoint_is_read_with_or_without_the_cr_that_splits_the_line():
    # the real line as the bundle's reader splits it at the CR, and the same sentence unsplit (a
    # quote in the name: the text parse_rendezvous_endpoint formats, edited at test time)
    split = _lines("crlf_addr", "node1.log", "The hostname of the rendezvous endpoint")[0]
    whole = ("ValueError: The hostname of the rendezvous endpoint '\"10.111.0.1\":31901' must be a dot-separated "
             "list of labels, an IPv4 address, or an IPv6 address.")
    for line in (split, whole):
        m = C.match_message(line, ("pytorch",))
        assert m and (m.entry.id, m.cause, m.strength) == ("pt.rdzv_endpoint_bad_host", "nccl_network", "specific")


def test_the_rejected_endpoint_is_no_death_that_makes_its_peers_fallout():
    assert counter_evidence._NETWORK_TEXT.search(_lines("crlf_addr", "node1.log", "rendezvous endpoint")[0])
    # near miss: another exception of the job stays a death
    assert not counter_evidence._NETWORK_TEXT.search("ValueError: invalid literal for int() with base 10: 'x'")


def test_a_store_name_that_never_resolves_is_the_network_setup():
    v = _verdict("bad_name")
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    line = _lines("bad_name", "rank1.log", "cannot be retrieved (gai error")[0]
    m = C.match_message(line, ("pytorch",))
    assert m and m.entry.id == "pt.store_addr_unresolved" and m.detail == "Name or service not known"


def test_a_name_that_resolved_late_and_trained_is_no_failure():
    # near miss, real: the same warning, then c10d's retry connected and both ranks trained to the end
    assert _lines("late_name", "rank1.log", "cannot be retrieved (gai error")
    v = _verdict("late_name")
    assert v.cause == "unknown", v.trace
    assert any("pt.store_addr_unresolved" in t and "retry succeeded" in t for t in v.trace)


def test_syns_nobody_answered_are_one_failure_with_the_connect_timeout():
    line = _lines("syn_drop", "node1.log", "has timed out, will retry")[0]
    m = C.match_message(line, ("pytorch",))
    assert m and (m.entry.id, m.cause, m.strength) == ("pt.store_syn_unanswered", "nccl_network", "subsystem")
    v = _verdict("syn_drop")
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    # the per-attempt warning and the client's final timeout are one failure (signals.toml
    # failure."c10d.store_connect"): the claim rests on it and the firewall's counted drops
    rests = next(t for t in v.trace if "independent weak signs" in t)
    assert "net.firewall_discards" in rests and not ("store_syn_unanswered" in rests and "store_client_timeout" in rests)


def test_the_warning_alone_does_not_claim(tmp_path):
    # the real warning lines of syn_drop without the firewall listing or the server's wait: one weak sign
    b = tmp_path / "b"
    b.mkdir()
    (b / "node1.log").write_text((OUT / "syn_drop/node1.log").read_text(encoding="utf-8"), encoding="utf-8")
    v = analyze(b).verdict
    assert v.cause == "unknown", v.trace


@pytest.mark.parametrize("mode", ["healthy"])
def test_a_healthy_start_claims_nothing(mode):
    assert _verdict(mode).cause == "unknown"


# ---------------------------------------------------------------- `ip route` and the job's peers

def _routes(tmp_path, text: str) -> list[dict]:
    b = tmp_path / "routes"
    b.mkdir(exist_ok=True)
    (b / "ip_route.txt").write_text(text, encoding="utf-8")
    return [f.value for f in analyze(b).case.facts if f.name == "net.route"]


def test_ip_route_lines_are_read_as_the_main_table(tmp_path):
    got = _routes(tmp_path, (OUT / "no_route_back/node0_ip_route.txt").read_text(encoding="utf-8")
                  # edited at test time: the shapes ip-route(8) prints that the lab's tables lack
                  + "blackhole 10.200.0.0/16 \n"
                  "10.111.9.9 dev eth0 src 10.111.0.1 uid 0 \n"        # `ip route get`: an answer, no entry
                  "default via fe80::1 dev eth0 proto ra metric 1024 pref medium\n")   # `ip -6 route`
    assert [(r["dest"], r["type"], r["dev"], r["src"], r["via"]) for r in got] == [
        ("10.111.0.0/24", "unicast", "eth0", "10.111.0.1", ""),
        ("10.111.2.0/23", "unicast", "eth0", "", "10.111.0.254"),
        ("10.200.0.0/16", "blackhole", "", "", "")]


def test_a_master_with_no_route_back_to_its_peer_is_the_network():
    v = _verdict("no_route_back")
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any(t.startswith("peer-unroutable:") and "10.111.1.2" in t for t in v.trace)


def test_whole_tables_beside_a_failed_connect_are_not_read_as_the_cause():
    # near miss, real: the same routed set-up with a default route on node 0, node 1 given the wrong
    # port: the connect fails the same way, the tables route every peer
    v = _verdict("routed_wrong_port")
    assert not any(t.startswith("peer-unroutable:") for t in v.trace), v.trace


def test_no_reading_when_policy_routing_may_route_by_another_table(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    for name in ("node0.log", "node1.log", "node1_ip_route.txt"):
        (b / name).write_text((OUT / "no_route_back" / name).read_text(encoding="utf-8"), encoding="utf-8")
    # edited at test time: node 0's table as `ip route show table all` prints it with a second table
    (b / "node0_ip_route.txt").write_text((OUT / "no_route_back/node0_ip_route.txt").read_text(encoding="utf-8")
                                          + "default via 10.111.0.254 dev eth0 table 100 \n", encoding="utf-8")
    v = analyze(b).verdict
    assert not any(t.startswith("peer-unroutable:") and "has no route" in t for t in v.trace)
    assert any("policy routing" in t for t in v.trace)


def test_a_peer_address_on_a_host_local_bridge_is_no_peer(tmp_path):
    # edited at test time: node 0 gets a route to node 1's subnet (no default route), node 1's table also
    # holds docker0's connected route: docker0's 172.17.0.1 exists on every host alike and is no peer,
    # so node 1's one address is 10.111.1.2, which node 0 routes
    b = tmp_path / "b"
    b.mkdir()
    (b / "node0.log").write_text((OUT / "no_route_back/node0.log").read_text(encoding="utf-8"), encoding="utf-8")
    # and a line naming docker0's address as a peer (a rank that advertised it), as c10d prints a failed connect
    (b / "node1.log").write_text((OUT / "no_route_back/node1.log").read_text(encoding="utf-8")
                                 + "[W1202 13:16:48.000000000 socket.cpp:764] [c10d] The client socket has failed to connect "
                                 "to [172.17.0.1]:31906 (errno: 113 - No route to host).\n", encoding="utf-8")
    (b / "node0_ip_route.txt").write_text("$ ip route\n10.111.0.0/24 dev eth0 proto kernel scope link src 10.111.0.1 \n"
                                          "10.111.1.0/24 via 10.111.0.254 dev eth0 \n", encoding="utf-8")
    (b / "node1_ip_route.txt").write_text((OUT / "no_route_back/node1_ip_route.txt").read_text(encoding="utf-8")
                                          + "172.17.0.0/16 dev docker0 proto kernel scope link src 172.17.0.1 linkdown \n",
                                          encoding="utf-8")
    v = analyze(b).verdict
    assert not any(t.startswith("peer-unroutable:") for t in v.trace), v.trace


# ---------------------------------------------------------------- the store's name as each host resolves it

def test_getent_and_hosts_lines_are_name_records(tmp_path):
    b = tmp_path / "names"
    b.mkdir()
    (b / "node1_getent_hosts.txt").write_text((OUT / "name_split/node1_getent_hosts.txt").read_text(encoding="utf-8")
                                              # edited at test time: /etc/hosts shapes, and lines that are none
                                              + "::1 localhost ip6-localhost ip6-loopback\n"
                                              "10.111.0.7 trainer-1.prod.internal trainer-1\n"
                                              "10.111.9.9 dev eth0 src 10.111.0.1 uid 0\n"
                                              "10.111.0.7 slots=8\n", encoding="utf-8")
    got = [f.value for f in analyze(b).case.facts if f.name == "net.name_address"]
    assert got == [{"addr": "10.111.0.9", "names": ("trainer-0",)},
                   {"addr": "::1", "names": ("localhost", "ip6-localhost", "ip6-loopback")},
                   {"addr": "10.111.0.7", "names": ("trainer-1.prod.internal", "trainer-1")}]


def test_a_store_name_two_hosts_resolve_apart_is_read():
    v = _verdict("name_split")
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any(t.startswith("name-resolves-apart:") and "10.111.0.9" in t for t in v.trace)


def test_a_store_name_both_hosts_resolve_alike_is_no_sign():
    # near miss, real: both hosts files right, node 1 given the wrong port: the same connect failure
    v = _verdict("name_same")
    assert not any(t.startswith("name-resolves-apart:") for t in v.trace), v.trace


def test_a_loopback_answer_for_the_hosts_own_name_is_no_disagreement(tmp_path):
    # edited at test time: node 0 answers its own name with Debian's 127.0.1.1 (/etc/hosts), node 1 with
    # the store's address: only node 1 dials the name, and it dials the right host
    b = tmp_path / "b"
    b.mkdir()
    for name in ("node0.log", "node1.log"):
        (b / name).write_text((OUT / "name_same" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (b / "node0_getent_hosts.txt").write_text("$ getent hosts trainer-0\n127.0.1.1       trainer-0\n", encoding="utf-8")
    (b / "node1_getent_hosts.txt").write_text((OUT / "name_same/node1_getent_hosts.txt").read_text(encoding="utf-8"),
                                              encoding="utf-8")
    v = analyze(b).verdict
    assert not any(t.startswith("name-resolves-apart:") for t in v.trace), v.trace
