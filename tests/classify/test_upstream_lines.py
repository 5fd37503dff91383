"""One representative line per upstream family, printed as the upstream code prints it, alone in
a bundle: the verdict reaches the family's cause with the right strength.

The texts come from the catalogs (knowledge/catalogs/*.json, generated from NCCL, CUDA, the
NVIDIA driver, PyTorch and the kernel) and are formatted here with the printf/fmt arguments
the upstream call passes; the test fails if a catalog loses or changes an entry it uses.
Hostile-free synthetic input, generated at test time (no file in fixtures/ is a real log).
"""
from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from postmortem.knowledge import catalog as C
from postmortem.run import analyze

NCCL_PREFIX = "node1:2211:2290 [0] {file}:{line} NCCL WARN "


def _catalog(name: str) -> dict:
    return json.loads(resources.files("postmortem.knowledge").joinpath("catalogs", f"{name}.json").read_text())


def _nccl_format(fmt: str, file: str) -> str:
    """The NCCL entry with this exact format, printed from `file` (the test fails when the
    catalog no longer holds it)."""
    entries = [e for e in _catalog("nccl")["entries"] if e["format"] == fmt and file in e["files"]]
    assert entries, f"NCCL catalog lost the format {fmt!r} from {file}"
    return fmt


def _printf(fmt: str, *args) -> str:
    out = fmt.replace("%ld", "%d").replace("%lu", "%d").replace("%zu", "%d").replace("%zi", "%d")
    return out % args


def _pt_template(eid: str) -> str:
    entry = next((e for e in _catalog("pytorch")["entries"] if e["id"] == eid), None)
    assert entry, f"PyTorch catalog lost {eid}"
    return entry["template"]


def _fmt(template: str, *args) -> str:
    parts = re.split(r"\{d\}|\{\}", template)
    assert len(parts) == len(args) + 1, template
    return "".join(p + (str(a) if i < len(args) else "") for i, (p, a) in enumerate(zip(parts, [*args, ""])))


def _verdict(tmp_path: Path, name: str, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / name).write_text(text + "\n", encoding="utf-8")
    return analyze(bundle).verdict


def _nccl(file: str, fmt: str, *args, line: int = 100) -> str:
    return NCCL_PREFIX.format(file=file, line=line) + _printf(_nccl_format(fmt, file), *args)


CASES = [
    # NCCL WARNs, one per subsystem, from the file that prints them
    ("ib async event", "stderr.log", lambda: _nccl("transport/net_ib.cc", "NET/IB : Got async event : %s", "port error"),
     "comms", "nccl_network", True),
    ("shm fallocate", "stderr.log",
     lambda: _nccl("misc/shmutils.cc", "Error: failed to extend %s to %ld bytes", "/dev/shm/nccl-Ab12Cd", 9637892),
     "config", "shm_exhausted", True),
    ("socket family", "stderr.log",
     lambda: _nccl("misc/socket.cc", "ncclSocketInit: connecting to address %s with family %d is neither AF_INET(%d) nor AF_INET6(%d)",
                   "", 0, 2, 10), "comms", "nccl_network", True),
    ("argcheck misuse", "stderr.log",
     lambda: _nccl("misc/argcheck.cc", "%s : invalid reduction operation %d", "AllReduce", 9), "config", "app_error", True),
    # CUDA errors as the PyTorch runtime prints them ("CUDA error: " + cudaGetErrorString)
    ("invalid ordinal", "stderr.log",
     lambda: f"RuntimeError: CUDA error: {C.cuda_error('cudaErrorInvalidDevice').message}", "config", "device_mapping", True),
    ("no device", "stderr.log",
     lambda: f"RuntimeError: CUDA error: {C.cuda_error('cudaErrorNoDevice').message}", "config", "device_mapping", True),
    ("ptx toolchain", "stderr.log",
     lambda: f"RuntimeError: CUDA error: {C.cuda_error('cudaErrorUnsupportedPtxVersion').message}", "config",
     "cuda_driver_mismatch", True),
    ("ecc", "stderr.log",
     lambda: f"RuntimeError: CUDA error: {C.cuda_error('cudaErrorECCUncorrectable').message}", "hardware", "gpu_memory_ecc", True),
    # an ncclResult_t with NCCL's "Last error:" text below it (NCCL >= 2.13 through c10d)
    ("nccl last error cuda", "stderr.log",
     lambda: ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, unhandled cuda error "
              "(run with NCCL_DEBUG=INFO for details), NCCL version 2.14.3\n"
              "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
              f"Cuda failure '{C.cuda_error('cudaErrorInvalidDevice').message}'"), "config", "device_mapping", True),
    ("nccl system error socket", "stderr.log",
     lambda: ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
              "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
              "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
              "Last error:\nsocketStartConnect: Connect to 10.0.0.2<43215> failed : Software caused connection abort"),
     "comms", "nccl_network", True),
    # PyTorch c10d / allocator / device texts
    ("store address in use", "stderr.log",
     lambda: ("torch.distributed.DistNetworkError: " + _pt_template("pt.store_listen_failed")
              + " port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"),
     "config", "port_in_use", True),
    ("cpu alloc", "stderr.log",
     lambda: "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. " + _fmt(_pt_template("pt.cpu_alloc_failed"),
                                                                                  1073741824, 12, "Cannot allocate memory"),
     "config", "host_oom", True),   # ENOMEM from the allocator; a limit, if any, in tests/classify/test_cascade.py
    # the NVIDIA driver through journalctl
    ("xid 79 journal", "journal.txt",
     lambda: "Dec 01 10:00:00 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
     "hardware", "gpu_fell_off_bus", True),
    ("xid 13 no pid", "dmesg.txt",
     lambda: "[12345.678901] NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address",
     "unknown", "unknown", False),   # no process named: nobody's fault (tests/classify/test_xid_catalog.py)
    ("nv_err reset required", "dmesg.txt",
     lambda: ("[12345.678902] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:"
              f"{C.nv_status('NV_ERR_RESET_REQUIRED').name}:1700)"), "hardware", "gpu_hardware_other", True),
]


@pytest.mark.parametrize("name,artifact,make,category,cause,claimed", CASES, ids=[c[0] for c in CASES])
def test_one_upstream_line_reaches_its_cause(tmp_path, name, artifact, make, category, cause, claimed):
    v = _verdict(tmp_path, artifact, make())
    assert (v.category.value, v.cause) == (category, cause), v.trace
    if claimed:
        assert v.confidence >= 0.5


# fixtures/corpus/nccl-p2p-iommu-01 nccl.log's Bootstrap INFO line: NCCL_DEBUG=INFO was on, so a transport
# error would have been printed (without any NCCL output its absence says nothing, audit 6 M6)
_NCCL_INFO = "jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO Bootstrap : Using [0]eth0:10.2.3.32<0>\n"


def _watchdog(rank: int, seq: int) -> str:
    return (f"[rank{rank}]:[E1201 10:30:00.000000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
            "ran for 1800085 milliseconds before timing out.")


def test_a_lone_watchdog_timeout_is_a_symptom_not_the_network(tmp_path):
    v = _verdict(tmp_path, "stderr.log", _watchdog(3, 12345))
    assert v.cause == "unknown"
    assert "nccl_network" not in v.summary   # no NCCL output: nothing leans straggler either (audit 6 M6)


def test_ranks_at_different_seqnums_are_a_straggler_sign(tmp_path):
    # two timeouts of one process group at different SeqNums, NCCL's INFO output without a transport
    # error: one straggler sign; the absence of a transport error qualifies it but is no second,
    # independent one -- a silent network stall prints nothing either (audit 7 M12), so it leans.
    # The PG is read from the watchdog's wrapper (torch prints "[PG ID n PG GUID g(name) Rank r]
    # Process group watchdog thread terminated with exception: <line>"); SeqNums of lines naming no
    # PG are never compared (audit 6 M6)
    def wrapped(rank: int, seq: int) -> str:
        return (f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with "
                f"exception: [Rank {rank}] Watchdog caught" + _watchdog(rank, seq).split("Watchdog caught", 1)[1])
    v = _verdict(tmp_path, "stderr.log", _NCCL_INFO + wrapped(0, 118) + "\n" + wrapped(1, 120))
    assert v.cause == "unknown" and "leaning straggler_timeout" in v.summary, v.trace
    assert any("straggler signs: timeout.seq_apart" in line for line in v.trace), v.trace
    (tmp_path / "bare").mkdir()
    bare = _verdict(tmp_path / "bare", "stderr.log", _NCCL_INFO + _watchdog(0, 118) + "\n" + _watchdog(1, 120))
    assert not any("timeout.seq_apart" in line for line in bare.trace), bare.trace


def test_a_transport_error_beside_the_timeout_is_the_story(tmp_path):
    ib = _nccl("transport/net_ib.cc", "NET/IB : Got async event : %s", "port error")
    v = _verdict(tmp_path, "stderr.log", ib + "\n" + _watchdog(1, 7))
    assert v.cause == "nccl_network", v.trace


def test_progress_still_advancing_while_ranks_wait_leans_straggler(tmp_path):
    text = (_NCCL_INFO + "Running tokenizer on dataset:  40%|####      | 400/1000 [10:00<15:00, 1.0 examples/s]\n"
            + _watchdog(1, 1) + "\n"
            "Running tokenizer on dataset:  60%|######    | 600/1000 [30:00<15:00, 1.0 examples/s]")
    v = _verdict(tmp_path, "stderr.log", text)
    # one straggler sign; no transport error qualifies it but is no second one (audit 7 M12)
    assert v.cause == "unknown" and "leaning straggler_timeout" in v.summary, v.trace


# mlx5_core prints "<dev> <ifname>: Link down" (mlx5e_update_carrier) through the kernel log
_LINK_DOWN = "[12345.678902] mlx5_core 0000:5e:00.0 ib0: Link down"


def test_an_rdma_link_down_alone_leans_network_but_does_not_claim(tmp_path):
    v = _verdict(tmp_path, "dmesg.txt", _LINK_DOWN)
    assert v.cause == "unknown" and "nccl_network" in v.summary


def test_an_rdma_link_down_beside_an_nccl_ib_error_is_two_signs_of_the_network(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "dmesg.txt").write_text(_LINK_DOWN + "\n")
    (bundle / "nccl.log").write_text(_nccl("transport/net_ib.cc", "NET/IB : Got async event : %s", "port error") + "\n")
    v = analyze(bundle).verdict
    assert v.cause == "nccl_network"
    assert any(f.rule == "kernel-rdma-fault" for f in [v.root, *v.symptoms, *v.alternatives]) or \
        any("kernel-rdma-fault" in t for t in v.trace)


def test_cublas_alloc_failure_is_gpu_memory(tmp_path):
    v = _verdict(tmp_path, "stderr.log",
                 "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    assert v.cause == "gpu_oom"


def test_a_cuda_failure_inside_nccl_p2p_leans_the_p2p_path(tmp_path):
    # CUDACHECK (include/checks.h) prints the file that called it: transport/p2p.cc
    line = NCCL_PREFIX.format(file="transport/p2p.cc", line=274) + _printf(_nccl_format("Cuda failure '%s'", "include/checks.h"),
                                                                            "invalid argument")
    v = _verdict(tmp_path, "stderr.log", line)
    assert v.cause == "unknown" and "nccl_p2p" in v.summary


def test_nvml_driver_library_mismatch_is_a_setup_fault(tmp_path):
    # nvidia-smi: "Failed to initialize NVML: " + nvmlErrorString(NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    v = _verdict(tmp_path, "nvidia-smi.txt", "Failed to initialize NVML: Driver/library version mismatch")
    assert (v.category.value, v.cause) == ("config", "driver_library_mismatch")


def test_an_nccl_result_name_alone_is_a_weak_lean(tmp_path):
    # c10d: "NCCL error in: <file>:<line>, " + ncclGetErrorString(result) + ", NCCL version ...", then the
    # ncclResult_t name and its description (NCCLUtils.hpp)
    v = _verdict(tmp_path, "stderr.log",
                 "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1207, invalid usage, "
                 "NCCL version 2.14.3\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.")
    assert v.cause == "unknown" and "app_error" in v.summary


def _rm_init_failed(init: int, rm_status: int) -> str:
    # osinit.c: NV_DEV_PRINTF(NV_DBG_ERRORS, nv, "RmInitAdapter failed! (0x%x:0x%x:%d)\n", initStatus, rmStatus, line)
    return "[  123.456] NVRM: GPU 0000:3b:00.0: " + "RmInitAdapter failed! (0x%x:0x%x:%d)" % (init, rm_status, 1474)


def test_adapter_init_failure_reads_its_nv_status_number(tmp_path):
    lost = C.nv_status("NV_ERR_GPU_IS_LOST")
    v = _verdict(tmp_path, "dmesg.txt", _rm_init_failed(0x24, lost.number))
    assert (v.category.value, v.cause) == ("hardware", lost.cause)


def test_adapter_init_failure_with_a_context_status_only_leans_hardware(tmp_path):
    v = _verdict(tmp_path, "dmesg.txt", _rm_init_failed(0x26, C.nv_status("NV_ERR_NOT_SUPPORTED").number))
    assert v.cause == "unknown" and "gpu_hardware_other" in v.summary


def test_a_timeout_and_its_teardown_lines_are_symptoms_only(tmp_path):
    # ProcessGroupNCCL prints the teardown line after any failed or timed-out work item
    teardown = ("[rank1]:[E1201 10:30:00.100000000 ProcessGroupNCCL.cpp:1595] Some NCCL operations have failed or timed "
                "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                "corrupted/incomplete data.")
    v = _verdict(tmp_path, "stderr.log", _NCCL_INFO + _watchdog(1, 2) + "\n" + teardown)
    assert v.cause == "unknown" and "straggler_timeout" in v.summary, v.trace
