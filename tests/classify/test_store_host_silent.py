"""A store connect that got no answer at all (errno 113 'No route to host': no ARP answer; SYNs
unanswered) is what a powered-off store host gives as much as a cut path (audit 14 H1): it reads
the network strongly only when the bundle shows the store's side alive, and a lost ping of the
same address is that one fact again unless the store's side is shown alive.
REAL: fixtures/lab/audit16/master_down/make.sh (powered_off: the store's host off, only node 1's
launcher output; path_dropped: the store listening, its server's 'waiting for clients' timeout in
node0.log) and fixtures/validation28/lab-c/lab11-switch-storm-control-bcast-flood-off-node0-port-arp-fails
(node 1 cannot resolve node 0; node 1's ping 'Destination Host Unreachable'; node 0's console)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.classify.rules.catalog import store_side_alive
from postmortem.knowledge import load
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_MASTER_DOWN = ROOT / "fixtures/lab/audit16/master_down"
_ARP = next((ROOT / "fixtures").glob("validation*/*/lab11-switch-storm-control-bcast-flood-off-node0-port-arp-fails/bundle"))


def _store_lines(case):
    return [e for e in case.events if "failed to connect" in (e.text or "")]


def test_powered_off_store_host_is_not_claimed_as_the_network():
    v = analyze(_MASTER_DOWN / "powered_off/bundle").verdict
    assert v.category.value == "unknown" and v.cause == "unknown", (v.cause, v.confidence)
    assert any("nothing in the bundle shows the store's host alive" in t for t in v.trace), v.trace
    assert "leaning nccl_network" in v.summary, v.summary


def test_store_side_shown_alive_by_its_servers_wait():
    a = analyze(_MASTER_DOWN / "path_dropped/bundle")
    alive = store_side_alive(a.case, load(), _store_lines(a.case))
    assert alive is not None and alive.ref.path == "node0.log" and "waiting for clients" in alive.text
    a = analyze(_MASTER_DOWN / "powered_off/bundle")
    assert store_side_alive(a.case, load(), _store_lines(a.case)) is None


def test_sender_side_ping_beside_the_connects_is_one_fact(tmp_path):
    # the worker's own files only (its launcher output and its ping/neighbour check): nothing shows node 0 alive
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name in ("node1.console.log", "node1_neigh_ping.txt"):
        shutil.copy(_ARP / name, bundle / name)
    v = analyze(bundle).verdict
    assert v.cause == "unknown", (v.cause, v.confidence)
    assert any(t.startswith("peer-probe-lost: not counted") and "whose side nothing shows alive" in t for t in v.trace), v.trace


def test_with_the_store_hosts_console_the_ping_counts():
    v = analyze(_ARP).verdict
    assert v.category.value == "comms" and v.cause == "nccl_network", (v.cause, v.confidence)


def test_the_html_report_of_the_unknown_verdict_says_what_it_leans_to_and_what_to_collect():
    import html as htmllib
    import re

    from postmortem.report.html import render

    page = render(analyze(_MASTER_DOWN / "powered_off/bundle"))
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"(?s)<(script|style).*?</\1>", "", page)))
    text = " ".join(text.split())
    assert "leaning nccl_network (0.25)" in text
    assert "collect the store host's own log, kernel log and BMC event log" in text
    assert "What to collect" in text and "stderr of every rank" in text
