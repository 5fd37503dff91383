"""Round-12 audit findings H2, H3, H4, H5, M3 (rules/held.py, rules/hang.py OwnWatchdogDump).  REAL
bundles: fixtures/lab/audit12/<probe> (the auditor's make.sh, torchrun, gloo, torch 2.13 CPU, ps, py-spy,
gdb; README.md there says what each run did)."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
LAB = ROOT / "lab" / "audit12"
HELD = {"procs.pipe_wait_cycle", "procs.write_on_frozen_fs", "procs.rank_stopped", "stacks.lock_held_by_no_thread"}


def _verdict(bundle: Path):
    return analyze(bundle).verdict


def _signs(v) -> set[str]:
    out = set()
    for f in ([v.root] if v.root else []) + list(v.alternatives) + list(v.symptoms):
        out.add(f.signal)
        out.update(f.signs)
    return out


def test_h2_a_watchdog_dump_in_a_network_wait_names_no_straggler():
    # rank 0's dump: socket.create_connection <- http/client <- urllib <- fetch_shard_list, while the data
    # service's packets are dropped; rank 1 waits in broadcast.  The rank waited for a reply: not its own work
    v = _verdict(LAB / "watchdog-netfault" / "bundle")
    assert v.cause == "unknown" and "stacks.own_watchdog_in_own_work" not in _signs(v), v.trace
    assert any("own-watchdog" in t and "waiting for a network reply" in t for t in v.trace), v.trace


def test_h2_a_watchdog_dump_waiting_on_another_thread_names_no_straggler(tmp_path):
    # the same dump with rank 0's innermost frames a threading wait (Event.wait <- Condition.wait)
    b = tmp_path / "b"
    shutil.copytree(LAB / "watchdog-netfault" / "bundle", b)
    log = b / "torchrun.log"
    text = log.read_text()
    socket_line = next(l for l in text.splitlines(True) if "socket.py" in l and "create_connection" in l)
    log.write_text(text.replace(socket_line, socket_line.replace("socket.py\", line 836 in create_connection",
                                                                 "threading.py\", line 331 in wait")))
    shutil.rmtree(b / "torchrun_logs")
    v = _verdict(b)
    assert "stacks.own_watchdog_in_own_work" not in _signs(v), v.trace
    assert any("waiting for another thread" in t for t in v.trace), v.trace


def test_h3_a_pipe_writer_whose_sibling_may_read_it_is_no_cycle(tmp_path):
    # HEALTHY: producer | uploader, the producer full-piped, its sibling (same PPID) reading
    v = _verdict(LAB / "pipeline" / "bundle")
    assert v.cause == "unknown" and not _signs(v) & HELD, v.trace
    assert any("has another child" in t for t in v.trace), v.trace
    # without the sibling's row the rank's wait and the writer's pipe_write read as the cycle: the row decides
    b = tmp_path / "b"
    shutil.copytree(LAB / "pipeline" / "bundle", b)
    ps = b / "ps.txt"
    ps.write_text("".join(l for l in ps.read_text().splitlines(True) if "sys.stdin.buffer.read" not in l))
    assert _verdict(b).root.signal == "procs.pipe_wait_cycle"


def test_h4_a_process_shared_mutex_is_no_self_deadlock(tmp_path):
    # HEALTHY contention: a pshared mutex in /dev/shm held by the node's cache daemon (another process)
    v = _verdict(LAB / "shared-cache" / "bundle")
    assert v.cause != "app_error" and "stacks.lock_held_by_no_thread" not in _signs(v), v.trace
    assert any("process-shared (private=128)" in t for t in v.trace), v.trace
    # the same backtraces with glibc's process-private flag: the mutex is the process's own, no thread holds it
    b = tmp_path / "b"
    shutil.copytree(LAB / "shared-cache" / "bundle", b)
    for f in b.glob("gdb_pid*.txt"):
        f.write_text(f.read_text().replace("private=128", "private=0"))
    v = _verdict(b)
    assert v.root is not None and v.root.signal == "stacks.lock_held_by_no_thread", v.trace


def test_h5_a_job_stopped_as_a_whole_names_no_rank(tmp_path):
    # every worker (and the agent) T in do_signal_stop: a suspend, nobody waits for anybody
    v = _verdict(LAB / "job-suspended" / "bundle")
    assert v.cause == "unknown" and "procs.rank_stopped" not in _signs(v), v.trace
    assert any("the whole job was stopped" in t for t in v.trace), v.trace
    # one worker running (its row S in a futex wait): the stopped one held it
    b = tmp_path / "b"
    shutil.copytree(LAB / "job-suspended" / "bundle", b)
    ps = b / "ps.txt"
    rows = ps.read_text().splitlines(True)
    rows[-1] = rows[-1].replace("Tsl  do_signal_stop", "Ssl  futex_do_wait ")
    ps.write_text("".join(rows))
    v = _verdict(b)
    assert v.root is not None and v.root.signal == "procs.rank_stopped", v.trace


def test_m3_a_progress_bars_monitor_thread_reads_no_pipe():
    # REAL deadlock under a tqdm bar: the monitor thread (threading.py Condition.wait, tqdm/_monitor.py) is
    # no reader, the job's own files are probe_pid.py
    v = _verdict(LAB / "pipe-deadlock-tqdm" / "bundle")
    assert v.cause == "straggler_timeout" and v.root.signal == "procs.pipe_wait_cycle", v.trace


def test_m3_a_thread_in_the_jobs_own_file_may_drain_the_pipe():
    # HEALTHY: a thread of rank 0 in the job's own forward (probe_held.py, the script's own file) reads the pipe
    v = _verdict(LAB / "drain-thread" / "bundle")
    assert "procs.pipe_wait_cycle" not in _signs(v), v.trace
    assert any("another thread of the parent reads" in t for t in v.trace), v.trace
