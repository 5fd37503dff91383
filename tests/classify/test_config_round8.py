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
