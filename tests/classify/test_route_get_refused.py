"""`ip route get PEER` answered 'RTNETLINK answers: Network is unreachable' (parsers/iproute.py
net.route_get_failed) read as the host's kernel having no route to an address the job dials
(signals.toml net.peer_unroutable, params no_route_answers).  Real lines:
fixtures/validation28/lab-d/lab10-node1-address-noprefixroute-store-unreachable (node1_ip.txt: an
address added with noprefixroute, `ip route` empty, the store's address refused)."""
from __future__ import annotations

from pathlib import Path

from postmortem.parsers import parse_text
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_CASE = ROOT / "fixtures/validation28/lab-d/lab10-node1-address-noprefixroute-store-unreachable/bundle"
_IP = "node1_ip.txt"


def _copy(tmp_path: Path, edit=None) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for p in _CASE.iterdir():
        text = p.read_text(encoding="utf-8")
        (bundle / p.name).write_text(edit(p.name, text) if edit else text, encoding="utf-8")
    return bundle


def test_the_refused_route_get_is_a_fact_naming_its_address():
    path = _CASE / _IP
    result = parse_text(path.name, path.read_text(encoding="utf-8").splitlines())
    got = [f.value for f in result.sink.facts if f.name == "net.route_get_failed"]
    assert got == [{"addr": "10.96.4.1", "error": "Network is unreachable"}], got


def test_a_route_line_answering_route_get_is_no_refusal():
    lines = ["$ ip route get 10.97.0.1", "10.97.0.1 dev eth0 src 10.97.0.2 uid 0 ", "    cache "]
    result = parse_text("checks.txt", lines)
    assert not [f for f in result.sink.facts if f.name in ("net.route_get_failed", "net.route")]


def test_no_route_beside_connects_that_printed_the_same_answer_is_one_sign(tmp_path):
    """The connects' `errno: 101 - Network is unreachable` is the answer of the lookup `ip route get`
    repeats (audit 13 H1): one fact, read twice -- the case leans, it does not claim."""
    v = analyze(_copy(tmp_path)).verdict
    assert v.cause == "unknown" and "leaning nccl_network" in v.summary, (v.summary, v.trace)
    assert any(t.startswith("peer-unroutable: not counted: `ip route get` 10.96.4.1") for t in v.trace), v.trace


def test_no_route_beside_a_failure_of_another_answer_is_a_second_sign(tmp_path):
    """Near miss: the same refusal beside connects that timed out (the shape of a host whose reply has
    no route back) is another observation than the connects' own errno, and counts."""
    bundle = _copy(tmp_path, lambda name, text: text.replace("errno: 101 - Network is unreachable",
                                                             "errno: 110 - Connection timed out")
                   if name == "node1.log" else text)
    v = analyze(bundle).verdict
    assert any(t.startswith("peer-unroutable: the host's kernel has no route to the job's peer 10.96.4.1") for t in v.trace)
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace


def test_a_refused_address_the_job_does_not_dial_is_not_read(tmp_path):
    """Near miss: the same refusal for another address (a check of some other host)."""
    bundle = _copy(tmp_path, lambda name, text: text.replace("ip route get 10.96.4.1", "ip route get 10.96.9.9")
                   if name == _IP else text)
    v = analyze(bundle).verdict
    assert v.cause == "unknown", v.trace
    assert any("an address the job's lines do not name" in t for t in v.trace), v.trace
