"""A spawned child reads its start-up data from its parent's pipe (CPython Lib/multiprocessing/
spawn.py _main: reduction.pickle.load(from_parent)); a parent killed before its write ends leaves a
truncated stream, and the child's 'pickle data was truncated' / 'Ran out of input' is that death's
fallout, not the job's code.  Real lines: validation29 yolox (mp.spawn rank SIGKILLed, host RAM) and,
the near miss at the same raise site, fixtures/lab/output/lab-spawn-child-load made by
fixtures/lab/spawn_child_load/make.sh (the target missing from __mp_main__: the job's code)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
YOLOX = FIX / "validation29/gh/yolox-2gpu-mp-spawn-rank-sigkill-host-ram-exhausted-dataloader-workers-07/bundle"
NEAR = FIX / "lab/output/lab-spawn-child-load/bundle"


def test_a_truncated_start_up_stream_is_the_parents_death_not_the_jobs_code():
    v = analyze(YOLOX).verdict
    assert not any(t.startswith("app-error: uncaught exception") for t in v.trace), v.trace
    assert "leaning host_oom" in v.summary, v.summary


def test_a_start_up_load_failing_on_the_jobs_main_module_stays_the_jobs_code():
    v = analyze(NEAR).verdict
    assert any(t.startswith("app-error: uncaught exception") for t in v.trace), v.trace
    assert "leaning app_error" in v.summary, v.summary
