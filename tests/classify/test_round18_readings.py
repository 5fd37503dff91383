"""Readings found on the eighteenth sweep's development half (fixtures/validation33, scored at first
sight at 8b4e57ad before any of these):

- A rank whose Flight Recorder dump holds no entry at all had issued no collective: the process
  was alive to write the dump (torch dumps from the rank's own process), so it is behind -- not
  unknown, which is what a rank with no dump is.  Real: lab-c's page-cache-thrash straggler
  (ranks 2 and 3 on a memory-limited node never reached collective #1; read as a stuck
  collective, comms, before).
- The barrier-before-the-block pattern under the names other libraries give it:
  transformers'/yolov5's torch_distributed_zero_first, accelerate's _goes_first, Lightning
  Fabric's rank_zero_first -- a timeout raised inside it is the main process being late.
  Real: LianjiaTech/BELLE#542 (rank 0 still 'Grouping texts' at 29% after 10 h).
- CUDA 803 read as the driver libraries' mismatch, and a catalog message quoted without its
  closing full stop: tests/test_catalog_readings_lines.py, tests/test_catalogs.py."""
from __future__ import annotations

from pathlib import Path

from postmortem import collectives
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "fixtures" / "validation33"
THRASH = DEV / "lab-c" / "lab18c-node1-container-memory-limit-page-cache-thrash-mmap-shard-straggler-timeout-06"
BELLE = DEV / "gh-cn" / "belle-542-pretrain-rank0-grouping-texts-10h-others-barrier-socket-timeout-06"


def test_a_dump_without_any_entry_is_a_rank_that_never_arrived():
    result = analyze(THRASH / "bundle")
    traces = collectives.traces_of(result.case.facts)
    empty = sorted(t.rank for t in traces if len(t.seq) == 0)
    assert empty == [2, 3]
    g = next(g for g in collectives.match(traces).groups if g.frontier == 1)
    assert [b.rank for b in g.behind] == [2, 3] and all(b.last_seq is None for b in g.behind)
    assert list(g.waiting) == [0, 1] and not g.stuck_all and not g.missing_dumps
    v = result.verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), (v.cause, v.trace[-4:])
    assert "holds no collective at all" in v.root.summary


def test_the_same_dumps_without_the_empty_ones_leave_those_ranks_unknown():
    # A rank with no dump at all is not a culprit on absence (audit 6 M8): drop the two empty
    # dumps and they are missing, not behind.
    traces = [t for t in collectives.traces_of(analyze(THRASH / "bundle").case.facts) if len(t.seq) > 0]
    g = next(g for g in collectives.match(traces).groups if g.frontier == 1)
    assert not g.behind and list(g.missing_dumps) == [2, 3]


def test_a_timeout_inside_torch_distributed_zero_first_is_the_main_process_late():
    v = analyze(BELLE / "bundle").verdict
    assert (v.category.value, v.cause) == ("config", "straggler_timeout"), (v.cause, v.trace[-4:])
    assert "torch_distributed_zero_first()" in v.root.summary


def test_sigtrap_from_the_jobs_own_native_op_is_its_own_fault():
    # lab-c: the job's own C op (loaded with ctypes) left a debug trap in; rank 3 hit it on a
    # non-finite input: gdb's backtrace of the core places the int3 in focal_loss_fwd, the job's own.
    case = DEV / "lab-c" / "lab18c-rank3-native-loss-op-debug-trap-macro-left-in-sigtrap-on-nonfinite-08"
    v = analyze(case / "bundle").verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), (v.cause, v.trace[-4:])
    assert "SIGTRAP" in v.root.summary


def test_open_mpi_connecting_to_another_process_is_the_interconnect_set_up():
    # horovod/horovod#1516 (Open MPI's TCP BTL over IB hosts that also carry same-address
    # interfaces): the connect ack names another process than the one dialed.
    case = DEV / "gh-comms3" / "horovod-1516-openmpi-btl-tcp-unexpected-process-identifier-ib-03"
    v = analyze(case / "bundle").verdict
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), (v.cause, v.trace[-4:])


def test_open_mpi_ack_line_from_another_component_reads_the_same():
    # Open MPI's runtime (oob/tcp) prints the same check with its own prefix: one reading.
    from postmortem.knowledge import load
    messages = {m.id: m for m in load().messages}
    line = "[node01:12345] [[1234,0],1] tcp_peer_recv_connect_ack: received unexpected process identifier [[1234,0],2] from [[1234,0],3]"
    assert messages["ompi_tcp_unexpected_peer"].regex.search(line)
    assert messages["ompi_tcp_unexpected_peer"].regex.search("[[1234,0],1] connect-ack header from [[1234,0],2] is okay") is None
