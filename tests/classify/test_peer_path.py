"""The host's path to the job's own peer: its neighbour table (`ip neigh`) and its IPsec
policies (`ip xfrm`), read beside the job's collective timeouts (rules/peer_path.py; signs
net.peer_unresolved, net.peer_address_elsewhere, net.ipsec_policy_without_sa).  Bundles are real
lab runs in fixtures/ (validation23, 24, 26); near misses are those bundles with one line
changed at test time (marked where it is done)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.parsers.base import Line, Sink
from postmortem.parsers.system import SystemParser
from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
STORAGE_NIC = FIX / "validation26" / "lab-a" / "lab8-node1-storage-nic-overlapping-subnet" / "bundle"
IPSEC = FIX / "validation26" / "lab-a" / "lab8-node1-ipsec-policy-no-sa-midrun" / "bundle"
DUP_IP = FIX / "validation23" / "lab-b" / "lab5-duplicate-ip-arp-takeover" / "bundle"
CLONED_MAC = FIX / "validation24" / "lab-b" / "lab6-cloned-vm-duplicate-mac" / "bundle"


def _fired(v, rule: str) -> bool:
    """The rule read its sign (its other trace lines say `not counted:` or `paired with`)."""
    return any(t.startswith(f"{rule}: ") and not t.startswith((f"{rule}: not counted", f"{rule}: paired"))
               for t in v.trace)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _facts(text: str, name: str) -> list:
    sink = Sink()
    p = SystemParser("t.txt", sink)
    for i, line in enumerate(text.splitlines(), 1):
        p.feed(Line("t.txt", i, line, line))
    p.finish()
    return [f.value for f in sink.facts if f.name == name]


def test_neighbour_lines_parse_and_route_lines_do_not():
    text = ("10.98.0.1 dev eth0 lladdr 0a:b2:5d:6b:44:84 STALE \n10.98.0.1 dev eth1 INCOMPLETE \n"
            "10.98.0.0/25 dev eth1 proto kernel scope link src 10.98.0.100 \n"
            "10.98.0.1 dev eth1 src 10.98.0.100 uid 0 \n")   # node1_addr_route.txt's lines (ip neigh, ip route, ip route get)
    got = _facts(text, "net.neighbour")
    assert [(n["addr"], n["dev"], n["lladdr"], n["states"]) for n in got] == [
        ("10.98.0.1", "eth0", "0a:b2:5d:6b:44:84", ("STALE",)), ("10.98.0.1", "eth1", "", ("INCOMPLETE",))]


def test_an_unresolved_entry_for_the_jobs_peer_with_level_timeouts_is_the_network():
    # node1_addr_route.txt: '10.98.0.1 dev eth1 INCOMPLETE'; both ranks logged step 20, then timed out
    v = analyze(STORAGE_NIC).verdict
    assert _fired(v, "peer-unresolved"), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any("net.peer_unresolved, timeout.ranks_level" in t for t in v.trace), v.trace


def test_a_resolved_entry_for_the_peer_adds_nothing(tmp_path):
    # near miss, changed at test time: the INCOMPLETE line removed, the STALE entry on eth0 kept
    b = _copy(STORAGE_NIC, tmp_path / "bundle")
    f = b / "node1_addr_route.txt"
    f.write_text("".join(l for l in f.read_text().splitlines(keepends=True) if "INCOMPLETE" not in l))
    v = analyze(b).verdict
    assert not _fired(v, "peer-unresolved"), v.trace
    assert v.cause == "nccl_timeout", v.trace


def test_an_unresolved_entry_for_an_address_the_job_never_names_adds_nothing(tmp_path):
    # near miss, changed at test time: the unresolved entry is for another host (10.98.0.77)
    b = _copy(STORAGE_NIC, tmp_path / "bundle")
    f = b / "node1_addr_route.txt"
    f.write_text(f.read_text().replace("10.98.0.1 dev eth1 INCOMPLETE", "10.98.0.77 dev eth1 INCOMPLETE"))
    assert not _fired(analyze(b).verdict, "peer-unresolved")


def test_a_neighbour_mac_no_listing_holds_is_not_read_alone():
    # node0_ip_neigh.txt: 10.97.0.2 REACHABLE at 86:6d:..; node1_ip.txt: eth0 82:46:.. holds 10.97.0.2.
    # The impostor is not in the bundle: a proxy-ARP router answering for the peer prints the same
    # (audit 9 H4, REAL fixtures/lab/audit9/s7), so the mismatch alone is no sign
    v = analyze(DUP_IP).verdict
    assert not _fired(v, "peer-address-elsewhere"), v.trace
    assert any(t.startswith("peer-address-elsewhere: not counted") for t in v.trace), v.trace


def test_a_neighbour_mac_another_listed_machine_holds_fires(tmp_path):
    # the duplicate-IP run with the impostor's own `ip -br` listing added AT TEST TIME (node1's
    # lines with the impostor's MAC from node 0's neighbour entry): two machines hold 10.97.0.2
    b = _copy(DUP_IP, tmp_path / "b")
    text = (DUP_IP / "node1_ip.txt").read_text().replace("82:46:93:a9:82:22", "86:6d:67:85:52:5f")
    (b / "impostor_ip.txt").write_text(text)
    v = analyze(b).verdict
    assert _fired(v, "peer-address-elsewhere"), v.trace


def test_a_neighbour_mac_that_is_the_peers_own_does_not():
    # near miss: the cloned-VM run (both hosts share one MAC; the entry names that very MAC)
    v = analyze(CLONED_MAC).verdict
    assert not _fired(v, "peer-address-elsewhere"), v.trace


def test_an_outbound_ipsec_policy_without_sa_for_the_peer_with_level_timeouts_is_the_network():
    v = analyze(IPSEC).verdict
    assert _fired(v, "ipsec-policy-without-sa"), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_the_same_policy_with_its_sa_listed_adds_nothing(tmp_path):
    # near miss, changed at test time: an SA for the template (iproute2 xfrm_xfrma_print shape) listed
    b = _copy(IPSEC, tmp_path / "bundle")
    f = b / "node1_xfrm_link.txt"
    f.write_text(f.read_text().replace("$ ip xfrm state\n", "$ ip xfrm state\nsrc 10.98.0.2 dst 10.98.0.1\n"
                                       "\tproto esp spi 0x00001000 reqid 0 mode transport\n\treplay-window 0 \n"))
    assert any(s["spi"] == "0x00001000" for s in _facts(f.read_text(), "net.xfrm_state"))
    v = analyze(b).verdict
    assert not _fired(v, "ipsec-policy-without-sa"), v.trace
    assert v.cause == "nccl_timeout", v.trace


def test_a_policy_without_the_state_listing_says_nothing_of_the_sas(tmp_path):
    # near miss, changed at test time: the `ip xfrm state` command line is gone -- no listing, not an empty one
    b = _copy(IPSEC, tmp_path / "bundle")
    f = b / "node1_xfrm_link.txt"
    f.write_text(f.read_text().replace("$ ip xfrm state\n", ""))
    assert not _fired(analyze(b).verdict, "ipsec-policy-without-sa")


SNAT = FIX / "validation26" / "lab-b" / "lab8-node0-egress-snat-rule-midrun" / "bundle"
FLAP = FIX / "validation26" / "lab-b" / "lab8-switch-port-node1-flapping-midrun" / "bundle"
STRAGGLER = FIX / "validation24" / "lab-a" / "lab6-node0-cpu-limit-10m-straggler" / "bundle"


def test_a_source_nat_rule_to_the_hosts_own_address_is_not_read():
    # node0_iptables_nat.txt: 'SNAT 0 -- * eth0 0.0.0.0/0 0.0.0.0/0 to:10.108.0.50' (1 packet), and
    # node0_ip_br_addr.txt puts 10.108.0.50 on node 0's eth0: a standing rule to the host's own
    # address is healthy (netfilter binds each flow from its first packet; audit 9 H1) and the
    # listing cannot say the rule is newer than the job's connections
    v = analyze(SNAT).verdict
    assert not _fired(v, "source-rewritten-on-path"), v.trace
    assert v.category.value != "config", v.trace


def test_a_source_nat_rule_to_an_address_no_interface_holds_fires(tmp_path):
    # changed at test time: the listing without the secondary 10.108.0.50 -- replies to it reach
    # no interface of the host, whenever the rule was added
    b = _copy(SNAT, tmp_path / "bundle")
    f = b / "node0_ip_br_addr.txt"
    f.write_text(f.read_text().replace(" 10.108.0.50/24", ""))
    v = analyze(b).verdict
    assert _fired(v, "source-rewritten-on-path"), v.trace
    # the job's only failure lines are the ranks' 'Connection closed by peer': a peer process that
    # ended (messages.toml peer_closed_connection), no second network sign -- the rule's one weak sign leans
    assert v.cause == "unknown" and "leaning nccl_network" in v.summary, v.trace


def test_a_masquerade_rule_for_a_container_subnet_does_not(tmp_path):
    # near miss, changed at test time: Docker's own rule (MASQUERADE of 172.17.0.0/16 leaving
    # by any interface but docker0) in place of the SNAT rule
    b = _copy(SNAT, tmp_path / "bundle")
    f = b / "node0_iptables_nat.txt"
    f.write_text(f.read_text().replace(
        "    1   100 SNAT       0    --  *      eth0    0.0.0.0/0            0.0.0.0/0            to:10.108.0.50",
        "    1   100 MASQUERADE  0    --  *      !docker0  172.17.0.0/16        0.0.0.0/0"))
    v = analyze(b).verdict
    assert not _fired(v, "source-rewritten-on-path"), v.trace
    assert v.cause == "unknown", v.trace


def test_a_switch_port_going_down_between_the_jobs_start_and_its_failure_fires():
    # switch_port_events.txt (ip -ts monitor link): swp2 DOWN at 06:30:53 after step 20, six outages
    v = analyze(FLAP).verdict
    assert _fired(v, "link-down-during-job"), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_the_same_port_record_with_its_outages_after_the_failure_does_not(tmp_path):
    # near miss, changed at test time: the record's times moved one hour later (after the failure)
    b = _copy(FLAP, tmp_path / "bundle")
    f = b / "switch_port_events.txt"
    f.write_text(f.read_text().replace("[2026-12-02T06:", "[2026-12-02T07:"))
    v = analyze(b).verdict
    assert not _fired(v, "link-down-during-job"), v.trace
    assert v.cause == "nccl_timeout", v.trace


def test_monitor_lines_are_events_with_their_time_not_facts_of_the_current_state():
    text = ("[2026-12-02T06:30:53.471306] 997: swp2@if996: <BROADCAST,MULTICAST> mtu 1500 qdisc noqueue master br0 "
            "state DOWN group default \n    link/ether c2:49:aa:61:ac:65 brd ff:ff:ff:ff:ff:ff link-netns pm8b1\n")
    sink = Sink()
    p = SystemParser("t.txt", sink)
    for i, line in enumerate(text.splitlines(), 1):
        p.feed(Line("t.txt", i, line, line))
    p.finish()
    assert not [f for f in sink.facts if f.name == "net.interface"]
    [e] = sink.events
    assert e.kind == "iproute.link_change" and e.data["name"] == "swp2" and e.data["admin_up"] is False
    assert e.stamp.wall.isoformat() == "2026-12-02T06:30:53.471306"


def test_a_rank_that_failed_on_its_transport_before_the_timeouts_is_not_silent():
    # duplicate-IP run: rank 0 failed with 'Connection closed by peer' (torchrun entry 22:05:12) 29 s
    # before rank 1's timeout (22:05:41): rank 0 was in the communication, not a straggler
    v = analyze(DUP_IP).verdict
    assert not any("straggler: silent" in t for t in v.trace), v.trace
    # with the neighbour entry alone no longer a sign (audit 9 H4), and rank 0's orderly close read as
    # its peer ending (messages.toml peer_closed_connection), not as the network: no claim either way
    assert v.category.value != "config", v.trace
    assert v.cause == "unknown", v.trace


def test_a_straggler_whose_closed_connection_came_after_the_timeout_stays_silent():
    # near miss: node 0 was CPU-throttled; its 'Connection closed by peer' (entry 00:32:51) came after
    # rank 1 timed out (00:30:57) and tore the pair down
    v = analyze(STRAGGLER).verdict
    assert any("straggler: silent [0]" in t for t in v.trace), v.trace
    assert v.cause == "straggler_timeout", v.trace


ECMP = FIX / "validation26" / "lab-b" / "lab8-node0-ecmp-uplink-silent-blackhole" / "bundle"


def test_a_multipath_route_keeps_its_table_one_printout():
    """node0_ip.txt's `ip route`: a connected route, an ECMP route printed as its destination and one
    indented 'nexthop via A dev D weight W' line per hop (iproute2 print_rta_multipath), and a second
    connected route of the same host.  Read as one route, the table stays one printout: the host's
    own second address is not taken for another host's that it cannot route to."""
    got = _facts((ECMP / "node0_ip.txt").read_text(encoding="utf-8"), "net.route")
    assert [(r["dest"], r["dev"], r.get("span", 1)) for r in got] == [
        ("10.108.1.0/24", "eth0", 1), ("10.108.2.0/24", "eth0", 3), ("10.108.3.0/24", "eth1", 1)]
    assert [h["dev"] for h in got[1]["nexthops"]] == ["eth0", "eth1"]
    v = analyze(ECMP).verdict
    assert not any(t.startswith("peer-unroutable: the routing table") for t in v.trace), v.trace


def test_a_bare_address_line_is_no_route():
    # near miss: an address alone on its line (a hostfile row), no nexthop lines under it
    assert _facts("10.112.0.1\n10.112.0.2\n", "net.route") == []
