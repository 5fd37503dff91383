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
"""
from __future__ import annotations

import bz2
import codecs
import gzip
import heapq
import io
import lzma
import os
import stat
import struct
import sys
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable, Iterator

from postmortem.budget import Budget, BudgetExhausted, Meter
from postmortem.model import Artifact, ArtifactStatus
from postmortem.parsers import flightrec

# Caps that keep a hostile or broken bundle from costing unbounded time or memory.
MAX_DECOMPRESSED_BYTES = 8 << 30      # per archive member or .gz file
MAX_LINE_CHARS = Budget.line_chars    # longer lines are cut (a log line, not a blob)
SNIFF_BYTES = 8192
READ_CHUNK = 1 << 20

ELF_MAGIC = b"\x7fELF"
GZIP_MAGIC = b"\x1f\x8b"
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
# Errors that mean "the data ends or breaks here", from any decompressor or archive reader.
CUT_ERRORS = (EOFError, OSError, zlib.error, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError, ValueError)

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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
            return _scan_directory(path, meter, allow_hardlinks)
        name = path.name.lower()
        if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")):
            return _scan_tar(path, meter)
        if name.endswith(".zip"):
            return _scan_zip(path, meter)
        if path.is_file():
            return _single_file(path, allow_hardlinks)
    except BundleError:
        raise
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, ValueError,
            NotImplementedError, struct.error, OverflowError, RecursionError, IndexError, KeyError) as exc:
        # Archive headers are bundle content: whatever the library raises on them is a bad bundle.
        raise BundleError(f"{path}: cannot read bundle: {type(exc).__name__}: {exc}") from exc
    raise BundleError(f"{path}: not a directory, archive or regular file")


def _mtime(ts: float | None) -> datetime | None:
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _stdin_entry() -> list[Entry]:
    """`analyze -`: one log read from standard input (read once, under the same budget)."""
    def open_stdin() -> BinaryIO:
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    return [Entry("stdin", None, None, open_stdin)]


def _hardlink_message(nlink: int) -> str:
    return (f"regular file with {nlink} hard links; not read (a hard link can be any file of this "
            f"machine); pass --allow-hardlinks to read it")


def _single_file(path: Path, allow_hardlinks: bool) -> tuple[list[Entry], list[Artifact]]:
    st = path.stat()
    if st.st_nlink > 1 and not allow_hardlinks and stat.S_ISREG(st.st_mode):
        return [], [_skip(path.name, "hardlink", _hardlink_message(st.st_nlink))]
    return [Entry(path.name, st.st_size, _mtime(st.st_mtime), _path_opener(path, allow_hardlinks),
                  disk_path=path)], []


# ---------------------------------------------------------------------------- folders

class _Root:
    """An open descriptor on the bundle's top folder; every file is reached from it one
    component at a time, each opened with O_NOFOLLOW.  A few recently used folder
    descriptors are kept, so a deep walk opens each level once, not once per level."""

    KEEP = 32

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        self._kept: dict[tuple[str, ...], int] = {}

    def __del__(self) -> None:
        for fd in [getattr(self, "fd", -1), *getattr(self, "_kept", {}).values()]:
            try:
                os.close(fd)
            except OSError:
                pass

    def open_dir(self, parts: tuple[str, ...]) -> int:
        """A new descriptor on the folder at `parts` below the root; the caller closes it."""
        start = len(parts)
        while start and parts[:start] not in self._kept:
            start -= 1
        fd = os.dup(self._kept[parts[:start]] if start else self.fd)
        try:
            for i in range(start, len(parts)):
                nxt = os.open(parts[i], os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            raise
        if parts and parts not in self._kept:
            if len(self._kept) >= self.KEEP:
                os.close(self._kept.pop(next(iter(self._kept))))
            self._kept[parts] = os.dup(fd)
        return fd

    def forget(self) -> None:
        """Drop the kept folder descriptors: later opens walk again from the root."""
        for fd in self._kept.values():
            os.close(fd)
        self._kept.clear()

    def opener(self, parts: tuple[str, ...], allow_hardlinks: bool) -> Callable[[], BinaryIO]:
        def open_file() -> BinaryIO:
            dfd = self.open_dir(parts[:-1])
            try:
                # O_NONBLOCK guards against a file that turned into a FIFO after the scan.
                fd = os.open(parts[-1], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=dfd)
            finally:
                os.close(dfd)
            return _checked_file(fd, allow_hardlinks)
        return open_file


def _checked_file(fd: int, allow_hardlinks: bool) -> BinaryIO:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError("not a regular file any more")
    if st.st_nlink > 1 and not allow_hardlinks:
        os.close(fd)
        raise OSError(_hardlink_message(st.st_nlink))
    return os.fdopen(fd, "rb")


def _path_opener(path: Path, allow_hardlinks: bool) -> Callable[[], BinaryIO]:
    def open_file() -> BinaryIO:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW | _O_CLOEXEC)
        return _checked_file(fd, allow_hardlinks)
    return open_file


def _scan_directory(top: Path, meter: Meter, allow_hardlinks: bool) -> tuple[list[Entry], list[Artifact]]:
    """Walk iteratively (no recursion: 1,500-deep trees are fine) by descriptor."""
    root_path = top.resolve()
    root = _Root(root_path)
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    limit = meter.budget.files
    # A stack of folders still to list, each as its path components below the root;
    # reversed pushes keep the walk in name order.
    todo: list[tuple[str, ...]] = [()]
    while todo:
        parts = todo.pop()
        rel = "/".join(parts)
        if len(parts) > meter.budget.depth:
            skipped.append(_skip(rel, "folder", f"nested more than {meter.budget.depth} folders deep; not read"))
            continue
        try:
            dfd = root.open_dir(parts)
        except OSError as exc:
            skipped.append(_skip(rel or ".", "unreadable", f"cannot open folder: {exc.strerror or exc}"))
            continue
        try:
            names = _list_names(dfd, limit - len(entries) + 1, meter)
            subdirs: list[tuple[str, ...]] = []
            for name in names:
                if len(entries) >= limit:
                    meter.note(f"the bundle holds more than {limit} files; the first {limit} were read")
                    todo.clear()
                    break
                relpath = "/".join(parts + (name,))
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except OSError as exc:
                    skipped.append(_skip(relpath, "unreadable", exc.strerror or str(exc)))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    _add_link(root, root_path, parts, name, relpath, entries, skipped, allow_hardlinks)
                elif stat.S_ISDIR(st.st_mode):
                    subdirs.append(parts + (name,))
                elif stat.S_ISREG(st.st_mode):
                    if st.st_nlink > 1 and not allow_hardlinks:
                        skipped.append(_skip(relpath, "hardlink", _hardlink_message(st.st_nlink)))
                        continue
                    entries.append(Entry(relpath, st.st_size, _mtime(st.st_mtime),
                                         root.opener(parts + (name,), allow_hardlinks),
                                         disk_path=root_path.joinpath(*parts, name)))
                else:
                    skipped.append(_skip(relpath, "special", "FIFO, socket or device file; skipped"))
            todo.extend(reversed(subdirs))
        finally:
            os.close(dfd)
    root.forget()
    return _assign_hosts(entries), skipped


def _list_names(dfd: int, limit: int, meter: Meter | None = None) -> list[str]:
    """Names in one folder, sorted; of a folder of a million files only the first `limit`
    names in name order are kept (a bounded heap: memory stays small, and which files are
    read does not depend on the file system's order).  Listing stops at the time limit."""
    def names() -> Iterator[str]:
        with os.scandir(dfd) as it:
            for i, e in enumerate(it):
                if meter is not None and not i & 0xFFFF and i and meter.out_of_time():
                    return
                yield e.name
    return heapq.nsmallest(max(limit, 1), names())


def _add_link(root: _Root, root_path: Path, parts: tuple[str, ...], name: str, relpath: str,
              entries: list[Entry], skipped: list[Artifact], allow_hardlinks: bool) -> None:
    """A link to a file inside the bundle is read at its link path; anything else is not followed."""
    target = _resolve_inside(root_path.joinpath(*parts, name), root_path)
    if target is None:
        skipped.append(_skip(relpath, "link", "symbolic link leaves the bundle; not followed"))
        return
    try:
        st = target.lstat()
    except OSError:
        skipped.append(_skip(relpath, "link", "symbolic link leaves the bundle; not followed"))
        return
    if stat.S_ISDIR(st.st_mode):
        skipped.append(_skip(relpath, "link", "link to a folder inside the bundle; read at its own path"))
        return
    if not stat.S_ISREG(st.st_mode):
        skipped.append(_skip(relpath, "link", "link to a special file; not followed"))
        return
    tparts = target.relative_to(root_path).parts
    # Opened again from the root with O_NOFOLLOW per component: a swap after this check fails.
    entries.append(Entry(relpath, st.st_size, _mtime(st.st_mtime), root.opener(tparts, allow_hardlinks),
                         disk_path=target))


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


class _Names:
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

class _SafeTarInfo(tarfile.TarInfo):
    """TarInfo whose extended headers are read with a size cap and parsed without
    regexes (CVE-2024-6232 and its kin are closed whatever the Python patch level)."""

    header_cap = Budget.header_bytes
    chain_cap = 16

    def _count_chain(self, tf) -> None:
        tf._pm_chain = getattr(tf, "_pm_chain", 0) + 1
        if tf._pm_chain > self.chain_cap:
            raise tarfile.ReadError(f"more than {self.chain_cap} extended headers in a row")

    def _read_header_data(self, tf, what: str) -> bytes:
        if self.size > self.header_cap or self.size < 0:
            raise tarfile.ReadError(f"{what} header of {self.size} bytes exceeds the cap of {self.header_cap} bytes")
        self._count_chain(tf)
        buf = tf.fileobj.read(self._block(self.size))
        if len(buf) < self.size:
            raise tarfile.ReadError(f"archive ends inside a {what} header")
        return buf

    def _proc_gnulong(self, tf):
        buf = self._read_header_data(tf, "GNU long-name")
        try:
            next = self.fromtarfile(tf)
        except tarfile.HeaderError as e:
            raise tarfile.SubsequentHeaderError(str(e)) from None
        next.offset = self.offset
        if self.type == tarfile.GNUTYPE_LONGNAME:
            next.name = tarfile.nts(buf, tf.encoding, tf.errors)
        elif self.type == tarfile.GNUTYPE_LONGLINK:
            next.linkname = tarfile.nts(buf, tf.encoding, tf.errors)
        if next.isdir():
            next.name = next.name.removesuffix("/")
        return next

    def _proc_sparse(self, tf):
        structs, isextended, origsize = self._sparse_structs
        blocks = 0
        while isextended:
            blocks += 1
            if blocks > 64:
                raise tarfile.ReadError("GNU sparse map longer than 64 blocks")
            buf = tf.fileobj.read(tarfile.BLOCKSIZE)
            if len(buf) < tarfile.BLOCKSIZE:
                raise tarfile.ReadError("archive ends inside a sparse map")
            pos = 0
            for _ in range(21):
                try:
                    offset = tarfile.nti(buf[pos:pos + 12])
                    numbytes = tarfile.nti(buf[pos + 12:pos + 24])
                except ValueError:
                    break
                if offset and numbytes:
                    structs.append((offset, numbytes))
                pos += 24
            isextended = bool(buf[504])
        del self._sparse_structs
        self.sparse = structs
        self.offset_data = tf.fileobj.tell()
        tf.offset = self.offset_data + self._block(self.size)
        self.size = origsize
        return self

    def _proc_gnusparse_10(self, next, pax_headers, tf):
        raise tarfile.ReadError("GNU sparse 1.0 member; not supported")

    def _proc_pax(self, tf):
        buf = self._read_header_data(tf, "pax")[: self.size]
        pax_headers = tf.pax_headers if self.type == tarfile.XGLTYPE else tf.pax_headers.copy()
        records = _pax_records(buf)
        for keyword, value in records:
            if keyword == b"hdrcharset":
                pax_headers["hdrcharset"] = value.decode("utf-8", "replace")
        encoding = tf.encoding if pax_headers.get("hdrcharset") == "BINARY" else "utf-8"
        for keyword, value in records:
            key = self._decode_pax_field(keyword, "utf-8", "utf-8", tf.errors)
            if key in tarfile.PAX_NAME_FIELDS:
                pax_headers[key] = self._decode_pax_field(value, encoding, tf.encoding, tf.errors)
            else:
                pax_headers[key] = self._decode_pax_field(value, "utf-8", "utf-8", tf.errors)
        try:
            next = self.fromtarfile(tf)
        except tarfile.HeaderError as e:
            raise tarfile.SubsequentHeaderError(str(e)) from None
        if "GNU.sparse.map" in pax_headers or "GNU.sparse.size" in pax_headers or "GNU.sparse.major" in pax_headers:
            raise tarfile.ReadError("GNU sparse member described by pax headers; not supported")
        if self.type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
            next._apply_pax_info(pax_headers, tf.encoding, tf.errors)
            if not isinstance(next.size, int) or next.size < 0:
                raise tarfile.ReadError(f"pax header gives a negative or odd size ({next.size!r})")
            next.offset = self.offset
            if "size" in pax_headers:
                offset = next.offset_data
                if next.isreg() or next.type not in tarfile.SUPPORTED_TYPES:
                    offset += next._block(next.size)
                tf.offset = offset
        return next


def _pax_records(buf: bytes) -> list[tuple[bytes, bytes]]:
    """`%d %s=%s\\n` records, parsed in one linear pass."""
    out: list[tuple[bytes, bytes]] = []
    pos, end = 0, len(buf)
    while pos < end:
        sp = buf.find(b" ", pos, min(end, pos + 21))
        if sp <= pos or not buf[pos:sp].isdigit():
            break
        length = int(buf[pos:sp])
        if length < 5 or pos + length > end or buf[pos + length - 1] != 0x0A:
            raise tarfile.ReadError("invalid pax extended header record")
        eq = buf.find(b"=", sp + 1, pos + length)
        if eq <= sp + 1:
            raise tarfile.ReadError("invalid pax extended header record")
        out.append((buf[sp + 1:eq], buf[eq + 1:pos + length - 1]))
        pos += length
    return out


class _MeteredFile(io.RawIOBase):
    """A decompressed archive stream whose every decompressed byte is charged to the
    meter: listing a tar.gz bomb stops at the budget instead of inflating it all."""

    def __init__(self, inner, meter: Meter) -> None:
        self._inner, self._meter, self._pos = inner, meter, 0
        self.charging = True   # off once listing is done: member readers charge their own bytes

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def _charge(self, n: int) -> None:
        if n > 0 and self.charging and not self._meter.take_bytes(n):
            raise BudgetExhausted(self._meter.stopped or "read budget reached")

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = READ_CHUNK
        self._charge(n)
        data = self._inner.read(n)
        self._pos += len(data)
        return data

    def readinto(self, buf) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self._pos + offset if whence == 1 else None
        if target is None:
            raise OSError("seek from the end of a compressed stream")
        # Forward: the decompressor inflates what lies between; backward: it starts over.
        self._charge(target - self._pos if target >= self._pos else target)
        self._pos = self._inner.seek(target)
        return self._pos

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()


def _open_tar_stream(path: Path, meter: Meter):
    raw = open(path, "rb")
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(GZIP_MAGIC):
        return _MeteredFile(gzip.GzipFile(fileobj=raw), meter)
    if magic.startswith(b"BZh"):
        return _MeteredFile(bz2.BZ2File(raw), meter)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return _MeteredFile(lzma.LZMAFile(raw), meter)
    return raw


def _scan_tar(path: Path, meter: Meter) -> tuple[list[Entry], list[Artifact]]:
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    archive = _SharedTar(path, meter)
    names = _Names()
    members, problem = archive.members(meter.budget.files)
    if problem and not members:
        raise BundleError(f"{path}: cannot read bundle: {problem}")
    if problem:
        skipped.append(_skip("(archive)", "archive", f"archive read as far as it goes: {problem}",
                             ArtifactStatus.ERROR))
    for m in members:
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
            shown, note = names.take(name)
            entries.append(Entry(shown, m.size, _mtime(m.mtime), archive.opener(m), note=note))
    return _assign_hosts(entries), skipped


class _SharedTar:
    """One open archive for all its members.  Members are read in archive order, so a
    compressed tarball is decompressed about once, not once per member."""

    def __init__(self, path: Path, meter: Meter) -> None:
        self.path = path
        self.meter = meter
        self._tar: tarfile.TarFile | None = None

    def _open(self) -> tarfile.TarFile:
        if self._tar is None:
            self._tar = tarfile.open(fileobj=_open_tar_stream(self.path, self.meter), mode="r:",
                                     tarinfo=_SafeTarInfo)
        return self._tar

    def members(self, limit: int) -> tuple[list[tarfile.TarInfo], str]:
        """Members in archive order, at most `limit`; and why listing stopped early, if it did."""
        out: list[tarfile.TarInfo] = []
        try:
            tar = self._open()
            while True:
                tar._pm_chain = 0  # type: ignore[attr-defined]
                m = tar.next()
                if m is None:
                    return out, ""
                if len(out) >= limit:
                    self.meter.note(f"the archive holds more than {limit} members; the first {limit} were read")
                    return out, ""
                out.append(m)
        except BudgetExhausted as exc:
            return out, f"listing stopped after {len(out)} members: {exc}"
        except (*CUT_ERRORS, RecursionError) as exc:
            return out, f"cut or corrupt after {len(out)} members ({type(exc).__name__}: {exc})"

    def opener(self, member: tarfile.TarInfo) -> Callable[[], BinaryIO]:
        def open_member() -> BinaryIO:
            self.meter_listing_done()
            f = self._open().extractfile(member)
            if f is None:
                raise OSError("member cannot be read")
            return io.BufferedReader(CappedReader(f, MAX_DECOMPRESSED_BYTES, member.name))  # type: ignore[arg-type]
        return open_member

    def meter_listing_done(self) -> None:
        """Member bytes are charged by the reader of each member; stop charging the stream."""
        tar = self._tar
        if tar is not None and isinstance(tar.fileobj, _MeteredFile):
            tar.fileobj.charging = False


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


# ---------------------------------------------------------------------------- zip

def _zip_entry_count(path: Path) -> int | None:
    try:
        with open(path, "rb") as f:
            end = zipfile._EndRecData(f)  # type: ignore[attr-defined]
    except OSError:
        return None
    return None if not end else int(end[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]


def _zip_overlaps(path: Path, infos: list[zipfile.ZipInfo]) -> set[int]:
    """Indexes of entries whose local header and data overlap another's (the
    many-entries-one-stream zip bomb; Python 3.11's zipfile does not check)."""
    bad: set[int] = set()
    spans: list[tuple[int, int, int]] = []
    with open(path, "rb") as f:
        for i, info in enumerate(infos):
            f.seek(info.header_offset)
            head = f.read(30)
            if len(head) < 30 or head[:4] != b"PK\x03\x04":
                bad.add(i)
                continue
            name_len = int.from_bytes(head[26:28], "little")
            extra_len = int.from_bytes(head[28:30], "little")
            spans.append((info.header_offset, info.header_offset + 30 + name_len + extra_len + info.compress_size, i))
    spans.sort()
    reach, owner = -1, -1
    for start, end, i in spans:
        if start < reach:
            bad.update((i, owner))
        if end > reach:
            reach, owner = end, i
    return bad


def _scan_zip(path: Path, meter: Meter) -> tuple[list[Entry], list[Artifact]]:
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    count = _zip_entry_count(path)
    limit = meter.budget.files
    if count is not None and count > limit * 4:
        return [], [_skip("(archive)", "archive", f"the zip lists {count} entries, more than the budget of "
                          f"{limit * 4} allows listing; not read", ArtifactStatus.ERROR)]
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    overlapping = _zip_overlaps(path, infos)
    names = _Names()
    for i, info in enumerate(infos):
        if info.is_dir():
            continue
        reason = _unsafe_member_name(info.filename)
        mode = info.external_attr >> 16
        if reason:
            skipped.append(_skip(info.filename, "archive-member", reason))
        elif stat.S_ISLNK(mode):
            skipped.append(_skip(info.filename, "link", "link member in archive; not followed"))
        elif i in overlapping:
            skipped.append(_skip(info.filename, "archive-member",
                                 "zip entry overlaps another entry's data (a zip bomb trick); not read"))
        elif len(entries) >= limit:
            meter.note(f"the archive holds more than {limit} members; the first {limit} were read")
            break
        else:
            mtime = _zip_mtime(info)
            shown, note = names.take(info.filename)
            entries.append(Entry(shown, info.file_size, mtime, _zip_opener(path, i), note=note))
    return _assign_hosts(entries), skipped


def _zip_mtime(info: zipfile.ZipInfo) -> datetime | None:
    try:
        return datetime(*info.date_time, tzinfo=timezone.utc) if info.date_time[0] >= 1980 else None
    except (ValueError, OverflowError):
        return None


def _zip_opener(archive: Path, index: int) -> Callable[[], BinaryIO]:
    def open_member() -> BinaryIO:
        zf = zipfile.ZipFile(archive)
        try:
            inner = zf.open(zf.infolist()[index])
        except Exception:
            zf.close()
            raise
        return _ClosingStream(CappedReader(inner, MAX_DECOMPRESSED_BYTES, zf.infolist()[index].filename), zf)  # type: ignore[arg-type]
    return open_member


def _assign_hosts(entries: list[Entry]) -> list[Entry]:
    """One subfolder per host: when the bundle's top level is only folders (two or more)
    and they hold the logs, each folder name is taken as that host's name."""
    tops = {PurePosixPath(e.path).parts[0] for e in entries if len(PurePosixPath(e.path).parts) > 1}
    loose = [e for e in entries if len(PurePosixPath(e.path).parts) == 1 and not _is_bundle_meta(e.path)]
    if len(tops) < 2 or loose:
        return entries
    return [Entry(e.path, e.size, e.mtime, e.open, PurePosixPath(e.path).parts[0], e.disk_path, e.note)
            for e in entries]


def _is_bundle_meta(path: str) -> bool:
    return path.lower() in {"readme", "readme.md", "readme.txt", "manifest.json", "truth.json", "source.md"}


# ---------------------------------------------------------------------------- sniffing

def text_encoding(head: bytes) -> str | None:
    """UTF-16 / UTF-32 text, from a byte-order mark or the NUL pattern ASCII leaves
    in them; None for anything else (read as UTF-8)."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    sample = head[: SNIFF_BYTES - SNIFF_BYTES % 4]
    if len(sample) < 16:
        return None
    quarter = len(sample) // 4
    lanes = [sample[i::4].count(0) / quarter for i in range(4)]
    if lanes[0] < 0.2 and min(lanes[1:]) > 0.9:
        return "utf-32-le"
    if lanes[3] < 0.2 and min(lanes[:3]) > 0.9:
        return "utf-32-be"
    even, odd = sample[0::2].count(0) / (len(sample) / 2), sample[1::2].count(0) / (len(sample) / 2)
    if even < 0.2 and odd > 0.8:
        return "utf-16-le"
    if odd < 0.2 and even > 0.8:
        return "utf-16-be"
    return None


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
    if text_encoding(head):
        return "text"
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


# ---------------------------------------------------------------------------- lines

_BLANK = b"\n\r\t \x00"


class Lines:
    """The decoded lines of one text stream, memory and time bounded.

    `numbered()` yields (line number, text) and is what the parsers read: a line
    longer than the budget's `line_chars` is cut (the rest skipped), a chunk holding
    only blank lines yields one empty line and then jumps the numbering past the
    rest, and reading stops, with what it has, when the stream breaks off or the
    bundle's byte budget is spent.  Iterating gives every line, numbered by position.
    Afterwards `cut_lines`, `ended` and `blank_skipped` say what happened.
    """

    def __init__(self, stream: BinaryIO, meter: Meter | None = None, encoding: str | None = None,
                 line_chars: int | None = None) -> None:
        self.stream = stream
        self.meter = meter
        self.encoding = encoding or "utf-8"
        self.cap = line_chars or (meter.budget.line_chars if meter else MAX_LINE_CHARS)
        self.cut_lines = 0
        self.blank_skipped = 0
        self.ended = ""   # why reading stopped before the end of the stream, if it did

    def __iter__(self) -> Iterator[str]:
        n = 0
        for no, line in self.numbered():
            while n + 1 < no:
                n += 1
                yield "\n"
            n = no
            yield line

    def _read(self, n: int) -> bytes:
        read1 = getattr(self.stream, "read1", None)
        return read1(n) if read1 is not None else self.stream.read(n)

    def _chunks(self) -> Iterator[bytes]:
        while True:
            if self.meter is not None and self.meter.out_of_time():
                self.ended = self.meter.stopped or "stopped"
                return
            try:
                # read1: one decompressor step at a time, so a stream cut short still
                # yields everything before the cut.
                chunk = self._read(READ_CHUNK)
            except BudgetExhausted as exc:
                self.ended = str(exc)
                return
            except CUT_ERRORS as exc:
                self.ended = f"the data breaks off here ({type(exc).__name__}: {exc})"
                return
            if not chunk:
                return
            if self.meter is not None and not self.meter.take_bytes(len(chunk)):
                self.ended = self.meter.stopped or "read budget reached"
                return
            yield chunk

    def numbered(self) -> Iterator[tuple[int, str]]:
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        utf8 = self.encoding == "utf-8"
        cap = self.cap
        no = 0
        pending = ""          # start of a line not yet ended
        skipping = False      # inside the rest of an over-long line
        last_blank = False
        cr = False            # the previous chunk ended with '\r' (maybe half of '\r\n')
        for chunk in self._chunks():
            if utf8 and not pending and not skipping and not cr and not chunk.translate(None, _BLANK):
                # Only blank lines: one is enough for the parsers (it ends blocks).
                count = chunk.count(b"\n")
                if b"\r" in chunk:
                    count += chunk.count(b"\r") - chunk.count(b"\r\n")
                if count:
                    if not last_blank:
                        no += 1
                        yield no, "\n"
                        count -= 1
                    no += count
                    self.blank_skipped += count
                    last_blank = True
                cr = chunk.endswith(b"\r")
                continue
            text = decoder.decode(chunk)
            if cr and text.startswith("\n"):
                text = text[1:]
            cr = text.endswith("\r")
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            parts = text.split("\n")
            tail = parts.pop()
            for part in parts:
                if skipping:
                    skipping = False
                    continue
                if pending:
                    part = pending + part
                    pending = ""
                if len(part) > cap:
                    part = part[:cap]
                    self.cut_lines += 1
                no += 1
                last_blank = not part.strip()
                yield no, part + "\n"
            if skipping:
                continue
            pending += tail
            if len(pending) > cap:
                no += 1
                self.cut_lines += 1
                last_blank = False
                yield no, pending[:cap]
                pending, skipping = "", True
        tail = decoder.decode(b"", final=True)
        if tail and not skipping:
            pending += tail.replace("\r\n", "\n").replace("\r", "\n")
        if pending and not skipping:
            for part in pending.split("\n"):
                if part:
                    no += 1
                    yield no, part[:cap]


def iter_lines(stream: BinaryIO, meter: Meter | None = None, encoding: str | None = None) -> Lines:
    """Decoded lines, memory bounded: a line longer than the cap is cut."""
    return Lines(stream, meter, encoding)
