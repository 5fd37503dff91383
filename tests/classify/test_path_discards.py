"""Measured discards on the path between the nodes (rules bridge-port-discards and
firewall-discards; signs net.path_discards, net.firewall_discards).

Bundles: the development cases validation24 lab6-switch-port-learning-off-midrun and
lab6-router-docker-forward-drop as stored, and copies whose network artifact is replaced by
other REAL lines: subsets of the same outputs (a port with learning and flooding on and a
learned entry; the link view without any `bridge fdb`), and validation23
lab5-node0-connlimit-firewall's iptables output (a chain whose REJECT counted packets; a FORWARD
chain with policy ACCEPT and nothing counted)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

from tests.classify.arrange import claims_without as _claims_without

ROOT = Path(__file__).resolve().parents[2]
LEARNING_OFF = ROOT / "fixtures/validation24/lab-a/lab6-switch-port-learning-off-midrun/bundle"
ROUTER = ROOT / "fixtures/validation24/lab-b/lab6-router-docker-forward-drop/bundle"
CONNLIMIT_IPT = ROOT / "fixtures/validation23/lab-b/lab5-node0-connlimit-firewall/bundle/node0_iptables.txt"


def _fired(verdict, rule: str) -> bool:
    return any(line.startswith(f"{rule}: ") and ("forwarding entry on it" in line or "STP state" in line
                                                  or "the job's connect failed" in line)
               for line in verdict.trace)


def _copy(src: Path, tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(src, bundle)
    return bundle


def _lines(path: Path, keep) -> str:
    return "".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if keep(line))


def test_a_port_that_neither_learns_nor_floods_explains_the_timeouts():
    v = analyze(LEARNING_OFF).verdict
    assert _fired(v, "path-discards")
    assert v.cause == "nccl_timeout", v.trace
    assert any("net.path_discards" in line and "timeout.all_ranks" in line for line in v.trace)


def test_a_learning_flooding_port_with_a_learned_entry_adds_nothing(tmp_path):
    bundle = _copy(LEARNING_OFF, tmp_path)
    switch = bundle / "switch.txt"
    text = switch.read_text(encoding="utf-8").splitlines(keepends=True)
    # swp1's two link lines and its fdb lines only (real lines of the same capture)
    kept = [line for i, line in enumerate(text) if "swp1" in line or (i > 0 and "swp1@" in text[i - 1])]
    switch.write_text("".join(kept), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v, "path-discards")
    assert _claims_without(v, "net.path_discards"), v.trace


def test_without_the_forwarding_table_a_static_entry_may_deliver(tmp_path):
    bundle = _copy(LEARNING_OFF, tmp_path)
    switch = bundle / "switch.txt"
    switch.write_text(_lines(switch, lambda line: " dev " not in line or "@if" in line), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v, "path-discards")
    assert any("no `bridge fdb`" in line for line in v.trace)
    assert _claims_without(v, "net.path_discards"), v.trace


def test_a_router_dropping_forwarded_traffic_beside_failed_connects_is_the_network():
    v = analyze(ROUTER).verdict
    assert _fired(v, "firewall-discards")
    assert v.cause == "nccl_network", v.trace


def test_a_filter_that_counted_nothing_adds_nothing(tmp_path):
    bundle = _copy(ROUTER, tmp_path)
    (bundle / "router_iptables.txt").write_text(_lines(CONNLIMIT_IPT, lambda line: "REJECT" not in line and "-A INPUT" not in line),
                                                encoding="utf-8")
    v = analyze(bundle).verdict
    assert not _fired(v, "firewall-discards")
    assert v.cause == "unknown", v.trace       # the store client's timeout alone: a lean


def test_discards_without_a_failed_connect_of_the_job_are_no_sign(tmp_path):
    bundle = _copy(LEARNING_OFF, tmp_path)
    (bundle / "switch.txt").unlink()
    shutil.copy(CONNLIMIT_IPT, bundle / "node0_iptables.txt")
    v = analyze(bundle).verdict
    assert not _fired(v, "firewall-discards")
    assert any(line.startswith("firewall-discards: ") and "none of the job's connections failed" in line for line in v.trace)


SYSTEM = ROOT / "fixtures" / "system"


def test_a_qdisc_dropping_the_traffic_is_the_same_sign(tmp_path):
    """The learning-off case with its switch capture replaced by a real shaper that dropped
    (fixtures/system/make_tc_fixtures.sh): the same reading, from another measurement."""
    bundle = _copy(LEARNING_OFF, tmp_path)
    (bundle / "switch.txt").unlink()
    shutil.copy(SYSTEM / "tc_qdisc_tbf_drops.txt", bundle / "tc.txt")
    v = analyze(bundle).verdict
    assert any(line.startswith("path-discards: queueing discipline tbf on va") for line in v.trace), v.trace
    assert v.cause == "nccl_timeout", v.trace


def test_qdiscs_that_dropped_nothing_add_nothing(tmp_path):
    bundle = _copy(LEARNING_OFF, tmp_path)
    (bundle / "switch.txt").unlink()
    shutil.copy(SYSTEM / "tc_qdisc_healthy.txt", bundle / "tc.txt")
    v = analyze(bundle).verdict
    assert not any(line.startswith("path-discards: ") for line in v.trace)
    assert _claims_without(v, "net.path_discards"), v.trace
