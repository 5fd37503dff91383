"""A rank that reported no timeout logged its own work half a timeout or more after a peer had
begun the wait that timed out: it was alive and busy elsewhere -- a straggler, the counterpart of
timeout.ranks_level (signals.toml timeout.awaited_rank_worked_on).  Bundles are real lab runs in
fixtures/; near misses are derived from them at test time (marked where they are)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
EXPORT = FIX / "validation26" / "lab-c" / "lab8-rank1-export-calibration-monitored-barrier-10s" / "bundle"
BLACKHOLE = FIX / "validation22" / "lab4-midrun-blackhole-timeout" / "bundle"
SIGN = "timeout.awaited_rank_worked_on"
LATE_LINE = "2026-12-02 06:14:28,672 INFO tagger: exported step 30"


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / "bundle"
    shutil.copytree(src, dst)
    return dst


def test_a_rank_logging_its_work_after_the_peer_began_waiting_is_the_straggler(tmp_path):
    # rank 0: "Rank 1 failed to pass monitoredBarrier in 10000 ms" (its last line 06:14:15, the
    # launcher's exit 06:14:28.996: it began waiting by 06:14:19); rank 1 logged "exported step
    # 30 ... in 13.4s" at 06:14:28.672 -- nine seconds later
    bundle = _copy(tmp_path, EXPORT)
    assert LATE_LINE in (bundle / "node1_torchrun.log").read_text(encoding="utf-8")
    v = analyze(bundle).verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), v.trace
    assert any("independent weak signs" in t and SIGN in t for t in v.trace), v.trace
    assert 1 in v.root.culprit_ranks and "node1_torchrun.log:9" in v.root.summary


def test_the_monitored_barriers_own_timeout_is_not_the_jobs_exception(tmp_path):
    # c10d ProcessGroupGloo::monitoredBarrier raises 'Rank 1 failed to pass monitoredBarrier in
    # 10000 ms' in the WAITING rank: its timeout, not an error of the job's code (audit 10 M2)
    v = analyze(_copy(tmp_path, EXPORT)).verdict
    assert not any(t.startswith("app-error: uncaught exception at node0_torchrun.log:18") for t in v.trace), v.trace
    assert not any(f.cause == "app_error" for f in v.alternatives), v.trace


def test_without_the_late_rank_s_own_line_it_only_leans(tmp_path):
    # near miss derived at test time: rank 1's export line removed -- only its silence is left
    bundle = _copy(tmp_path, EXPORT)
    log = bundle / "node1_torchrun.log"
    log.write_text("".join(line for line in log.read_text(encoding="utf-8").splitlines(keepends=True)
                           if "exported step" not in line), encoding="utf-8")
    v = analyze(bundle).verdict
    assert v.cause != "straggler_timeout" or v.confidence < 0.35, v.trace
    assert not any(SIGN in t for t in v.trace)


def test_a_line_within_half_a_timeout_of_the_wait_does_not_count(tmp_path):
    # hostile input generated at test time: the same line stamped 06:14:20.672, under 2 s after
    # rank 0 began its 10 s wait at the latest -- lockstep jitter or clock skew, not a straggler
    bundle = _copy(tmp_path, EXPORT)
    log = bundle / "node1_torchrun.log"
    log.write_text(log.read_text(encoding="utf-8").replace("06:14:28,672 INFO tagger: exported",
                                                           "06:14:20,672 INFO tagger: exported"), encoding="utf-8")
    v = analyze(bundle).verdict
    assert not any(SIGN in t for t in v.trace), v.trace
    assert v.cause != "straggler_timeout" or v.confidence < 0.35


def test_a_network_stall_whose_ranks_stopped_logging_before_the_waits_is_not_read_as_a_straggler(tmp_path):
    # real near miss: lab4-midrun-blackhole-timeout, every rank's last step line precedes its wait
    v = analyze(_copy(tmp_path, BLACKHOLE)).verdict
    assert not any(SIGN in t for t in v.trace)
    assert v.category.value != "config", v.trace


DOWNLOAD = FIX / "validation25" / "lab-b" / "lab7-rank0-features-download-barrier-timeout" / "bundle"
NORMALISER = FIX / "validation26" / "lab-c" / "lab8-rank0-normaliser-fit-15s-timeout-restarts-exhausted" / "bundle"


def test_a_rank_failing_of_its_own_error_long_after_the_peers_timeout_got_there_late(tmp_path):
    # rank 1's barrier timed out (30 s) and its launcher recorded the failure at 03:02:37; rank 0
    # (downloading on its own) reached the barrier, got "Connection closed by peer" and its record
    # says 03:02:55 -- 18 s later, more than half the timeout
    v = analyze(_copy(tmp_path, DOWNLOAD)).verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), v.trace
    assert any("independent weak signs" in t and SIGN in t for t in v.trace), v.trace
    assert 0 in v.root.culprit_ranks


def test_failures_within_half_a_timeout_of_each_other_do_not_count(tmp_path):
    # hostile input generated at test time: rank 0's failure record moved to 03:02:45 (8 s after
    # rank 1's, under half of its 30 s timeout)
    bundle = _copy(tmp_path, DOWNLOAD)
    log = bundle / "node0.log"
    log.write_text(log.read_text(encoding="utf-8").replace("2026-12-02_03:02:55", "2026-12-02_03:02:45"),
                   encoding="utf-8")
    v = analyze(bundle).verdict
    assert not any(SIGN in t for t in v.trace), v.trace
    assert v.cause != "straggler_timeout" or v.confidence < 0.35


def test_a_peer_torn_down_by_the_launcher_is_no_sign_of_its_own(tmp_path):
    # real near miss: rank 1 timed out in broadcast (15 s) while rank 0 was still fitting; torchrun
    # SIGTERMed rank 0 -- its record is the teardown's signal, not an error of its own
    v = analyze(_copy(tmp_path, NORMALISER)).verdict
    assert not any(SIGN in t for t in v.trace), v.trace


STAMPED = FIX / "lab" / "tqdm_stamped"   # REAL: fixtures/lab/tqdm_stamped/make.sh (torchrun, gloo, moreutils ts)


def _rests_on(v) -> str:
    return next(t for t in v.trace if "independent weak signs" in t)


def test_one_stamped_progress_line_of_the_silent_rank_is_one_sign_not_two():
    # audit 9 M1: rank 1's bars go through logging, so each refresh is its own line and the
    # collector (ts) stamps it; the line 25 s after rank 0 began its 10 s wait is the bar
    # advancing *and* the rank working on -- one observation, counted once
    bundle = STAMPED / "bundle-logger"
    assert "Running tokenizer on dataset:" in (bundle / "pod1.log").read_text(encoding="utf-8")
    v = analyze(bundle).verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), v.trace
    rests = _rests_on(v)
    assert SIGN in rests and "timeout.progress_advancing" not in rests, rests
    # the missing timeout line and the rank's own log: two views of one fact, a noisy-OR (audit 10 M2)
    assert _support(v) == _noisy_or("timeout.silent_ranks", SIGN), v.trace
    assert v.confidence < 0.8


def test_a_bar_printed_as_tqdm_writes_it_carries_no_stamp_of_its_own():
    # near miss, same run with the bars on stderr: tqdm starts each refresh with '\r', so the
    # collector's stamp sits before it and the bar lines have no time -- the late rank shows in
    # its launcher's record (a different artifact) and the bar counts as the bar
    bundle = STAMPED / "bundle-stderr"
    v = analyze(bundle).verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), v.trace
    assert "failed of its own error" in v.root.summary and "logged its own work" not in v.root.summary
    assert "timeout.progress_advancing" in _rests_on(v)


def test_the_awaited_rank_seen_elsewhere_in_three_artifacts_is_not_a_linear_sum():
    # audit 10 M2: the missing timeout line, the launcher's late record and the bar are three
    # views of one fact (rank 1 was elsewhere): 0.5 + 0.25 + 0.1 = 0.85 summed linearly; a
    # noisy-OR of the artifacts stays below what the sum claimed
    v = analyze(STAMPED / "bundle-stderr").verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), v.trace
    want = _noisy_or("timeout.silent_ranks", SIGN, "timeout.progress_advancing")
    assert _support(v) == want < 0.75, v.trace


def _support(v) -> float:
    line = next(t for t in v.trace if t.startswith("resolve: straggler_timeout support"))
    return float(line.split("support ", 1)[1].split()[0])


def _noisy_or(*signs: str) -> float:
    from postmortem.knowledge.registry import registry
    miss = 1.0
    for s in signs:
        miss *= 1 - registry().signals[s].weight
    return round(1 - miss, 2)
