"""Tar bundles (.tar, .tar.gz / .tgz, .tar.bz2, .tar.xz), read in place, never extracted.

Owns the defensive tar reading: extended headers (GNU long names, pax, sparse maps) read
with a size cap and parsed without regexes, decompressed listing bytes charged to the
bundle's budget (`_MeteredFile`), one shared open archive for all members, and link,
device and unsafe-path members refused.  An archive cut short is read as far as it goes.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
from pathlib import Path
from typing import BinaryIO, Callable

from postmortem.budget import Budget, BudgetExhausted, Meter
from postmortem.model import Artifact, ArtifactStatus
from postmortem.bundle.entry import (GZIP_MAGIC, MAX_DECOMPRESSED_BYTES, READ_CHUNK, BundleError,
                                     CappedReader, Entry, MemberNames, assign_hosts, not_read,
                                     unsafe_member_name, utc_mtime, cut_errors)


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


def scan_tar(path: Path, meter: Meter) -> tuple[list[Entry], list[Artifact]]:
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    archive = _SharedTar(path, meter)
    names = MemberNames()
    members, problem = archive.members(meter.budget.files)
    if problem and not members:
        raise BundleError(f"{path}: cannot read bundle: {problem}")
    if problem:
        skipped.append(not_read("(archive)", "archive", f"archive read as far as it goes: {problem}",
                             ArtifactStatus.ERROR))
    for m in members:
        name = m.name.lstrip("./") if m.name.startswith("./") else m.name
        if not name or m.isdir():
            continue
        reason = unsafe_member_name(m.name)
        if reason:
            skipped.append(not_read(m.name, "archive-member", reason))
        elif m.issym() or m.islnk():
            skipped.append(not_read(name, "link", f"link member ({m.linkname}) in archive; not followed"))
        elif not m.isfile():
            skipped.append(not_read(name, "special", "device, FIFO or other special member; skipped"))
        else:
            shown, note = names.take(name)
            entries.append(Entry(shown, m.size, utc_mtime(m.mtime), archive.opener(m), note=note))
    return assign_hosts(entries), skipped


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
        except (*cut_errors(), RecursionError) as exc:
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
