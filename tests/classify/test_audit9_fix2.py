"""Audit 9 probes (REAL runs made by the auditor; each folder under fixtures/lab/audit9/ holds
the bundle, its SOURCE.txt and the mk_*/ program that made it): healthy host state beside
another cause's failure must not become a comms claim, and one observation counts once."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.run import analyze

AUDIT9 = Path(__file__).resolve().parents[2] / "fixtures" / "lab" / "audit9"


def _verdict(probe: str):
    return analyze(AUDIT9 / probe / "bundle").verdict


def _fired(v, rule: str) -> bool:
    return any(t.startswith(f"{rule}: ") and not t.startswith((f"{rule}: not counted", f"{rule}: paired"))
               for t in v.trace)


def test_h0_ranks_level_counts_once_so_desync_stays_the_verdict():
    # s14: a gloo collective desync (truth config collective_desync) on a host with a standing
    # SNAT, an on-demand IPsec trap policy and a VM going down: three path readings paired with
    # one fact (the ranks were level) had been counted as three signs -> comms 0.625
    v = _verdict("s14")
    assert (v.category, v.cause) == ("config", "collective_desync")


def test_h0_s11_same_run_still_desync():
    v = _verdict("s11")
    assert (v.category, v.cause) == ("config", "collective_desync")


def test_m3_the_jobs_own_bin_entry_script_is_its_code():
    # s10: <proj>/bin/train (functions main, load_schedule) raises ValueError in its own code
    v = _verdict("s10")
    assert (v.category, v.cause) == ("config", "app_error")
    assert v.confidence >= 0.7


@pytest.mark.parametrize("probe", ["s2", "s6", "s16", "s13"])
def test_h2_a_link_the_job_did_not_use_or_that_never_went_down_is_no_sign(probe):
    # s2: an unused NIC loses carrier (job on loopback); s6/s16: a VM's vnet0 on virbr0 shuts
    # down while the job names eth0 (GLOO_/NCCL_SOCKET_IFNAME); s13: an MTU change on a spare NIC
    # that was DOWN all along prints 'state DOWN' -- no transition.  Truth: config app_error.
    v = _verdict(probe)
    assert not _fired(v, "link-down-during-job"), v.trace
    assert v.category != "comms"


def test_l1_gloo_socket_ifname_of_an_env_dump_is_read():
    from postmortem.classify.rules.interfaces import job_interfaces
    case = analyze(AUDIT9 / "s6" / "bundle").case
    assert job_interfaces(case)[1] == {"eth0"}


@pytest.mark.parametrize("probe", ["s7", "s12"])
def test_h4_a_healthy_neighbour_entry_is_no_sign(probe):
    # s7: a proxy-ARP router answers for the peer (REACHABLE, the router's MAC); s12: a direct
    # link whose entry holds the peer's TRUE MAC, with both hosts' `ip addr` in one file
    v = _verdict(probe)
    assert not _fired(v, "peer-address-elsewhere"), v.trace
    assert v.category != "comms"


@pytest.mark.parametrize("probe,rule", [("s1", "source-rewritten-on-path"), ("s5", "ipsec-policy-without-sa")])
def test_h1_h3_a_rule_for_another_subnet_is_no_sign(probe, rule):
    # s1: a standing SNAT of a container subnet (-s 10.0.3.0/24) to the host's own address; s5: an
    # IKE daemon's on-demand trap policy for 10.0.3.0/24 with no SA yet -- neither selects the
    # job's packets (its source is not the job's address); the job failed of a peer's KeyError
    v = _verdict(probe)
    assert not _fired(v, rule), v.trace
    assert v.category != "comms"


def test_m2_one_peer_going_dark_is_one_path_sign():
    # a peer that vanishes makes the link lose carrier AND its neighbour entry INCOMPLETE: one event
    # (signals.toml [failure."path.job_packets_lost"]); s9 (REAL: node 0 powers off, node 1's view,
    # truth hardware) must not become a comms claim on the pair
    from postmortem.knowledge.registry import registry
    failures = registry().failures
    assert failures["net.link_down_during_job"] == failures["net.peer_unresolved"]
    v = _verdict("s9")
    assert v.category != "comms"
