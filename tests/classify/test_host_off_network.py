"""A host of a multi-host job whose whole interface listing shows nothing outside the host
that could carry a packet (rule host-off-network, sign net.host_off_network).  Bundles are real
lab runs in fixtures/ (validation21, 23, 25)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LINK_DOWN = FIX / "validation25" / "lab-c" / "lab7-node1-link-down-midrun-emergency-save-fails" / "bundle"
DUP_IP = FIX / "validation23" / "lab-b" / "lab5-duplicate-ip-arp-takeover" / "bundle"
PORT_DOWN = FIX / "validation21" / "lab3-switch-port-down" / "bundle"


def _fired(v) -> bool:
    return any(t.startswith("host-off-network: ") for t in v.trace)


def test_a_node_whose_only_interface_is_administratively_down_is_the_network(tmp_path):
    # node1_ip.txt: `ip -br link` lists lo and eth0 DOWN <BROADCAST,MULTICAST> (no UP flag)
    v = analyze(LINK_DOWN).verdict
    assert _fired(v), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_a_listing_with_an_interface_up_and_addressed_adds_nothing():
    # near miss: node 1's listing shows eth0 UP with 10.97.0.2/24 (the duplicate-IP run)
    assert not _fired(analyze(DUP_IP).verdict)


def test_one_interface_shown_is_not_the_hosts_whole_listing():
    # near miss: `ip -s link show eth0` of a NO-CARRIER eth0 -- no loopback in the file, so the
    # host may have other interfaces (the link-down reading, weak, is that rule's)
    v = analyze(PORT_DOWN).verdict
    assert not _fired(v)
    assert v.cause == "nccl_network"   # still claimed, on its own two weak signs


def test_a_job_on_one_host_is_not_cut_off_by_its_interfaces(tmp_path):
    # near miss, derived at test time: node 0's log only (rank 0, local rank 0) beside node 1's
    # listing -- nothing says the job spans hosts, so a down interface cuts off no peer
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name in ("node0.log", "node1_ip.txt"):
        shutil.copy(LINK_DOWN / name, bundle / name)
    assert not _fired(analyze(bundle).verdict)
