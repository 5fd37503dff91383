"""How fast and how lean is read_core on a big core?  Prints figures; not a timed test.

    python bench/core_bench.py              # makes a >= 1 GB core under /tmp, deletes it after
    python bench/core_bench.py CORE [EXE]   # measures an existing core

Making a core needs root (core_pattern is set for the run and restored) and gcc.  The
program touches 1.1 GB of anonymous memory, then aborts.  read_core runs in a child
process so that its peak RSS (resource.getrusage, ru_maxrss) is its own; gdb's
`-batch -ex bt` wall time on the same core is printed beside it.
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOUCH_BYTES = 1100 << 20
PROGRAM = r"""
#include <stdlib.h>
#include <string.h>
int main(void) {
    size_t n = %dUL;
    char *p = malloc(n);
    for (size_t i = 0; i < n; i += 4096) p[i] = (char)(i >> 12) | 1;  /* every page dumped */
    abort();
}
"""
PATTERN_FILE = Path("/proc/sys/kernel/core_pattern")


def make_core(work: Path) -> tuple[Path, Path]:
    source, exe = work / "big.c", work / "big"
    source.write_text(PROGRAM % TOUCH_BYTES)
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(source)], check=True)
    saved = PATTERN_FILE.read_text()
    try:
        PATTERN_FILE.write_text(f"{work}/core.%p\n")
        subprocess.run(f"ulimit -c unlimited; exec {exe}", shell=True, cwd=work, check=False)
    finally:
        PATTERN_FILE.write_text(saved)
    cores = list(work.glob("core.*"))
    if not cores:
        sys.exit("no core was written (root needed to set core_pattern)")
    return cores[0], exe


def measure_read_core(core: Path) -> str:
    """Run read_core in a fresh interpreter; it prints its own time and peak RSS."""
    child = f"""
import resource, time
from pathlib import Path
from postmortem.core import read_core
t = time.perf_counter()
with open({str(core)!r}, "rb") as f:
    r = read_core(f, "core")
dt = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
ev = r.events[0].text if r.events else "no event"
print(f"read_core: {{dt:.3f}} s, peak RSS {{rss:.1f}} MiB (whole interpreter), "
      f"{{len(r.stacks)}} stacks, truncated={{r.truncated}}, problems={{len(r.problems)}}: {{ev}}")
"""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env)
    return (done.stdout + done.stderr).strip()


def baseline_rss() -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import resource, elftools.elf.elffile, postmortem.core;"
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"],
        capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)))
    return f"{float(done.stdout):.1f} MiB" if done.returncode == 0 else "?"


def measure_gdb(core: Path, exe: Path | None) -> str:
    gdb = shutil.which("gdb")
    if gdb is None:
        return "gdb: not installed"
    command = [gdb, "-batch", "-nx", "-iex", "set debuginfod enabled off", "-ex", "bt"]
    command += [str(exe), str(core)] if exe else ["-c", str(core)]
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, timeout=600, check=False)
    return f"gdb -batch -ex bt: {time.perf_counter() - start:.3f} s wall"


def main(argv: list[str]) -> None:
    work = None
    if argv:
        core, exe = Path(argv[0]), Path(argv[1]) if len(argv) > 1 else None
    else:
        work = Path(tempfile.mkdtemp(prefix="core_bench.", dir="/tmp"))
        core, exe = make_core(work)
    try:
        print(f"core: {core} ({core.stat().st_size / (1 << 30):.2f} GiB)")
        print(f"interpreter + imports alone: peak RSS {baseline_rss()}")
        print(measure_read_core(core))
        print(measure_gdb(core, exe))
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
