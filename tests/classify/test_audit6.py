"""Audit 6 findings (the fixer's, round 6): each with the real line that was over-claimed and a
near miss that must still claim.  Real lines are quoted with their public source or come from
the fixtures named beside them; edits made at test time are marked as such."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def _bundle(tmp_path: Path, files: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    for name, text in files.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(text, encoding="utf-8")
    return bundle


# ---------------------------------------------------------------- H9: only a fatal SXid is an NVLink fault

# NVIDIA/nvtrust#124 (H100 + NVSwitch in a TDX guest, boot-time dmesg, verbatim): non-fatal SXid 22013,
# which NVIDIA's table says "can be safely ignored", printed as Data / Non-fatal / Severity 0 lines.
_NVTRUST_124 = """\
[   38.174242] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  Release Build  (dvs-builder@U22-I3-H04-03-1)  Sat Sep 20 00:47:16 UTC 2025
[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b, 0x00000000, 0x0000002b, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}
[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt
[   38.180708] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44 Sub-engine instance 00
[   38.183583] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002c, 0x0000002c, 0x00000000, 0x0000002c, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}
[   38.187830] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 45 Minion Link DLREQ interrupt
[   38.189818] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 45 Sub-engine instance 00
"""


def test_non_fatal_sxids_are_no_nvlink_fault(tmp_path):
    v = analyze(_bundle(tmp_path, {"dmesg.txt": _NVTRUST_124})).verdict
    assert v.cause != "nvlink_fault" and not any(f.cause == "nvlink_fault" for f in (*v.alternatives, *v.symptoms)), v.trace


def test_a_fatal_sxid_is_an_nvlink_fault_and_its_lines_are_one_event():
    """Near miss: the corpus case's `SXid ...: 24007, Severity 1 ...` (NVIDIA/open-gpu-kernel-modules#1118)."""
    v = analyze(FIXTURES / "corpus/nvlink-nvswitch-fault-01/bundle").verdict
    assert v.cause == "nvlink_fault" and v.confidence <= 0.85, (v.cause, v.confidence)


# ---------------------------------------------------------------- H11: Flight Recorder compares what torch compares

_UNEVEN = FIXTURES / "lab/output/lab-flightrec-uneven-alltoall/bundle"   # real: fixtures/lab/flightrec_uneven_alltoall.sh
_DESYNC = FIXTURES / "bundles/lab-flightrec-desync/bundle"               # real: broadcast on one rank, all_reduce on the others


def test_an_uneven_all_to_all_of_a_healthy_job_is_no_desync():
    v = analyze(_UNEVEN).verdict
    assert v.cause == "unknown" and not any(f.cause == "collective_desync" for f in v.alternatives), v.trace


def test_ranks_calling_different_collectives_in_a_failed_job_are_a_desync():
    """Near miss: the lab desync (a collective type mismatch, then the job timed out)."""
    v = analyze(_DESYNC).verdict
    assert v.cause == "collective_desync" and v.root.strength == "strong", v.trace


def test_the_same_desync_in_dumps_alone_only_leans(tmp_path):
    """The desync bundle's real dumps without the log that shows the job failing: a lean."""
    files = {f"flightrec/{p.name}": p.read_bytes() for p in (_DESYNC / "flightrec").iterdir()}
    bundle = tmp_path / "bundle"
    (bundle / "flightrec").mkdir(parents=True)
    for name, data in files.items():
        (bundle / name).write_bytes(data)
    v = analyze(bundle).verdict
    assert v.cause == "unknown" and "collective_desync" in v.summary, (v.summary, v.trace)


def test_comparable_keeps_what_torch_compares():
    from postmortem.collectives import comparable
    from postmortem.parsers.flightrec import Shape
    a2a = Shape(((3, 8),), ("Float",), ((3, 8),), ("Float",))
    assert comparable("all_to_all", a2a)[1] == Shape((), ("Float",), (), ("Float",))
    assert comparable("all_reduce", a2a) == ("all_reduce", a2a)            # sizes must agree
    assert comparable("gather", a2a)[1] == Shape(((3, 8),), ("Float",), (), ())
    assert comparable("scatter", a2a)[1] == Shape((), (), ((3, 8),), ("Float",))


# ---------------------------------------------------------------- H1: a progress bar must have moved

_TOKENIZE = FIXTURES / "corpus/multi-tokenize-timeout-04/bundle/train.log"


def test_a_bar_printed_before_the_hang_is_no_sign_the_silent_rank_was_working(tmp_path):
    """The corpus log's timeouts with only its first progress line kept, placed before them
    (edited at test time: the later bar lines removed) -- nothing shows work advancing."""
    lines = _TOKENIZE.read_text(encoding="utf-8").splitlines()
    bars = [line for line in lines if "%|" in line]
    kept = bars[:1] + [line for line in lines if "%|" not in line]
    v = analyze(_bundle(tmp_path, {"train.log": "\n".join(kept) + "\n"})).verdict
    assert not any("still running" in (f.summary or "") for f in (v.root, *v.alternatives) if f), v.trace


def test_a_bar_still_rising_beside_the_timeouts_is_a_sign():
    """Near miss: the corpus case as stored (rank 0's tokenization bar rises while ranks time out)."""
    v = analyze(_TOKENIZE.parent).verdict
    assert v.cause == "straggler_timeout", v.trace


# ---------------------------------------------------------------- H2: a SIGBUS beside a default-size /dev/shm

_TRUNCATED = FIXTURES / "lab/output/lab-torchrun-sigbus-truncated/bundle"  # real: rank 1 reads a mmapped file truncated under it
_DEMO = FIXTURES / "demo/bundle"                                             # real: rank 1 fills a 96 MiB segment in a 64 MiB /dev/shm


def _with_demo_df(tmp_path: Path, train_log: Path) -> Path:
    return _bundle(tmp_path, {"train.log": train_log.read_text(encoding="utf-8"),
                              "df_shm.txt": (_DEMO / "df_shm.txt").read_text(encoding="utf-8"),
                              "df_B1_shm.txt": (_DEMO / "df_B1_shm.txt").read_text(encoding="utf-8")})


def test_a_sigbus_beside_a_64m_dev_shm_only_leans(tmp_path):
    """The truncated-file SIGBUS (nothing to do with /dev/shm) with the demo's real 64M df beside it."""
    v = analyze(_with_demo_df(tmp_path, _TRUNCATED / "train.log")).verdict
    assert v.cause == "unknown" and "shm_exhausted" in v.summary, (v.summary, v.trace)


def test_segments_the_dead_process_left_in_dev_shm_are_the_second_sign(tmp_path):
    """Near miss: the demo's own log, whose resource tracker reports the dead rank's leaked
    shared_memory segment, beside the same df: claimed on two independent weak signs."""
    v = analyze(_with_demo_df(tmp_path, _DEMO / "train.log")).verdict
    assert v.cause == "shm_exhausted", v.trace
    rests = next(t for t in v.trace if "independent weak signs" in t)
    assert "sigbus.small_shm" in rests and "sigbus.shm_segments_left" in rests


# ---------------------------------------------------------------- M1: only the stack that died locates a SIGBUS

_WATCHDOG = FIXTURES / "validation20/particleflow-rank0-epoch-end-test-watchdog-timeout-05/bundle/stderr.txt"


def test_a_peer_s_ncclwatchdog_backtrace_is_not_where_the_sigbus_hit(tmp_path):
    """The truncated-file SIGBUS + a peer's real c10d ProcessGroupNCCL watchdog backtrace
    (jpata/particleflow#390) in another file: no 'it hit inside NCCL code'."""
    backtrace = "\n".join(_WATCHDOG.read_text(encoding="utf-8").splitlines()[:7]) + "\n"
    bundle = _bundle(tmp_path, {"train.log": (_TRUNCATED / "train.log").read_text(encoding="utf-8"),
                                "peer.log": backtrace})
    v = analyze(bundle).verdict
    assert not any("inside NCCL code" in t for t in v.trace), v.trace


# ---------------------------------------------------------------- H12: the JVM's OutOfMemoryError is no GPU OOM

def _cause_of_line(tmp_path: Path, line: str) -> str:
    return analyze(_bundle(tmp_path, {"stderr.txt": line + "\n"})).verdict.cause


def test_a_jvm_heap_exhaustion_is_not_a_gpu_oom(tmp_path):
    # how OpenJDK reports an uncaught OutOfMemoryError (a Spark/Hive/Flink job beside the training)
    line = 'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space'
    assert _cause_of_line(tmp_path, line) != "gpu_oom"


def test_torch_s_cuda_oom_is_still_a_gpu_oom(tmp_path):
    """Near miss: a real torch line (fixtures/validation* torch.cuda.OutOfMemoryError)."""
    line = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.94 GiB (GPU 1; 79.35 GiB total "
            "capacity; 77.65 GiB already allocated; 316.12 MiB free; 77.66 GiB reserved in total by PyTorch)")
    assert _cause_of_line(tmp_path, line) == "gpu_oom"


# ---------------------------------------------------------------- H13: the pin-memory thread names where, not what

_PIN = "RuntimeError: Caught RuntimeError in pin memory thread for device 0."   # torch _utils.py ExceptionWrapper header (mittagessen/kraken#642)


def test_the_pin_memory_thread_header_alone_is_not_pinned_memory(tmp_path):
    assert _cause_of_line(tmp_path, _PIN) != "pinned_memory"


def test_the_error_the_pin_thread_wrapped_decides(tmp_path):
    """Near miss: the header with the wrapped error torch prints under it ("Original ..."), the
    real `CUDA error: out of memory` of the corpus case oom-gpu-paramsync-returnn-02."""
    text = _PIN + "\nOriginal Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n"
    v = analyze(_bundle(tmp_path, {"stderr.txt": text})).verdict
    assert v.cause == "gpu_oom", v.trace


# ---------------------------------------------------------------- H14: NCCL's INFO retries and fallbacks are no failure

# Lines GENERATED at test time from NCCL's own format strings (no captured log here holds them):
# src/misc/ibvwrap.cc wrap_ibv_modify_qp's INFO before a retry, and 2.27's src/transport/nvls.cc INFO
# fallback; the host:pid:tid prefix is NCCL's INFO prefix.
_RETRY = ("node1:1234:1300 [0] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, "
          "curr state INIT, next state RTR, local GID index 3, retrying 1/8 after 250 msec of sleep")
_NVLS_FALLBACK = ("node1:1234:1300 [0] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : "
                  "CUDA error 401 'the operation cannot be performed in the present state'. Proceeding without NVLS support.")
_ROCE_WARN = FIXTURES / "validation3/roce-modifyqp-110-cross-nic-04/bundle/nccl.log"   # real WARN after the retries


def test_an_ibv_retry_and_an_nvls_fallback_are_not_failures(tmp_path):
    for i, line in enumerate((_RETRY, _NVLS_FALLBACK)):
        assert _cause_of_line(tmp_path / str(i), line) not in ("nccl_network", "nvls_fabric"), line


def test_the_warn_after_the_retries_still_reads_as_the_network():
    """Near miss: the real `NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out`."""
    v = analyze(_ROCE_WARN.parent).verdict
    assert v.cause == "nccl_network", v.trace


# ---------------------------------------------------------------- H10: a GPU fault explains GPU errors only

_APP = FIXTURES / "bundles/lab-torchrun-app-exception/bundle"   # real lab: rank 1 raises IndexError in its own code
# A real NVLink Xid line as the driver prints it (leptonai/gpud's kmsg test data for Xid 145), placed
# at test time inside the job's window (boot+2212.4 s, ~2 s after the IndexError on the bundle's clock).
# (the driver's Fatal form: a Nonfatal one is only a lean by itself, below)
_XID145 = "[ 2212.400000] NVRM: Xid (PCI:0000:04:00): 145, RLW_RSPCOL Fatal XC0 i0 Link 00 (0x00000005 0x00000002 0x00000000 0x00000000)"


def test_a_gpu_fault_does_not_explain_an_exception_the_job_s_own_code_raised(tmp_path):
    files = {p.name: p.read_text(encoding="utf-8") for p in _APP.iterdir() if p.is_file()}
    files["dmesg.txt"] = files["dmesg.txt"].rstrip("\n") + "\n" + _XID145 + "\n"
    v = analyze(_bundle(tmp_path, files)).verdict
    assert not any("app_error" in t and "is explained by" in t for t in v.trace), v.trace
    assert any("is no fallout of" in t for t in v.trace), v.trace


def test_the_lab_app_exception_alone_is_still_the_job_s_own_failure():
    """Near miss: the bundle as stored."""
    assert analyze(_APP).verdict.cause == "app_error"


# ---------------------------------------------------------------- H3: ENOMEM from a system call is one weak sign

_ENOMEM = "OSError: [Errno 12] Cannot allocate memory"    # as CPython raises it (syang1993/FFTNet#8, python/cpython#126715)
_OOM = FIXTURES / "bundles/lab-torchrun-oom-cgroup/bundle"   # real lab: a rank killed by the cgroup OOM killer


def test_a_bare_enomem_only_leans_to_host_oom(tmp_path):
    v = analyze(_bundle(tmp_path, {"stderr.txt": _ENOMEM + "\n"})).verdict
    assert v.cause == "unknown" and "host_oom" in v.summary, v.summary


def test_an_enomem_beside_the_oom_killer_is_host_oom(tmp_path):
    """Near miss: the same line appended (at test time) to the lab's real cgroup-OOM bundle."""
    files = {p.name: p.read_text(encoding="utf-8") for p in _OOM.iterdir() if p.is_file()}
    files["train.log"] = files["train.log"].rstrip("\n") + "\n" + _ENOMEM + "\n"
    v = analyze(_bundle(tmp_path, files)).verdict
    assert v.cause == "host_oom", v.trace


# ---------------------------------------------------------------- M8: a missing dump is no entry, not "behind"

_FR_STRAGGLER = FIXTURES / "bundles/lab-flightrec-straggler/bundle"   # real lab: rank 2 late, ranks 0,1,3 wait in #6


def _without_dump(tmp_path: Path, rank: int) -> Path:
    import shutil
    bundle = tmp_path / "bundle"
    shutil.copytree(_FR_STRAGGLER, bundle)
    (bundle / "flightrec" / f"nccl_trace_rank_{rank}").unlink()     # removed at test time
    return bundle


def _fr_finding(v):
    return next((f for f in (v.root, *v.alternatives, *v.symptoms) if f and f.rule == "flightrec-hang"), None)


def test_a_waiting_rank_whose_dump_is_missing_is_not_named_behind(tmp_path):
    f = _fr_finding(analyze(_without_dump(tmp_path, 0)).verdict)
    assert f is not None and f.culprit_ranks == (2,), f
    assert "rank(s) 2 never entered" in f.summary and "0 left no dump" in f.summary


def test_when_only_the_late_rank_s_dump_is_missing_the_dumps_only_lean(tmp_path):
    """Near miss of the strong reading: nothing dumped shows a rank behind; ask for rank 2's dump.
    Its missing dump and its missing timeout line are one absence, not two signs."""
    v = analyze(_without_dump(tmp_path, 2)).verdict
    assert any("every dumped rank waited in #6; rank(s) [2] left no dump" in t for t in v.trace), v.trace
    assert not any("behind, alive" in t for t in v.trace)
    assert not any("independent weak signs" in t and "flightrec.dump_missing" in t for t in v.trace), v.trace


def test_the_late_rank_s_own_dump_still_names_it():
    f = _fr_finding(analyze(_FR_STRAGGLER).verdict)
    assert f is not None and f.culprit_ranks == (2,) and f.strength == "strong"


# ---------------------------------------------------------------- M2: RLIMIT_AS fails allocations, it kills nothing

_SIGKILL = FIXTURES / "lab/output/lab-torchrun-sigkill/bundle"                   # real lab: rank 1 SIGKILLs itself
_ULIMIT_V = FIXTURES / "validation21/extra/lab3-ulimit-v-eval-gather/bundle"    # real lab: allocation fails under ulimit -v


def test_a_sigkill_under_a_virtual_memory_limit_is_not_the_limit(tmp_path):
    files = {p.name: p.read_text(encoding="utf-8") for p in _SIGKILL.iterdir() if p.is_file()}
    assert "vmemory(kbytes)      unlimited" in files["ulimit.txt"]
    files["ulimit.txt"] = files["ulimit.txt"].replace("vmemory(kbytes)      unlimited",
                                                      "vmemory(kbytes)      67108864")   # edited at test time
    v = analyze(_bundle(tmp_path, files)).verdict
    assert not any(t.startswith("memory-limit-set:") for t in v.trace), v.trace
    assert v.cause != "host_oom", v.trace


def test_an_allocation_that_failed_under_ulimit_v_is_still_the_limit():
    """Near miss: the lab's real DefaultCPUAllocator ENOMEM under `ulimit -v 3000000`."""
    v = analyze(_ULIMIT_V).verdict
    assert v.cause == "host_oom" and any(t.startswith("memory-limit-set:") for t in v.trace), v.trace


# ---------------------------------------------------------------- M4: one memory series, and a kill is a kill

_DS = FIXTURES / "validation10/deepspeed-offload-host-oom-06/bundle/deepspeed.log"   # deepspeedai/DeepSpeed#4571


def _ds_lines() -> tuple[str, str]:
    lines = _DS.read_text(encoding="utf-8").splitlines()
    return (next(line for line in lines if "CPU Virtual Memory" in line),
            next(line for line in lines if "Killing subprocess" in line))


def test_rising_readings_then_a_launcher_teardown_are_no_oom_kill(tmp_path):
    reading, teardown = _ds_lines()
    earlier = reading.replace("used = 26.4 GB, percent = 84.6%", "used = 12.5 GB, percent = 40.0%")  # edited at test time
    v = analyze(_bundle(tmp_path, {"deepspeed.log": "\n".join([earlier, reading, teardown]) + "\n"})).verdict
    # the high last reading and the rise to it are one series: one weak sign, no claim
    assert not any("independent weak signs" in t and "memory.rising" in t for t in v.trace), v.trace
    assert v.cause != "host_oom"


def test_a_high_reading_then_the_launcher_s_start_is_no_death(tmp_path):
    """A launcher's first line after the reading (a relaunch) says nothing died."""
    reading, _ = _ds_lines()
    start = next(line for line in (FIXTURES / "lab/output/lab-torchrun-sigkill/bundle/train.log")
                 .read_text(encoding="utf-8").splitlines() if "torch/distributed/run.py" in line)
    v = analyze(_bundle(tmp_path, {"deepspeed.log": reading + "\n" + start + "\n"})).verdict
    assert not any(t.startswith("high-host-memory-then-death:") for t in v.trace), v.trace


def test_a_high_reading_then_a_sigkill_is_still_read(tmp_path):
    """Near miss: the same reading, then a real torchrun SIGKILL exit record (lab-torchrun-sigkill)."""
    reading, _ = _ds_lines()
    kill = next(line for line in (FIXTURES / "lab/output/lab-torchrun-sigkill/bundle/train.log")
                .read_text(encoding="utf-8").splitlines() if "failed (exitcode: -9)" in line)
    v = analyze(_bundle(tmp_path, {"deepspeed.log": reading + "\n" + kill + "\n"})).verdict
    assert any(t.startswith("high-host-memory-then-death:") for t in v.trace), v.trace


# ---------------------------------------------------------------- H10 (3): the driver's own "Nonfatal"

# Real NVLink5 Xid lines as the driver prints them (leptonai/gpud's kmsg test data, PR #1160/#1174).
_XID145_NONFATAL = "[ 2212.400000] NVRM: Xid (PCI:0000:04:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 00 (0x00000006 0x00000001 0x00000000 0x00000000)"
_XID145_FATAL = "[ 2212.400000] NVRM: Xid (PCI:0000:04:00): 145, RLW_RSPCOL Fatal XC0 i0 Link 00 (0x00000005 0x00000002 0x00000000 0x00000000)"


def test_an_nvlink_xid_the_driver_calls_nonfatal_only_leans(tmp_path):
    v = analyze(_bundle(tmp_path, {"dmesg.txt": _XID145_NONFATAL + "\n"})).verdict
    assert v.cause == "unknown" and "nvlink_fault" in v.summary, v.summary


def test_an_nvlink_xid_the_driver_calls_fatal_is_an_nvlink_fault(tmp_path):
    """Near miss: the same Xid, the driver's word Fatal."""
    v = analyze(_bundle(tmp_path, {"dmesg.txt": _XID145_FATAL + "\n"})).verdict
    assert v.cause == "nvlink_fault", v.trace
