"""Audit 7 items taken by the h8 fixer (H6 remainder, MEDIUM and LOW items), each with the real
lines that were over-claimed and a near miss.  Bundles are arranged at test time from real files
of fixtures/ (each test says which); no line here is written by hand unless marked."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

from tests.classify.arrange import FIXTURES, ROOT, analyze_files as _bundle, read as _read  # noqa: F401


def _line(path: Path, needle: str) -> str:
    return next(l for l in _read(path).splitlines(keepends=True) if needle in l)


# ---------------------------------------------------------------- H6: a kill of another process

_ROCE = FIXTURES / "validation20/roce-mtu-mismatch-two-servers-nccl-2-20-lav-34/bundle/nccl.log"   # NVIDIA/nccl#1524
# an LKML report's memcg OOM kill of a process named "leaker" (pid 23793): not a process of the job above
_LEAKER_KILL = _line(FIXTURES / "kernel/oom_memcg_lkml.txt", "Killed process 23793")


def test_an_oom_kill_of_another_process_does_not_absorb_a_roce_failure(tmp_path):
    # arranged (audit 7 probe p11b): the RoCE MTU-mismatch log beside one real memcg kill line
    a = _bundle(tmp_path, {"nccl.log": _read(_ROCE), "dmesg.txt": _LEAKER_KILL})
    assert a.verdict.category.value == "comms" and a.verdict.cause == "nccl_network", (a.verdict.cause,
                                                                                       a.verdict.trace)
    assert any("nccl_network is no fallout of host_oom" in t for t in a.verdict.trace)
    assert not any("is explained by host_oom" in t for t in a.verdict.trace)


def test_the_kill_line_alone_still_claims_host_oom(tmp_path):
    # near miss: with nothing else failing, the kill is the bundle's only story
    a = _bundle(tmp_path, {"dmesg.txt": _LEAKER_KILL})
    assert a.verdict.cause == "host_oom"


# ---------------------------------------------------------------- M14: one refused fork, read once

_PIDS_LAB = FIXTURES / "validation23/lab-c/lab5-container-pids-limit-omp-threads/bundle"
# a real kernel line of ANOTHER lab job's pids group (/pm4job), not the group of the run above (/pm5c-job2)
_OTHER_GROUP = _line(FIXTURES / "validation22/extra/lab4-pids-limit-loader-workers/bundle/dmesg.txt",
                     "fork rejected by pids controller")


def test_another_groups_pids_refusal_is_no_second_sign_of_the_jobs_eagain(tmp_path):
    # arranged (audit 7 probe p14): the lab job's libgomp EAGAIN beside another group's kernel line
    a = _bundle(tmp_path, {"launcher.log": _read(_PIDS_LAB / "launcher.log"), "dmesg.txt": _OTHER_GROUP})
    assert a.verdict.cause == "unknown", (a.verdict.cause, a.verdict.trace)
    assert any("names pids group /pm4job, not shown to be the job's" in t for t in a.verdict.trace)
    assert not any("independent weak signs" in t for t in a.verdict.trace)


def test_the_kernel_line_of_the_jobs_own_group_names_the_limit(tmp_path):
    # near miss: the same EAGAIN beside the kernel line of the job's own group, which the bundle's
    # pids.max file (the lab's, without its pids.events count) names
    pids_max = "".join(_read(_PIDS_LAB / "container_pids_cgroup.txt").splitlines(keepends=True)[:2])
    a = _bundle(tmp_path, {"launcher.log": _read(_PIDS_LAB / "launcher.log"), "pids.txt": pids_max,
                           "dmesg.txt": _read(_PIDS_LAB / "dmesg.txt")})
    assert a.verdict.cause == "app_error", a.verdict.trace
    assert any("2 independent weak signs: msg.task_create_eagain, limits.pids_refused" in t for t in a.verdict.trace)
    assert any("(the job's pids group)" in t for t in a.verdict.trace)


def test_the_pids_group_is_read_from_the_files_path(tmp_path):
    a = analyze(_PIDS_LAB)
    assert {f.value for f in a.case.facts if f.name == "cgroup.pids_group"} == {"/pm5c-job2"}


# ---------------------------------------------------------------- M2: a refused connection is nobody listening

from postmortem.knowledge import catalog as C  # noqa: E402

# stas00/ml-engineering (debug chapter, the Jean Zay / BigScience notes), verbatim: NCCL <= 2.11
# include/socket.h after its refused retries; their diagnosis was a node whose process was not listening
_REFUSED = "r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> failed : Connection refused\n"
# NVIDIA/nccl-tests#166, verbatim (NCCL 2.18): a connect that failed with another errno
_ABORTED = ("ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : "
            "Software caused connection abort\n")


def test_a_refused_nccl_connect_only_leans_to_the_network(tmp_path):
    m = C.match_nccl(_REFUSED)
    assert m and m.cause == "nccl_network" and m.strength == "subsystem"
    a = _bundle(tmp_path, {"nccl.log": _REFUSED})
    assert a.verdict.cause == "unknown" and "leaning nccl_network" in a.verdict.summary, a.verdict.trace


def test_nccl_s_refused_retries_running_out_is_weak_too():
    # misc/socket.cc (2.18+) retries ECONNREFUSED/ETIMEDOUT, then "exceeded retries" (nccl#1515's maintainer)
    for fmt in ("socketPollConnect: exceeded retries (%d)", "socketStartConnect: exceeded retries (%d)"):
        (e,) = [e for e in C._catalog("nccl")[1] if e.name == fmt]
        assert e.cause == "nccl_network" and e.strength == "subsystem", fmt


def test_a_connect_failing_with_another_errno_still_reads_the_network(tmp_path):
    # near misses: another errno keeps its specific reading; a missing interface keeps its claim
    m = C.match_nccl(_ABORTED)
    assert m and m.cause == "nccl_network" and m.strength == "specific"
    a = analyze(FIXTURES / "validation2/sock-ifname-eth0-missing-04/bundle")
    assert a.verdict.cause == "nccl_network"


# ---------------------------------------------------------------- M8: an ordinal a lost GPU made invalid

# open-mmlab/mmdetection#11801, verbatim ("It changes directly from 4gpu to 3gpu")
_INVALID_ORDINAL = ("RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported "
                    "at some other API call,so the stacktrace below might be incorrect.\n"
                    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n")
_XID79 = _line(FIXTURES / "xid/xid_public.txt", "79, pid=0, GPU has fallen off the bus")


def test_a_gpu_that_fell_off_the_bus_explains_an_invalid_ordinal(tmp_path):
    a = _bundle(tmp_path, {"train.log": _INVALID_ORDINAL, "dmesg.txt": _XID79})
    assert a.verdict.cause == "gpu_fell_off_bus", a.verdict.trace
    assert any("device_mapping (0.60) is explained by gpu_fell_off_bus" in t for t in a.verdict.trace)
    assert "device_mapping" not in {f.cause for f in a.verdict.alternatives}


def test_an_invalid_ordinal_alone_stays_the_device_mapping(tmp_path):
    # near miss: nothing in the bundle says a GPU was lost (nproc > visible GPUs is the usual story)
    a = _bundle(tmp_path, {"train.log": _INVALID_ORDINAL})
    assert a.verdict.cause == "device_mapping"


# ---------------------------------------------------------------- M3: NCCL's checks of its own state

def _nccl_entries(fmt: str, file: str):
    found = [e for e in C._catalog("nccl")[1] if e.name == fmt and file in e.files]
    assert found, fmt
    return found


def test_nccls_internal_state_checks_are_no_application_misuse():
    # formats of NCCL's own source (tools/catalogs/gen_nccl.py scan): the words of an argument check in
    # files that check NCCL's own state or the topology
    for fmt, file in (("Error: trying to connect already connected sendComm", "transport/net_ib.cc"),
                      ("Storing response for already completed opId=%p", "proxy.cc"),
                      ("ncclTopoFillNet: parent is NULL even after fallback for %s", "graph/xml.cc"),
                      ("Internal error : tree already has %d children (%d %d %d)", "graph/connect.cc"),
                      ("Object pointer is NULL", "misc/utils.cc"),
                      ("Invalid %s %d (must be a multiple of %d)", "graph/tuning.cc")):
        for e in _nccl_entries(fmt, file):
            assert e.cause != "app_error" and e.strength != "specific", (fmt, e.cause, e.strength)


def test_the_api_files_argument_checks_stay_the_applications():
    # near misses: the same words in the files that check the application's arguments and settings
    for fmt, file in (("ncclRedOpDestroy : invalid communicator passed.", "enqueue.cc"),
                      ("Invalid config blocking attribute value %d", "init.cc"),
                      ("Bootstrap Root : rank %d of %d ranks has already checked in", "bootstrap.cc")):
        for e in _nccl_entries(fmt, file):
            assert e.cause == "app_error" and e.strength == "specific", (fmt, e.cause, e.strength)


# ---------------------------------------------------------------- M7: one class of corrupt-code errors, one strength

# JuliaGPU/CuArrays.jl README ("Current Limitations"), verbatim
_INVALID_PC = "ERROR: CUDA error: invalid program counter (code #718, ERROR_INVALID_PC)\n"


def test_an_invalid_program_counter_or_stack_error_only_leans_to_the_jobs_code(tmp_path):
    for text in ("invalid program counter", "hardware stack error", "an illegal instruction was encountered"):
        e = C.cuda_error(text)
        assert e is not None and e.cause == "app_error" and e.strength == "subsystem", (text, e)
    a = _bundle(tmp_path, {"julia.log": _INVALID_PC})
    assert a.verdict.cause == "unknown" and "leaning app_error" in a.verdict.summary, a.verdict.trace


def test_a_device_side_assert_stays_the_jobs_code():
    # near miss: an assert in the job's kernels names the job's own check
    e = C.cuda_error("device-side assert triggered")
    assert e.cause == "app_error" and e.strength == "specific"


# ---------------------------------------------------------------- M5: no NVSwitch, no Fabric Manager failure

_NOT_READY = FIXTURES / "validation6/fabricmanager-not-started-nccltests264-03/bundle/nccl_tests.log"   # nccl-tests#264
_PCIE_SMI = FIXTURES / "system/public/smi_table_450_v100s.txt"     # a public nvidia-smi table of a V100S PCIe host


def test_system_not_ready_on_pcie_gpus_is_no_fabric_manager_claim(tmp_path):
    # arranged: the 802 line of an NVSwitch host beside a PCIe host's nvidia-smi table
    a = _bundle(tmp_path, {"nccl_tests.log": _read(_NOT_READY), "nvidia-smi.txt": _read(_PCIE_SMI)})
    assert a.verdict.cause == "unknown", (a.verdict.cause, a.verdict.trace)
    assert any("never on an NVSwitch baseboard" in t for t in a.verdict.trace)


def test_system_not_ready_on_an_hgx_board_stays_fabric_manager(tmp_path):
    # near misses: the line alone (nccl-tests#264) and beside SXM GPUs' table keeps its reading
    sxm = _read(FIXTURES / "system/public/smi_table_580_a100.txt")
    for files in ({"nccl_tests.log": _read(_NOT_READY)}, {"nccl_tests.log": _read(_NOT_READY), "nvidia-smi.txt": sxm}):
        a = _bundle(tmp_path / str(len(files)), files)
        assert a.verdict.cause == "nvls_fabric", a.verdict.trace


# ---------------------------------------------------------------- M13: an impossible size is no exhausted host

_ALLOC = FIXTURES / "pytrace/alloc_impossible_size/train.log"     # real run: torch asked for 10**13 bytes
_HOST = FIXTURES / "bundles/lab-torchrun-app-exception/bundle"     # a 24 GiB host, 80% available, no OOM kill


def test_torchs_cpu_allocator_enomem_with_memory_free_is_not_host_oom(tmp_path):
    a = _bundle(tmp_path, {"train.log": _read(_ALLOC), "meminfo.txt": _read(_HOST / "meminfo.txt"),
                           "dmesg.txt": _read(_HOST / "dmesg.txt")})
    assert a.verdict.cause != "host_oom", a.verdict.trace
    assert any("the host had memory to give" in t for t in a.verdict.trace)


def test_torchs_cpu_allocator_enomem_under_ulimit_v_stays_host_oom():
    # near miss: a real lab run under `ulimit -v` (a limit measured: the counter does not speak)
    a = analyze(FIXTURES / "validation21/extra/lab3-ulimit-v-eval-gather/bundle")
    assert a.verdict.cause == "host_oom"


# ---------------------------------------------------------------- M9: fork's ENOMEM with memory free

_FORK_ENOMEM = FIXTURES / "pytrace/fork_enomem_pidns/train.log"   # real run: a pid namespace without init


def test_a_fork_enomem_with_memory_free_is_no_host_oom_claim(tmp_path):
    a = _bundle(tmp_path, {"train.log": _read(_FORK_ENOMEM), "meminfo.txt": _read(_HOST / "meminfo.txt"),
                           "dmesg.txt": _read(_HOST / "dmesg.txt")})
    assert a.verdict.cause == "unknown", (a.verdict.cause, a.verdict.trace)
    assert any("a commit limit or the pid namespace refused it" in t for t in a.verdict.trace)


def test_a_fork_enomem_without_a_memory_measurement_keeps_its_reading(tmp_path):
    # near miss: nothing measured says the host had memory to give; the line and its fork reading count once
    a = _bundle(tmp_path, {"train.log": _read(_FORK_ENOMEM)})
    assert a.verdict.cause == "host_oom", a.verdict.trace
    assert a.verdict.confidence == 0.6


# ---------------------------------------------------------------- L2: a bridge over the real NIC is no host-only interface

def test_bridges_over_a_real_nic_are_not_host_only():
    from postmortem.classify.rules.comms import host_only_interface
    local = host_only_interface()
    # OpenStack (br-ex), Proxmox/Debian bridges over a NIC or bond: other hosts reach their addresses
    for name in ("br-ex", "br-eth0", "br-data", "br-bond0", "br-ctlplane"):
        assert not local.match(name), name
    # near miss: Docker user bridges, br-<12 hex> (names seen in this project's fixtures)
    for name in ("br-05ab815fa14e", "br-364ef9f0bffe", "docker0", "veth6163fba"):
        assert local.match(name), name


# ---------------------------------------------------------------- L8: a pid alone pairs no deaths

def test_a_reused_pid_in_the_kernel_log_does_not_set_the_boot_time(tmp_path):
    # arranged (marked, deliberately hostile): the two-host timeline fixture without its boot times,
    # and in node-b's kernel log one real memcg OOM kill line (an LKML report's) whose pid and time are
    # edited to an early-boot kill of pid 1139 -- the pid node-a's launcher reports dying with exit
    # code 1, a different death.  Only node-b's own segfault/launcher pair may set its boot time.
    import json
    import shutil
    two_host = FIXTURES / "timeline/two-host"
    times = json.loads((FIXTURES / "timeline/two-host.times.json").read_text(encoding="utf-8"))
    bundle = tmp_path / "b"
    shutil.copytree(two_host, bundle)
    for f in bundle.rglob("proc_stat_btime.txt"):
        f.unlink()
    kill = _LEAKER_KILL.replace("[337533.314412]", "[   12.314412]").replace("23793 (leaker)", "1139 (leaker)")
    dmesg = bundle / "node-b/dmesg.txt"
    dmesg.write_text(dmesg.read_text(encoding="utf-8") + kill, encoding="utf-8")
    a = analyze(bundle)
    marker = next(e for e in a.case.events if times["marker"] in e.text)
    assert marker.when.at is not None and "anchored on 1 process death" in marker.when.note, marker.when
    assert abs(marker.when.at.timestamp() - times["marker_written_at"]) < 2.0


# ---------------------------------------------------------------- audit 8 H2: Slurm's notes that name no dying process

# verbatim: galaxyproject/galaxy#2309 (stripped from SUCCESSFUL jobs), chaos/slurm#54 (after a `dd` that
# completed), pepkit/geofetch#13 (a pipeline that completed, "Peak memory used: 0.01 GB")
_SLURM_NOTES = ("slurmstepd: error: Exceeded step memory limit at some point. Step may have been partially swapped out to disk.\n",
                "slurmstepd: Exceeded step memory limit at some point.\n",
                "srun: error: udc-ba26-19: task 0: Out Of Memory\n")


def test_slurms_peak_and_task_notes_do_not_absorb_a_roce_failure(tmp_path):
    roce = "".join(_read(_ROCE).splitlines(keepends=True)[:8])
    for i, note in enumerate(_SLURM_NOTES):
        a = _bundle(tmp_path / str(i), {"nccl.log": roce + note})
        assert a.verdict.cause == "nccl_network", (note, a.verdict.trace)
        assert not any("is explained by host_oom" in t for t in a.verdict.trace), note


def test_slurm_killing_the_job_for_its_limit_keeps_its_claim_and_counts_once():
    # near miss: the enforcement line names the job killed; the peak note after it is the same event
    a = analyze(FIXTURES / "validation17/slurm-exceeded-memory-limit-singularity-stt-03/bundle")
    assert a.verdict.cause == "host_oom" and a.verdict.confidence == 0.85, a.verdict.trace
