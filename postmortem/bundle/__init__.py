"""Safe discovery of a crash bundle's artifacts.

A bundle is a directory, a .tar / .tar.gz / .tgz / .zip archive (read in place, never
extracted), a single file, or `-` (one log on standard input).  Reading is defensive
from the first byte, and every amount it can be made to spend has a budget (budget.py):

* folders are walked by file descriptor, one component at a time with O_NOFOLLOW, so a
  folder swapped for a symbolic link during the run cannot lead outside; links that
  leave the bundle are not followed; FIFOs, sockets and devices are skipped; a regular
  file with more than one hard link is refused (it may be any file of this machine)
  unless the caller allows hard links;
* archive members with absolute or `..` paths, and link members, are refused; tar
  extended headers are read with a size cap and parsed without regexes; zip entries
  whose data overlap are refused; duplicate member names are all kept and numbered;
* an archive cut short is read as far as it goes;
* decompressed bytes, files and members are counted against the bundle's budget;
  very long lines are cut, runs of blank lines are counted without being split;
* the bundle is only ever opened for reading.

Each file becomes an `Entry` (something to read) or an `Artifact` with status
skipped/error and a message (something we could not read, said plainly).  Content is
sniffed, not trusted by name: an ELF core called `log.txt` is still a core.

The package, one module per concern:
* `entry.py`   - `Entry`, `BundleError`, the caps, capped streams, member names, host folders;
* `folder.py`  - folders and single files, walked by descriptor;
* `tar.py`     - tar archives (capped extended headers, metered decompression);
* `zip.py`     - zip archives (overlap check, capped members);
* `content.py` - sniffing what a file holds, text encodings, gunzip;
* `lines.py`   - decoded, bounded lines (`Lines`, `iter_lines`).
This module opens a bundle of any kind (`open_bundle`) and names it (`bundle_name`); every
name other code imports from `postmortem.bundle` is available here.
"""
from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from typing import BinaryIO

from postmortem.budget import Meter
from postmortem.bundle.content import gunzip, sniff, text_encoding
from postmortem.bundle.entry import (ARCHIVE_SUFFIXES, ELF_MAGIC, GZIP_MAGIC, MAX_DECOMPRESSED_BYTES,
                                     MAX_LINE_CHARS, READ_CHUNK, SNIFF_BYTES, BundleError, CappedReader, Entry,
                                     cut_errors)
from postmortem.bundle.folder import scan_directory, single_file
from postmortem.bundle.lines import Lines, iter_lines
from postmortem.model import Artifact

__all__ = [
    "ARCHIVE_SUFFIXES", "CUT_ERRORS", "ELF_MAGIC", "GZIP_MAGIC", "MAX_DECOMPRESSED_BYTES", "MAX_LINE_CHARS",
    "READ_CHUNK", "SNIFF_BYTES", "BundleError", "CappedReader", "Entry", "Lines", "bundle_name", "gunzip",
    "iter_lines", "open_bundle", "sniff", "text_encoding",
]


def __getattr__(name: str):
    if name == "CUT_ERRORS":   # entry.cut_errors(), read when asked for (archive modules load lazily)
        return cut_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bundle_name(path: Path) -> str:
    if str(path) == "-":
        return "stdin"
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def open_bundle(path: Path, meter: Meter | None = None,
                allow_hardlinks: bool = False) -> tuple[list[Entry], list[Artifact]]:
    """All readable entries of the bundle and the artifacts that could not be read."""
    meter = meter or Meter()
    if str(path) == "-":
        return _stdin_entry(), []
    if not path.exists() and not path.is_symlink():
        raise BundleError(f"{path}: no such file or directory")
    try:
        if path.is_dir():
            return scan_directory(path, meter, allow_hardlinks)
        name = path.name.lower()
        if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")):
            from postmortem.bundle.tar import scan_tar   # tarfile only for a tar bundle (startup time)

            return scan_tar(path, meter)
        if name.endswith(".zip"):
            from postmortem.bundle.zip import scan_zip

            return scan_zip(path, meter)
        if path.is_file():
            return single_file(path, allow_hardlinks)
    except BundleError:
        raise
    except (*cut_errors(), NotImplementedError, struct.error, OverflowError, RecursionError, IndexError,
            KeyError) as exc:
        # Archive headers are bundle content: whatever the library raises on them is a bad bundle.
        raise BundleError(f"{path}: cannot read bundle: {type(exc).__name__}: {exc}") from exc
    raise BundleError(f"{path}: not a directory, archive or regular file")



def _stdin_entry() -> list[Entry]:
    """`analyze -`: one log read from standard input (read once, under the same budget)."""
    def open_stdin() -> BinaryIO:
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    return [Entry("stdin", None, None, open_stdin)]

