"""libstdc++'s std::terminate (libsupc++ eh_throw.cc __cxa_throw calls it when no handler catches the
exception; bits/std_thread.h ~thread calls it for a joinable thread) aborts the process in the
function that threw or destroyed the thread: when that function is the job's own native code, the
abort is the job's code (app.native_frames), as for an assert() of its own.  Real gdb backtraces:
fixtures/lab/output/lab-cxx-terminate, made by fixtures/lab/cxx_terminate.sh (the near miss: the
same uncaught throw inside a library installed under site-packages), and the two lab crashes that
motivated it (validation30 lab12 span packer, validation31 lab13 read-ahead thread)."""
from __future__ import annotations

from pathlib import Path

from postmortem.classify.rules.app import _assert_caller
from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LAB = FIX / "lab/output/lab-cxx-terminate"
PACKER = FIX / "validation30/lab-c/lab12-node1-empty-review-span-packer-cpp-length-error-abort-core/bundle"
READAHEAD = FIX / "validation31/lab-d/lab13-native-readahead-std-thread-not-joined-on-short-shard-terminate-abort-core/bundle"


def _aborted(a):
    return next(s for s in a.case.stacks if s.origin == "gdb")


def test_an_uncaught_throw_names_the_jobs_function_past_the_cxx_librarys_frames():
    a = analyze(LAB / "throw/bundle")
    assert (a.verdict.category.value, a.verdict.cause) == ("config", "app_error"), a.verdict.trace
    # frames 8-10 are libstdc++'s __throw_length_error and std::vector inlined from stl_vector.h
    assert _assert_caller(_aborted(a)).function == "pack_spans"


def test_a_joinable_thread_destroyed_names_the_function_that_owned_it():
    a = analyze(LAB / "thread/bundle")
    assert (a.verdict.category.value, a.verdict.cause) == ("config", "app_error"), a.verdict.trace
    assert _assert_caller(_aborted(a)).function == "read_ahead"


def test_an_uncaught_throw_inside_an_installed_library_is_not_read_as_the_jobs_code():
    a = analyze(LAB / "library/bundle")
    assert _assert_caller(_aborted(a)) is None
    assert a.verdict.cause != "app_error", a.verdict.trace


def test_the_lab_ranks_whose_ctypes_helpers_terminated_are_the_root_not_their_peers_reset():
    for bundle, function in ((PACKER, "pack_spans"), (READAHEAD, "ra_read")):
        a = analyze(bundle)
        v = a.verdict
        assert (v.category.value, v.cause) == ("config", "app_error"), (bundle.parent.name, v.trace)
        assert function in v.summary, v.summary
