"""The job's own step watchdog (faulthandler.dump_traceback_later) firing on a rank in its own work
while a peer waits in a collective (rules/hang.py OwnWatchdogDump).  REAL bundles:
fixtures/lab/own_watchdog/make.sh (torchrun --tee, gloo, torch 2.13 CPU, a 10 s per-step watchdog)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
LAB = ROOT / "lab" / "own_watchdog" / "output"
SIGN = "stacks.own_watchdog_in_own_work"


def _signs(v) -> set[str]:
    out = set()
    for f in ([v.root] if v.root else []) + list(v.alternatives) + list(v.symptoms):
        out.add(f.signal)
        out.update(f.signs)
    return out


def test_the_rank_whose_watchdog_fired_in_its_own_work_held_the_others():
    v = analyze(LAB / "eval-in-step-1").verdict
    assert v.cause == "straggler_timeout" and v.root.signal == SIGN, v.trace
    assert v.root.culprit_ranks == (0,) and "evaluate (train_watchdog.py" in v.root.summary


def test_a_rank_whose_watchdog_fired_while_it_waited_in_a_collective_is_not_named():
    # rank 0's watchdog fires in the all-reduce (it waits), rank 1's in its own sleep: rank 1 is named
    v = analyze(LAB / "peer-sleeps-1").verdict
    assert v.cause == "straggler_timeout" and v.root.signal == SIGN, v.trace
    assert v.root.culprit_ranks == (1,)
    assert any("waiting in all_reduce: a rank that waits is not the one behind" in t for t in v.trace)


def test_without_a_peer_seen_waiting_nothing_is_named(tmp_path):
    # only rank 0's lines kept (its dump in the evaluation): nothing shows another rank waiting for it
    b = tmp_path / "b"
    b.mkdir()
    log = (LAB / "eval-in-step-1" / "torchrun.log").read_text()
    (b / "torchrun.log").write_text("".join(l for l in log.splitlines(True) if not l.startswith("[default1]")))
    v = analyze(b).verdict
    assert SIGN not in _signs(v), v.trace


def test_development_case():
    v = analyze(ROOT / "validation29" / "lab-c" / "lab11-step-hang-watchdog-faulthandler-exits-rank0-during-eval"
                / "bundle").verdict
    assert v.cause == "straggler_timeout" and v.root.signal == SIGN, v.trace


def test_a_watchdog_dump_that_did_not_end_the_rank_is_a_report():
    # fixtures/bundles/lab-flightrec-hang-stacks: every rank's watchdog dumps (exit=False) and the job goes on to
    # its collective timeout -- rank 3's dump in load_batch is a snapshot, not the rank's end
    v = analyze(ROOT / "bundles" / "lab-flightrec-hang-stacks" / "bundle").verdict
    assert SIGN not in _signs(v)
    assert any("a report, not the end of the rank" in t for t in v.trace), v.trace
    # the same with eval-in-step-1's exit records cut: nothing says the dump ended rank 0
    # (torchrun's 'failed (exitcode: 1)' line and its ChildFailedError summary)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        b = Path(d) / "b"
        shutil.copytree(LAB / "eval-in-step-1", b)
        log = b / "torchrun.log"
        text = log.read_text()
        log.write_text(text[:text.index("Traceback (most recent call last):")] if "Traceback (most" in text else text)
        log.write_text("".join(l for l in log.read_text().splitlines(True) if "exitcode" not in l))
        v = analyze(b).verdict
        assert SIGN not in _signs(v), v.trace
