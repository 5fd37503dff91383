"""Message families added from the programs that print them (issue 13, round 2): each line is
formatted here as the upstream printf / stream prints it (its format string is quoted beside it),
alone in a bundle, and must reach its family's cause.  Synthetic input generated at test time;
the real cases these families were found on are in fixtures/validation20.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.knowledge import catalog as C
from postmortem.run import analyze


def _verdict(tmp_path: Path, name: str, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / name).write_text(text + "\n", encoding="utf-8")
    return analyze(bundle).verdict


def _cuda_text(name: str) -> str:
    e = C.cuda_error(name)
    assert e is not None, f"CUDA catalog lost {name}"
    return e.message


# THCGeneral.c __THCudaCheck: fprintf(stderr, "THCudaCheck FAIL file=%s line=%i error=%i : %s\n", ...)
#                             _THError(file, line, "cuda runtime error (%d) : %s", ...)  (+ " at %s:%d")
# Caffe CUDA_CHECK: CHECK_EQ(error, cudaSuccess) << " " << cudaGetErrorString(error)  (glog: "Check failed: ...")
_THC = "cuda runtime error (%d) : %s at %s:%d"
_THC_FAIL = "THCudaCheck FAIL file=%s line=%i error=%i : %s"
_CAFFE = "F1201 10:00:00.123456  4242 common.cpp:152] Check failed: error == cudaSuccess (%d vs. 0)  %s"
_ASSERTFAIL = "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed."

CASES = [
    # framework CUDA checks: the number is the old runtime's, the text is what is read
    ("thc invalid ordinal", "stderr.log",
     lambda: _THC % (10, _cuda_text("cudaErrorInvalidDevice"), "/src/torch/lib/THC/THCGeneral.c", 70),
     "config", "device_mapping"),
    ("thc fail insufficient driver", "stderr.log",
     lambda: _THC_FAIL % ("/src/torch/lib/THC/THCGeneral.c", 70, 35, _cuda_text("cudaErrorInsufficientDriver")),
     "config", "cuda_driver_mismatch"),
    ("caffe invalid ordinal", "train.log",
     lambda: _CAFFE % (10, _cuda_text("cudaErrorInvalidDevice")), "config", "device_mapping"),
    ("caffe no device", "train.log",
     lambda: _CAFFE % (38, _cuda_text("cudaErrorNoDevice")), "config", "device_mapping"),
    # __assertfail with __PRETTY_FUNCTION__ of a lambda and of a templated kernel
    ("assert in lambda", "stderr.log",
     lambda: _ASSERTFAIL % ("/src/aten/src/ATen/native/cuda/ScatterGatherKernel.cu", 144, "operator()", 5, 0, 0, 64, 0, 0,
                            'idx_dim >= 0 && idx_dim < index_size && "index out of bounds"'), "config", "app_error"),
    ("assert in template", "stderr.log",
     lambda: _ASSERTFAIL % ("/src/lib/THCUNN/SpatialClassNLLCriterion.cu", 38,
                            "void cunn_SpatialClassNLLCriterion_updateOutput_kernel(T *, T *, T *, long *, T *, int, int, "
                            "int, int, int, long) [with T = float, AccumT = float]", 1, 0, 0, 7, 0, 0,
                            "t >= 0 && t < n_classes"), "config", "app_error"),
    # PyTorch reducer.cpp (DDP), the static_graph variant
    ("ddp changed graph", "stderr.log",
     lambda: ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
              "This error indicates that your training graph has changed in this iteration, e.g., one parameter is used "
              "in first iteration, but then got unused in the second iteration. this is not compatible with static_graph "
              "set to True."), "config", "app_error"),
    # libnvidia-container: "requirement error: %s" around "unsatisfied condition: %s, please update ..."
    ("container cuda requirement", "docker.log",
     lambda: ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.8, please update your driver "
              "to a newer version, or use an earlier cuda container"), "config", "cuda_driver_mismatch"),
    # Fabric Manager's driver version check, through syslog
    ("fm driver mismatch", "journal.txt",
     lambda: ("Dec 01 10:00:00 node1 nv-fabricmanager[2211]: fabric manager NVIDIA GPU driver interface version "
              "570.133.20 don't match with driver version 570.86.15. Please update with matching NVIDIA driver package."),
     "comms", "nvls_fabric"),
    ("fm start precheck", "journal.txt",
     lambda: ('Dec 01 10:00:00 node1 nvidia-fabricmanager-start.sh[2211]: Kernel module "ib_umad" has not been '
              "loaded, fabric manager cannot be started"), "comms", "nvls_fabric"),
    # aws-ofi-nccl NCCL_OFI_WARN lines (NCCL's logger: "host:pid:tid [dev] func:line NCCL WARN NET/OFI ...")
    ("ofi request error", "nccl.log",
     lambda: ("node1:2211:2290 [3] ofi_process_cq:1039 NCCL WARN NET/OFI "
              "Request %s completed with error. RC: %d. Error: %s. Completed length: %ld, Request: %s"
              % ("0x7f00d4012a40", 113, "No route to host", 0, "{ dev: 0, size: 0, state: CREATED, direction: SEND }")),
     "comms", "nccl_network"),
    ("ofi register einval", "nccl.log",
     lambda: ("node1:2211:2290 [3] register_rail_mr_buffer:617 NCCL WARN NET/OFI "
              "Unable to register memory (type = %d) for device %d. RC: %d, Error: %s" % (2, 1, -22, "Invalid argument")),
     "comms", "nccl_network"),
    ("ofi register enomem", "nccl.log",
     lambda: ("node1:2211:2290 [3] register_rail_mr_buffer:617 NCCL WARN NET/OFI "
              "Unable to register memory (type = %d) for device %d. RC: %d, Error: %s" % (2, 1, -12, "Cannot allocate memory")),
     "config", "memlock_limit"),
    # TensorFlow DeviceHostAllocator: LOG(WARNING) << "could not allocate pinned host memory of size: " << num_bytes
    ("tf pinned host alloc", "train.log",
     lambda: ("2026-12-01 10:00:00.000001: W tensorflow/core/common_runtime/gpu/gpu_host_allocator.h:44] "
              "could not allocate pinned host memory of size: %d" % (2 ** 33)), "config", "pinned_memory"),
    # NCCL 2.4-2.6 init.cc: WARN("Mismatched collective detected, please check your collective calls at and around rank %d. ...")
    ("nccl 2.4 mismatched collective", "nccl.log",
     lambda: ("node1:2211:2290 [0] init.cc:1240 NCCL WARN Mismatched collective detected, please check your collective "
              "calls at and around rank %d. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective "
              "logs" % 17), "config", "collective_desync"),
]


@pytest.mark.parametrize("name,artifact,make,category,cause", CASES, ids=[c[0] for c in CASES])
def test_one_family_line_reaches_its_cause(tmp_path, name, artifact, make, category, cause):
    v = _verdict(tmp_path, artifact, make())
    assert (v.category.value, v.cause) == (category, cause), v.trace
    assert v.confidence >= 0.5


def test_a_check_printer_with_an_unknown_text_claims_nothing(tmp_path):
    """The number alone is not read (it is the old runtime's numbering): no text, no claim."""
    v = _verdict(tmp_path, "stderr.log", _THC % (10, "no such message in any CUDA release", "/src/THCGeneral.c", 70))
    assert v.cause != "device_mapping"
