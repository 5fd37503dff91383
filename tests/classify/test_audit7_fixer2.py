"""Audit 7 HIGH findings taken by the second fixer, each with the real line that was over-claimed
and a near miss.  Real lines come from the sources named beside them; bundles are arranged at test
time from real files (marked)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def _bundle(tmp_path: Path, files: dict[str, str]):
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    for name, text in files.items():
        (bundle / name).write_text(text, encoding="utf-8")
    return analyze(bundle)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


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
    assert any("is explained by host_oom" in t for t in a.verdict.trace)


def test_slurm_killing_the_job_for_its_limit_stays_host_oom():
    # near miss: coqui-ai/STT#2238 "exceeded memory limit (X > Y), being killed" names the killed job
    a = analyze(FIXTURES / "validation17/slurm-exceeded-memory-limit-singularity-stt-03/bundle")
    assert a.verdict.cause == "host_oom"
