"""app.native_recursion: a SIGSEGV whose gdb backtrace shows one native function calling itself
frame after frame (the thread ran into its stack's guard gap) is the job's side failing, strong.
Real lines: validation26's lab crash (gdb -batch -ex 'bt 60' on the real core of a recursive
quicksort in the job's C helper; its make.sh is kept in fixtures/validation26/lab-a) and
fixtures/lab's library SIGSEGV (a real gdb bt of a shallow stack)."""
from __future__ import annotations

import shutil

from postmortem.run import analyze

from tests.classify.arrange import FIXTURES

_OVERFLOW = FIXTURES / "validation26/lab-a/lab8-spawn-rank1-packed-shard-lensort-stack-overflow-core/bundle"


def test_a_native_function_recursing_below_the_fault_claims_app_error():
    v = analyze(_OVERFLOW).verdict
    assert (v.category.value, v.cause) == ("config", "app_error")
    assert v.confidence >= 0.6
    assert "qsort_by_len" in v.summary and "recursion" in v.summary


def test_a_short_run_of_the_same_function_is_no_recursion(tmp_path):
    # The same real backtrace cut to its first ten frames (derived at test time, marked): two
    # frames of qsort_by_len in a row say nothing about recursion; the death alone only leans.
    bundle = tmp_path / "bundle"
    shutil.copytree(_OVERFLOW, bundle)
    lines = (bundle / "gdb_bt.txt").read_text(encoding="utf-8").splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith("#")]
    cut = lines[:frames[3]] + [line for line in lines[frames[-1] + 1:]]
    (bundle / "gdb_bt.txt").write_text("\n".join(cut) + "\n", encoding="utf-8")
    v = analyze(bundle).verdict
    assert v.cause == "unknown"
    assert "recursion" not in " ".join(v.trace)


def test_a_library_segfault_with_a_shallow_stack_is_not_read_as_recursion():
    v = analyze(FIXTURES / "lab/output/lab-library-segv/bundle").verdict
    assert not any("repeats" in t and "frames in a row" in t for t in v.trace)
    assert "recursion" not in v.summary
