"""glibc's stack protector (__stack_chk_fail, "*** stack smashing detected ***") and fortify checks
(__chk_fail past __memcpy_chk, "*** buffer overflow detected ***") abort the process in the
function whose own stack buffer was overrun: when that function is the job's own native code,
the abort is the job's code (app.native_frames), as for an assert() of its own.  Real gdb
backtraces: fixtures/lab/output/lab-stack-smash, made by fixtures/lab/stack_smash.sh (the
near miss: the same overrun inside a library installed under site-packages), and the lab crash
that motivated it, validation26 lab8-rank1-tsv-comment-stack-smashing-core."""
from __future__ import annotations

from pathlib import Path

from postmortem.classify.rules.app import _assert_caller
from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LAB = FIX / "lab/output/lab-stack-smash"
TSV = FIX / "validation26/lab-a/lab8-rank1-tsv-comment-stack-smashing-core/bundle"


def _aborted(a):
    return next(s for s in a.case.stacks if s.origin == "gdb")


def test_a_stack_smash_in_the_jobs_own_function_is_the_jobs_code():
    a = analyze(LAB / "own/bundle")
    assert (a.verdict.category.value, a.verdict.cause) == ("config", "app_error"), a.verdict.trace
    assert _assert_caller(_aborted(a)).function == "parse_field"
    assert "parse_field" in a.verdict.summary


def test_a_fortified_copy_overrun_names_the_caller_past_glibcs_checked_wrapper():
    a = analyze(LAB / "fortify/bundle")
    assert (a.verdict.category.value, a.verdict.cause) == ("config", "app_error"), a.verdict.trace
    # frame 7 is memcpy inlined from bits/string_fortified.h: skipped to copy_name
    assert _assert_caller(_aborted(a)).function == "copy_name"


def test_a_stack_smash_inside_an_installed_library_is_not_read_as_the_jobs_code():
    a = analyze(LAB / "library/bundle")
    assert _assert_caller(_aborted(a)) is None
    assert a.verdict.cause != "app_error", a.verdict.trace


def test_the_lab_rank_whose_tsv_parser_smashed_its_stack_is_the_root_not_its_peers_reset():
    # rank 1 aborted in tsv_parse (the job's ctypes helper, gdb on its core); rank 0's gloo
    # "Connection reset by peer" is the fallout
    a = analyze(TSV)
    v = a.verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert _assert_caller(_aborted(a), ("/work/blind8/lab-a/programs/",)).function == "tsv_parse"
