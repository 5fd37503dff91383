"""One pass over one core: open the ELF header, list the program headers (PT_LOAD memory and
PT_NOTE segments), decode the notes, tell a cut core from a whole one, and hand everything
to analysis.py.  `read_core` never raises: what cannot be read becomes a problem string.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO, Sequence

from postmortem.core.analysis import Analysis, CoreResult
from postmortem.core.notes import NoteReader
from postmortem.core.stream import CoreStream, Load, Memory
from postmortem.core.tables import ARCHES, MAX_PROBLEMS, MAX_PROGRAM_HEADERS
from postmortem.model import Fact, Ref

PT_LOAD, PT_NOTE = 1, 4
PHDR_FORMAT = "<IIQQQQQQ"   # Elf64_Phdr: type, flags, offset, vaddr, paddr, filesz, memsz, align
PHDR_SIZE = struct.calcsize(PHDR_FORMAT)


def read_core(stream: BinaryIO, path: str, search_dirs: Sequence[Path] = ()) -> CoreResult:
    """Everything a core says, as model objects.  Never raises."""
    reader = CoreReader(stream, path, search_dirs)
    try:
        return reader.read()
    except Exception as exc:  # a bug of ours must not take the whole analysis down
        reader.problem(f"core reader failed: {type(exc).__name__}: {exc}")
        return reader.partial_result()


class CoreReader:
    """One pass over one core; keeps the problems met on the way."""

    def __init__(self, stream: BinaryIO, path: str, search_dirs: Sequence[Path]) -> None:
        self.stream = CoreStream(stream)
        self.path = path
        self.search_dirs = tuple(Path(d) for d in search_dirs)
        self.problems: list[str] = []
        self.truncated = False
        self.facts: list[Fact] = []

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def ref(self, offset: int | None) -> Ref:
        return Ref(self.path, offset=offset)

    def partial_result(self) -> CoreResult:
        return CoreResult(facts=tuple(self.facts), problems=tuple(self.problems),
                          truncated=self.truncated)

    # -- the pass

    def read(self) -> CoreResult:
        elf = self._open_elf()
        if elf is None:
            return self.partial_result()
        arch = ARCHES.get(elf["e_machine"])
        if arch is None:
            self.problem(f"unsupported machine {elf['e_machine']}: registers not decoded")
        loads, note_segments = self._segments(elf)
        notes = NoteReader(self.stream, self.problem).read(note_segments, arch)
        self.truncated = self._is_cut(loads, note_segments) or self.truncated or self.stream.cut
        if self.stream.error:
            self.problem(f"reading stopped at byte {self.stream.end_seen}: {self.stream.error}")
        memory = Memory(self.stream, loads)
        return Analysis(self, elf, arch, notes, memory).result()

    def _open_elf(self) -> Any:
        from elftools.elf.elffile import ELFFile  # imported here only (startup cost)

        head = self.stream.pread(0, 64)
        try:
            elf = ELFFile(self.stream)
            e_type = elf["e_type"]
        except Exception as exc:
            self.truncated = self.stream.cut or (
                len(head) < 64 and b"\x7fELF".startswith(head[:4]) and len(head) > 0)
            self.problem(f"not a readable ELF file: {type(exc).__name__}: {exc}")
            return None
        if e_type != "ET_CORE":
            self.problem(f"ELF file of type {e_type}, not a core")
            return None
        if elf.elfclass != 64 or not elf.little_endian:
            self.problem(f"only 64-bit little-endian cores are decoded (this one: "
                         f"ELF{elf.elfclass} {'LE' if elf.little_endian else 'BE'})")
            return None
        return elf

    def _segments(self, elf: Any) -> tuple[list[Load], list[tuple[int, int]]]:
        """PT_LOADs and the distinct PT_NOTE segments, from the program header table read raw.

        At most MAX_PROGRAM_HEADERS entries are read: PN_XNUM lets a few bytes of header
        claim billions of them."""
        loads: list[Load] = []
        notes: list[tuple[int, int]] = []
        seen: set[tuple[int, int]] = set()
        try:
            count = elf.num_segments()
        except Exception as exc:
            self.problem(f"program header count unreadable: {type(exc).__name__}: {exc}")
            count = 0
        phoff, entsize = elf["e_phoff"], elf["e_phentsize"]
        if count and entsize != PHDR_SIZE:
            self.problem(f"program header entries of {entsize} bytes, not {PHDR_SIZE}: not read")
            count = 0
        if count > MAX_PROGRAM_HEADERS:
            self.problem(f"the core claims {count} program headers; only the first "
                         f"{MAX_PROGRAM_HEADERS} are read")
            count = MAX_PROGRAM_HEADERS
        table = self.stream.pread(phoff, count * PHDR_SIZE)
        for p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz, _ in struct.iter_unpack(
                PHDR_FORMAT, table[:len(table) // PHDR_SIZE * PHDR_SIZE]):
            if p_type == PT_LOAD:
                loads.append(Load(p_vaddr, p_memsz, p_offset, p_filesz, p_flags))
            elif p_type == PT_NOTE and (p_offset, p_filesz) not in seen:
                seen.add((p_offset, p_filesz))
                notes.append((p_offset, p_filesz))
        if len(table) < count * PHDR_SIZE:
            self.problem(f"program headers unreadable after {len(loads) + len(notes)} "
                         f"segments: the table is cut")
            self.truncated = self.truncated or not self.stream.has_bytes_up_to(phoff + count * PHDR_SIZE)
        if not notes:
            self.problem("no PT_NOTE segment: no signal, threads or mappings")
        return loads, notes

    def _is_cut(self, loads: Sequence[Load], notes: Sequence[tuple[int, int]]) -> bool:
        """True if the core's segments promise more bytes than the stream holds."""
        ends = [load.offset + load.filesz for load in loads if load.filesz]
        ends += [offset + size for offset, size in notes]
        needed = max(ends, default=0)
        if self.stream.has_bytes_up_to(needed):
            return False
        have = self.stream.size if self.stream.end_seen is None else self.stream.end_seen
        self.problem(f"core is truncated: segments need {needed} bytes, "
                     f"the file holds {have if have is not None else 'fewer'}")
        return True
