"""What a file holds, from its first bytes, never from its name.

Owns content sniffing (`sniff`: core, ELF, gzip, pickle, Flight Recorder JSON, binary,
text), the UTF-16/UTF-32 detection of `text_encoding`, and `gunzip` (a capped
decompressing stream).  An ELF core called `log.txt` is still a core.
"""
from __future__ import annotations

import codecs
import io
from typing import BinaryIO

from postmortem.bundle.entry import ELF_MAGIC, GZIP_MAGIC, MAX_DECOMPRESSED_BYTES, SNIFF_BYTES, CappedReader
from postmortem.parsers import flightrec_load as flightrec  # the sniffing half (the parser: only for a dump)


def text_encoding(head: bytes) -> str | None:
    """UTF-16 / UTF-32 text, from a byte-order mark or the NUL pattern ASCII leaves
    in them; None for anything else (read as UTF-8)."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    sample = head[: SNIFF_BYTES - SNIFF_BYTES % 4]
    if len(sample) < 16 or b"\x00" not in sample:  # (no NUL: no lane below could pass)
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
    import gzip

    return io.BufferedReader(CappedReader(gzip.GzipFile(fileobj=stream), MAX_DECOMPRESSED_BYTES, what))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- lines
