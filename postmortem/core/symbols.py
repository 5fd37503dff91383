"""Names for addresses: the NT_FILE mappings searchable by address, the GNU build-id of
each mapped object (from its ELF header page in the core), and function symbols read
from object files that the analysing side holds (best effort, bounded).
"""
from __future__ import annotations

import bisect
import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Sequence

from postmortem.core.notes import Mapping
from postmortem.core.tables import MAX_BUILD_ID_OBJECTS, MAX_SYMBOL_FILES, MAX_SYMTAB_BYTES, NT_GNU_BUILD_ID

if TYPE_CHECKING:
    from postmortem.core.stream import Memory



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


def build_ids_of(mappings: Sequence[Mapping], memory: "Memory") -> dict[str, str]:
    """path -> GNU build-id, for each mapped object whose ELF header page is in the core."""
    found: dict[str, str] = {}
    tried: set[str] = set()
    for mapping in mappings:
        if mapping.file_offset != 0 or mapping.path in tried or len(tried) >= MAX_BUILD_ID_OBJECTS:
            continue
        tried.add(mapping.path)
        page = memory.read(mapping.start, min(4096, mapping.end - mapping.start))
        build_id = build_id_from_header_page(page) if page else None
        if build_id:
            found[mapping.path] = build_id
    return found


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


_HEX = re.compile(r"[0-9a-f]+")


def _open_inside(folder: Path, parts: tuple[str, ...]) -> BinaryIO | None:
    """The regular file folder/parts..., opened without following any link on the way; None if
    it is missing, a link, not a regular file, or has more than one hard link."""
    fds: list[int] = []
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        fds.append(fd)
        for part in parts[:-1]:
            fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            fds.append(fd)
        leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except (OSError, ValueError):
        return None
    finally:
        for opened in fds:
            os.close(opened)
    st = os.fstat(leaf)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(leaf)
        return None
    return os.fdopen(leaf, "rb")


class Symbolizer:
    """Symbol names from the object files the analysing machine has (best effort).

    For each mapped object, in order: a separate debug file named by the core's
    build-id (`<dir>/.build-id/ab/cdef….debug` under each search dir), then the object
    by base name in each search dir (the bundle's folders).  Nothing outside them is
    opened: no symlink, no file with other hard links, no path the core names.  A file
    whose build-id differs from the core's is not used.  At most MAX_SYMBOL_FILES
    objects are looked up per core.
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
                for folder, parts, by_build_id in self._candidates(path):
                    table = self._load(path, folder, parts, by_build_id)
                    if table is not None:
                        break
            self._tables[path] = table
        return self._tables[path]

    def _candidates(self, path: str) -> Iterator[tuple[Path, tuple[str, ...], bool]]:
        """(search dir, path parts under it, found by build-id): inside the search dirs only.

        The core's NT_FILE path is bundle text: it names a file by base name and build-id,
        never by where it points (absolute, `../`, relative to the analyst's cwd).
        """
        build_id = self.build_ids.get(path)
        if build_id and len(build_id) > 2 and _HEX.fullmatch(build_id):
            for d in self.search_dirs:
                yield d, (".build-id", build_id[:2], build_id[2:] + ".debug"), True
        base = path.rsplit("/", 1)[-1]
        if base not in ("", ".", "..") and "\0" not in base:
            for d in self.search_dirs:
                yield d, (base,), False

    def _load(self, path: str, folder: Path, parts: tuple[str, ...],
              by_build_id: bool) -> SymbolTable | None:
        local = folder.joinpath(*parts)
        f = _open_inside(folder, parts)
        if f is None:
            return None
        try:
            with f:
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


