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
