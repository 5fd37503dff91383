"""Audit 6 findings taken by the second fixer (M3, M6, M10, H10's time test, L5-L7), each with the
real line that was over-claimed and a near miss.  Real lines come from the sources named beside
them; bundles are arranged at test time from real files (marked)."""
from __future__ import annotations

from tests.classify.arrange import FIXTURES, ROOT, analyze_files as _bundle, read as _read  # noqa: F401


# ---------------------------------------------------------------- M3: memory free against host_oom, any ENOMEM

# python/cpython#126715: mmap.mmap(fd, 1, trackfd=False) in a loop fails at vm.max_map_count with 48 GB of RAM
_MMAP_ENOMEM = """Traceback (most recent call last):
  File "/home/user/repro.py", line 10, in <module>
    mmap_object = mmap.mmap(fd, 1, trackfd=False)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
OSError: [Errno 12] Cannot allocate memory
"""
_LAB = FIXTURES / "lab/output/lab-torchrun-sigkill/bundle"   # real meminfo.txt of a lab run (97% available)
_COUNTER = "the host had memory to give"


def test_an_enomem_with_memory_free_speaks_against_host_oom_without_a_memlock_measurement(tmp_path):
    a = _bundle(tmp_path, {"train.log": _MMAP_ENOMEM, "meminfo.txt": _read(_LAB / "meminfo.txt"),
                           "dmesg.txt": _read(FIXTURES / "kernel/dmesg_T.txt")})   # a kernel log, no OOM kill
    assert any(_COUNTER in line for line in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause != "host_oom"


def test_without_a_kernel_log_the_free_memory_proves_nothing(tmp_path):
    # near miss: the same ENOMEM and meminfo, no kernel log -- "no OOM kill seen" would prove nothing
    a = _bundle(tmp_path, {"train.log": _MMAP_ENOMEM, "meminfo.txt": _read(_LAB / "meminfo.txt")})
    assert not any(_COUNTER in line for line in a.verdict.trace)


# ---------------------------------------------------------------- M6: absence needs NCCL output; SeqNums per group

# XPixelGroup/BasicSR#737: rank 1's watchdog timeout (the first line of the report), no NCCL_DEBUG output
_TIMEOUTS = "\n".join(
    f"[rank{r}]:[E626 06:24:44.{frac} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
    f"timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran "
    f"for {ms} milliseconds before timing out."
    for r, frac, ms in ((1, "903881913", 600020),)) + "\n"
# fixtures/corpus/nccl-p2p-iommu-01 nccl.log: one NCCL INFO line (NCCL_DEBUG=INFO was on)
_NCCL_INFO = "jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO Bootstrap : Using [0]eth0:10.2.3.32<0>\n"


def test_no_transport_error_is_no_sign_when_nccl_printed_nothing(tmp_path):
    a = _bundle(tmp_path, {"train.log": _TIMEOUTS})
    assert not any("timeout.no_transport_error" in line for line in a.verdict.trace), a.verdict.trace


def test_no_transport_error_counts_where_nccl_debug_output_shows_none(tmp_path):
    # near miss: the same timeouts with NCCL's INFO output in the bundle -- a WARN could have been seen
    a = _bundle(tmp_path, {"train.log": _NCCL_INFO + _TIMEOUTS})
    assert any("timeout.no_transport_error" in line for line in a.verdict.trace), a.verdict.trace


# sgl-project/sglang#1693's line, its PG, rank and SeqNum EDITED AT TEST TIME (marked): two ranks of a
# two-rank job, each timed out in a collective of the group it names
_SGLANG = ("  what():  [PG {pg} Rank {r}] Process group watchdog thread terminated with exception: [Rank {r}] Watchdog "
           "caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, NumelIn=19008, "
           "NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n")


def test_seqnums_of_different_process_groups_are_not_compared(tmp_path):
    a = _bundle(tmp_path, {"rank0.log": _SGLANG.format(pg=3, r=0, seq=9141),
                           "rank1.log": _SGLANG.format(pg=5, r=1, seq=120)})
    assert not any("timeout.seq_apart" in line for line in a.verdict.trace), a.verdict.trace


def test_seqnums_apart_within_one_process_group_still_count(tmp_path):
    # near miss: both in PG 3, rank 1 two collectives behind
    a = _bundle(tmp_path, {"rank0.log": _SGLANG.format(pg=3, r=0, seq=9141),
                           "rank1.log": _SGLANG.format(pg=3, r=1, seq=9139)})
    assert any("timeout.seq_apart" in line for line in a.verdict.trace), a.verdict.trace


def test_the_watchdog_line_s_process_group_is_read():
    # sgl-project/sglang#1693: the PG is on the watchdog's wrapper of the line
    from postmortem.parsers import parse_text
    r = parse_text("x", ["  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] "
                         "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, "
                         "NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out."])
    (t,) = [e for e in r.sink.events if e.data.get("seq") == "9141"]
    assert t.data.get("pg_outer") == "3" and t.rank == 5


# ---------------------------------------------------------------- L7: an Xid line has one reader

# this project's fixtures (audit probe p20): a real Xid 79 line, ctime form
_XID79 = ("[Tue Apr 15 16:50:03 2025] NVRM: Xid (PCI:0000:02:00): 79, pid='<unknown>', name=<unknown>, "
          "GPU has fallen off the bus.\n")


def test_an_xid_79_line_is_read_by_the_xid_catalog_only(tmp_path):
    a = _bundle(tmp_path, {"dmesg.txt": _XID79})
    assert not any(line.startswith("known-messages: gpu_fell_off_bus x") for line in a.verdict.trace), a.verdict.trace
    assert a.verdict.cause == "gpu_fell_off_bus" and a.verdict.confidence < 0.95


def test_the_driver_s_own_fell_off_the_bus_line_is_still_the_message_pattern_s(tmp_path):
    # near miss: messages.toml gpu_fell_off_bus's sample (corpus xid79-fell-off-bus-01), no Xid on the line
    a = _bundle(tmp_path, {"dmesg.txt": "[1084456.074566] NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.\n"})
    assert any(line.startswith("known-messages: gpu_fell_off_bus x") for line in a.verdict.trace), a.verdict.trace


# ---------------------------------------------------------------- L6: fallout words are whole words

def _fallout_text():
    import re
    from postmortem.knowledge.registry import SIGN
    return re.compile("|".join(SIGN.app_exception.params["fallout_text"]))


def test_an_own_code_error_about_a_restore_is_no_communication_fallout():
    # GENERATED (the audit's probe p21, hand-written and marked): exercises the fallout_text words only
    assert not _fallout_text().search("ValueError: checkpoint /ckpt/step_1000.pt has no 'model' key; cannot restore")
    assert not _fallout_text().search("KeyError: 'datastore'")


def test_torch_s_store_barrier_timeout_is_still_fallout():
    # near miss: fixtures/validation21/ezflow-ddp-spawn-rank-from-config-store-barrier-timeout-16 stderr.txt
    line = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
            "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)")
    assert _fallout_text().search(line)
    assert _fallout_text().search("RuntimeError: [c10d] TCPStore connect failed")  # GENERATED: the store's own name
