"""Read Linux ELF core files: the fatal signal, where it hit, and every thread's pc.

The core is read in place, from any seekable binary stream (a file, a gzip.GzipFile,
a tar member): the ELF and program headers, the notes, and only the few pages of
memory that a question needs (an auxv string, the ELF header page of each mapped
object, a window of each thread's stack).  Cores can be many GB; nothing reads one
whole.  Layouts are in ../shared/formats.md §6.

pyelftools is imported here only, and everything it raises is caught where it is
called (per segment, per note) and turned into a problem string: `read_core` never
raises.  A core cut short is reported `truncated`, with whatever could still be read.

When a signal handler (faulthandler, torch, UCX) re-raised the fatal signal, the
core's NT_SIGINFO says SI_TKILL and has no address.  The real fault is then
recovered from the kernel's signal frame left on the stack the handler ran on
(§6.3); `how` tells which way the fault address was found.
"""
from __future__ import annotations

import bisect
import gzip
import os
import shutil
import struct
import subprocess
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

from postmortem import signals
from postmortem.model import Event, Fact, Frame, Ref, Severity, Stack

# --------------------------------------------------------------------------- tables

SIGNAL_NAMES = signals.NAMES
SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV = 4, 5, 7, 8, 11

# Signals the kernel raises for a faulting instruction: si_addr is meaningful.
FAULT_SIGNALS = frozenset({SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV})

# si_code <= 0 (and SI_KERNEL) mean the same for every signal (include/uapi/asm-generic/siginfo.h).
GENERIC_SI_CODES = {
    0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -2: "SI_TIMER", -3: "SI_MESGQ",
    -4: "SI_ASYNCIO", -5: "SI_SIGIO", -6: "SI_TKILL", -7: "SI_DETHREAD", -60: "SI_ASYNCNL",
}
# Positive si_code values are per signal.
SIGNAL_SI_CODES = {
    SIGILL: {1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP",
             5: "ILL_PRVOPC", 6: "ILL_PRVREG", 7: "ILL_COPROC", 8: "ILL_BADSTK",
             9: "ILL_BADIADDR"},
    SIGTRAP: {1: "TRAP_BRKPT", 2: "TRAP_TRACE", 3: "TRAP_BRANCH", 4: "TRAP_HWBKPT",
              5: "TRAP_UNK", 6: "TRAP_PERF"},
    SIGBUS: {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR",
             5: "BUS_MCEERR_AO"},
    SIGFPE: {1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF",
             5: "FPE_FLTUND", 6: "FPE_FLTRES", 7: "FPE_FLTINV", 8: "FPE_FLTSUB",
             14: "FPE_FLTUNK", 15: "FPE_CONDTRAP"},
    SIGSEGV: {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR",
              5: "SEGV_ACCADI", 6: "SEGV_ADIDERR", 7: "SEGV_ADIPERR", 8: "SEGV_MTEAERR",
              9: "SEGV_MTESERR", 10: "SEGV_CPERR"},
}

AT_NULL, AT_PAGESZ, AT_ENTRY, AT_EXECFN = 0, 6, 9, 31
DEBUG_DIRS = (Path("/usr/lib/debug"),)   # where distributions put separate debug files
PF_X = 1
NT_GNU_BUILD_ID = 3


@dataclass(frozen=True, slots=True)
class Arch:
    """Where pr_reg sits in NT_PRSTATUS, and which of its words are pc, sp and fp."""

    name: str
    reg_offset: int
    reg_count: int
    pc: int
    sp: int
    fp: int


ARCHES = {
    # user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ...
    "EM_X86_64": Arch("x86-64", reg_offset=112, reg_count=27, pc=16, sp=19, fp=4),
    # user_pt_regs: x0..x30, sp, pc, pstate (x29 is the frame pointer)
    "EM_AARCH64": Arch("aarch64", reg_offset=112, reg_count=34, pc=32, sp=31, fp=29),
}

# x86-64 `struct rt_sigframe` (arch/x86/include/asm/sigframe.h): pretcode, ucontext
# (flags, link, stack_t[24], sigcontext[256], sigmask[8]), then siginfo.
SIGFRAME_MCONTEXT = 48
SIGCONTEXT = {"rbp": 80, "rsp": 120, "rip": 128, "cs": 144, "err": 152, "trapno": 160, "cr2": 176}
SIGFRAME_SIGINFO = 312          # filled only for handlers installed with SA_SIGINFO
SIGFRAME_SIZE = SIGFRAME_SIGINFO + 128
USER_CS_64 = 0x33
UC_FLAGS_KNOWN = 0xF            # UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS | 8
TRAP_PAGE_FAULT = 14
PF_PROTECTION = 1               # page-fault error code bit: the page was present
# x86 trap numbers (sigcontext.trapno) that raise each fault signal.
TRAPS_OF_SIGNAL = {
    SIGSEGV: frozenset({12, 13, 14}),     # stack segment, general protection, page fault
    SIGBUS: frozenset({14, 17, 18}),      # page fault, alignment check, machine check
    SIGILL: frozenset({6}),               # invalid opcode
    SIGFPE: frozenset({0, 16, 19}),       # divide error, x87, SIMD
    SIGTRAP: frozenset({1, 3}),           # debug, breakpoint
}

# Bounds that keep one core's cost small whatever it holds.
CHUNK_SIZE = 64 << 10           # stream reads are cached in chunks of this size ...
CACHED_CHUNKS = 256             # ... at most this many (16 MiB)
MAX_READ = 256 << 20            # no single read larger than this
MAX_NOTE_SEGMENT = 256 << 20    # a PT_NOTE larger than this is garbage
MAX_NOTE_RESTARTS = 16          # notes skipped after a decoding error, per segment
SIGFRAME_SCAN = 256 << 10       # how far above the crashing sp to look for a signal frame
MAX_FRAMES = 64                 # frame-pointer walk depth
MAX_FRAME_STEP = 1 << 20        # a caller's frame further away than this is not believed
MAX_SYMBOL_FILES = 16           # objects looked up for symbols, per core
MAX_SYMTAB_BYTES = 64 << 20     # symbol or string tables larger than this are skipped
MAX_PROBLEMS = 50


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, slots=True)
class CoreResult:
    """What one core says, as model objects, plus what could not be read."""

    facts: tuple[Fact, ...] = ()
    stacks: tuple[Stack, ...] = ()
    events: tuple[Event, ...] = ()
    problems: tuple[str, ...] = ()
    truncated: bool = False


# --------------------------------------------------------------------------- decoded notes


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


@dataclass(frozen=True, slots=True)
class Fault:
    """The fatal signal as best known: from NT_SIGINFO, or from a handler's signal frame."""

    signo: int
    code: int | None
    addr: int | None
    how: str                # "siginfo" | "sigframe" | "none"
    ref_offset: int         # file offset of the evidence (note or signal frame)
    reraised_code: int | None = None     # the SI_TKILL/SI_USER code of the re-raise
    frame_addr: int | None = None        # the signal frame (sigframe only)
    pc: int | None = None                # registers at the fault (sigframe only)
    sp: int | None = None
    fp: int | None = None
    trapno: int | None = None            # x86 trap and page-fault error code (sigframe only)
    err: int | None = None
    code_inferred: bool = False          # si_code worked out from trapno/err, not read


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


# --------------------------------------------------------------------------- stream


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


# --------------------------------------------------------------------------- reading


def read_core(stream: BinaryIO, path: str, search_dirs: Sequence[Path] = ()) -> CoreResult:
    """Everything a core says, as model objects.  Never raises."""
    reader = _CoreReader(stream, path, search_dirs)
    try:
        return reader.read()
    except Exception as exc:  # a bug of ours must not take the whole analysis down
        reader.problem(f"core reader failed: {type(exc).__name__}: {exc}")
        return reader.partial_result()


class _CoreReader:
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
        notes = Notes()
        for offset, size in note_segments:
            self._read_note_segment(elf, offset, size, notes, arch)
        self.truncated = self._is_cut(loads, note_segments) or self.truncated or self.stream.cut
        if self.stream.error:
            self.problem(f"reading stopped at byte {self.stream.end_seen}: {self.stream.error}")
        memory = Memory(self.stream, loads)
        return _Analysis(self, elf, arch, notes, memory).result()

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
        loads: list[Load] = []
        notes: list[tuple[int, int]] = []
        try:
            count = elf.num_segments()
            for i in range(count):
                seg = elf.get_segment(i)
                if seg["p_type"] == "PT_LOAD":
                    loads.append(Load(seg["p_vaddr"], seg["p_memsz"], seg["p_offset"],
                                      seg["p_filesz"], seg["p_flags"]))
                elif seg["p_type"] == "PT_NOTE":
                    notes.append((seg["p_offset"], seg["p_filesz"]))
        except Exception as exc:
            self.problem(f"program headers unreadable after {len(loads) + len(notes)} "
                         f"segments: {type(exc).__name__}: {exc}")
            table_end = elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"]
            self.truncated = self.truncated or not self.stream.has_bytes_up_to(table_end)
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

    # -- notes

    def _read_note_segment(self, elf: Any, offset: int, size: int, notes: Notes,
                           arch: Arch | None) -> None:
        if size > MAX_NOTE_SEGMENT:
            self.problem(f"PT_NOTE at {offset:#x} claims {size} bytes: ignored")
            return
        self.stream.fence(offset + size)
        try:
            for note in self._iter_notes(elf, offset, size):
                self._decode_note(note, notes, arch)
        finally:
            self.stream.fence(None)

    def _iter_notes(self, elf: Any, offset: int, size: int) -> Iterator[Any]:
        """pyelftools' notes; a note it cannot parse is reported and skipped."""
        from elftools.elf.notes import iter_notes

        end = offset + size
        for _ in range(MAX_NOTE_RESTARTS):
            try:
                for note in iter_notes(elf, offset, end - offset):
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


# --------------------------------------------------------------------------- analysis


class _Analysis:
    """From decoded notes and memory to facts, the signal event and stacks."""

    def __init__(self, reader: _CoreReader, elf: Any, arch: Arch | None, notes: Notes,
                 memory: Memory) -> None:
        self.reader = reader
        self.elf = elf
        self.arch = arch
        self.notes = notes
        self.memory = memory
        self.maps = MappingIndex(notes.mappings)
        self.build_ids = self._build_ids()
        self.symbols = Symbolizer(reader.search_dirs, self.build_ids, reader.problem)

    def result(self) -> CoreResult:
        fault = self._fault()
        events: list[Event] = []
        if fault is not None:
            events.append(self._signal_event(fault))
        self._process_facts()
        if fault is not None:
            self._fault_facts(fault)
        stacks = tuple(self._stacks(fault))
        r = self.reader
        r.facts.append(Fact("core.truncated", r.truncated, r.ref(0), text=str(r.truncated)))
        return CoreResult(tuple(r.facts), stacks, tuple(events), tuple(r.problems), r.truncated)

    # -- the fault

    def crashing_thread(self) -> Thread | None:
        # The kernel writes the thread that took the signal first (binfmt_elf.c).
        return self.notes.threads[0] if self.notes.threads else None

    def _fault(self) -> Fault | None:
        info = self.notes.siginfos[0] if self.notes.siginfos else None
        thread = self.crashing_thread()
        if info is None:
            if thread is None or thread.signo <= 0:
                return None
            self.reader.problem("no NT_SIGINFO: signal number from NT_PRSTATUS only")
            return Fault(thread.signo, None, None, "none", thread.note_offset)
        if info.signo <= 0:   # gcore of a live process: no signal at all
            return None
        if info.addr is not None:
            return Fault(info.signo, info.code, info.addr, "siginfo", info.note_offset)
        recovered = self._fault_from_sigframe(info, thread)
        if recovered is not None:
            return recovered
        return Fault(info.signo, info.code, None, "none", info.note_offset)

    def _fault_from_sigframe(self, info: SigInfo, thread: Thread | None) -> Fault | None:
        """The fault a handler re-raised: the kernel's rt_sigframe above the handler's sp."""
        if thread is None or not thread.regs or self.arch is None or self.arch.name != "x86-64":
            return None
        sp = thread.regs[self.arch.sp]
        window = self.memory.read_upto(sp, SIGFRAME_SCAN)
        for at in range((8 - sp) % 16, len(window) - SIGFRAME_SIZE + 1, 16):
            fault = self._sigframe_at(window, at, sp + at, info)
            if fault is not None:
                return fault
        return None

    def _sigframe_at(self, window: bytes, at: int, addr: int, info: SigInfo) -> Fault | None:
        """A Fault if a believable x86-64 rt_sigframe for `info.signo` starts at window[at]."""
        ctx = {name: struct.unpack_from("<Q", window, at + SIGFRAME_MCONTEXT + off)[0]
               for name, off in SIGCONTEXT.items()}
        pretcode, uc_flags = struct.unpack_from("<QQ", window, at)
        # The restorer is libc code, user code was running in 64-bit mode at a mapped
        # pc and sp, and the trap fits the signal.
        if (ctx["cs"] & 0xFFFF != USER_CS_64 or uc_flags & ~UC_FLAGS_KNOWN
                or ctx["trapno"] not in TRAPS_OF_SIGNAL.get(info.signo, ())
                or not self.memory.is_code(pretcode) or not self.memory.is_mapped(ctx["rip"])
                or not self.memory.is_mapped(ctx["rsp"])):
            return None
        exact = _frame_siginfo(window, at, info.signo, ctx)
        code, si_addr = exact if exact is not None else fault_from_trap(info.signo, ctx)
        return Fault(info.signo, code, si_addr, "sigframe",
                     ref_offset=self.memory.file_offset(addr) or info.note_offset,
                     reraised_code=info.code, frame_addr=addr, pc=ctx["rip"],
                     sp=ctx["rsp"], fp=ctx["rbp"], trapno=ctx["trapno"], err=ctx["err"],
                     code_inferred=exact is None)

    def _signal_event(self, fault: Fault) -> Event:
        proc = self.notes.process
        thread = self.crashing_thread()
        signal = signal_name(fault.signo)
        code_name = si_code_name(fault.signo, fault.code)
        mapping = self.maps.find(fault.addr) if fault.addr is not None else None
        mapping_offset = mapping_offset_of(mapping, fault.addr)
        data = {
            "signo": fault.signo, "signal": signal, "si_code": fault.code,
            "si_code_name": code_name, "addr": fault.addr, "how": fault.how,
            "mapping": mapping.path if mapping else None, "mapping_offset": mapping_offset,
            "pid": proc.pid if proc else None, "tid": thread.tid if thread else None,
            "comm": proc.comm if proc else None,
        }
        if fault.how == "sigframe":
            data.update(reraised_si_code_name=si_code_name(fault.signo, fault.reraised_code),
                        si_code_inferred=fault.code_inferred, trapno=fault.trapno,
                        err=fault.err, fault_pc=fault.pc)
        return Event(kind="core.signal", text=self._describe_fault(fault, mapping),
                     ref=self.reader.ref(self._signal_note_offset(fault)),
                     severity=Severity.FATAL, pid=data["pid"], tid=data["tid"], data=data)

    def _signal_note_offset(self, fault: Fault) -> int:
        if self.notes.siginfos:
            return self.notes.siginfos[0].note_offset
        return fault.ref_offset

    def _describe_fault(self, fault: Fault, mapping: Mapping | None) -> str:
        code = si_code_name(fault.signo, fault.code)
        text = signal_name(fault.signo) + (f" ({code})" if code else "")
        if fault.addr is not None:
            text += f" at {fault.addr:#x}"
            if mapping is not None:
                offset = mapping_offset_of(mapping, fault.addr)
                text += f" = {describe_size(offset)} into {mapping.path}"
            elif self.memory.is_mapped(fault.addr):
                text += " in an anonymous mapping"
            else:
                text += " (not mapped)"
        if fault.how == "sigframe":
            raised = si_code_name(fault.signo, fault.reraised_code)
            text += f"; recovered from the signal frame, a handler re-raised it ({raised})"
        elif self.notes.siginfos and self.notes.siginfos[0].sender_pid is not None:
            text += f" sent by pid {self.notes.siginfos[0].sender_pid}"
        return text

    # -- facts

    def _fact(self, name: str, value: Any, offset: int | None, unit: str = "",
              text: str = "") -> None:
        self.reader.facts.append(Fact(name, value, self.reader.ref(offset), unit=unit,
                                      text=text or str(value)))

    def _process_facts(self) -> None:
        proc, notes = self.notes.process, self.notes
        self._fact("core.arch", self.arch.name if self.arch else str(self.elf["e_machine"]), 18)
        if proc is not None:
            self._fact("core.pid", proc.pid, proc.note_offset)
            self._fact("core.ppid", proc.ppid, proc.note_offset)
            self._fact("core.uid", proc.uid, proc.note_offset)
            self._fact("core.comm", proc.comm, proc.note_offset)
            self._fact("core.cmdline", proc.cmdline, proc.note_offset)
        if notes.threads:
            self._fact("core.threads", len(notes.threads), notes.threads[0].note_offset)
            self._fact("core.tid", notes.threads[0].tid, notes.threads[0].note_offset)
        self._exe_facts()
        if notes.mappings:
            table = tuple((m.start, m.end, m.file_offset, m.path) for m in notes.mappings)
            self._fact("core.mappings", table, notes.file_note_offset,
                       text=f"{len(table)} file-backed mappings")
        if self.build_ids:
            self._fact("core.build_ids", dict(self.build_ids), notes.file_note_offset,
                       text=f"{len(self.build_ids)} build-ids")

    def _exe_facts(self) -> None:
        auxv = self.notes.auxv
        execfn = None
        if AT_EXECFN in auxv:
            execfn = self.memory.read_cstring(auxv[AT_EXECFN])
            if execfn is not None:
                self._fact("core.execfn", execfn, self.memory.file_offset(auxv[AT_EXECFN]))
        # The mapping that holds the entry point is the executable, by its full path.
        entry = self.maps.find(auxv[AT_ENTRY]) if AT_ENTRY in auxv else None
        if entry is not None:
            self._fact("core.exe", entry.path, self.notes.file_note_offset)
        elif execfn is not None:
            self._fact("core.exe", execfn, self.memory.file_offset(auxv[AT_EXECFN]))

    def _fault_facts(self, fault: Fault) -> None:
        where = fault.ref_offset
        signal = signal_name(fault.signo)
        self._fact("core.signal", signal, where, text=f"{signal} ({fault.signo})")
        code_name = si_code_name(fault.signo, fault.code)
        if code_name is not None:
            self._fact("core.si_code", code_name, where, text=f"{code_name} ({fault.code})")
        self._fact("core.fault_how", fault.how, where)
        if fault.addr is None:
            return
        self._fact("core.fault_addr", fault.addr, where, text=f"{fault.addr:#x}")
        mapping = self.maps.find(fault.addr)
        if mapping is not None:
            offset = mapping_offset_of(mapping, fault.addr)
            self._fact("core.fault_mapping", mapping.path, self.notes.file_note_offset)
            self._fact("core.fault_mapping_offset", offset, self.notes.file_note_offset,
                       unit="bytes", text=describe_size(offset))

    # -- build-ids

    def _build_ids(self) -> dict[str, str]:
        """path -> GNU build-id, for each mapped object whose ELF header page is in the core."""
        found: dict[str, str] = {}
        for mapping in self.notes.mappings:
            if mapping.file_offset != 0 or mapping.path in found:
                continue
            page = self.memory.read(mapping.start, min(4096, mapping.end - mapping.start))
            build_id = build_id_from_header_page(page) if page else None
            if build_id:
                found[mapping.path] = build_id
        return found

    # -- stacks

    def _stacks(self, fault: Fault | None) -> Iterator[Stack]:
        if self.arch is None:
            return
        for index, thread in enumerate(self.notes.threads):
            if len(thread.regs) != self.arch.reg_count:
                continue
            crashed = index == 0 and fault is not None
            frames = self._thread_frames(thread, fault if crashed else None)
            regs = {"pc": thread.regs[self.arch.pc], "sp": thread.regs[self.arch.sp],
                    "fp": thread.regs[self.arch.fp]}
            title = ""
            if crashed:
                code = si_code_name(fault.signo, fault.code)
                title = signal_name(fault.signo) + (f" ({code})" if code else "")
            pid = self.notes.process.pid if self.notes.process else None
            yield Stack(frames=tuple(frames), origin="core",
                        ref=self.reader.ref(thread.note_offset), thread=f"LWP {thread.tid}",
                        crashed=crashed, pid=pid, tid=thread.tid, title=title,
                        data={"registers": regs})

    def _thread_frames(self, thread: Thread, fault: Fault | None) -> list[Frame]:
        arch = self.arch
        pc, fp = thread.regs[arch.pc], thread.regs[arch.fp]
        stop_below = fault.frame_addr if fault is not None and fault.how == "sigframe" else None
        frames = [self.frame(pc, note="pc")]
        frames += self._walk(fp, stop_below)
        if stop_below is not None:
            # gdb's view: the handler's frames, the kernel's frame, then the faulting code.
            restorer = self.memory.read_word(stop_below)
            frames.append(self.frame(restorer, note="<signal handler called>")
                          if restorer is not None else Frame(note="<signal handler called>"))
            frames.append(self.frame(fault.pc, note="fault"))
            frames += self._walk(fault.fp, None)
        return frames[:MAX_FRAMES * 2]

    def _walk(self, fp: int, stop_below: int | None) -> list[Frame]:
        """Caller frames by frame pointer: [fp] = caller's fp, [fp+8] = return address.

        Bounded: the chain must climb the stack, in steps under MAX_FRAME_STEP, and
        every return address must be in executable memory.
        """
        frames: list[Frame] = []
        for _ in range(MAX_FRAMES):
            if stop_below is not None and fp >= stop_below:
                break
            pair = self.memory.read(fp, 16)
            if pair is None:
                break
            next_fp, ret = struct.unpack("<QQ", pair)
            if not self.memory.is_code(ret):
                break
            frames.append(self.frame(ret, note="", is_return=True))
            if not fp < next_fp <= fp + MAX_FRAME_STEP:
                break
            fp = next_fp
        return frames

    def frame(self, addr: int, note: str = "", is_return: bool = False) -> Frame:
        mapping = self.maps.find(addr)
        if mapping is None:
            return Frame(address=addr, note=note)
        module_offset = addr - self.maps.base_of(mapping.path)
        # A return address points after the call; look up the call itself.
        symbol = self.symbols.lookup(mapping.path, module_offset - (1 if is_return else 0))
        if symbol is not None:
            name, symbol_offset = symbol
            return Frame(function=name, module=mapping.path, address=addr,
                         offset=symbol_offset + (1 if is_return else 0), note=note)
        return Frame(module=mapping.path, address=addr, offset=module_offset, note=note)


def _frame_siginfo(window: bytes, at: int, signo: int,
                   ctx: dict[str, int]) -> tuple[int, int] | None:
    """(si_code, si_addr) from the frame's siginfo, if the kernel filled it (SA_SIGINFO)."""
    info_signo, _, code = struct.unpack_from("<iii", window, at + SIGFRAME_SIGINFO)
    si_addr = struct.unpack_from("<Q", window, at + SIGFRAME_SIGINFO + 16)[0]
    if info_signo != signo or code <= 0 or code == 0x80:
        return None
    if ctx["trapno"] == TRAP_PAGE_FAULT and si_addr != ctx["cr2"]:
        return None
    return code, si_addr


def fault_from_trap(signo: int, ctx: dict[str, int]) -> tuple[int | None, int | None]:
    """(si_code, si_addr) as the kernel would have set them, from the saved trap state.

    Used when the handler was installed without SA_SIGINFO (faulthandler): the kernel
    then leaves the frame's siginfo unwritten, but cr2/trapno/err are always saved.
    """
    if ctx["trapno"] == TRAP_PAGE_FAULT:
        if signo == SIGSEGV:
            return (2 if ctx["err"] & PF_PROTECTION else 1), ctx["cr2"]  # SEGV_ACCERR / MAPERR
        if signo == SIGBUS:
            return 2, ctx["cr2"]   # BUS_ADRERR: no backing page (a poisoned one would be MCEERR)
        return None, ctx["cr2"]
    if signo in (SIGILL, SIGFPE):
        return None, ctx["rip"]   # the kernel reports the faulting instruction
    return None, None


# --------------------------------------------------------------------------- mappings


class MappingIndex:
    """NT_FILE mappings, searchable by address."""

    def __init__(self, mappings: Sequence[Mapping]) -> None:
        self.mappings = sorted(mappings, key=lambda m: m.start)
        self._starts = [m.start for m in self.mappings]
        self._bases: dict[str, int] = {}
        for m in self.mappings:
            base = m.start - m.file_offset
            self._bases[m.path] = min(self._bases.get(m.path, base), base)

    def find(self, addr: int) -> Mapping | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self.mappings[i].end:
            return self.mappings[i]
        return None

    def base_of(self, path: str) -> int:
        """Where the object's file offset 0 is mapped (its load base)."""
        return self._bases[path]


def mapping_offset_of(mapping: Mapping | None, addr: int | None) -> int | None:
    if mapping is None or addr is None:
        return None
    return addr - mapping.start + mapping.file_offset


# --------------------------------------------------------------------------- build-ids


def build_id_from_header_page(page: bytes) -> str | None:
    """The GNU build-id from an ELF64 LE object's first page, if its PT_NOTE lies in it."""
    try:
        if page[:4] != b"\x7fELF" or page[4] != 2 or page[5] != 1:
            return None
        phoff = struct.unpack_from("<Q", page, 32)[0]
        phentsize, phnum = struct.unpack_from("<HH", page, 54)
        for i in range(min(phnum, 64)):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
                "<IIQQQQ", page, phoff + i * phentsize)
            if p_type == 4:  # PT_NOTE
                found = _build_id_in_notes(page[p_offset:p_offset + p_filesz])
                if found:
                    return found
    except (struct.error, IndexError):
        return None
    return None


def _build_id_in_notes(data: bytes) -> str | None:
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, n_type = struct.unpack_from("<III", data, at)
        name_at = at + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        if n_type == NT_GNU_BUILD_ID and data[name_at:name_at + namesz] == b"GNU\0":
            desc = data[desc_at:desc_at + descsz]
            return desc.hex() if len(desc) == descsz else None
        at = desc_at + (descsz + 3) // 4 * 4
    return None


# --------------------------------------------------------------------------- symbols


@dataclass
class SymbolTable:
    """Function symbols of one object file, sorted by address."""

    link_base: int                             # link-time address of file offset 0
    starts: list[int]
    entries: list[tuple[int, int, int]]        # (value, size, name offset)
    strings: bytes

    def lookup(self, module_offset: int) -> tuple[str, int] | None:
        """(function, offset in it) for an offset from the object's load base."""
        vaddr = self.link_base + module_offset
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i < 0:
            return None
        value, size, name_at = self.entries[i]
        if size and vaddr >= value + size:
            return None
        raw = self.strings[name_at:self.strings.find(b"\0", name_at)]
        name = raw.split(b"@", 1)[0].decode("utf-8", "replace")   # drop symbol versions (@@GLIBC_2.17)
        return (name, vaddr - value) if name else None


class Symbolizer:
    """Symbol names from the object files the analysing machine has (best effort).

    For each mapped object, in order: a separate debug file named by the core's
    build-id (`<dir>/.build-id/ab/cdef….debug` under each search dir and
    /usr/lib/debug), then the object by base name or full path under each search dir,
    then at its own path.  A file whose build-id differs from the core's is not used.
    At most MAX_SYMBOL_FILES objects are looked up per core.
    """

    def __init__(self, search_dirs: Sequence[Path], build_ids: dict[str, str],
                 problem: Any) -> None:
        self.search_dirs = search_dirs
        self.build_ids = build_ids
        self.problem = problem
        self._tables: dict[str, SymbolTable | None] = {}

    def lookup(self, path: str, module_offset: int) -> tuple[str, int] | None:
        table = self._table(path)
        return None if table is None else table.lookup(module_offset)

    def _table(self, path: str) -> SymbolTable | None:
        if path not in self._tables:
            table = None
            if len(self._tables) < MAX_SYMBOL_FILES:
                for candidate, by_build_id in self._candidates(path):
                    table = self._load(path, candidate, by_build_id)
                    if table is not None:
                        break
            self._tables[path] = table
        return self._tables[path]

    def _candidates(self, path: str) -> Iterator[tuple[Path, bool]]:
        build_id = self.build_ids.get(path)
        if build_id and len(build_id) > 2:
            name = Path(".build-id", build_id[:2], build_id[2:] + ".debug")
            for d in (*self.search_dirs, *DEBUG_DIRS):
                yield d / name, True
        for d in self.search_dirs:
            yield d / Path(path).name, False
            yield d / path.lstrip("/"), False
        yield Path(path), False

    def _load(self, path: str, local: Path, by_build_id: bool) -> SymbolTable | None:
        try:
            if not local.is_file():
                return None
            with open(local, "rb") as f:
                return self._load_from(path, local, f, by_build_id)
        except Exception as exc:  # pyelftools on an arbitrary file: anything can happen
            self.problem(f"symbols of {local} unreadable: {type(exc).__name__}: {exc}")
            return None

    def _load_from(self, path: str, local: Path, f: BinaryIO,
                   by_build_id: bool) -> SymbolTable | None:
        from elftools.elf.elffile import ELFFile

        if f.read(4) != b"\x7fELF":
            return None
        f.seek(0)
        elf = ELFFile(f)
        if elf.elfclass != 64 or not elf.little_endian:
            return None
        wanted = self.build_ids.get(path)
        if not by_build_id and wanted is not None and _file_build_id(elf) not in (None, wanted):
            self.problem(f"{local} is not the {path} of the core (build-id differs): no symbols")
            return None
        section = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
        if section is None:
            return None
        strtab = elf.get_section(section["sh_link"])
        if section["sh_size"] > MAX_SYMTAB_BYTES or strtab["sh_size"] > MAX_SYMTAB_BYTES:
            self.problem(f"symbol table of {local} too large: skipped")
            return None
        entries = sorted(_function_symbols(section.data()))
        return SymbolTable(_link_base(elf), [e[0] for e in entries], entries, strtab.data())


def _link_base(elf: Any) -> int:
    """The link-time address of file offset 0: 0 for shared objects, 0x400000 for old executables.

    Taken from the lowest PT_LOAD's p_vaddr (separate debug files keep the vaddrs but
    not the file offsets, and the lowest load maps offset 0 in every linker's output).
    """
    lowest = min((s["p_vaddr"] for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"),
                 default=0)
    return lowest - lowest % 4096


def _file_build_id(elf: Any) -> str | None:
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_NOTE":
            for note in seg.iter_notes():
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    return note["n_desc"]
    return None


STT_FUNC, STT_GNU_IFUNC = 2, 10


def _function_symbols(symtab: bytes) -> Iterator[tuple[int, int, int]]:
    """(value, size, name offset) of defined functions, from raw Elf64_Sym entries."""
    usable = len(symtab) // 24 * 24
    for name_at, info, _, shndx, value, size in struct.iter_unpack("<IBBHQQ", symtab[:usable]):
        if (info & 0xF) in (STT_FUNC, STT_GNU_IFUNC) and shndx != 0 and value:
            yield value, size, name_at


# --------------------------------------------------------------------------- naming


def signal_name(signo: int) -> str:
    if signo in SIGNAL_NAMES:
        return SIGNAL_NAMES[signo]
    if 34 <= signo <= 64:
        return f"SIGRTMIN+{signo - 34}"
    return f"signal {signo}"


def si_code_name(signo: int, code: int | None) -> str | None:
    if code is None:
        return None
    if code <= 0 or code == 0x80:
        return GENERIC_SI_CODES.get(code, f"si_code {code}")
    return SIGNAL_SI_CODES.get(signo, {}).get(code, f"si_code {code}")


def describe_size(n: int | None) -> str:
    """64.0 MiB, 12 bytes ..."""
    if n is None:
        return "?"
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- gdb


def gdb_backtrace(core_path: Path, exe: Path, timeout: float = 30) -> str | None:
    """`thread apply all bt` of a core by gdb, or None when gdb or a file is missing or it times out.

    gdb needs the core as a plain file; decompress a gzip core first.
    """
    gdb = shutil.which("gdb")
    if gdb is None or not Path(exe).is_file() or not Path(core_path).is_file():
        return None
    command = [gdb, "-batch", "-nx", "-iex", "set debuginfod enabled off",
               "-ex", "thread apply all bt", str(exe), str(core_path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return done.stdout


def open_core(path: Path) -> BinaryIO:
    """A core file opened for read_core, gzip or not."""
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")
