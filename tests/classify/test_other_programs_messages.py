"""Failures other programs print in their own words, read from the texts of the programs that
print them (messages.toml, the generated catalogs):

- XLA's stream executor (TensorFlow, JAX): 'kernel version X does not match DSO version Y' is the
  loaded kernel module and libcuda at different versions -- driver_library_mismatch, like NVML's
  'Driver/library version mismatch' (xla/stream_executor/cuda/cuda_diagnostics.cc).
- PaddlePaddle's DataLoader worker SIGBUS handler ('Unexpected BUS error encountered in
  DataLoader worker ... insufficient shared memory (shm)'), the counterpart of torch's.
- Triton's Python backend failing to size its /dev/shm region with ENOSPC (shm_manager.cc).
- Ray's memory monitor killing a worker because the node ran low on memory
  (ray.exceptions.OutOfMemoryError): host memory, not the job's exception.
- c10d's 'Detected mismatch between collectives on ranks' (TORCH_DISTRIBUTED_DEBUG=DETAIL):
  ranks issued different collectives, collective_desync (was read as app_error).
- Older kernels' OOM-killer header (bare hex gfp_mask in v3.x-v4.4) is in the kernel catalog;
  v4.9-v4.18's nodemask form was already read by the current entry.

Cases: the seventeenth sweep's development half (fixtures/validation32, public threads, scored
before these readings: all unknown or read as the job's own error)."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.knowledge import catalog
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]


def _case(name: str) -> Path:
    return next((ROOT / "fixtures").glob(f"validation32/*/{name}/bundle"))


@pytest.mark.parametrize("case, category, cause", [
    ("jax-11477-driver-515-kernel-vs-510-dso-mismatch-no-gpu-04", "config", "driver_library_mismatch"),
    ("paddle-34725-aistudio-dataloader-bus-error-shm-05", "config", "shm_exhausted"),
    ("triton-6195-python-backend-shm-64m-docker-default-13", "config", "shm_exhausted"),
    ("verl-1964-32b-ckpt-save-all-workers-ray-host-oom-13", "config", "host_oom"),
    ("lightning-19045-rank-zero-only-log-checkpoint-monitor-collective-mismatch-11", "config", "collective_desync"),
])
def test_public_case_reads_the_programs_own_words(case, category, cause):
    v = analyze(_case(case)).verdict
    assert (v.category.value, v.cause) == (category, cause), (v.cause, v.confidence, v.trace[-3:])
    assert v.root is not None and v.root.evidence, v.trace


def test_xla_mismatch_from_another_public_log(tmp_path):
    # A TensorFlow 2.x notebook's log, as published (the line XLA's Diagnostician prints).
    (tmp_path / "stderr.txt").write_text(
        "2021-09-13 23:57:29.694695: E tensorflow/stream_executor/cuda/cuda_diagnostics.cc:306] kernel version "
        "460.56.0 does not match DSO version 470.57.2 -- cannot find working devices in this configuration\n")
    v = analyze(tmp_path).verdict
    assert v.cause == "driver_library_mismatch", (v.cause, v.trace)


def test_ray_oom_kill_outweighs_the_exception_it_raises(tmp_path):
    # Ray's documentation (doc/source/ray-core/scheduling/ray-oom-prevention.rst), as printed.
    (tmp_path / "driver.log").write_text(
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n")
    v = analyze(tmp_path).verdict
    assert (v.category.value, v.cause) == ("config", "host_oom"), (v.cause, v.trace)


def test_triton_region_failure_with_another_errno_is_not_a_full_tmpfs():
    # A constructed near miss (the same message with EACCES's text): only ENOSPC says the tmpfs is full.
    line = ("UNAVAILABLE: Internal: Unable to initialize shared memory key 'triton_python_backend_shm_region_1' to "
            "requested size (1048576 bytes). If you are running Triton inside docker, use '--shm-size' flag to "
            "control the shared memory region size. Error: Permission denied")
    from postmortem.knowledge import load
    messages = {m.id: m for m in load().messages}
    assert messages["triton_python_backend_shm_full"].regex.search(line) is None


@pytest.mark.parametrize("line, entry", [
    # Linux 4.15 (fixtures/validation32 dali-585 dmesg.txt)
    ("[2612362.231458] python invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), order=0, "
     "oom_score_adj=829", "k.oom_invoked"),
    # Linux 3.13 (a public blog's dmesg, Ubuntu trusty)
    ("[29269.576976] automount invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0", "k.oom_invoked_v3"),
])
def test_older_kernels_oom_header_is_catalogued(line, entry):
    m = catalog.match_message(line, ("kernel",))
    assert m is not None and m.entry.id == entry and m.cause == "host_oom"


@pytest.mark.parametrize("line", [
    # patrickbryant1/AFProfile#8 (RTX 3080 Ti, JAX), as posted
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4770354232 bytes.",
    # ecmwf-lab/ai-models-graphcast#18 (XLA's platform allocator), as posted
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 2.99GiB (3206250496B) "
    "on device ordinal 0",
    # kingoflolz/mesh-transformer-jax#66 (an older jaxlib: TensorFlow's Status text), as posted
    "RuntimeError: Resource exhausted: Failed to allocate request for 32.00MiB (33554432B) on device ordinal 0",
])
def test_xla_device_allocator_out_of_memory_is_gpu_oom(tmp_path, line):
    (tmp_path / "stderr.txt").write_text(line + "\n")
    v = analyze(tmp_path).verdict
    assert (v.category.value, v.cause) == ("config", "gpu_oom"), (v.cause, v.trace)


def test_another_programs_malloc_wrapper_is_not_xla():
    # gdbserver's xmalloc (gdb/gdbserver/utils.cc malloc_failure) prints the same phrase about host memory.
    from postmortem.knowledge import load
    messages = {m.id: m for m in load().messages}
    line = "gdbserver: ran out of memory while trying to allocate 1048576 bytes"
    assert messages["xla_device_oom"].regex.search(line) is None


def test_ngc_container_driver_check_is_one_weak_sign(tmp_path):
    # NVIDIA's NGC entrypoint, as a public note quotes it (search index id 40895951619): the host's
    # driver is older than the image needs and forward compatibility did not start -- a lean to
    # cuda_driver_mismatch, never a claim alone (CUDA minor-version compatibility may still run the job).
    (tmp_path / "container.log").write_text(
        "ERROR: This container was built for NVIDIA Driver Release 460.32 or later, but\n"
        "       version 430.26 was detected and compatibility mode is UNAVAILABLE.\n")
    v = analyze(tmp_path).verdict
    assert v.cause == "unknown" and "leaning cuda_driver_mismatch" in v.summary, (v.summary, v.trace)
    # The same entrypoint's line when forward compatibility did start is no sign at all.
    from postmortem.knowledge import load
    messages = {m.id: m for m in load().messages}
    assert messages["ngc_driver_older_than_container"].regex.search(
        "NOTE: Legacy NVIDIA Driver detected.  Compatibility mode ENABLED.") is None
