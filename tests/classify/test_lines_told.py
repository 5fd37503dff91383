"""Whole-bundle verdicts for the families issue 13 lists as told by their lines: each bundle
is one real line (cited) or lines formatted from the upstream format, analysed end to end."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.run import analyze


def _verdict(tmp_path: Path, name: str, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    (bundle / name).write_text(text + "\n", encoding="utf-8")
    return analyze(bundle).verdict


CASES = [
    # NVIDIA/nccl#1372: NCCL built for sm_80 only, run on H100.
    ("nccl.log", "gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'",
     "nccl_version_old"),
    # wenet-e2e/wekws#93: a second torchrun --standalone on the default rendezvous port.
    ("stderr.txt", "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29400 (errno: 98 - Address already in use).\n"
                   "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:29400 (errno: 98 - Address already in use).\n"
                   "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.",
     "port_in_use"),
    # huggingface/transformers#21736: device_map="auto" model wrapped for data parallel.
    ("stderr.txt", "RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) "
                   "but found one of them on device: cuda:1", "device_mapping"),
    # NVIDIA/nvidia-docker#68: a CUDA 7.5 image on a CUDA 6.5 driver.
    ("stderr.txt", "nvidia-docker | 2016/04/09 00:07:59 Error: unsupported CUDA version: 7.5 < 6.5", "cuda_driver_mismatch"),
    # A K8s pod without a /dev/shm volume (fixtures/validation20 k8s-nccl-allreduce-job-no-dshm-ucx-segfault-09).
    ("stderr.txt", "mm_iface failed to allocate receive FIFO\n[ucp_address_unpack] Caught signal 11 (Segmentation fault)",
     "shm_exhausted"),
]


@pytest.mark.parametrize("name,text,cause", CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_a_line_that_says_its_cause_is_claimed(tmp_path, name, text, cause):
    v = _verdict(tmp_path, name, text)
    assert v.cause == cause, v.trace


def test_one_nvls_bind_failure_is_not_a_confident_claim(tmp_path):
    # NCCL's own text names two sources (the Fabric Manager's setup or the NVSwitches): one
    # line is a claim, not a near-proof.  Real line: fixtures/validation21 nvlink-bad-state-...-14.
    v = _verdict(tmp_path, "nccl.log", "[2026-06-23 15:45:07] gpu-stress-dgc86-xfpt6:420:437 [5] transport/nvls.cc:379 "
                 "(nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : "
                 "CUDA error 401 'the operation cannot be performed in the present state'.")
    assert v.cause == "nvls_fabric" and v.confidence < 0.8


def test_a_bare_system_error_repeated_by_every_rank_stays_one_weak_reading(tmp_path):
    line = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1331, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1")
    once = _verdict(tmp_path / "a", "stderr.txt", line)
    many = _verdict(tmp_path / "b", "stderr.txt", "\n".join([line] * 4))
    assert many.confidence <= once.confidence + 1e-9


def test_a_failed_bind_warning_alone_is_no_claim(tmp_path):
    # wenet-e2e/wekws#93's first line only: torch's elastic rendezvous tries the store as server,
    # warns per address and retries as a client -- alone it says nothing failed yet
    v = _verdict(tmp_path, "stderr.txt", "[W socket.cpp:401] [c10d] The server socket has failed to bind to "
                 "[::]:29400 (errno: 98 - Address already in use).")
    assert v.cause != "port_in_use", v.trace
