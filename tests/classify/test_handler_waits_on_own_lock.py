"""A signal handler of the job's that calls malloc (not async-signal-safe, signal-safety(7)) while the
code it interrupted -- fork, which holds every arena's lock (glibc posix/fork.c
__malloc_fork_lock_parent), or the allocator -- holds the allocator's lock: the handler waits for its
own thread forever.  Real gdb backtraces: fixtures/lab/output/lab-handler-malloc, made by
fixtures/lab/handler_malloc.sh (near miss: the same handler inside a library under site-packages),
and the lab hang that motivated it (validation30 lab12 reader watchdog SIGALRM handler)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LAB = FIX / "lab/output/lab-handler-malloc"
READER = FIX / "validation30/lab-c/lab12-node1-reader-watchdog-sigalrm-handler-mallocs-deadlock-hang-gdb/bundle"


def test_the_jobs_handler_waiting_on_the_lock_its_interrupted_fork_holds_is_the_jobs_code():
    v = analyze(LAB / "own/bundle").verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert "on_tick" in v.summary and "arch_fork" in v.summary, v.summary


def test_the_same_handler_inside_an_installed_library_is_not_read_as_the_jobs_code():
    v = analyze(LAB / "library/bundle").verdict
    assert v.cause != "app_error", v.trace
    assert any("vendor_tick is no code of the job's" in t for t in v.trace), v.trace


def test_the_lab_rank_whose_sigalrm_handler_malloced_during_the_loaders_fork():
    v = analyze(READER).verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert "on_alarm" in v.summary and "tok.c:57" in v.summary, v.summary
