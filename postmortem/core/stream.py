"""Reading a core's bytes: a cached, fenced, never-raising view of any seekable binary
stream (CoreStream), the process memory the core's PT_LOADs hold (Memory), and telling a
core from other data by its first bytes (is_core).  Nothing here knows what notes mean.
"""
from __future__ import annotations

import bisect
import gzip
import os
import struct
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Sequence

from postmortem.core.tables import CACHED_CHUNKS, CHUNK_SIZE, MAX_READ, PF_X


class CoreStream:
    """A read-only view of the core that never raises on short data.

    It caches chunks, so pyelftools' many small reads and the backward seeks of
    memory reads stay cheap on a gzip stream; it answers SEEK_END even when the
    underlying stream cannot (gzip); it turns EOFError/zlib errors of a cut gzip into
    end of data; and `fence` limits reads to one note segment, so a garbage count in
    a note can never walk the rest of a multi-GB core.
    """

    UNKNOWN_SIZE = 1 << 62

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.pos = 0
        self.size = self._size_of(raw)
        self.end_seen: int | None = None   # where reading actually ran out
        self.error: str | None = None
        self.cut = False                   # a compressed stream ended mid-way
        self.fence_end: int | None = None
        self._chunks: OrderedDict[int, bytes] = OrderedDict()

    @staticmethod
    def _size_of(raw: BinaryIO) -> int | None:
        try:
            here = raw.tell()
            size = raw.seek(0, os.SEEK_END)
            raw.seek(here)
            return size
        except Exception:  # gzip.GzipFile cannot seek from the end
            return None

    # file protocol used by pyelftools
    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_END:
            self.pos = (self.size if self.size is not None else self.UNKNOWN_SIZE) + offset
        elif whence == os.SEEK_CUR:
            self.pos += offset
        else:
            self.pos = offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        data = self.pread(self.pos, MAX_READ if n is None or n < 0 else n)
        self.pos += len(data)
        return data

    def pread(self, offset: int, n: int) -> bytes:
        """Up to n bytes at offset; fewer at the end of data or of the fence."""
        end = offset + min(n, MAX_READ)
        if self.fence_end is not None:
            end = min(end, self.fence_end)
        parts = []
        while offset < end:
            chunk = self._chunk(offset // CHUNK_SIZE)
            start = offset % CHUNK_SIZE
            part = chunk[start:start + end - offset]
            if not part:
                break
            parts.append(part)
            offset += len(part)
        return b"".join(parts)

    def _chunk(self, index: int) -> bytes:
        chunk = self._chunks.get(index)
        if chunk is not None:
            self._chunks.move_to_end(index)
            return chunk
        chunk = self._read_raw(index * CHUNK_SIZE)
        self._chunks[index] = chunk
        if len(self._chunks) > CACHED_CHUNKS:
            self._chunks.popitem(last=False)
        return chunk

    def _read_raw(self, offset: int) -> bytes:
        if self.end_seen is not None and offset >= self.end_seen:
            return b""
        try:
            self.raw.seek(offset)
            data = self.raw.read(CHUNK_SIZE)
        except Exception as exc:  # EOFError / zlib.error from a cut gzip, OSError ...
            self.error = f"{type(exc).__name__}: {exc}"
            self.cut = self.cut or isinstance(exc, EOFError)
            data = b""
        if len(data) < CHUNK_SIZE:
            self.end_seen = offset + len(data)
        return data

    def has_bytes_up_to(self, end: int) -> bool:
        """True if the stream holds data up to `end` (reads one byte when the size is unknown)."""
        if end <= 0:
            return True
        if self.size is not None and self.end_seen is None:
            return self.size >= end
        return len(self.pread(end - 1, 1)) == 1

    def fence(self, end: int | None) -> None:
        self.fence_end = end


# --------------------------------------------------------------------------- memory


@dataclass(frozen=True, slots=True)
class Load:
    """One PT_LOAD: a VMA of the process; only `filesz` bytes of it are in the core."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int
    flags: int


class Memory:
    """The process's memory as far as the core holds it."""

    def __init__(self, stream: CoreStream, loads: Sequence[Load]) -> None:
        self.stream = stream
        self.loads = sorted(loads, key=lambda load: load.vaddr)
        self._starts = [load.vaddr for load in self.loads]

    def load_at(self, addr: int) -> Load | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self.loads[i].vaddr + self.loads[i].memsz:
            return self.loads[i]
        return None

    def is_mapped(self, addr: int) -> bool:
        return self.load_at(addr) is not None

    def is_code(self, addr: int) -> bool:
        load = self.load_at(addr)
        return load is not None and bool(load.flags & PF_X)

    def file_offset(self, addr: int) -> int | None:
        load = self.load_at(addr)
        if load is None or addr - load.vaddr >= load.filesz:
            return None
        return load.offset + addr - load.vaddr

    def read(self, addr: int, n: int) -> bytes | None:
        """n bytes at addr, or None unless all of them are in the core."""
        load = self.load_at(addr)
        if load is None or addr + n > load.vaddr + load.filesz:
            return None
        data = self.stream.pread(load.offset + addr - load.vaddr, n)
        return data if len(data) == n else None

    def read_upto(self, addr: int, n: int) -> bytes:
        """Up to n bytes at addr, stopping where the core's copy of the VMA ends."""
        load = self.load_at(addr)
        if load is None:
            return b""
        n = min(n, load.vaddr + load.filesz - addr)
        return self.stream.pread(load.offset + addr - load.vaddr, n) if n > 0 else b""

    def read_word(self, addr: int) -> int | None:
        data = self.read(addr, 8)
        return None if data is None else struct.unpack("<Q", data)[0]

    def read_cstring(self, addr: int, limit: int = 4096) -> str | None:
        data = self.read_upto(addr, limit)
        if b"\0" not in data:
            return None
        return data.split(b"\0", 1)[0].decode("utf-8", "replace")


# --------------------------------------------------------------------------- sniffing


def is_core(head: bytes) -> bool:
    """True for an ELF core, or gzip data whose first bytes decompress to one."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 64)
        except zlib.error:
            return False
    return _is_elf_core(head)


def _is_elf_core(head: bytes) -> bool:
    if len(head) < 18 or head[:4] != b"\x7fELF":
        return False
    order = {1: "<", 2: ">"}.get(head[5])
    return order is not None and struct.unpack_from(order + "H", head, 16)[0] == 4  # ET_CORE

def open_core(path: Path) -> BinaryIO:
    """A core file opened for read_core, gzip or not."""
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")
