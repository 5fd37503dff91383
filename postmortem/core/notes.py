"""A core's notes: what each PT_NOTE segment says, decoded into small records.

NT_PRSTATUS (threads and registers), NT_PRPSINFO (the process), NT_SIGINFO (the signal),
NT_AUXV (the auxiliary vector) and NT_FILE (file-backed mappings).  Reading is fenced to
the segment, a note that cannot be parsed is reported and skipped, and nothing raises.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from postmortem.core.stream import CoreStream
from postmortem.core.tables import AT_NULL, FAULT_SIGNALS, MAX_NOTE_RESTARTS, MAX_NOTE_SEGMENT, Arch


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

    def __init__(self, elf: Any, stream: CoreStream, problem: Callable[[str], None]) -> None:
        self.elf = elf
        self.stream = stream
        self.problem = problem

    def read(self, segments: list[tuple[int, int]], arch: Arch | None) -> Notes:
        notes = Notes()
        for offset, size in segments:
            self._read_note_segment(offset, size, notes, arch)
        return notes

    def _read_note_segment(self, offset: int, size: int, notes: Notes,
                           arch: Arch | None) -> None:
        if size > MAX_NOTE_SEGMENT:
            self.problem(f"PT_NOTE at {offset:#x} claims {size} bytes: ignored")
            return
        self.stream.fence(offset + size)
        try:
            for note in self._iter_notes(offset, size):
                self._decode_note(note, notes, arch)
        finally:
            self.stream.fence(None)

    def _iter_notes(self, offset: int, size: int) -> Iterator[Any]:
        """pyelftools' notes; a note it cannot parse is reported and skipped."""
        from elftools.elf.notes import iter_notes

        end = offset + size
        for _ in range(MAX_NOTE_RESTARTS):
            try:
                for note in iter_notes(self.elf, offset, end - offset):
                    offset = note["n_offset"] + _note_span(note["n_namesz"], note["n_descsz"])
                    yield note
                return
            except Exception as exc:
                self.problem(f"note at {offset:#x} unreadable: {type(exc).__name__}: {exc}")
                span = self._raw_note_span(offset)
                if span is None or offset + span >= end:
                    return
                offset += span

    def _raw_note_span(self, offset: int) -> int | None:
        header = self.stream.pread(offset, 12)
        if len(header) < 12:
            return None
        namesz, descsz, _ = struct.unpack("<III", header)
        return _note_span(namesz, descsz)

    def _decode_note(self, note: Any, notes: Notes, arch: Arch | None) -> None:
        kind, where = note["n_type"], note["n_offset"]
        decoder = NOTE_DECODERS.get(kind)
        if decoder is None or note["n_name"] != "CORE":
            return
        try:
            decoder(note, notes, arch)
        except Exception as exc:
            self.problem(f"{kind} note at {where:#x} undecodable: {type(exc).__name__}: {exc}")


def _note_span(namesz: int, descsz: int) -> int:
    """Bytes one note takes: header, then name and desc each padded to 4."""
    return 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4


def _decode_prstatus(note: Any, notes: Notes, arch: Arch | None) -> None:
    desc = note["n_descdata"]
    cursig = struct.unpack_from("<h", desc, 12)[0]
    tid = struct.unpack_from("<i", desc, 32)[0]
    regs: tuple[int, ...] = ()
    if arch is not None:
        regs = struct.unpack_from(f"<{arch.reg_count}Q", desc, arch.reg_offset)
    notes.threads.append(Thread(tid, cursig, regs, note["n_offset"]))


def _decode_prpsinfo(note: Any, notes: Notes, arch: Arch | None) -> None:
    d = note["n_desc"]
    notes.process = Process(
        pid=d["pr_pid"], ppid=d["pr_ppid"], uid=d["pr_uid"],
        comm=_cstr(d["pr_fname"]), cmdline=_cstr(d["pr_psargs"]).strip(),
        note_offset=note["n_offset"])


def _decode_siginfo(note: Any, notes: Notes, arch: Arch | None) -> None:
    desc = note["n_descdata"]
    signo, errno_, code = struct.unpack_from("<iii", desc, 0)
    addr = sender = None
    if code > 0 and signo in FAULT_SIGNALS:
        addr = struct.unpack_from("<Q", desc, 16)[0]
    elif code <= 0:
        sender = struct.unpack_from("<i", desc, 16)[0]
    notes.siginfos.append(SigInfo(signo, errno_, code, addr, sender, note["n_offset"]))


def _decode_auxv(note: Any, notes: Notes, arch: Arch | None) -> None:
    desc = note["n_descdata"]
    for a_type, a_val in struct.iter_unpack("<QQ", desc[:len(desc) // 16 * 16]):
        if a_type == AT_NULL:
            break
        notes.auxv.setdefault(a_type, a_val)
    notes.auxv_offset = note["n_offset"]


def _decode_file(note: Any, notes: Notes, arch: Arch | None) -> None:
    d = note["n_desc"]
    page = d["page_size"]
    for entry, name in zip(d["Elf_Nt_File_Entry"], d["filename"]):
        notes.mappings.append(Mapping(entry["vm_start"], entry["vm_end"],
                                      entry["page_offset"] * page, _cstr(name)))
    notes.file_note_offset = note["n_offset"]


NOTE_DECODERS = {
    "NT_PRSTATUS": _decode_prstatus,
    "NT_PRPSINFO": _decode_prpsinfo,
    "NT_SIGINFO": _decode_siginfo,
    "NT_AUXV": _decode_auxv,
    "NT_FILE": _decode_file,
}


def _cstr(value: bytes | str) -> str:
    if isinstance(value, str):
        return value.split("\0", 1)[0]
    return value.split(b"\0", 1)[0].decode("utf-8", "replace")

