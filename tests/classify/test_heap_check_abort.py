"""glibc's heap checks abort the process (malloc/malloc.c malloc_printerr -> __libc_message ->
abort) inside the allocator call whose pointer failed them: when the frame that made that call
is the job's own native code, the abort is the job's code (app.native_frames), as for an
assert() of its own.  Real gdb backtraces: fixtures/lab/output/lab-heap-abort, made by
fixtures/lab/heap_abort.sh (a double free in the program's own function; a FILE closed twice,
so glibc's fclose frees its own buffer twice: the near miss)."""
from __future__ import annotations

from pathlib import Path

from postmortem.classify.rules.app import _assert_caller
from postmortem.run import analyze

LAB = Path(__file__).resolve().parents[2] / "fixtures/lab/output/lab-heap-abort"


def test_a_double_free_in_the_jobs_own_function_is_the_jobs_code():
    a = analyze(LAB / "own/bundle")
    v = a.verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert v.confidence >= 0.6 and "pack_rows" in v.summary
    crashed = next(s for s in a.case.stacks if any(f.function == "malloc_printerr" for f in s.frames))
    assert _assert_caller(crashed).function == "pack_rows"


def test_a_double_free_inside_the_c_library_is_not_read_as_the_jobs_code():
    a = analyze(LAB / "libc/bundle")
    assert a.verdict.cause != "app_error", a.verdict.trace
    crashed = next(s for s in a.case.stacks if any(f.function == "malloc_printerr" for f in s.frames))
    assert _assert_caller(crashed) is None


def test_a_corrupted_heap_found_inside_malloc_does_not_blame_its_caller():
    # audit 7 M10: fill_rows() wrote past its buffer; read_header()'s malloc found the top chunk's
    # size corrupted ("malloc(): corrupted top size") -- read_header is the victim, not the culprit
    a = analyze(LAB / "malloc/bundle")
    crashed = next(s for s in a.case.stacks if any(f.function == "malloc_printerr" for f in s.frames))
    assert _assert_caller(crashed) is None
    v = a.verdict
    assert v.cause == "unknown" and "leaning app_error" in v.summary, v.trace
    assert "read_header" not in v.summary
