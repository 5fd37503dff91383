"""Audit 8 / audit 7 findings taken by h9-fix, each with the real input of its probe and a near
miss.  Real lines come from the fixtures named beside them (their SOURCE.md or make script says
how each was made); bundles are arranged at test time from those files."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

from tests.classify.arrange import FIXTURES, analyze_files as _bundle, read as _read


def _with(tmp_path: Path, case: Path, extra: dict[str, str]):
    files = {p.name: _read(p) for p in case.iterdir() if p.is_file()}
    return _bundle(tmp_path, {**files, **extra})


# ---------------------------------------------------------------- H7: lifetime cpu.stat counters

_SLOW_LINK = FIXTURES / "validation22/lab4-slow-link-allreduce/bundle"    # truth comms nccl_timeout (a shaper)
_CGROUP = FIXTURES / "cgroup_state"


def _throttle_signs(verdict) -> list[str]:
    return [t for t in verdict.trace if "cgroup.cpu_throttled_during_hang" in t or "throttled by its CPU limit" in t]


def test_a_lifetime_throttled_share_from_a_startup_burst_is_no_sign(tmp_path):
    # probe c2: the shaper case + a REAL cpu.stat (101 of 152 periods, all in a burst at start)
    a = _with(tmp_path, _SLOW_LINK, {"node1_container_cpu.txt": _read(_CGROUP / "burst_at_start/node1_container_cpu.txt")})
    assert a.verdict.cause != "straggler_timeout", a.verdict.trace
    assert not any("rests on" in t and "cgroup.cpu_throttled_during_hang" in t for t in a.verdict.trace), a.verdict.trace
    assert any("whole life" in t and "read cpu.stat twice" in t for t in a.verdict.trace), a.verdict.trace


def test_a_group_throttled_in_every_period_it_had_work_is_still_read():
    # near miss: the lab's container throttled in 1609 of 1609 periods -- throttled whenever it ran
    v = analyze(FIXTURES / "validation24/lab-a/lab6-node0-cpu-limit-10m-straggler/bundle").verdict
    assert v.cause == "straggler_timeout", v.trace
    assert any("1609 of 1609 periods" in t for t in v.trace), v.trace


def test_two_readings_date_the_throttling(tmp_path):
    # REAL (make_two_readings.sh): the periods between two readings all throttled -> a sign; the
    # lifetime share of the last reading alone (36 of 68, 32 unthrottled) would not say when
    a = _with(tmp_path / "a", _SLOW_LINK, {"cpu.txt": _read(_CGROUP / "cpu_two_readings_starved.txt")})
    assert any("31 of 31 periods between its first and last reading" in t for t in a.verdict.trace), a.verdict.trace
    # near miss (REAL): a high lifetime share (47 of 77) from a burst before the first reading,
    # 6 of 36 periods throttled between the readings -> no sign
    b = _with(tmp_path / "b", _SLOW_LINK, {"cpu.txt": _read(_CGROUP / "cpu_two_readings_burst_before.txt")})
    assert not _throttle_signs(b.verdict), b.verdict.trace
    assert b.verdict.cause != "straggler_timeout", b.verdict.trace
    assert any("6 of the 36 periods between the readings" in t for t in b.verdict.trace), b.verdict.trace


# ---------------------------------------------------------------- H10 (c): a DROP sends no answer

_FORWARD_DROP = FIXTURES / "validation24/lab-b/lab6-router-docker-forward-drop/bundle"   # real: FORWARD policy DROP 10
_REFUSED = FIXTURES / "validation22/lab4-hostname-loopback-gloo/bundle"   # real: gloo's connects refused (127.0.1.1)


def test_a_drop_does_not_explain_refused_connects(tmp_path):
    # the refused lab's real lines + the router lab's real `iptables -L -v -n` (FORWARD policy DROP):
    # a refusal is an answer (an RST), which a DROP never sends
    a = _with(tmp_path, _REFUSED, {"router_iptables.txt": _read(_FORWARD_DROP / "router_iptables.txt")})
    assert not any("firewall-discards: chain FORWARD policy DROP" in t for t in a.verdict.trace), a.verdict.trace
    assert any("a DROP sends no answer" in t for t in a.verdict.trace), a.verdict.trace


def test_a_drop_still_explains_connects_that_timed_out():
    # near miss: the router lab itself -- the same DROP beside c10d's client that timed out
    v = analyze(_FORWARD_DROP).verdict
    assert any("rests on 2 independent weak signs" in t and "net.firewall_discards" in t for t in v.trace), v.trace


def test_a_reject_still_explains_refused_connects():
    # near miss: a REJECT (tcp-reset) does send the RST the job's gloo connects report as refused
    v = analyze(FIXTURES / "validation23/lab-b/lab5-node0-connlimit-firewall/bundle").verdict
    assert any("firewall-discards: chain INPUT: REJECT matched 8" in t for t in v.trace), v.trace


# ---------------------------------------------------------------- H11 (b): a warning at init dates no failure

_OOM_LOOPBACK = FIXTURES / "launcher/oom_killed_peer_loopback"   # real: probe k1


def test_a_warning_printed_at_init_does_not_make_the_fallout_come_first(tmp_path):
    # probe k1: gloo's loopback warning 7.5 s before the OOM kill, then 25 steps ran
    a = _bundle(tmp_path, {p.name: _read(p) for p in _OOM_LOOPBACK.iterdir() if p.suffix in (".log", ".txt")})
    assert not any("is no fallout of host_oom: its first sign" in t for t in a.verdict.trace), a.verdict.trace
    assert any("nccl_network" in t and "is explained by host_oom" in t for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "host_oom", a.verdict.trace


def test_an_error_line_still_dates_its_cause():
    # near miss: only signs their own program prints below error are skipped -- gloo's 'Connection
    # closed by peer' (an error) and an exception still date the failure they are part of (the time
    # order of tests/classify/test_audit6.py's IndexError-before-Xid arrangement keeps working)
    from postmortem.classify import _warned_condition
    from postmortem.knowledge import load
    from postmortem.model import Finding
    k = load()
    warn = Finding("nccl_network", "comms", 0.3, "known-message", "", (), signal="msg.gloo_loopback_fallback")
    err = Finding("nccl_network", "comms", 0.3, "known-message", "", (), signal="msg.nccl_connection_closed")
    app = Finding("app_error", "config", 0.55, "app-error", "", (), signal="app.exception")
    assert _warned_condition(warn, k) and not _warned_condition(err, k) and not _warned_condition(app, k)


# ---------------------------------------------------------------- M1: EAGAIN under `ulimit -v`

_EAGAIN_V = FIXTURES / "system/eagain_ulimit_v"    # real: probe e6 (ulimit -v 200000, OMP_NUM_THREADS=64)
_PIDS_LAB = FIXTURES / "validation23/lab-c/lab5-container-pids-limit-omp-threads/bundle"


def test_a_thread_eagain_under_a_virtual_memory_limit_names_that_limit(tmp_path):
    a = _bundle(tmp_path, {"job.log": _read(_EAGAIN_V / "job.log")})
    assert a.verdict.cause == "unknown", a.verdict.trace
    assert any("memory-limit-set: ulimit -v 200000" in t and "thread-creation EAGAIN" in t for t in a.verdict.trace), \
        a.verdict.trace
    assert "leaning host_oom" in a.verdict.summary, a.verdict.summary


def test_the_same_eagain_without_a_virtual_memory_limit_stays_a_task_limit_lean(tmp_path):
    # near miss: the lab's real EAGAIN line beside this machine's real `ulimit -a` with -v unlimited
    eagain = next(l for l in _read(_PIDS_LAB / "launcher.log").splitlines(keepends=True) if "Thread creation failed" in l)
    a = _bundle(tmp_path, {"limits.txt": _read(_EAGAIN_V / "ulimit_a_unlimited.txt"), "launcher.log": eagain})
    assert not any("memory-limit-set" in t for t in a.verdict.trace), a.verdict.trace
    assert "leaning app_error" in a.verdict.summary, a.verdict.summary
    # and the lab (its own group's pids.events counted the refusals) still claims, naming both limits in its advice
    v = analyze(_PIDS_LAB).verdict
    assert v.cause == "app_error" and any("ulimit -v" in r for r in v.remediation), (v.cause, v.remediation)


# ---------------------------------------------------------------- M4 (tc): which device a qdisc is on

_LEARNING_OFF = FIXTURES / "validation24/lab-a/lab6-switch-port-learning-off-midrun/bundle"   # truth comms nccl_timeout
_TC = FIXTURES / "system/tc_show_dev"     # real: make.sh (a shaper that dropped, `tc -s qdisc show dev X`)


def _with_tc(tmp_path: Path, name: str):
    files = {p.name: _read(p) for p in _LEARNING_OFF.iterdir() if p.is_file() and p.name != "switch.txt"}
    return _bundle(tmp_path, {**files, "tc.txt": _read(_TC / name)})


def test_a_qdisc_on_a_host_only_device_named_by_its_command_line_is_not_the_path(tmp_path):
    # before: dev '' for every header of `tc -s qdisc show dev docker0`, so docker0's drops were the path's
    a = _with_tc(tmp_path, "with_command_docker0.txt")
    assert not any(t.startswith("path-discards: queueing discipline") for t in a.verdict.trace), a.verdict.trace


def test_a_qdisc_on_an_unnamed_device_is_not_read_as_the_path(tmp_path):
    a = _with_tc(tmp_path, "output_only.txt")
    assert not any(t.startswith("path-discards: queueing discipline tbf on") for t in a.verdict.trace), a.verdict.trace
    assert any("on a device the output does not name" in t for t in a.verdict.trace), a.verdict.trace


def test_the_same_qdisc_on_a_named_path_device_is_still_read(tmp_path):
    # near miss: the same real shaper, its command line naming va
    a = _with_tc(tmp_path, "with_command_va.txt")
    assert any(t.startswith("path-discards: queueing discipline tbf on va") for t in a.verdict.trace), a.verdict.trace


# ---------------------------------------------------------------- L3 / L2: whose code a frame is

_DNS = FIXTURES / "validation26/lab-b/lab8-node1-dns-search-domain-master-name/bundle"   # real: torchrun's own traceback
_APP = FIXTURES / "bundles/lab-torchrun-app-exception/bundle"                          # real: the job's own IndexError


def test_a_console_script_is_not_the_jobs_own_file():
    # torchrun's traceback starts in /work/torchvenv/bin/torchrun (pip's entry-point script):
    # its folder is no folder of the job's code
    from postmortem.classify.rules.app import _job_dirs, _own_frame
    case = analyze(_DNS).case
    frames = [f for s in case.stacks for f in s.frames if (f.file or "").endswith("/bin/torchrun")]
    assert frames and not any(_own_frame(f) for f in frames)
    assert not any(d.endswith("/bin/") for d in _job_dirs(case)), _job_dirs(case)


def test_the_jobs_own_script_is_still_its_own():
    # near miss: the lab script's own frame (train.py) keeps its folder as the job's
    from postmortem.classify.rules.app import _job_dirs
    case = analyze(_APP).case
    assert _job_dirs(case), [f.file for s in case.stacks for f in s.frames]
    assert analyze(_APP).verdict.cause == "app_error"


def test_native_modules_of_installed_software_inside_a_job_folder_are_libraries():
    # audit 8 L2's module names (gdb's `from <module>`): a bare soname found on the linker's path,
    # a conda env and triton's cache kept inside the job's folder
    from postmortem.classify.rules.app import _own_module
    home = ("/home/u/proj/",)
    assert not _own_module("libcupti.so.12", ())
    assert not _own_module("/home/u/proj/miniconda3/lib/libcrypto.so.3", home)
    assert not _own_module("/home/u/proj/.triton/cache/3f2a/matmul_kernel.so", home)
    # near miss: what the job built stays its own -- under its folder, or relative to its working directory
    assert _own_module("/home/u/proj/build/lensort.so", home) and _own_module("build/lensort.so", ())
    assert _own_module("/opt/app/build/ext.so", ("/opt/app/",))


# ---------------------------------------------------------------- audit 7 M6: dumps of subgroup members

_SUBGROUP = FIXTURES / "flightrec/subgroup_partition/bundle"   # real: probe p8 (PG1 = [2, 3] partitioned)


def test_dumps_of_subgroup_members_are_one_job_and_not_called_behind():
    v = analyze(_SUBGROUP).verdict
    assert not any("another job" in t for t in v.trace), v.trace
    assert any("rank(s) 2-3 did not enter #2 because they wait in process group 1's #1" in t for t in v.trace), v.trace
    assert v.cause != "straggler_timeout" and not any("behind, alive" in t for t in v.trace), v.trace


def test_a_dump_of_another_job_is_still_left_out_and_a_rank_behind_still_behind(tmp_path):
    # near miss: the straggler lab's four dumps + a 2-rank job's dump (the same default group with
    # other ranks) -- the other job's dump is left out, rank 2 (in no other stuck group) stays behind
    import shutil
    from postmortem import collectives
    from postmortem.parsers import flightrec
    straggler = FIXTURES / "bundles/lab-flightrec-straggler/bundle/flightrec"
    for f in straggler.iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "other").mkdir()
    shutil.copy(FIXTURES / "lab/output/lab-flightrec-formats/bundle/nccl_trace_rank_0", tmp_path / "other/nccl_trace_rank_0")
    m = collectives.match([flightrec.read(p.read_bytes(), p.name) for p in sorted(tmp_path.rglob("*")) if p.is_file()])
    assert any("another job" in n for n in m.notes), m.notes
    assert [b.rank for b in m.groups[0].behind] == [2]
