"""Time read_core on the malformed cores of issue 19 (generated here, in a temp folder):
PN_XNUM claiming 60 M program headers in a sparse file, 22 M and 4 M empty notes, and
65,534 PT_NOTE headers on the same (and on shifted) 1 MiB.  Prints seconds and problems.

    .venv/bin/python bench/hostile_cores.py
"""
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from test_core import hostile_core, note_segment, read_hostile  # noqa: E402

CASES = {
    "PN_XNUM 60 M program headers": lambda d: hostile_core(d / "a", 0, xnum=60_000_000, size=60_000_000 * 56 + 16384),
    "22 M empty notes": lambda d: hostile_core(d / "b", 1, note_segment(4096, 22_000_000 * 12), size=4096 + 22_000_000 * 12),
    "4 M empty notes": lambda d: hostile_core(d / "c", 1, note_segment(4096, 4_000_000 * 12), size=4096 + 4_000_000 * 12),
    "65,534 notes on the same 1 MiB": lambda d: hostile_core(
        d / "e", 65_534, b"".join(note_segment(8 << 20, 1 << 20) for _ in range(65_534)), size=9 << 20),
    "65,534 notes on shifted 1 MiB": lambda d: hostile_core(
        d / "f", 65_534, b"".join(note_segment((8 << 20) + 4 * i, 1 << 20) for i in range(65_534)), size=10 << 20),
}

with tempfile.TemporaryDirectory() as tmp:
    for name, make in CASES.items():
        core = make(Path(tmp))
        t = time.perf_counter()
        result = read_hostile(core)
        print(f"{name:34s} {time.perf_counter() - t:6.3f} s  {result.problems[0] if result.problems else ''}")
