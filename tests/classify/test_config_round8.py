"""Engine round 8, config area (issue 13): mechanisms read from the programs that print the
evidence, each on a real line that fires it and a near miss that must not."""
from __future__ import annotations

import shutil
from pathlib import Path

from postmortem.run import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FOPEN_SEGV = FIXTURES / "validation25/lab-a/lab7-spawn-rank1-vocab-missing-fopen-segv-core/bundle"


# ---------------------------------------------------------------- faulthandler + gdb of one death

def test_gdb_backtrace_of_the_core_places_a_fault_the_python_dump_cannot(tmp_path):
    """faulthandler prints only the Python line that called into native code (ctypes); gdb's bt
    on the core of the same SIGSEGV shows _IO_fgets(fp=0x0) called by the job's own load_vocab
    (vocab.c, reached through libffi): the job's native code (app.native_frames)."""
    v = analyze(FOPEN_SEGV).verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert v.confidence >= 0.6 and "load_vocab" in v.summary


def test_the_python_dump_alone_does_not_place_the_fault(tmp_path):
    """Near miss: the same console without the core's backtrace -- the faulthandler dump shows the
    Python line only, so the SIGSEGV stays one weak sign (a lean, not a claim)."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(FOPEN_SEGV / "console.log", bundle / "console.log")
    v = analyze(bundle).verdict
    assert v.cause == "unknown", v.trace
    assert any("leaning app_error" in t or "app_error rests on one weak sign" in t for t in v.trace), v.trace


# ---------------------------------------------------------------- a checkpoint cut short

LOAD_LINES = FIXTURES / "lab/output/lab-torch-load-lines/lines.txt"
BEST_CKPT = FIXTURES / "validation25/lab-a/lab7-rank1-reads-best-ckpt-while-rank0-writes/bundle"


def test_a_checkpoint_without_its_zip_end_record_reads_as_the_jobs_checkpoint():
    """torch.load of half the bytes torch.save wrote (fixtures/lab/torch_load_lines.sh): miniz finds
    no central directory -- the catalog reads it as the job's checkpoint handling."""
    from postmortem.knowledge import catalog

    truncated, jit_miss = LOAD_LINES.read_text().splitlines()[:2]
    read = catalog.match_message(truncated, ("pytorch",))
    assert read is not None and read.entry.id == "pt.checkpoint_truncated" and read.cause == "app_error"
    # near miss: the same reader's error for a whole checkpoint given to torch.jit.load
    miss = catalog.match_message(jit_miss, ("pytorch",))
    assert miss is None or miss.entry.id != "pt.checkpoint_truncated"


def test_rank_reading_a_checkpoint_still_being_written_is_the_jobs_code():
    """rank 1 loads best.pt while rank 0's torch.save is still writing it; rank 0's gloo
    'Connection closed by peer' afterwards is the fallout."""
    v = analyze(BEST_CKPT).verdict
    assert (v.category.value, v.cause) == ("config", "app_error"), v.trace
    assert any(r.path.endswith("1/stderr.log") for r in v.root.evidence), v.root.evidence


# ---------------------------------------------------------------- watchdog records of one work disagree

# NVIDIA/nccl#1409 (torch 2.4, "happens at the end of each epoch"), verbatim from the log.
_NCCL_1409 = (
    "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000) ran for "
    "600026 milliseconds before timing out.\n"
    "[rank7]:[E816 01:45:40.184373931 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 7] Exception (either an "
    "error or timeout) detected by watchdog at work: 80078, last enqueued NCCL work: 80078, last completed NCCL "
    "work: 80077.\n"
    "[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=2106881, NumelOut=2106881, Timeout(ms)=600000) ran "
    "for 600013 milliseconds before timing out.\n")
# vllm-project/vllm#8978 (torch 2.4): every rank's record of work 1 is the same ALLREDUCE -- the near miss.
_VLLM_8978 = (
    "[rank2]:[E1001 16:06:04.537131842 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, Timeout(ms)=600000) ran for 600009 "
    "milliseconds before timing out.\n"
    "[rank2]:[E1001 16:06:04.537356909 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 2] Exception (either an "
    "error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.\n"
    "[rank0]:[E1001 16:06:04.539355394 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, Timeout(ms)=600000) ran for 600012 "
    "milliseconds before timing out.\n"
    "[rank0]:[E1001 16:06:04.539557761 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 0] Exception (either an "
    "error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.\n")


def _verdict_of(tmp_path, text):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "train.log").write_text(text)
    return analyze(bundle).verdict


def _desync_signs(v):
    return [f.signal for f in (v.root, *v.symptoms, *v.alternatives) if f is not None and f.cause == "collective_desync"]


def test_ranks_whose_records_of_one_work_differ_lean_to_a_desync(tmp_path):
    """rank 7's work 80078 is a BROADCAST of 5056 elements, rank 3's an ALLREDUCE of 2106881; rank 3's
    group is not in the excerpt, so the disagreement only leans (SeqNums count per group)."""
    v = _verdict_of(tmp_path, _NCCL_1409)
    assert any("timeout-records-disagree: SeqNum 80078" in t and "group not placed" in t for t in v.trace), v.trace
    assert _desync_signs(v) == ["timeout.same_seq_different_work_ungrouped"], v.trace


def test_records_placed_in_one_group_claim_the_desync(tmp_path):
    """Both records placed in process group 0: the ranks ran different collectives.  CONSTRUCTED for
    the placement: rank 3's group line is rank 7's real line with the rank number changed (the
    issue's excerpt cuts rank 3's)."""
    companion = _NCCL_1409.splitlines()[1].replace("[rank7]", "[rank3]").replace("Rank 7]", "Rank 3]")
    v = _verdict_of(tmp_path, _NCCL_1409 + companion + "\n")
    assert (v.category.value, v.cause) == ("config", "collective_desync"), v.trace
    assert v.root.signal == "timeout.same_seq_different_work"


def test_the_same_work_on_every_rank_is_no_desync(tmp_path):
    """Near miss: every rank's record of work 1 is ALLREDUCE of 128 elements (a stuck collective)."""
    v = _verdict_of(tmp_path, _VLLM_8978)
    assert not any(t.startswith("timeout-records-disagree") for t in v.trace), v.trace
    assert v.cause != "collective_desync"


# ---------------------------------------------------------------- every rank waits in send()

PIPELINE = FIXTURES / "validation23/lab-b/lab5-pipeline-microbatch-config-mismatch/bundle"


def test_every_rank_waiting_in_send_is_a_point_to_point_desync():
    """Stage 0 sends 8 micro-batches, stage 1 receives 4 and starts sending gradients: rank 0's gloo
    timeout (and its faulthandler dump) and rank 1's 'Connection closed by peer' both end in
    distributed_c10d.send -- no rank is in recv(), so no transfer can complete."""
    v = analyze(PIPELINE).verdict
    assert (v.category.value, v.cause) == ("config", "collective_desync"), v.trace
    assert v.root.signal == "stacks.p2p_one_direction"


def test_one_rank_placed_in_send_is_not_enough(tmp_path):
    """Near miss: node 0's output alone -- rank 0 waits in send(), but where rank 1 was is not in the
    bundle (a rank in recv() would have matched it)."""
    bundle = tmp_path / "bundle"
    shutil.copytree(PIPELINE, bundle, ignore=shutil.ignore_patterns("node1*"))
    v = analyze(bundle).verdict
    assert not any("waited in send()" in t and "every rank" in t for t in v.trace), v.trace
    assert v.cause != "collective_desync"


# ---------------------------------------------------------------- more of PyTorch's checks of the job's tensors

MISUSE2 = FIXTURES / "lab/output/lab-torch-misuse2-lines/lines.txt"
# In the order of fixtures/lab/programs/torch_misuse2.py CASES
MISUSE2_IDS = ["pt.view_shape_invalid", "pt.view_stride", "pt.target_dtype", "pt.stack_sizes", "pt.leaf_inplace",
               "pt.expand_size", "pt.result_cast", "pt.weights_only_load", "pt.scalar_type", "pt.mat_dtype",
               "pt.scalar_type"]


def test_each_real_misuse_line_reads_as_its_own_entry():
    from postmortem.knowledge import catalog

    lines = MISUSE2.read_text().splitlines()
    for line, want in zip(lines, MISUSE2_IDS):
        read = catalog.match_message(line, ("pytorch",))
        assert read is not None and read.entry.id == want and read.cause == "app_error", (line, read)
    # near miss: embedding's index-dtype check (its text is not in the wheel as one piece: no entry), and
    # a matmul SHAPE error keeps its own entry, not the dtype one
    assert catalog.match_message(lines[len(MISUSE2_IDS)], ("pytorch",)) is None
    real = (FIXTURES / "lab/output/lab-torch-misuse-lines/lines.txt").read_text().splitlines()
    shape_line = next(x for x in real if "mat1 and mat2 shapes" in x)   # fixtures/lab/torch_misuse_lines.sh
    shapes = catalog.match_message(shape_line, ("pytorch",))
    assert shapes is not None and shapes.entry.id == "pt.matmul_shapes"
