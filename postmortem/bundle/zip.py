"""Zip bundles, read in place, never extracted.

Owns the defensive zip reading: the entry count checked against the budget before
listing, entries whose data overlap refused (the many-entries-one-stream zip bomb),
link and unsafe-path members refused, and each member opened on its own with its
decompressed size capped.
"""
from __future__ import annotations

import io
import stat
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Callable

from postmortem.budget import Meter
from postmortem.model import Artifact, ArtifactStatus
from postmortem.bundle.entry import (MAX_DECOMPRESSED_BYTES, CappedReader, Entry, MemberNames, assign_hosts,
                                     not_read, unsafe_member_name)


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


def scan_zip(path: Path, meter: Meter) -> tuple[list[Entry], list[Artifact]]:
    entries: list[Entry] = []
    skipped: list[Artifact] = []
    count = _zip_entry_count(path)
    limit = meter.budget.files
    if count is not None and count > limit * 4:
        return [], [not_read("(archive)", "archive", f"the zip lists {count} entries, more than the budget of "
                          f"{limit * 4} allows listing; not read", ArtifactStatus.ERROR)]
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    overlapping = _zip_overlaps(path, infos)
    names = MemberNames()
    for i, info in enumerate(infos):
        if info.is_dir():
            continue
        reason = unsafe_member_name(info.filename)
        mode = info.external_attr >> 16
        if reason:
            skipped.append(not_read(info.filename, "archive-member", reason))
        elif stat.S_ISLNK(mode):
            skipped.append(not_read(info.filename, "link", "link member in archive; not followed"))
        elif i in overlapping:
            skipped.append(not_read(info.filename, "archive-member",
                                 "zip entry overlaps another entry's data (a zip bomb trick); not read"))
        elif len(entries) >= limit:
            meter.note(f"the archive holds more than {limit} members; the first {limit} were read")
            break
        else:
            mtime = _zip_mtime(info)
            shown, note = names.take(info.filename)
            entries.append(Entry(shown, info.file_size, mtime, _zip_opener(path, i), note=note))
    return assign_hosts(entries), skipped


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

