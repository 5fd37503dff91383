"""`iptables -L -v -n` (parsers/iptables.py) and the bridge views of iproute2 (`bridge -d link
show`, `bridge fdb show`: parsers/iproute.py), on the real outputs the lab bundles hold:
validation24 lab6-router-docker-forward-drop (a router with dockerd's rules), validation23
lab5-node0-connlimit-firewall (three chains, K-less counters), validation24
lab6-switch-port-learning-off-midrun (a bridge's ports, options and forwarding table)."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text
from postmortem.parsers.iproute import FACT as IFACE, FDB_FACT
from postmortem.parsers.iptables import FACT as CHAIN, count

ROOT = Path(__file__).resolve().parents[2]
ROUTER = ROOT / "fixtures/validation24/lab-b/lab6-router-docker-forward-drop/bundle/router_iptables.txt"
CONNLIMIT = ROOT / "fixtures/validation23/lab-b/lab5-node0-connlimit-firewall/bundle/node0_iptables.txt"
SWITCH = ROOT / "fixtures/validation24/lab-a/lab6-switch-port-learning-off-midrun/bundle/switch.txt"


def _facts(path: Path, name: str) -> list[dict]:
    result = parse_text(path.name, path.read_text(encoding="utf-8").splitlines())
    assert not result.sink.problems
    return [f.value for f in result.sink.facts if f.name == name]


def test_a_chain_policy_and_its_counted_packets():
    (forward,) = _facts(ROUTER, CHAIN)      # `iptables -S` lines beside it are no chain
    assert forward["chain"] == "FORWARD" and forward["policy"] == "DROP" and forward["policy_packets"] == 10
    assert [r["target"] for r in forward["rules"]][:2] == ["DOCKER-USER", "DOCKER-ISOLATION-STAGE-1"]
    assert forward["rules"][2]["out"] == "docker0" and forward["rules"][2]["packets"] == 0


def test_chains_end_at_a_blank_line_and_rules_keep_their_match_text():
    chains = {c["chain"]: c for c in _facts(CONNLIMIT, CHAIN)}
    assert sorted(chains) == ["FORWARD", "INPUT", "OUTPUT"]
    (reject,) = chains["INPUT"]["rules"]
    assert reject["target"] == "REJECT" and reject["packets"] == 8 and "reject-with tcp-reset" in reject["match"]
    assert chains["FORWARD"]["rules"] == [] and chains["FORWARD"]["policy_packets"] == 0


def test_iptables_scales_counters_by_a_thousand():
    assert count("1503K") == 1503000 and count("23670") == 23670 and count("") == 0


def test_bridge_ports_carry_their_stp_state_and_options():
    ports = {p["name"]: p for p in _facts(SWITCH, IFACE) if p.get("master")}
    assert ports["swp1"]["port_state"] == "forwarding" and ports["swp1"]["port_options"]["learning"] == "on"
    assert ports["swp2"]["port_options"]["learning"] == "off" and ports["swp2"]["port_options"]["flood"] == "off"


def test_forwarding_entries_say_local_learned_or_self():
    entries = _facts(SWITCH, FDB_FACT)
    learned = [e for e in entries if e["dev"] == "swp1" and not e["self"] and e["state"] == ""]
    assert [e["mac"] for e in learned] == ["c2:3f:a0:be:81:12"]
    assert all(e["self"] or e["state"] == "permanent" for e in entries if e["dev"] == "swp2")


SYSTEM = ROOT / "fixtures" / "system"


def test_a_shapers_drops_and_its_device():
    from postmortem.parsers.tc import FACT as QDISC

    qdiscs = {q["dev"]: q for q in _facts(SYSTEM / "tc_qdisc_tbf_drops.txt", QDISC)}   # make_tc_fixtures.sh
    assert qdiscs["va"]["kind"] == "tbf" and "rate 512Kbit" in qdiscs["va"]["params"]
    assert qdiscs["va"]["dropped"] > 0 and qdiscs["va"]["sent_packets"] > 0
    assert qdiscs["lo"]["kind"] == "noqueue" and qdiscs["lo"]["dropped"] == 0


def test_a_qdisc_shown_for_one_device_takes_the_device_of_its_command_line():
    # `tc -s qdisc show dev X` omits `dev X` from its headers; the command line before them names
    # it (audit 8 M4: read as dev '', so host-local devices could not be told apart)
    from postmortem.parsers.tc import FACT as QDISC

    path = ROOT / "fixtures/validation22/lab4-slow-link-allreduce/bundle/switch_port.txt"
    qdiscs = _facts(path, QDISC)
    assert [(q["kind"], q["dev"], q["sent_packets"], q["dropped"]) for q in qdiscs] == [("tbf", "swp2", 1130, 1222), ("tbf", "eth0", 1079, 1239)]


LINE_NUMBERS = ROOT / "fixtures/system/iptables_line_numbers/iptables_line_numbers.txt"


def test_line_numbers_listing_keeps_its_rules():
    # audit 8 M6: `--line-numbers` adds a "num" column; its rows were lost (real listing, make.sh beside it)
    chains = {c["chain"]: c for c in _facts(LINE_NUMBERS, CHAIN)}
    reject, drop = chains["INPUT"]["rules"]
    assert (reject["target"], reject["packets"], reject["prot"]) == ("REJECT", 1, "6")
    assert "dpt:29501" in reject["match"] and reject["source"] == "0.0.0.0/0"
    assert (drop["target"], drop["packets"], drop["prot"]) == ("DROP", 1, "17")


def test_a_listing_without_line_numbers_reads_its_first_column_as_packets():
    # near miss: the same parser on the lab listing without `num` keeps pkts as the first column
    (reject,) = {c["chain"]: c for c in _facts(CONNLIMIT, CHAIN)}["INPUT"]["rules"]
    assert reject["packets"] == 8


def test_a_qdisc_without_its_statistics_is_said():
    # audit 8 L7: a header whose Sent line was cut (deliberately hostile input made at test time
    # from the lab's real header line); near miss: the lab's whole block reads clean
    from postmortem.parsers.tc import FACT as QDISC

    real = (ROOT / "fixtures/validation22/lab4-slow-link-allreduce/bundle/switch_port.txt").read_text(encoding="utf-8").splitlines()
    header = next(l for l in real if l.startswith("qdisc tbf"))
    cut = parse_text("tc_cut.txt", [header, " Sent 1261244 bytes 1130 pkt (dropped 1222, overl"])
    assert any("without its statistics" in p for p in cut.sink.problems), cut.sink.problems
    whole = parse_text("switch_port.txt", real)
    assert not whole.sink.problems and [f.value["dropped"] for f in whole.sink.facts if f.name == QDISC] == [1222, 1239]
