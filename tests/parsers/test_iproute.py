"""iproute2 output (parsers/iproute.py): real outputs of iproute2 6.1.0 made here
(fixtures/system/make_fixtures.sh: a veth whose peer is down) and the lab bundles' own files."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text
from postmortem.parsers.iproute import FACT

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = ROOT / "fixtures" / "system"


def _interfaces(path: Path) -> dict[str, list[dict]]:
    result = parse_text(path.name, path.read_text(encoding="utf-8").splitlines())
    assert not result.sink.problems
    out: dict[str, list[dict]] = {}
    for f in result.sink.facts:
        if f.name == FACT:
            out.setdefault(f.value["name"], []).append(f.value)
    return out


def test_ip_addr_reads_flags_state_and_addresses():
    got = _interfaces(SYSTEM / "ip_addr_nocarrier.txt")
    pma = got["pma"][0]
    assert pma["carrier"] is False and pma["admin_up"] is True
    assert pma["state"] == "LOWERLAYERDOWN" and pma["mtu"] == 1500
    assert pma["addresses"] == ["10.9.0.1/24"]
    assert got["pmb"][0]["admin_up"] is False          # the peer is administratively down
    assert got["lo"][0]["carrier"] is True and "127.0.0.1/8" in got["lo"][0]["addresses"]


def test_ip_s_link_reads_the_counters_by_their_column_names():
    got = _interfaces(SYSTEM / "ip_s_link_nocarrier.txt")
    counters = got["pma"][0]["counters"]
    assert set(counters) >= {"rx_bytes", "rx_errors", "rx_dropped", "tx_dropped", "tx_carrier", "tx_collsns"}
    assert all(v == 0 for v in counters.values())


def test_ip_s_s_link_reads_the_error_detail_rows_too():
    counters = _interfaces(SYSTEM / "ip_ss_link_nocarrier.txt")["pma"][0]["counters"]
    assert counters["rx_crc"] == 0 and counters["tx_transns"] == 1 and counters["tx_dropped"] == 0


def test_brief_forms_read_state_addresses_and_flags():
    addr = _interfaces(SYSTEM / "ip_br_addr_nocarrier.txt")
    assert addr["pma"][0]["state"] == "LOWERLAYERDOWN" and addr["pma"][0]["addresses"] == ["10.9.0.1/24"]
    assert addr["pmb"][0]["addresses"] == []
    link = _interfaces(SYSTEM / "ip_br_link_nocarrier.txt")
    assert link["pma"][0]["admin_up"] is True and link["pma"][0]["carrier"] is False
    assert link["pmb"][0]["admin_up"] is False


def test_counters_of_a_link_that_dropped_frames():
    # fixtures/validation21/lab3-jumbo-mtu-blackhole: two "nodes" in one file, under comment lines
    got = _interfaces(ROOT / "fixtures" / "validation21" / "lab3-jumbo-mtu-blackhole" / "bundle" / "ip_link.txt")
    node0, node1 = got["eth0"]
    assert node0["mtu"] == 9000 and node0["counters"]["tx_dropped"] == 84
    assert node1["counters"]["tx_dropped"] == 0


def test_lines_that_only_look_alike_are_not_interfaces():
    lines = ["2026-12-01 16:41:49,107 vm INFO rank 0/2 initialised (gloo)",
             "node1 UP and running since 10:00",          # a word after the state, not an address
             "step: <UP> mtu",
             "3: worker: starting"]
    result = parse_text("train.log", lines)
    assert not [f for f in result.sink.facts if f.name == FACT]


def test_ordinary_interface_names_of_a_host_are_read():
    # `4: eth0: <...> mtu 1400` is an index and a name, not an srun rank and a pdsh host prefix
    addr = _interfaces(SYSTEM / "ip_addr_host.txt")
    assert {"lo", "eth0", "ifb0", "ifb1"} <= set(addr)
    eth0 = addr["eth0"][0]
    assert eth0["admin_up"] is True and eth0["carrier"] is True and eth0["mtu"] == 1400
    assert "192.0.2.2/24" in eth0["addresses"]
    assert addr["ifb0"][0]["admin_up"] is False
    link = _interfaces(SYSTEM / "ip_s_link_host.txt")
    assert link["eth0"][0]["counters"]["rx_errors"] == 0 and link["eth0"][0]["counters"]["tx_packets"] > 0


def test_an_interface_header_carries_no_rank():
    result = parse_text("ip_addr.txt", ["2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP"])
    facts = [f for f in result.sink.facts if f.name == FACT]
    assert [f.value["name"] for f in facts] == ["ens1f0np0"]
