"""Audit 6 leftovers (H10's time test, M9, M5) and audit 7 H1-H3 and M4, taken by the round-7 fixer, each with
the real line that was over-claimed and a near miss.  Bundles are arranged at test time from real
files and lines (sources named beside them); any edit made at test time is marked."""
from __future__ import annotations

from postmortem.run import analyze

from tests.classify.arrange import FIXTURES, ROOT, analyze_files as _bundle, read as _read  # noqa: F401


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
    assert any(_NO_FALLOUT in line and "105.9 s before" in line for line in v.trace), v.trace
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


# ---------------------------------------------------------------- audit 7 H2: an anchored time orders nothing it cannot

# fixtures/validation21/lab3-nan-anomaly-restart: a real torchrun run (banner W1201 16:37:51; rank 1's NaN in backward
# after "rank 0 step 35", printed with no time of its own).  fixtures/xid/xid_public.txt line 7: a public Xid 74 ("NVLink:
# fatal error detected"), its printk stamp replaced AT TEST TIME (marked) by a `dmesg -T` stamp.
_NAN_RUN = _read(FIXTURES / "validation21/lab3-nan-anomaly-restart/bundle/train_output.txt")
_XID74 = _read(FIXTURES / "xid/xid_public.txt").splitlines()[6].split("] ", 1)[1]


def _nan_with_xid74(tmp_path, stamp: str):
    assert _XID74.startswith("NVRM: Xid (PCI:0003:00:00): 74,")
    return _bundle(tmp_path, {"train_output.txt": _NAN_RUN, "dmesg_T.txt": f"[{stamp}] {_XID74}\n"}).verdict


def test_a_line_placed_after_its_files_last_time_is_not_first(tmp_path):
    # the NaN is placed at the banner's 16:37:51 but came after step 35; the Xid at 16:37:52 is inside that gap
    v = _nan_with_xid74(tmp_path, "Tue Dec  1 16:37:52 2026")
    assert not any("app_error happened before" in line for line in v.trace), v.trace
    assert any("overlap within their times' uncertainty" in line for line in v.trace)
    assert v.cause != "app_error"


def test_a_fault_logged_before_the_run_began_still_comes_first(tmp_path):
    # near miss: the Xid 2 s before the launcher's banner -- before anything of the run, whatever its anchors
    v = _nan_with_xid74(tmp_path, "Tue Dec  1 16:37:49 2026")
    assert not any("overlap within their times' uncertainty" in line for line in v.trace), v.trace
    assert v.cause == "nvlink_fault"


# ---------------------------------------------------------------- audit 7 H1: a timeless snapshot takes no root by precedence

# fixtures/bundles/lab-torchrun-app-exception (rank 1's IndexError in its own code, a CPU gloo job) + the public A100
# nvidia-smi table fixtures/system/public/smi_table_580_a100.txt, GPU 1's "Volatile Uncorr. ECC" cell EDITED AT TEST
# TIME 0 -> 1 (marked; the edit tests/classify/test_rules.py makes to exercise GpuHealth).
_APP_EXC = FIXTURES / "bundles/lab-torchrun-app-exception/bundle"
_SMI = _read(FIXTURES / "system/public/smi_table_580_a100.txt")


def _app_exception_with(tmp_path, smi: str):
    files = {p.name: _read(p) for p in _APP_EXC.iterdir() if p.is_file()}
    files["nvidia_smi.txt"] = smi
    return _bundle(tmp_path, files).verdict


def test_a_volatile_ecc_count_does_not_outrank_the_jobs_own_exception(tmp_path):
    row = "|   1  NVIDIA A100-SXM4-40GB          On  |   00000000:10:1D.0 Off |                    0 |"
    assert row in _SMI
    v = _app_exception_with(tmp_path, _SMI.replace(row, row[:-3] + "1 |"))
    assert any("gpu_memory_ecc carries no time" in line for line in v.trace), v.trace
    assert (v.category.value, v.cause) == ("config", "app_error")


def test_the_same_table_without_an_error_changes_nothing(tmp_path):
    # near miss: the real table as published (no uncorrectable error): the exception alone decides
    v = _app_exception_with(tmp_path, _SMI)
    assert not any("carries no time" in line for line in v.trace)
    assert (v.category.value, v.cause, v.confidence) == ("config", "app_error", 0.7)


# ---------------------------------------------------------------- audit 7 H3: Fabric Manager with nothing to manage

# data-infra/cube-studio#29: a 2x RTX 4090 host's journal when Fabric Manager starts (verbatim text; host name replaced
# by "vm", date moved to the lab bundle's day -- as audit 7's probe p4).  fixtures/lab/output/lab-torchrun-sigkill:
# a real run whose rank 1 dies of SIGKILL (no OOM kill).
_SIGKILL = FIXTURES / "lab/output/lab-torchrun-sigkill/bundle"
_FM_NOTHING = (
    "Nov 29 08:22:45 vm nvidia-fabricmanager-start.sh[4753]: Detected Pre-NVL5 system\n"
    "Nov 29 08:22:45 vm nvidia-fabricmanager-start.sh[4756]: request to query NVSwitch device information from "
    "NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n"
    'Nov 29 08:22:45 vm nvidia-fabricmanager-start.sh[4753]: "/usr/bin/nv-fabricmanager -c '
    '/usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1\n'
    "Nov 29 08:22:45 vm systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, "
    "status=1/FAILURE\n")


def _sigkill_with_journal(tmp_path, journal: str):
    files = {p.name: _read(p) for p in _SIGKILL.iterdir() if p.is_file()}
    files["journalctl.txt"] = journal
    return _bundle(tmp_path, files).verdict


def test_fabric_manager_with_no_nvswitch_to_manage_is_no_fabric_failure(tmp_path):
    v = _sigkill_with_journal(tmp_path, _FM_NOTHING)
    assert any("Fabric Manager found no NVSwitch to manage" in line for line in v.trace), v.trace
    assert v.cause != "nvls_fabric"


def test_a_fabric_manager_failure_on_an_nvswitch_host_still_reads(tmp_path):
    # near miss: the same start failure without the driver's "nothing to do" (an NVSwitch host whose FM failed)
    nothing = [line for line in _FM_NOTHING.splitlines(keepends=True) if "NV_WARN_NOTHING_TO_DO" in line]
    assert len(nothing) == 1
    v = _sigkill_with_journal(tmp_path, _FM_NOTHING.replace(nothing[0], ""))
    assert not any("Fabric Manager found no NVSwitch" in line for line in v.trace), v.trace
    assert any("fabric_manager_failure" in line for line in v.trace)


# ---------------------------------------------------------------- audit 7 M4: a peer's fallout is no other death

# fixtures/bundles/lab-torchrun-oom-cgroup: a real run whose rank 1 (pid 24650, named in train.log) the memcg OOM
# killer ended; train.log CUT AT TEST TIME after line 27 (marked): rank 0's gloo "Connection closed by peer"
# traceback and torchrun's SIGTERM kept, torchrun's ChildFailedError table (printed on the dead rank's node) left out.
_OOM_CGROUP = FIXTURES / "bundles/lab-torchrun-oom-cgroup/bundle"


def test_a_survivors_connection_error_does_not_move_the_oom_kill_elsewhere(tmp_path):
    files = {p.name: _read(p) for p in _OOM_CGROUP.iterdir() if p.is_file()}
    files["train.log"] = "".join(files["train.log"].splitlines(keepends=True)[:27])
    assert "rank 1/2 pid 24650" in files["train.log"] and "ChildFailedError" not in files["train.log"]
    v = _bundle(tmp_path, files).verdict
    assert not any("hit another process" in line for line in v.trace), v.trace
    assert v.cause == "host_oom"


def test_a_job_that_died_of_its_own_error_still_points_the_kill_elsewhere():
    # near miss: fixtures/bundles/lab-mlock-ctypes-enomem -- the job died of its own OSError, the OOM kill was another's
    v = analyze(FIXTURES / "bundles/lab-mlock-ctypes-enomem/bundle").verdict
    assert any("the job died otherwise" in line and "hit another process" in line for line in v.trace), v.trace
