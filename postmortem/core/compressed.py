"""Cores compressed the way systemd-coredump stores them: zstd (its default, `.zst`), lz4 and
xz, told apart by their magic bytes, never by name.

The decompressed data is offered as a seekable stream, so the core reader reads it in place
like a plain core: forward seeks decompress and drop, a backward seek starts over from the
compressed data's beginning (CoreStream's chunk cache keeps those rare).  Every byte
decompressed, starting over included, counts against one budget per file: a decompression
bomb ends as a cut core with a message, never as a full disk or a stalled analysis.
zstandard and lz4 are third-party packages; without them such a core gets a message.
"""
from __future__ import annotations

import io
import lzma
from typing import BinaryIO, Callable

MAGICS = {
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x04\x22\x4d\x18": "lz4",
    b"\xfd7zXZ\x00": "xz",
}
MAX_INFLATE_BYTES = 8 << 30       # bytes decompressed per file, re-reads included
SKIP_BLOCK = 1 << 20


class BudgetExceeded(OSError):
    pass


def codec_of(head: bytes) -> str | None:
    """zstd, lz4 or xz from the first bytes, or None."""
    return next((name for magic, name in MAGICS.items() if head.startswith(magic)), None)


def missing_module(codec: str) -> str | None:
    """Why this codec cannot be read here, or None if it can."""
    module = {"zstd": "zstandard", "lz4": "lz4.frame"}.get(codec)
    if module is None:
        return None
    try:
        __import__(module)
    except ImportError:
        return f"reading {codec} needs the Python package {module.split('.')[0]} (pip install {module.split('.')[0]})"
    return None


def _decompressor(codec: str, raw: BinaryIO) -> BinaryIO:
    if codec == "xz":
        return lzma.open(raw, "rb")
    if codec == "lz4":
        import lz4.frame

        return lz4.frame.open(raw, "rb")
    import zstandard

    # read_across_frames: systemd writes one frame, other tools several.
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


class Decompressed(io.RawIOBase):
    """A seekable, read-only view of the decompressed data; `open_raw` gives the compressed
    bytes from their start each time it is called."""

    def __init__(self, open_raw: Callable[[], BinaryIO], codec: str, what: str,
                 budget: int = MAX_INFLATE_BYTES) -> None:
        self.open_raw, self.codec, self.what, self.budget = open_raw, codec, what, budget
        self.spent = 0
        self._raw: BinaryIO | None = None
        self._inner: BinaryIO | None = None
        self._pos = 0          # position of the decompressor
        self._want = 0         # position asked for by seek
        self._restart()

    def _restart(self) -> None:
        self._close_inner()
        self._raw = self.open_raw()
        self._inner = _decompressor(self.codec, self._raw)
        self._pos = 0

    def _close_inner(self) -> None:
        for stream in (self._inner, self._raw):
            if stream is not None:
                try:
                    stream.close()
                except Exception:  # noqa: BLE001 - closing a broken decompressor
                    pass
        self._inner = self._raw = None

    def _pull(self, n: int) -> bytes:
        if self.spent + n > self.budget:
            n = self.budget - self.spent
            if n <= 0:
                raise BudgetExceeded(f"{self.what}: more than {self.budget >> 20} MiB decompressed; "
                                     f"read as cut there")
        data = self._inner.read(n)
        self.spent += len(data)
        self._pos += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._want

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._want
        elif whence == io.SEEK_END:
            raise OSError("the decompressed size is not known before reading it all")
        self._want = max(0, offset)
        return self._want

    def readinto(self, buf) -> int:
        if self._want < self._pos:
            self._restart()
        while self._pos < self._want:
            if not self._pull(min(SKIP_BLOCK, self._want - self._pos)):
                return 0
        data = self._pull(len(buf))
        buf[:len(data)] = data
        self._want = self._pos
        return len(data)

    def close(self) -> None:
        self._close_inner()
        super().close()
