"""Audit 6 findings taken by the second fixer (M3, M6, M10, H10's time test, L5-L7), each with the
real line that was over-claimed and a near miss.  Real lines come from the sources named beside
them; bundles are arranged at test time from real files (marked)."""
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
