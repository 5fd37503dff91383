"""Audit 6 leftovers taken by the round-7 fixer (H10's time test, M9, M5, H4's remainder), each with
the real line that was over-claimed and a near miss.  Bundles are arranged at test time from real
files and lines (sources named beside them); any edit made at test time is marked."""
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


# ---------------------------------------------------------------- H10 (time): a later fault explains no earlier crash

# k2-fsa/icefall#1764 (fixtures/validation21/icefall-…-bad-gpu-04): "CUDA error: an illegal memory access was
# encountered" at 2024-10-02 17:24:53,118, local time; the lab's timezone.txt makes that zone known (Etc/UTC).
_ICEFALL = _read(FIXTURES / "validation21/icefall-zipformer-ddp-illegal-address-bad-gpu-04/bundle/stderr.txt")
_ZONE = _read(FIXTURES / "bundles/lab-torchrun-app-exception/bundle/timezone.txt")
# fixtures/validation20/akash-4090-xid79-recurring-cordoned-02 dmesg.txt: a real `dmesg -T` Xid 79 line; its
# DATE IS EDITED AT TEST TIME (marked) to place it around the icefall crash.
_XID79 = "[{when}] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
_NO_FALLOUT = "app_error is no fallout of gpu_fell_off_bus"
_EXPLAINED = "app_error (0.71) is explained by gpu_fell_off_bus"


def _icefall_with_xid(tmp_path, when: str, zone: bool = True, iso: bool = False):
    files = {"stderr.txt": _ICEFALL}
    if zone:
        files["timezone.txt"] = _ZONE
    if iso:   # the same line as `dmesg --time-format iso` prints it: a zoned (measured) time
        files["dmesg.txt"] = _XID79.replace("[{when}] ", "{when} ").format(when=when)
    else:
        files["dmesg_T.txt"] = _XID79.format(when=when)
    return _bundle(tmp_path, files).verdict


def test_a_fault_logged_minutes_after_the_crash_does_not_absorb_it(tmp_path):
    v = _icefall_with_xid(tmp_path, "Wed Oct  2 17:26:40 2024")   # 107 s after the CUDA error
    assert any(_NO_FALLOUT in line and "106.9 s before" in line for line in v.trace), v.trace
    assert not any(_EXPLAINED in line for line in v.trace)
    # the crash stays a rival of another category: the later fault is no confident claim
    assert v.confidence < 0.8


def test_a_fault_logged_before_the_crash_still_explains_it(tmp_path):
    # near miss: the same Xid 79 one second BEFORE the CUDA error -- the crash is its fallout
    v = _icefall_with_xid(tmp_path, "Wed Oct  2 17:24:52 2024")
    assert any(_EXPLAINED in line for line in v.trace), v.trace
    assert (v.cause, v.confidence) == ("gpu_fell_off_bus", 0.92)


def test_seconds_of_logger_skew_are_no_order(tmp_path):
    # near miss: the Xid stamped 3 s after the CUDA error (dmesg -T has 1 s resolution; a driver logs a
    # fault it finds on its next look at the GPU) -- still read as the crash's cause
    v = _icefall_with_xid(tmp_path, "Wed Oct  2 17:24:56 2024")
    assert any(_EXPLAINED in line for line in v.trace), v.trace
    assert not any(_NO_FALLOUT in line for line in v.trace)


def test_an_assumed_zone_between_two_clocks_orders_nothing(tmp_path):
    # near miss: no zone in the bundle, the training log's local time against a zoned kernel time: the
    # 107 s could be hours either way
    v = _icefall_with_xid(tmp_path, "2024-10-02T17:26:40,123456+00:00", zone=False, iso=True)
    assert any("order is not known" in line for line in v.trace), v.trace
    assert any(_EXPLAINED in line for line in v.trace)


def test_two_local_clocks_in_one_assumed_zone_still_order(tmp_path):
    # both times printed without a zone and read in the same assumed one: the error cancels
    v = _icefall_with_xid(tmp_path, "Wed Oct  2 17:26:40 2024", zone=False)
    assert any(_NO_FALLOUT in line for line in v.trace), v.trace


# ---------------------------------------------------------------- M9: the job's own native module, by inclusion

_LIBRARY_SEGV = FIXTURES / "lab/output/lab-library-segv/bundle"   # fixtures/lab/library_segv.sh: real gdb bt


def test_a_segfault_inside_a_system_library_is_a_named_lean_not_the_jobs_code():
    v = analyze(_LIBRARY_SEGV).verdict
    assert v.cause == "unknown", v.trace
    assert any("the fault site is the job's own code: False (a library: /lib/x86_64-linux-gnu/libz.so.1)" in line
               for line in v.trace), v.trace
    assert any("leaning app_error" in line for line in v.trace)


def test_a_function_ctypes_called_in_the_jobs_own_library_stays_its_code():
    # near miss: the lab's ctypes helper (./libfastgather.so, gdb names no module for its frame)
    v = analyze(FIXTURES / "validation21/lab3-ctypes-gather-segv-core/bundle").verdict
    assert (v.cause, v.root.signal) == ("app_error", "app.native_frames"), v.trace
    v = analyze(FIXTURES / "bundles/lab-torchrun-app-sigsegv/bundle").verdict
    assert v.cause == "app_error" and v.confidence >= 0.6, v.trace


def test_interconnect_and_hpc_libraries_are_libraries_wherever_they_load_from():
    from postmortem.classify.rules.app import _library_module, _own_module
    # the module paths audit 6 M9 checked (EFA installer, HPC-X, CUDA toolkit, distro packages)
    for module in ("/opt/amazon/efa/lib/libfabric/libefa-fi.so", "/opt/amazon/efa/lib/libfabric.so.1",
                   "/usr/lib/x86_64-linux-gnu/librdmacm.so.1", "/usr/lib64/libgdrapi.so.2",
                   "/opt/nvshmem/lib/libnvshmem_host.so.3", "/opt/hpcx/ompi/lib/libmpi.so.40",
                   "/usr/lib/x86_64-linux-gnu/libhwloc.so.15", "libgomp.so.1", "/home/u/proj/libjemalloc.so.2",
                   "/usr/local/cuda/lib64/libnvrtc.so.12"):
        assert _library_module(module), module
        assert not _own_module(module, ("/home/u/proj/",)), module
    # near misses: the job's own builds
    assert _own_module("/home/u/proj/csrc/build/fused_ops.so", ("/home/u/proj/csrc/",))
    assert _own_module("./libfastgather.so", ())                      # relative: the launcher's working folder
    assert not _own_module("/data/shared/libhelper.so", ("/home/u/proj/",))   # nobody says it is the job's


# ---------------------------------------------------------------- M5: py-spy "active" under NCCL

# fixtures/validation21/lab3-val-tokenize-straggler: real py-spy dumps after a collective timeout (rank 0 active
# in bpe_tokenize, rank 1 idle in all_reduce); fixtures/corpus/nccl-p2p-iommu-01: a real NCCL INFO line, so the
# job reads as an NCCL job.
_TOKENIZE = FIXTURES / "validation21/lab3-val-tokenize-straggler/bundle"
_NCCL_LINE = "jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO Bootstrap : Using [0]eth0:10.2.3.32<0>\n"
_LEANS = "-- it only leans"


def _tokenize_bundle(tmp_path, rank0_top: str | None = None, nccl: bool = True):
    files = {n: _read(_TOKENIZE / n) for n in ("train.log", "py-spy-rank0.txt", "py-spy-rank1.txt")}
    if rank0_top is not None:   # EDITED AT TEST TIME (marked): rank 0's innermost frame replaced
        files["py-spy-rank0.txt"] = files["py-spy-rank0.txt"].replace("    bpe_tokenize (train_seq2seq.py:18)\n", rank0_top)
        assert rank0_top in files["py-spy-rank0.txt"]
    if nccl:
        files["nccl.log"] = _NCCL_LINE
    return _bundle(tmp_path, files).verdict


# torch/cuda/__init__.py:1219 (torch 2.13.0) is `torch._C._cuda_synchronize()` inside torch.cuda.synchronize
_IN_SYNC = "    synchronize (torch/cuda/__init__.py:1219)\n    train_step (train_seq2seq.py:18)\n"


def test_an_active_rank_in_a_cuda_sync_under_nccl_only_leans(tmp_path):
    v = _tokenize_bundle(tmp_path, _IN_SYNC)
    assert any("show a CUDA sync " + _LEANS in line for line in v.trace), v.trace
    assert not any("stacks.rank_running_elsewhere" in line for line in v.trace)


def test_an_active_rank_in_its_own_code_under_nccl_only_leans(tmp_path):
    # a Python-only dump cannot show .item() or .cpu() (C methods): the rank's own frame says nothing
    v = _tokenize_bundle(tmp_path, "    train_step (train_seq2seq.py:18)\n")
    assert any("show no CPU-side work " + _LEANS in line for line in v.trace), v.trace


def test_an_active_rank_tokenizing_under_nccl_is_still_running(tmp_path):
    # near miss: the real dump, rank 0 in CPU-side input work
    v = _tokenize_bundle(tmp_path)
    assert not any(_LEANS in line for line in v.trace), v.trace
    assert v.cause == "straggler_timeout" and v.confidence >= 0.6


def test_an_active_rank_in_a_cuda_sync_without_nccl_is_running(tmp_path):
    # near miss: gloo's collectives block the calling thread, so a rank syncing its GPU was not in one
    v = _tokenize_bundle(tmp_path, _IN_SYNC, nccl=False)
    assert not any(_LEANS in line for line in v.trace), v.trace
