"""collect's pid_ns.txt (NSpid lines of /proc/PID/status): the real file of lab-pidns-straggler."""
from pathlib import Path

from postmortem.grammar import load
from postmortem.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2]


def test_grammar_builds_strict():
    assert load("nspid", strict=True) is not None


def test_nspid_lines_become_outer_to_inner_lists():
    path = ROOT / "fixtures/bundles/lab-pidns-straggler/bundle/pid_ns.txt"
    result = parse_text("pid_ns.txt", path.read_text().splitlines())
    facts = [f.value for f in result.sink.facts if f.name == "process.nspid"]
    assert len(facts) == 3 and sorted(f[1] for f in facts) == [1, 5, 6]
    assert all(len(f) == 2 and f[0] > 1000 for f in facts)
    assert result.unclaimed == 0 and not result.sink.problems


def test_hostile_nspid_lines_are_declined():
    """Generated at test time: pids no kernel allows."""
    result = parse_text("pid_ns.txt", ["/proc/1/status: NSpid:\t" + "9" * 40 + "\t1", "/proc/2/status: NSpid:\t0"])
    assert not [f for f in result.sink.facts if f.name == "process.nspid"] and not result.sink.problems
