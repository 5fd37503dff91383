"""Safe discovery of a crash bundle's artifacts.

A bundle is a directory, a .tar / .tar.gz / .tgz / .zip archive (read in place, never
extracted), or a single file.  Reading is defensive from the first byte:

* links that leave the bundle are not followed; FIFOs, sockets and devices are skipped;
* archive members with absolute or `..` paths, and link members, are refused;
* decompressed sizes are capped; very long lines are cut;
* the bundle is only ever opened for reading.

Each file becomes an `Entry` (something to read) or an `Artifact` with status
skipped/error and a message (something we could not read, said plainly).  Content is
sniffed, not trusted by name: an ELF core called `log.txt` is still a core.
"""
from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable, Iterator

from postmortem.model import Artifact, ArtifactStatus
from postmortem.parsers import flightrec

# Caps that keep a hostile or broken bundle from costing unbounded time or memory.
MAX_DECOMPRESSED_BYTES = 8 << 30      # per archive member or .gz file
MAX_ARCHIVE_TOTAL_BYTES = 32 << 30    # per archive
MAX_LINE_CHARS = 64 * 1024            # longer lines are cut (a log line, not a blob)
SNIFF_BYTES = 8192

ELF_MAGIC = b"\x7fELF"
GZIP_MAGIC = b"\x1f\x8b"
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


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


def bundle_name(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def open_bundle(path: Path) -> tuple[list[Entry], list[Artifact]]:
    """All readable entries of the bundle and the artifacts that could not be read."""
    if not path.exists() and not path.is_symlink():
        raise BundleError(f"{path}: no such file or directory")
    try:
        if path.is_dir():
            return _scan_directory(path)
        name = path.name.lower()
        if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")):
            return _scan_tar(path)
        if name.endswith(".zip"):
            return _scan_zip(path)
        if path.is_file():
            return _single_file(path)
    except BundleError:
        raise
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        raise BundleError(f"{path}: cannot read bundle: {exc}") from exc
    raise BundleError(f"{path}: not a directory, archive or regular file")


def _mtime(ts: float | None) -> datetime | None:
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _single_file(path: Path) -> tuple[list[Entry], list[Artifact]]:
    st = path.stat()
    return [Entry(path.name, st.st_size, _mtime(st.st_mtime), lambda: open(path, "rb"), disk_path=path)], []


def _scan_directory(root: Path) -> tuple[list[Entry], list[Artifact]]:
    root = root.resolve()
    entries: list[Entry] = []
    skipped: list[Artifact] = []

    def walk(folder: Path, rel: PurePosixPath) -> None:
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(_skip(str(rel) or ".", "unreadable", f"cannot list folder: {exc.strerror}"))
            return
        for child in children:
            relpath = rel / child.name
            try:
                st = os.lstat(child.path)
            except OSError as exc:
                skipped.append(_skip(str(relpath), "unreadable", exc.strerror or str(exc)))
                continue
            if stat.S_ISLNK(st.st_mode):
                target = _resolve_inside(Path(child.path), root)
                if target is None:
                    skipped.append(_skip(str(relpath), "link", "symbolic link leaves the bundle; not followed"))
                    continue
                if target.is_dir():
                    skipped.append(_skip(str(relpath), "link", "link to a folder inside the bundle; read at its own path"))
                    continue
                st = target.stat()
                entries.append(Entry(str(relpath), st.st_size, _mtime(st.st_mtime), _opener(target), disk_path=target))
            elif stat.S_ISDIR(st.st_mode):
                walk(Path(child.path), relpath)
            elif stat.S_ISREG(st.st_mode):
                entries.append(Entry(str(relpath), st.st_size, _mtime(st.st_mtime), _opener(Path(child.path)),
                                     disk_path=Path(child.path)))
            else:
                skipped.append(_skip(str(relpath), "special", "FIFO, socket or device file; skipped"))

    walk(root, PurePosixPath())
    return _assign_hosts(entries), skipped


def _opener(path: Path) -> Callable[[], BinaryIO]:
    # O_NONBLOCK guards against a file that turned into a FIFO after the scan.
    def open_file() -> BinaryIO:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError("not a regular file any more")
        return os.fdopen(fd, "rb")
    return open_file


def _resolve_inside(link: Path, root: Path) -> Path | None:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return target if target == root or root in target.parents else None


def _skip(path: str, kind: str, message: str, status: ArtifactStatus = ArtifactStatus.SKIPPED) -> Artifact:
    return Artifact(path=path, kind=kind, status=status, message=message)


def _unsafe_member_name(name: str) -> str | None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path in archive; refused"
    if ".." in p.parts:
        return "'..' in archive path; refused"
    return None


def _scan_tar(path: Path) -> tuple[list[Entry], list[Artifact]]:
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    archive = _SharedTar(path)
    for m in archive.members():
        name = m.name.lstrip("./") if m.name.startswith("./") else m.name
        if not name or m.isdir():
            continue
        reason = _unsafe_member_name(m.name)
        if reason:
            skipped.append(_skip(m.name, "archive-member", reason))
        elif m.issym() or m.islnk():
            skipped.append(_skip(name, "link", f"link member ({m.linkname}) in archive; not followed"))
        elif not m.isfile():
            skipped.append(_skip(name, "special", "device, FIFO or other special member; skipped"))
        else:
            entries.append(Entry(name, m.size, _mtime(m.mtime), archive.opener(m)))
    return _assign_hosts(entries), skipped


class _SharedTar:
    """One open archive for all its members.  Members are read in archive order, so a
    compressed tarball is decompressed about once, not once per member."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tar: tarfile.TarFile | None = None

    def _open(self) -> tarfile.TarFile:
        if self._tar is None:
            self._tar = tarfile.open(self.path, "r:*")
        return self._tar

    def members(self) -> list[tarfile.TarInfo]:
        return self._open().getmembers()

    def opener(self, member: tarfile.TarInfo) -> Callable[[], BinaryIO]:
        def open_member() -> BinaryIO:
            f = self._open().extractfile(member)
            if f is None:
                raise OSError("member cannot be read")
            return io.BufferedReader(CappedReader(f, MAX_DECOMPRESSED_BYTES, member.name))  # type: ignore[arg-type]
        return open_member


class _ClosingStream(io.BufferedReader):
    """A member stream that also closes its archive."""

    def __init__(self, inner: BinaryIO, owner) -> None:
        super().__init__(inner)  # type: ignore[arg-type]
        self._owner = owner

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._owner.close()


def _scan_zip(path: Path) -> tuple[list[Entry], list[Artifact]]:
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    for info in infos:
        if info.is_dir():
            continue
        reason = _unsafe_member_name(info.filename)
        mode = info.external_attr >> 16
        if reason:
            skipped.append(_skip(info.filename, "archive-member", reason))
        elif stat.S_ISLNK(mode):
            skipped.append(_skip(info.filename, "link", "link member in archive; not followed"))
        else:
            mtime = datetime(*info.date_time, tzinfo=timezone.utc) if info.date_time[0] >= 1980 else None
            entries.append(Entry(info.filename, info.file_size, mtime, _zip_opener(path, info.filename)))
    return _assign_hosts(entries), skipped


def _zip_opener(archive: Path, member: str) -> Callable[[], BinaryIO]:
    def open_member() -> BinaryIO:
        zf = zipfile.ZipFile(archive)
        try:
            inner = zf.open(member)
        except Exception:
            zf.close()
            raise
        return _ClosingStream(CappedReader(inner, MAX_DECOMPRESSED_BYTES, member), zf)  # type: ignore[arg-type]
    return open_member


def _assign_hosts(entries: list[Entry]) -> list[Entry]:
    """One subfolder per host: when the bundle's top level is only folders (two or more)
    and they hold the logs, each folder name is taken as that host's name."""
    tops = {PurePosixPath(e.path).parts[0] for e in entries if len(PurePosixPath(e.path).parts) > 1}
    loose = [e for e in entries if len(PurePosixPath(e.path).parts) == 1 and not _is_bundle_meta(e.path)]
    if len(tops) < 2 or loose:
        return entries
    return [Entry(e.path, e.size, e.mtime, e.open, PurePosixPath(e.path).parts[0], e.disk_path) for e in entries]


def _is_bundle_meta(path: str) -> bool:
    return path.lower() in {"readme", "readme.md", "readme.txt", "manifest.json", "truth.json", "source.md"}


# ---------------------------------------------------------------------------- sniffing

def sniff(head: bytes) -> str:
    """What a file holds, from its first bytes: core, elf, gzip, pickle, flightrec-json, binary or text."""
    if head.startswith(ELF_MAGIC):
        return "core" if len(head) >= 18 and int.from_bytes(head[16:18], "little" if head[5:6] == b"\x01" else "big") == 4 else "elf"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if not head:
        return "empty"
    if flightrec.looks_like_pickle(head):
        return "pickle"
    if flightrec.looks_like_json_dump(head):
        return "flightrec-json"
    sample = head[:SNIFF_BYTES]
    # Torch leaves single NULs after worker messages; a binary blob has many.
    nul_ratio = sample.count(b"\x00") / len(sample)
    if nul_ratio > 0.05:
        return "binary"
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 4:  # not just a multibyte char cut at the sample's end
            bad = sum(1 for b in sample if b < 9 or 13 < b < 32)
            if bad / len(sample) > 0.02 or _mostly_invalid(sample):
                return "binary"
    return "text"


def _mostly_invalid(sample: bytes) -> bool:
    text = sample.decode("utf-8", errors="replace")
    return text.count("\ufffd") / max(1, len(text)) > 0.1


def gunzip(stream: BinaryIO, what: str) -> BinaryIO:
    return io.BufferedReader(CappedReader(gzip.GzipFile(fileobj=stream), MAX_DECOMPRESSED_BYTES, what))  # type: ignore[arg-type]


def iter_lines(stream: BinaryIO) -> Iterator[str]:
    """Decoded lines, memory bounded: a line longer than MAX_LINE_CHARS is cut."""
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=None)
    while True:
        line = text.readline(MAX_LINE_CHARS)
        if not line:
            return
        if not line.endswith("\n") and len(line) >= MAX_LINE_CHARS:
            # Skip the rest of an over-long line.
            while True:
                rest = text.readline(MAX_LINE_CHARS)
                if not rest or rest.endswith("\n"):
                    break
        yield line
