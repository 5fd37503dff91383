"""Memory and /dev/shm as the system reports them: `df` (any of -h, -k, -B1, -T), `free`
(-h, -b, -k, ...), /proc/meminfo, and the /dev/shm line of `mount` or /proc/mounts
(docs/formats.md, system).  Facts: `shm.*`, `mem.*`, `swap.*`.  From the same mount tables (and
findmnt's) every mount point with its options: `mount.point` (value the mount point, text the
options) -- a filesystem mounted noexec is one whose files the kernel maps executable nowhere,
so a shared library on it cannot be loaded.

Sizes: df/free/mount suffixes are powers of 1024; meminfo's `kB` is KiB.
"""
from __future__ import annotations

import re

from lark import Tree

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import UNITS, Block, LineFormat, parse, parse_printed_size, tree_tokens

# /proc/meminfo key -> fact name (values are KiB).
MEMINFO_FACTS = {
    "MemTotal": "mem.total_bytes", "MemAvailable": "mem.available_bytes",
    "SwapTotal": "swap.total_bytes", "Shmem": "mem.shmem_bytes",
    "HardwareCorrupted": "mem.hardware_corrupted_bytes",
}


class DfBlock(Block):
    """`df` (any of -h, -k, -B1, -T): facts for the row mounted on /dev/shm."""

    opener = re.compile(r"^Filesystem\s+(?:Type\s+)?(?:Size|\d+[KMGTPE]?B?-blocks)\s+Used\s+Avail")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("df_header", header.text)
        self.ok = tree is not None
        size_col = next((str(t) for t in tree_tokens(tree) if t.type == "DF_SIZE_COL"), "Size") if tree else ""
        blocks = re.match(r"(\d+)([KMGTPE]?)", size_col)
        self.scale = int(blocks.group(1)) * UNITS[blocks.group(2)] if blocks else 1
        self.device: str | None = None  # a wrapped long device name waiting for its numbers

    def feed(self, line: Line) -> bool:
        tree = parse("df_row", line.text)
        if tree is None and self.device is not None:
            tree = parse("df_continuation", line.text)
        if tree is None:
            if self.device is None and re.fullmatch(r"\S+", line.text):
                self.device = line.text
                return True
            return False
        self.device = None
        nums = [str(t) for t in tree_tokens(tree) if t.type == "DF_NUM"]
        pct = next(str(t) for t in tree_tokens(tree) if t.type == "DF_PCT")
        mount = next(str(t) for t in tree_tokens(tree) if t.type == "MOUNT_REST")
        if mount.strip() == "/dev/shm":
            self._shm_facts(line, nums, pct)
        return True

    def _shm_facts(self, line: Line, nums: list[str], pct: str) -> None:
        for name, text in zip(("shm.size_bytes", "shm.used_bytes", "shm.avail_bytes"), nums):
            value = parse_printed_size(text, self.scale)
            if value is not None:
                self.sink.fact(line, name, value, "B", text)
        if pct.endswith("%"):
            self.sink.fact(line, "shm.use_pct", int(pct[:-1]), "%", pct)


class FreeBlock(Block):
    """`free` (-h, -b, -k, ...): total/available memory and swap."""

    opener = re.compile(r"^\s+total\s+used\s+free\s+shared\s+(?:buff/cache|buffers)")
    # A bare number's unit is not printed: free's default is KiB, -b prints bytes.  No
    # machine has 16 TiB of RAM, so a bare total >= 2**34 must be bytes.
    BYTES_THRESHOLD = 2**34

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.columns = header.text.split()
        # the unit the command line before the table asked for (`free -m`), read once
        self.scale: int | None = parser.free_scale
        parser.free_scale = None

    def feed(self, line: Line) -> bool:
        tree = parse("free_row", line.text)
        if tree is None:
            return False
        label, *values = [str(t) for t in tree_tokens(tree)]
        if self.scale is None and values and values[0].isdecimal():
            # no command line: the default (KiB), or bytes (-b) when no RAM could be that many KiB
            self.scale = 1 if int(values[0]) >= self.BYTES_THRESHOLD else 1024
        row = dict(zip(self.columns, values))
        wanted = {"Mem:": (("total", "mem.total_bytes"), ("available", "mem.available_bytes")),
                  "Swap:": (("total", "swap.total_bytes"),)}.get(label, ())
        for column, fact in wanted:
            if column in row:
                value = parse_printed_size(row[column], self.scale or 1024)
                if value is not None:
                    self.sink.fact(line, fact, value, "B", row[column])
        return True


# procps-ng free.c: the options that set the unit of bare numbers (-h prints a suffix on each)
FREE_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3,
              "--bytes": 1, "--kibi": 1024, "--mebi": 1024**2, "--gibi": 1024**3, "--tebi": 1024**4, "--pebi": 1024**5,
              "--kilo": 1000, "--mega": 1000**2, "--giga": 1000**3, "--tera": 1000**4, "--peta": 1000**5}


def free_command(parser, line: Line, tree: Tree) -> None:
    """`free -m` on the line before its table: the unit of the table's bare numbers."""
    scale = None
    for option in (str(t) for t in tree_tokens(tree) if str(t).startswith("-")):
        if option.startswith("--"):
            scale = FREE_UNITS.get(option, scale)
        else:
            for letter in option[1:]:
                scale = FREE_UNITS.get(letter, scale)
    parser.free_scale = scale


class MeminfoBlock(Block):
    opener = re.compile(r"^MemTotal:\s+\d+ kB\s*$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.ok = self.feed(header)

    def feed(self, line: Line) -> bool:
        tree = parse("meminfo_line", line.text)
        if tree is None:
            return False
        key, value, *unit = [str(t) for t in tree_tokens(tree)]
        if key in MEMINFO_FACTS:
            factor = 1024 if unit else 1
            self.sink.fact(line, MEMINFO_FACTS[key], int(value) * factor, "B", f"{value} {' '.join(unit)}".strip())
        return True


def mount(parser, line: Line, tree: Tree) -> None:
    tokens = [str(t) for t in tree_tokens(tree)]
    if tree.data == "mount_line":
        device, path, fstype, options = tokens
    else:
        device, path, fstype, options, *_ = tokens
    _mount_point(parser, line, path, options)
    if path != "/dev/shm":
        return
    parser.sink.fact(line, "shm.mount", options, text=f"{device} {fstype}")
    size = re.search(r"(?:^|,)size=([^,]+)", options)
    if size:
        value = parse_printed_size(size.group(1))
        if value is not None:
            parser.sink.fact(line, "shm.size_bytes", value, "B", size.group(1))


def _mount_point(parser, line: Line, path: str, options: str) -> None:
    """A mount point and its options (`noexec`, mount(8): 'do not permit direct execution of any
    binaries on the mounted filesystem', is what the classifier reads)."""
    parser.sink.fact(line, "mount.point", path, text=options)


class FindmntBlock(Block):
    """findmnt's default columns (TARGET SOURCE FSTYPE OPTIONS), as a list or a tree: each
    mount point with its options."""

    opener = re.compile(r"^TARGET\s+SOURCE\s+FSTYPE\s+OPTIONS\s*$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.ok = parse("findmnt_header", header.text) is not None

    def feed(self, line: Line) -> bool:
        tree = parse("findmnt_row", line.text)
        if tree is None:
            return False
        *_, path, _source, _fstype, options = [str(t) for t in tree_tokens(tree)]
        _mount_point(self.parser, line, path, options)
        return True


BLOCKS = (DfBlock, FreeBlock, MeminfoBlock, FindmntBlock)
LINE_FORMATS = (
    LineFormat("free_command", re.compile(r"^(?:\S{0,80}[$#>+]\s*)?free(?:\s+--?[A-Za-z][\w-]{0,20})+\s*$"), free_command),
    LineFormat("mount_line", re.compile(r"^\S+ on /dev/shm type \S+ \("), mount),
    LineFormat("proc_mounts_line", re.compile(r"^\S+ /dev/shm \S+ \S+ \d+ \d+\s*$"), mount),
    # every other mount point (its options; the /dev/shm lines above read more)
    LineFormat("mount_line", re.compile(r"^\S+ on (?!/dev/shm )/\S* type \S+ \([^()\s]+\)\s*$"), mount),
    LineFormat("proc_mounts_line", re.compile(r"^\S+ (?!/dev/shm )/\S* \S+ [^()\s]+ \d+ \d+\s*$"), mount),
)
