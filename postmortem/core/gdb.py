"""The gdb subprocess: a symbolized `thread apply all bt` of a core (analyze --gdb)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def gdb_backtrace(core_path: Path, exe: Path, timeout: float = 30) -> str | None:
    """`thread apply all bt` of a core by gdb, or None when gdb or a file is missing or it times out.

    gdb needs the core as a plain file; decompress a gzip core first.
    """
    gdb = shutil.which("gdb")
    if gdb is None or not Path(exe).is_file() or not Path(core_path).is_file():
        return None
    command = [gdb, "-batch", "-nx", "-iex", "set debuginfod enabled off",
               "-ex", "thread apply all bt", str(exe), str(core_path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return done.stdout


