"""What a bundle entry is, and what every reader of a bundle shares.

Owns `Entry` and `BundleError`, the caps (decompressed bytes per member, line length,
sniffing window), `CappedReader` (a stream that stops at its cap), the skipped-artifact
helper, archive member names (refusing absolute and `..` paths, numbering duplicates) and
the per-host folder layout (`assign_hosts`).  The folder, tar and zip readers build on it.
"""
from __future__ import annotations

import io
import sys
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable

from postmortem.budget import Budget
from postmortem.model import Artifact, ArtifactStatus

# Caps that keep a hostile or broken bundle from costing unbounded time or memory.
MAX_DECOMPRESSED_BYTES = 8 << 30      # per archive member or .gz file
MAX_LINE_CHARS = Budget.line_chars    # longer lines are cut (a log line, not a blob)
SNIFF_BYTES = 8192
READ_CHUNK = 1 << 20

ELF_MAGIC = b"\x7fELF"
GZIP_MAGIC = b"\x1f\x8b"
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
# Errors that mean "the data ends or breaks here", from any decompressor or archive reader:
# these, and the errors of the archive modules below once they are imported (an archive
# module is imported only for a bundle that needs it, and one not imported raised nothing).
_CUT_ALWAYS = (EOFError, OSError, zlib.error, ValueError)
_CUT_MODULES = (("tarfile", "TarError"), ("zipfile", "BadZipFile"), ("lzma", "LZMAError"))


def cut_errors() -> tuple[type[BaseException], ...]:
    """What `except` catches for a read that may break off: read at the time of the catch."""
    loaded = (sys.modules.get(module) for module, _ in _CUT_MODULES)
    return _CUT_ALWAYS + tuple(getattr(m, name) for m, (_, name) in zip(loaded, _CUT_MODULES) if m is not None)


def __getattr__(name: str):
    if name == "CUT_ERRORS":   # the older constant's name: the same tuple, read when asked for
        return cut_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")




class BundleError(Exception):
    """The bundle as a whole cannot be opened (missing, not readable, corrupt archive)."""


@dataclass(frozen=True)
class Entry:
    """One readable file of the bundle; `open()` returns a fresh binary stream."""

    path: str                      # '/'-separated path inside the bundle
    size: int | None
    mtime: datetime | None
    open: Callable[[], BinaryIO]
    host: str | None = None        # host assigned by a per-host folder layout
    disk_path: Path | None = None  # the file itself, for a directory bundle (gdb wants a path)
    note: str = ""                 # said on the artifact whatever its content (duplicate name, ...)


class CappedReader(io.RawIOBase):
    """A read-only stream that stops with an error once `cap` bytes have been read."""

    def __init__(self, inner: BinaryIO, cap: int, what: str) -> None:
        self._inner, self._cap, self._what, self._read = inner, cap, what, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = self._inner.read(min(len(buf), self._cap - self._read + 1))
        self._read += len(data)
        if self._read > self._cap:
            raise OSError(f"{self._what}: decompressed size exceeds the cap of {self._cap >> 20} MiB")
        buf[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()

def utc_mtime(ts: float | None) -> datetime | None:
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def not_read(path: str, kind: str, message: str, status: ArtifactStatus = ArtifactStatus.SKIPPED) -> Artifact:
    return Artifact(path=path, kind=kind, status=status, message=message)


def unsafe_member_name(name: str) -> str | None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path in archive; refused"
    if ".." in p.parts:
        return "'..' in archive path; refused"
    return None


class MemberNames:
    """Member names as entry paths: a name seen again is kept as `name (copy 2)`."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def take(self, name: str) -> tuple[str, str]:
        n = self.seen.get(name, 0) + 1
        self.seen[name] = n
        if n == 1:
            return name, ""
        return f"{name} (copy {n})", f"the archive holds {n} or more members named {name!r}; this is copy {n}"


# ---------------------------------------------------------------------------- tar

def assign_hosts(entries: list[Entry]) -> list[Entry]:
    """One subfolder per host: when the bundle's top level is only folders (two or more)
    and they hold the logs, each folder name is taken as that host's name."""
    parts = [PurePosixPath(e.path).parts for e in entries]   # each path parsed once, not twice
    tops = {p[0] for p in parts if len(p) > 1}
    loose = [e for e, p in zip(entries, parts) if len(p) == 1 and not _is_bundle_meta(e.path)]
    if len(tops) < 2 or loose:
        return entries
    return [Entry(e.path, e.size, e.mtime, e.open, p[0], e.disk_path, e.note) for e, p in zip(entries, parts)]


def _is_bundle_meta(path: str) -> bool:
    return path.lower() in {"readme", "readme.md", "readme.txt", "manifest.json", "truth.json", "source.md"}


# ---------------------------------------------------------------------------- sniffing
