"""Audit 7 HIGH findings taken by the second fixer, each with the real line that was over-claimed
and a near miss.  Real lines come from the sources named beside them; bundles are arranged at test
time from real files (marked)."""
from __future__ import annotations

from postmortem.run import analyze

from tests.classify.arrange import FIXTURES, ROOT, analyze_files as _bundle, read as _read  # noqa: F401


# ---------------------------------------------------------------- H5: a GPU's HBM is not the host's DIMM

# NVIDIA NVSentinel gpu-health-monitor test event, verbatim (DCGM dcgm_errors.h DCGM_FR_ROW_REMAP_FAILURE_MSG)
_DCGM_ROW_REMAP = "GPU 123456 had uncorrectable memory errors and row remapping failed. Run a field diagnostic on the GPU\n"


def test_dcgm_row_remap_failure_is_the_gpus_memory_not_a_dimm(tmp_path):
    a = _bundle(tmp_path, {"dcgm_health.txt": _DCGM_ROW_REMAP})
    assert a.verdict.cause == "gpu_memory_ecc", (a.verdict.cause, a.verdict.summary)


def test_a_bmc_sel_uncorrectable_dimm_line_stays_host_memory(tmp_path):
    # near miss: the ipmitool SEL line of fixtures/validation4/host-dimm-ue-sel-osm-02 (openstreetmap/operations)
    sel = _read(FIXTURES / "validation4/host-dimm-ue-sel-osm-02/bundle/ipmi_sel.txt")
    a = _bundle(tmp_path, {"ipmi_sel.txt": sel})
    assert a.verdict.cause == "host_memory_error"


# ---------------------------------------------------------------- H6: a step's OOM count names no victim

_ROCE = FIXTURES / "validation20/roce-mtu-mismatch-two-servers-nccl-2-20-lav-34/bundle/nccl.log"   # NVIDIA/nccl#1524
# hafs-community/HAFS#101, verbatim (fixtures/launcher/public_samples.txt)
_SLURM_COUNT = ("slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes "
                "may have been killed by the cgroup out-of-memory handler.\n")


def test_a_step_oom_count_does_not_absorb_a_roce_failure(tmp_path):
    # arranged: the RoCE MTU-mismatch log with the Slurm step-end count appended (audit 7 probe p11)
    a = _bundle(tmp_path, {"nccl.log": _read(_ROCE) + _SLURM_COUNT})
    assert a.verdict.cause == "nccl_network", (a.verdict.cause, a.verdict.trace)
    assert any("rests on counts that name no victim" in t for t in a.verdict.trace)


def test_a_kernel_oom_kill_of_the_job_still_explains_the_peers_network_errors():
    # near miss: a real lab run whose rank was OOM-killed (the kernel names the victim): host_oom keeps the root
    a = analyze(FIXTURES / "bundles/lab-torchrun-oom-cgroup/bundle")
    assert a.verdict.cause == "host_oom"
    # the peer's 'Connection closed by peer' is the killed rank's orderly close: fallout listed with the
    # verdict (messages.toml peer_closed_connection), no network rival to explain away
    assert any(f.signal == "msg.peer_closed_connection" for f in a.verdict.symptoms), a.verdict.trace
    assert "nccl_network" not in {f.cause for f in a.verdict.alternatives}


def test_slurm_killing_the_job_for_its_limit_stays_host_oom():
    # near miss: coqui-ai/STT#2238 "exceeded memory limit (X > Y), being killed" names the killed job
    a = analyze(FIXTURES / "validation17/slurm-exceeded-memory-limit-singularity-stt-03/bundle")
    assert a.verdict.cause == "host_oom"


# ---------------------------------------------------------------- H7: an errno that reports the storage's state

# fixtures/pytrace/dataset_eio: a real DataLoader run here whose Dataset read() gets EIO (shards.py made it)
_EIO = FIXTURES / "pytrace/dataset_eio/train.log"
# A failing disk's kernel lines, verbatim from a public LKML report (Tony Asleson, 25 Feb 2021, "WARNING: CPU: 11
# PID: 7118 at drivers/ata/libata-core.c:4561 __ata_qc_complete"), as journalctl printed them
_FAILING_DISK = """Feb 25 13:23:19 kernel: sd 7:0:0:0: [sde] tag#115 Sense Key : Not Ready [current]
Feb 25 13:23:19 kernel: sd 7:0:0:0: [sde] tag#115 Add. Sense: Logical unit not ready, hard reset required
Feb 25 13:23:19 kernel: blk_update_request: I/O error, dev sde, sector 76492800 op 0x0:(READ) flags 0x84700 phys_seg 64 prio class 0
"""


def test_an_eio_in_the_jobs_dataset_is_no_claim_on_its_own_code(tmp_path):
    a = _bundle(tmp_path, {"train.log": _read(_EIO)})
    assert a.verdict.cause == "unknown" and a.verdict.category.value == "unknown", (a.verdict.cause, a.verdict.trace)
    assert "storage_io_error" in a.verdict.summary
    assert any("reports the storage's state" in t for t in a.verdict.trace)


def test_an_eio_beside_the_kernels_block_io_error_is_the_storage(tmp_path):
    a = _bundle(tmp_path, {"train.log": _read(_EIO), "journal.txt": _FAILING_DISK})
    assert a.verdict.cause == "storage_io_error" and a.verdict.category.value == "hardware", a.verdict.trace


def test_the_kernels_block_io_error_alone_claims_nothing(tmp_path):
    # near miss: a host's kernel log names failing I/O on some device, the job shows no I/O failure
    a = _bundle(tmp_path, {"journal.txt": _FAILING_DISK})
    assert a.verdict.cause == "unknown"


def test_a_missing_file_stays_the_jobs_own_code():
    # near miss: FileNotFoundError [Errno 2] -- the path is the job's configuration (lab run, validation23)
    a = analyze(FIXTURES / "validation23/lab-c/lab5-second-job-same-output-dir/bundle")
    assert a.verdict.cause == "app_error"


def test_a_collate_type_error_in_the_dataloader_stays_the_jobs_own_code():
    # near miss: validation24 lab6-ragged-reviews-default-collate (a TypeError through fetch(), no errno)
    a = analyze(FIXTURES / "validation24/lab-c/lab6-ragged-reviews-default-collate/bundle")
    assert a.verdict.cause == "app_error"


# ---------------------------------------------------------------- H4: the kernel's servers are not the job's peers

_FREEZER = FIXTURES / "validation23/lab-c/lab5-node1-container-paused-freezer/bundle"   # real lab run, timeouts on node 0
# fixtures/system/ss_tin_nfs_server_lossy.txt: a real lossy `ss -tin` to 192.168.1.229:2049 made here (not job traffic)
_NFS_SS = FIXTURES / "system/ss_tin_nfs_server_lossy.txt"
# the kernel NFS client's line, text verbatim from kangear/tiny210v2-uboot#5; the boot stamp is added (marked)
_NFS_KERNEL = "[ 3223.539141] nfs: server 192.168.1.229 not responding, still trying\n"


def _freezer_without_ps(tmp_path, extra: dict[str, str]):
    files = {n: _read(_FREEZER / n) for n in ("node0.log", "node1.log")}
    return _bundle(tmp_path, {**files, "node0_ss_tin.txt": _read(_NFS_SS), **extra})


def test_a_server_the_kernel_names_does_not_make_a_lossy_connection_the_jobs(tmp_path):
    a = _freezer_without_ps(tmp_path, {"node0_dmesg.txt": _NFS_KERNEL})
    assert not any("net.tcp_segments_lost" in t for t in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause != "nccl_timeout"


def test_the_jobs_own_lossy_path_still_speaks():
    # near miss: validation23 lab5-routed-path-packet-loss, its peers named by NCCL/gloo lines, lost segments
    a = analyze(FIXTURES / "validation23/lab-b/lab5-routed-path-packet-loss/bundle")
    assert any("tcp-connection-losses:" in t for t in a.verdict.trace), a.verdict.trace
