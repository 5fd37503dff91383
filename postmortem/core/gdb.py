"""The gdb subprocess: a symbolized `thread apply all bt` of a core (analyze --gdb).

Both file names come from a bundle, so neither may ever reach gdb as an option: they are
made absolute (a name that starts with `/` is no option) and follow `--`, after which gdb
reads no option.  gdb reads no init file (-nx), auto-loads no script from beside the
executable, and asks no debuginfod server.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

# Run before gdb reads any file: nothing shipped in a bundle runs inside gdb.
SAFE_SETTINGS = ("set debuginfod enabled off", "set auto-load gdb-scripts off",
                 "set auto-load python-scripts off", "set auto-load guile-scripts off",
                 "set auto-load local-gdbinit off")


def gdb_command(gdb: str, core_path: Path, exe: Path) -> list[str]:
    """gdb's argument list: fixed options, then `--`, then the two absolute file names."""
    command = [gdb, "-batch", "-nx"]
    for setting in SAFE_SETTINGS:
        command += ["-iex", setting]
    command += ["-ex", "thread apply all bt", "--", os.path.abspath(exe), os.path.abspath(core_path)]
    return command


def gdb_backtrace(core_path: Path, exe: Path, timeout: float = 30) -> str | None:
    """`thread apply all bt` of a core by gdb, or None when gdb or a file is missing or it times out.

    gdb needs the core as a plain file; decompress a gzip core first.
    """
    gdb = shutil.which("gdb")
    if gdb is None or not Path(exe).is_file() or not Path(core_path).is_file():
        return None
    try:
        done = subprocess.run(gdb_command(gdb, core_path, exe), capture_output=True, text=True,
                              errors="replace", timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return done.stdout


def executable_in_bundle(folders: list[Path], names: list[str]) -> Path | None:
    """The executable a core names, looked up by base name in the bundle's folders only.

    Never the name itself (it may be relative to wherever the analyst stands, or point
    anywhere on this machine); never a symlink or a file with other hard links.
    """
    for name in names:
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        if base in ("", ".", "..") or "\0" in base:
            continue
        for folder in folders:
            candidate = Path(os.path.abspath(folder)) / base
            try:
                st = os.lstat(candidate)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                return candidate
    return None
