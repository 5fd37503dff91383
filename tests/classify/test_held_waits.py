"""A worker held in a wait that cannot end by itself, read from the state the kernel and the C library
print (rules/held.py) -- a hang named without a timeout, a measured silence or a second dump.  REAL
bundles: fixtures/lab/held_waits/make.sh (torchrun, gloo, torch 2.13 CPU, ps, py-spy, gdb), each hang
beside the healthy state that looks like it in one dump."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
LAB = ROOT / "lab" / "held_waits" / "output"
HELD = ("procs.pipe_wait_cycle", "procs.write_on_frozen_fs", "stacks.lock_held_by_no_thread")


def _verdict(bundle: Path):
    return analyze(bundle).verdict


def _signs(v) -> set[str]:
    out = set()
    for f in ([v.root] if v.root else []) + list(v.alternatives) + list(v.symptoms):
        out.add(f.signal)
        out.update(f.signs)
    return out


def test_a_rank_waiting_for_a_child_that_writes_a_full_pipe_is_the_straggler():
    v = _verdict(LAB / "pipe-deadlock-1")
    assert v.cause == "straggler_timeout" and v.root.signal == "procs.pipe_wait_cycle", v.trace
    assert "anon_pipe_write" in v.root.summary and "Popen._try_wait" in v.root.summary
    assert any(r.path == "ps.txt" for r in v.root.evidence)


def test_a_rank_waiting_for_a_child_that_works_is_no_hang():
    # 15 s into a 40 s evaluation in a child: the child runs (R), rank 0 reads its pipes
    # (subprocess.run(capture_output=True) -> communicate), rank 1 waits in a barrier (audit 11 H4)
    for name in ("child-eval-1", "child-slow-pipe-1"):
        v = _verdict(LAB / name)
        assert v.cause == "unknown" and not _signs(v) & set(HELD), (name, v.trace)


def test_a_child_writing_a_pipe_another_thread_of_the_rank_drains_is_no_cycle():
    # the child blocks writing (anon_pipe_write), the main thread waits in Popen.wait() (do_wait) -- the
    # deadlock's own shape -- but a thread of the rank's own code reads the pipe between sleeps
    v = _verdict(LAB / "child-pipe-reader-1")
    assert v.cause == "unknown" and "procs.pipe_wait_cycle" not in _signs(v), v.trace
    assert any("another thread of the parent reads" in t for t in v.trace), v.trace


def test_the_parents_wait_is_read_from_its_dump(tmp_path):
    # without the py-spy dumps, the parent's do_wait does not say the pipe is its own (a child of
    # subprocess.call() writes the parent's inherited stdout, read by a tee or a log collector)
    b = tmp_path / "b"
    shutil.copytree(LAB / "pipe-deadlock-1", b)
    for f in b.glob("py-spy_pid*.txt"):
        f.unlink()
    v = _verdict(b)
    assert "procs.pipe_wait_cycle" not in _signs(v), v.trace
    assert any("no Python dump of its parent" in t for t in v.trace), v.trace
    # a child writing a pipe whose parent reads it (its dump in communicate) is no cycle
    c = tmp_path / "c"
    shutil.copytree(LAB / "child-slow-pipe-1", c)
    ps = c / "ps.txt"
    ps.write_text(ps.read_text().replace("hrtimer_nanosleep                      00:15",
                                         "anon_pipe_write                        00:15"))
    assert _verdict(c).cause == "unknown"


def test_a_rank_writing_to_a_frozen_filesystem_is_the_straggler():
    v = _verdict(LAB / "frozen-save-1")
    assert v.cause == "straggler_timeout" and v.root.signal == "procs.write_on_frozen_fs", v.trace
    assert "percpu_rwsem_wait" in v.root.summary and "serialization.py" in v.root.summary


def test_a_frozen_filesystem_the_job_does_not_write_to_is_nothing():
    v = _verdict(LAB / "frozen-idle-1")
    assert v.cause == "unknown" and not _signs(v) & set(HELD), v.trace


def test_a_lock_no_thread_can_release_is_the_jobs_own_code():
    v = _verdict(LAB / "lock-left-held-1")
    assert v.cause == "app_error" and v.root.signal == "stacks.lock_held_by_no_thread", v.trace
    assert "filter_add" in v.root.summary


def test_a_lock_held_by_another_thread_inside_the_library_is_contention():
    v = _verdict(LAB / "lock-busy-1")
    assert "stacks.lock_held_by_no_thread" not in _signs(v), v.trace
    assert any("is in that code" in t for t in v.trace), v.trace


def test_development_cases():
    dev = {"validation23/lab-a/lab5-scorer-pipe-deadlock-hang": ("straggler_timeout", "procs.pipe_wait_cycle"),
           "validation29/lab-a/lab11-ckpt-volume-left-frozen-by-snapshot-hook-rank0-save-hang":
               ("straggler_timeout", "procs.write_on_frozen_fs"),
           "validation27/lab-c/lab9-rank1-native-dedup-ext-returns-with-mutex-held-hang":
               ("app_error", "stacks.lock_held_by_no_thread")}
    for case, (cause, sign) in dev.items():
        v = _verdict(ROOT / case / "bundle")
        assert (v.cause, v.root.signal if v.root else None) == (cause, sign), (case, v.trace)


def test_a_rank_stopped_by_a_signal_held_the_job():
    v = _verdict(LAB / "stopped-1")
    assert v.cause == "straggler_timeout" and v.root.signal == "procs.rank_stopped", v.trace
    assert "do_signal_stop" in v.root.summary


def test_a_child_the_rank_waits_for_stopped_by_a_signal_held_it(tmp_path):
    # the pipe-deadlock bundle with its child's row read as stopped (T, do_signal_stop): the rank in
    # subprocess's wait for a stopped child is held the same way
    b = tmp_path / "b"
    shutil.copytree(LAB / "pipe-deadlock-1", b)
    ps = b / "ps.txt"
    ps.write_text(ps.read_text().replace(" S    anon_pipe_write      ", " T    do_signal_stop       "))
    v = _verdict(b)
    assert v.cause == "straggler_timeout" and v.root.signal == "procs.rank_stopped", v.trace
    assert "waited for its child" in v.root.summary


def test_a_rank_held_by_a_tracer_only_leans():
    # py-spy and gdb of the collection itself stop a rank while they read it: a t alone is no claim
    v = _verdict(LAB / "traced-1")
    assert v.cause == "unknown" and "procs.rank_traced" in _signs(v), v.trace


def test_healthy_runs_show_no_stopped_rank():
    for name in ("child-eval-1", "child-slow-pipe-1", "frozen-idle-1", "lock-busy-1"):
        assert not _signs(_verdict(LAB / name)) & {"procs.rank_stopped", "procs.rank_traced"}, name


def test_a_rank_fetching_from_a_stopped_dataloader_worker_is_held(tmp_path):
    v = _verdict(LAB / "loader-stopped-1")
    assert v.cause == "straggler_timeout" and v.root.signal == "procs.rank_stopped", v.trace
    assert "waited for its child" in v.root.summary
    # without the rank's dump nothing says it waits for that child (its own wait is a socket read)
    b = tmp_path / "b"
    shutil.copytree(LAB / "loader-stopped-1", b)
    parent = next(f for f in b.glob("py-spy_pid*.txt") if "_try_get_data" in f.read_text())
    parent.unlink()
    assert "procs.rank_stopped" not in _signs(_verdict(b))
