"""A core's notes: what each PT_NOTE segment says, decoded into small records.

NT_PRSTATUS (threads and registers), NT_PRPSINFO (the process), NT_SIGINFO (the signal),
NT_AUXV (the auxiliary vector) and NT_FILE (file-backed mappings).  Reading is fenced to
the segment; notes are parsed from their raw headers, at most MAX_NOTES of them in at
most MAX_NOTE_BYTES (a few bytes can claim millions of empty notes, and many PT_NOTE
headers can name the same bytes); a note that cannot be decoded is reported and skipped,
and nothing raises.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

from postmortem.core.stream import CoreStream
from postmortem.core.tables import (
    AT_NULL, FAULT_SIGNALS, MAX_MAPPINGS, MAX_NOTE_BYTES, MAX_NOTE_SEGMENT, MAX_NOTES, Arch,
)


@dataclass(frozen=True, slots=True)
class Thread:
    tid: int
    signo: int
    regs: tuple[int, ...]
    note_offset: int


@dataclass(frozen=True, slots=True)
class SigInfo:
    signo: int
    errno: int
    code: int
    addr: int | None        # for fault signals
    sender_pid: int | None  # for kill()/tkill()
    note_offset: int


@dataclass(frozen=True, slots=True)
class Mapping:
    start: int
    end: int
    file_offset: int        # bytes
    path: str


@dataclass(frozen=True, slots=True)
class Process:
    pid: int
    ppid: int
    uid: int
    comm: str
    cmdline: str
    note_offset: int



@dataclass
class Notes:
    """Every note decoded, in file order."""

    threads: list[Thread] = field(default_factory=list)
    siginfos: list[SigInfo] = field(default_factory=list)
    process: Process | None = None
    auxv: dict[int, int] = field(default_factory=dict)
    auxv_offset: int | None = None
    mappings: list[Mapping] = field(default_factory=list)
    file_note_offset: int | None = None


class NoteReader:
    """Decodes the PT_NOTE segments of one core into a Notes, reporting through `problem`."""

    def __init__(self, stream: CoreStream, problem: Callable[[str], None]) -> None:
        self.stream = stream
        self.problem = problem
        self.count = 0

    def read(self, segments: list[tuple[int, int]], arch: Arch | None) -> Notes:
        notes = Notes()
        budget = MAX_NOTE_BYTES
        for offset, size in segments:
            if size > MAX_NOTE_SEGMENT:
                self.problem(f"PT_NOTE at {offset:#x} claims {size} bytes: ignored")
                continue
            if size > budget:
                self.problem(f"note segments past {MAX_NOTE_BYTES >> 20} MiB in all: "
                             f"PT_NOTE at {offset:#x} and later ones ignored")
                break
            budget -= size
            if not self._read_segment(offset, size, notes, arch):
                break
        return notes

    def _read_segment(self, offset: int, size: int, notes: Notes, arch: Arch | None) -> bool:
        """Decode one segment; False once the note budget is spent."""
        data = self.stream.pread(offset, size)
        at = 0
        while at + 12 <= len(data):
            if self.count >= MAX_NOTES:
                self.problem(f"more than {MAX_NOTES} notes: the rest are not read")
                return False
            namesz, descsz, n_type = struct.unpack_from("<III", data, at)
            desc_at = at + 12 + _pad4(namesz)
            end = desc_at + _pad4(descsz)
            if end > len(data):
                self.problem(f"note at {offset + at:#x} unreadable: it runs past its segment")
                return True
            self.count += 1
            decoder = NOTE_DECODERS.get(n_type)
            if decoder is not None and data[at + 12:at + 12 + namesz].rstrip(b"\0") == b"CORE":
                try:
                    decoder(data[desc_at:desc_at + descsz], offset + at, notes, arch)
                except Exception as exc:
                    self.problem(f"{NOTE_NAMES[n_type]} note at {offset + at:#x} undecodable: "
                                 f"{type(exc).__name__}: {exc}")
            at = end
        return True


def _pad4(n: int) -> int:
    return (n + 3) // 4 * 4


def _decode_prstatus(desc: bytes, where: int, notes: Notes, arch: Arch | None) -> None:
    cursig = struct.unpack_from("<h", desc, 12)[0]
    tid = struct.unpack_from("<i", desc, 32)[0]
    regs: tuple[int, ...] = ()
    if arch is not None:
        regs = struct.unpack_from(f"<{arch.reg_count}Q", desc, arch.reg_offset)
    notes.threads.append(Thread(tid, cursig, regs, where))


# struct elf_prpsinfo (64-bit): state, sname, zomb, nice, pad, flag, uid, gid, pid, ppid,
# pgrp, sid, fname[16], psargs[80].
PRPSINFO = struct.Struct("<bbbb4xQIIiiii16s80s")


def _decode_prpsinfo(desc: bytes, where: int, notes: Notes, arch: Arch | None) -> None:
    *_, uid, _gid, pid, ppid, _pgrp, _sid, fname, psargs = PRPSINFO.unpack_from(desc, 0)
    notes.process = Process(pid=pid, ppid=ppid, uid=uid, comm=_cstr(fname),
                            cmdline=_cstr(psargs).strip(), note_offset=where)


def _decode_siginfo(desc: bytes, where: int, notes: Notes, arch: Arch | None) -> None:
    signo, errno_, code = struct.unpack_from("<iii", desc, 0)
    addr = sender = None
    if code > 0 and signo in FAULT_SIGNALS:
        addr = struct.unpack_from("<Q", desc, 16)[0]
    elif code <= 0:
        sender = struct.unpack_from("<i", desc, 16)[0]
    notes.siginfos.append(SigInfo(signo, errno_, code, addr, sender, where))


def _decode_auxv(desc: bytes, where: int, notes: Notes, arch: Arch | None) -> None:
    for a_type, a_val in struct.iter_unpack("<QQ", desc[:len(desc) // 16 * 16]):
        if a_type == AT_NULL:
            break
        notes.auxv.setdefault(a_type, a_val)
    notes.auxv_offset = where


def _decode_file(desc: bytes, where: int, notes: Notes, arch: Arch | None) -> None:
    """NT_FILE: count, page size, count x (start, end, page offset), then count names."""
    count, page = struct.unpack_from("<QQ", desc, 0)
    room = MAX_MAPPINGS - len(notes.mappings)
    fits = (len(desc) - 16) // 24
    names_at = 16 + min(count, fits) * 24
    names = desc[names_at:].split(b"\0")
    for i in range(min(count, fits, room, len(names))):
        start, end, page_offset = struct.unpack_from("<QQQ", desc, 16 + i * 24)
        notes.mappings.append(Mapping(start, end, page_offset * page, _cstr(names[i])))
    if count > room:
        raise ValueError(f"{count} mappings; only {MAX_MAPPINGS} are kept")
    notes.file_note_offset = where


NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_SIGINFO, NT_FILE = 1, 3, 6, 0x53494749, 0x46494C45
NOTE_NAMES = {NT_PRSTATUS: "NT_PRSTATUS", NT_PRPSINFO: "NT_PRPSINFO", NT_AUXV: "NT_AUXV",
              NT_SIGINFO: "NT_SIGINFO", NT_FILE: "NT_FILE"}
NOTE_DECODERS = {
    NT_PRSTATUS: _decode_prstatus,
    NT_PRPSINFO: _decode_prpsinfo,
    NT_SIGINFO: _decode_siginfo,
    NT_AUXV: _decode_auxv,
    NT_FILE: _decode_file,
}


def _cstr(value: bytes | str) -> str:
    if isinstance(value, str):
        return value.split("\0", 1)[0]
    return value.split(b"\0", 1)[0].decode("utf-8", "replace")
