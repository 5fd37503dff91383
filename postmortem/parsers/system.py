"""System state: df, free, /proc/meminfo, mounts, boot time, ulimit, environment, nvidia-smi,
nvidia-smi -q, nvidia-smi topo -m, ibv_devinfo.  Everything here becomes Facts.

Two shapes of input:

* one-line formats (a `/dev/shm` mount line, `btime N`, an `ulimit -a` line, `NCCL_X=1`),
  picked by a regex in LINE_FORMATS and parsed with that start rule of grammars/system.lark;
* tables and reports that start with a header line (df, free, meminfo, the nvidia-smi table,
  `nvidia-smi -q`, `topo -m`, ibv_devinfo): the header opens a block (BLOCKS), the parser is
  busy while the following lines are rows of it, and the first line that is not ends it.

Sizes: df/free/mount suffixes are powers of 1024 (K, M, G, Ki, Mi, Gi; `k`/`m`/`g` in mount
options); meminfo's `kB` is KiB.
"""
from __future__ import annotations

import math
import re
from datetime import datetime

from lark import Token, Tree

from postmortem.grammar import load
from postmortem.parsers.base import Line, LineParser
from postmortem.parsers.keywords import any_word

_UNITS: dict[str, int] = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4,
                          "P": 1024**5, "E": 1024**6, "Z": 1024**7, "Y": 1024**8}
_SIZE = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPEZYkmgtpe]?)(?:i?B?)$")

# Which environment variables are worth a fact (`env.NAME`): prefixes and exact names.
ENV_PREFIXES = ("NCCL_", "TORCH_", "CUDA_", "PYTORCH_", "OMP_", "NVIDIA_", "UCX_", "MASTER_")
ENV_NAMES = ("WORLD_SIZE", "LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
             "CUDA_VISIBLE_DEVICES")

# `ulimit -a` item -> fact suffix, by flag (bash, zsh, busybox) or by name (every shell).
ULIMIT_FLAGS = {"-n": "nofile", "-l": "memlock", "-c": "core", "-v": "virtual"}
ULIMIT_NAMES = {
    "open files": "nofile", "file descriptors": "nofile", "nofiles": "nofile",
    "max locked memory": "memlock", "locked memory": "memlock", "locked-in-memory size": "memlock",
    "core file size": "core", "coredump": "core",
    "virtual memory": "virtual", "vmemory": "virtual", "address space": "virtual",
}
_KIB_UNITS = ("kbytes", "kb")

# /proc/meminfo key -> fact name (values are KiB).
MEMINFO_FACTS = {
    "MemTotal": "mem.total_bytes", "MemAvailable": "mem.available_bytes",
    "SwapTotal": "swap.total_bytes", "Shmem": "mem.shmem_bytes",
    "HardwareCorrupted": "mem.hardware_corrupted_bytes",
}

_DASH_ULIMIT = ("time", "file", "data", "stack", "coredump", "memory", "locked memory", "process",
                "nofiles", "vmemory", "locks", "rtprio", "nice", "sbsize", "pipe")
_ENV_NAME_RX = "|".join([*(re.escape(p) + r"\w*" for p in ENV_PREFIXES), *ENV_NAMES])

# (start rule, selecting regex, handler method name) for one-line formats.
LINE_FORMATS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("mount_line", re.compile(r"^\S+ on /dev/shm type \S+ \("), "_on_mount"),
    ("proc_mounts_line", re.compile(r"^\S+ /dev/shm \S+ \S+ \d+ \d+\s*$"), "_on_mount"),
    ("btime_line", re.compile(r"^btime \d+\s*$"), "_on_btime"),
    ("boot_time_line", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$"), "_on_boot_time"),
    ("ulimit_line", re.compile(
        r"\((?:\w+, )?-[A-Za-z]\) +(?:\d+|unlimited)\s*$|^-[A-Za-z]: .+ (?:\d+|unlimited)\s*$"
        rf"|^(?:{'|'.join(re.escape(n) for n in _DASH_ULIMIT)})(?:\(\w+\))? +(?:\d+|unlimited)\s*$"),
     "_on_ulimit"),
    ("env_line", re.compile(rf"^(?:export |declare -x |setenv )?(?:{_ENV_NAME_RX})=(?!=)"), "_on_env"),
    ("docker_line", re.compile(r'^\s*"(?:ShmSize|IpcMode)":'), "_on_docker"),
)


def parse_size(text: str, scale: int = 1) -> int | None:
    """`64M` -> 67108864, `1.5G`, `23Gi`, `0B`, `65536k`; a bare number is multiplied by `scale`."""
    m = _SIZE.match(text.strip())
    if not m:
        return None
    number = float(m.group(1).replace(",", "."))
    unit = m.group(2).upper()
    size = number * (_UNITS[unit] if unit else scale)
    # A size no machine has (a mangled or hostile figure) is no size: 2**63 bytes is 8 EiB.
    return round(size) if math.isfinite(size) and size < 2**63 else None


def _tokens(tree: Tree) -> list[Token]:
    return list(tree.scan_values(lambda v: isinstance(v, Token)))


def _parse(start: str, text: str) -> Tree | None:
    try:
        return load("system", start=start).parse(text)
    except Exception:  # noqa: BLE001 - any lark error declines the line
        return None


def _number(text: str):
    """`33 C` -> 33, `21.30 W` -> 21.3, `N/A` -> None."""
    m = re.match(r"^(-?\d+(?:\.\d+)?)", text.strip())
    if not m:
        return None
    value = float(m.group(1))
    return int(value) if value.is_integer() else value


# ------------------------------------------------------------------------------ blocks
class _Block:
    """A table or report being read.  `feed` returns False on a line that does not belong."""

    def __init__(self, parser: "SystemParser", header: Line) -> None:
        self.parser = parser
        self.sink = parser.sink
        self.header = header

    def feed(self, line: Line) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        return None


class _DfBlock(_Block):
    """`df` (any of -h, -k, -B1, -T): facts for the row mounted on /dev/shm."""

    opener = re.compile(r"^Filesystem\s+(?:Type\s+)?(?:Size|\d+[KMGTPE]?B?-blocks)\s+Used\s+Avail")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = _parse("df_header", header.text)
        self.ok = tree is not None
        size_col = next((str(t) for t in _tokens(tree) if t.type == "DF_SIZE_COL"), "Size") if tree else ""
        blocks = re.match(r"(\d+)([KMGTPE]?)", size_col)
        self.scale = int(blocks.group(1)) * _UNITS[blocks.group(2)] if blocks else 1
        self.device: str | None = None  # a wrapped long device name waiting for its numbers

    def feed(self, line: Line) -> bool:
        tree = _parse("df_row", line.text)
        if tree is None and self.device is not None:
            tree = _parse("df_continuation", line.text)
        if tree is None:
            if self.device is None and re.fullmatch(r"\S+", line.text):
                self.device = line.text
                return True
            return False
        self.device = None
        nums = [str(t) for t in _tokens(tree) if t.type == "DF_NUM"]
        pct = next(str(t) for t in _tokens(tree) if t.type == "DF_PCT")
        mount = next(str(t) for t in _tokens(tree) if t.type == "MOUNT_REST")
        if mount.strip() == "/dev/shm":
            self._shm_facts(line, nums, pct)
        return True

    def _shm_facts(self, line: Line, nums: list[str], pct: str) -> None:
        for name, text in zip(("shm.size_bytes", "shm.used_bytes", "shm.avail_bytes"), nums):
            value = parse_size(text, self.scale)
            if value is not None:
                self.sink.fact(line, name, value, "B", text)
        if pct.endswith("%"):
            self.sink.fact(line, "shm.use_pct", int(pct[:-1]), "%", pct)


class _FreeBlock(_Block):
    """`free` (-h, -b, -k, ...): total/available memory and swap."""

    opener = re.compile(r"^\s+total\s+used\s+free\s+shared\s+(?:buff/cache|buffers)")
    # A bare number's unit is not printed: free's default is KiB, -b prints bytes.  No
    # machine has 16 TiB of RAM, so a bare total >= 2**34 must be bytes.
    BYTES_THRESHOLD = 2**34

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.columns = header.text.split()
        self.scale: int | None = None

    def feed(self, line: Line) -> bool:
        tree = _parse("free_row", line.text)
        if tree is None:
            return False
        label, *values = [str(t) for t in _tokens(tree)]
        if self.scale is None and values and values[0].isdecimal():
            self.scale = 1 if int(values[0]) >= self.BYTES_THRESHOLD else 1024
        row = dict(zip(self.columns, values))
        wanted = {"Mem:": (("total", "mem.total_bytes"), ("available", "mem.available_bytes")),
                  "Swap:": (("total", "swap.total_bytes"),)}.get(label, ())
        for column, fact in wanted:
            if column in row:
                value = parse_size(row[column], self.scale or 1024)
                if value is not None:
                    self.sink.fact(line, fact, value, "B", row[column])
        return True


class _MeminfoBlock(_Block):
    opener = re.compile(r"^MemTotal:\s+\d+ kB\s*$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.ok = self.feed(header)

    def feed(self, line: Line) -> bool:
        tree = _parse("meminfo_line", line.text)
        if tree is None:
            return False
        key, value, *unit = [str(t) for t in _tokens(tree)]
        if key in MEMINFO_FACTS:
            factor = 1024 if unit else 1
            self.sink.fact(line, MEMINFO_FACTS[key], int(value) * factor, "B", f"{value} {' '.join(unit)}".strip())
        return True


class _SmiTableBlock(_Block):
    """The default `nvidia-smi` table: driver/CUDA versions and two rows per GPU."""

    opener = re.compile(r"^\|\s+NVIDIA-SMI \S+\s+Driver Version:")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = _parse("smi_header", header.text)
        self.ok = tree is not None
        self.gpu: int | None = None
        if tree is not None:
            _smi, driver, cuda = [str(t) for t in _tokens(tree) if t.type == "VERSION"][-3:]
            self.sink.fact(header, "gpu.driver_version", driver)
            self.sink.fact(header, "gpu.cuda_version", cuda)

    def feed(self, line: Line) -> bool:
        if not line.text.startswith(("|", "+")):
            return False
        gpu_row = _parse("smi_gpu_row", line.text)
        if gpu_row is not None:
            self._gpu_row(line, gpu_row)
            return True
        stat_row = _parse("smi_stat_row", line.text) if self.gpu is not None else None
        if stat_row is not None:
            self._stat_row(line, stat_row)
        self.gpu = None if stat_row is not None else self.gpu
        return True

    def _gpu_row(self, line: Line, tree: Tree) -> None:
        tokens = _tokens(tree)
        self.gpu = int(tokens[0])
        words = [str(t) for t in tokens[1:] if t.type == "CELL_WORD"]
        name = " ".join(words[:-2] if words[-2] in ("On", "Off") else words[:-1])
        bus = next(str(t) for t in tokens if t.type == "BUS_ID")
        ecc = str(tokens[-1])
        prefix = f"gpu.{self.gpu}"
        self.sink.fact(line, f"{prefix}.name", name)
        self.sink.fact(line, f"{prefix}.bus_id", bus)
        if ecc.isdecimal():
            self.sink.fact(line, f"{prefix}.ecc_uncorrected", int(ecc), text=ecc)
        elif ecc != "N/A":
            self.sink.fact(line, f"{prefix}.smi_error", ecc, text=ecc)

    def _stat_row(self, line: Line, tree: Tree) -> None:
        values = [str(t) for t in _tokens(tree) if t.type in ("SMI_VALUE", "PERF")]
        fan, temp, _perf, power, power_cap, mem_used, mem_total, _util = values[:8]
        prefix = f"gpu.{self.gpu}"
        for name, text in (("temp_c", temp), ("power_w", power), ("power_cap_w", power_cap),
                           ("mem_used_mib", mem_used), ("mem_total_mib", mem_total)):
            value = _number(text)
            if value is not None:
                self.sink.fact(line, f"{prefix}.{name}", value, text=text)
        errors = [v for v in values if v.startswith(("ERR!", "[Unknown"))]
        if errors:
            self.sink.fact(line, f"{prefix}.smi_error", errors[0], text=" ".join(values))


class _SmiQueryBlock(_Block):
    """`nvidia-smi -q`: an indented `Key : value` report, one section per GPU."""

    opener = re.compile(r"^=+NVSMI LOG=+\s*$")
    TOP_LEVEL = {"Driver Version": "gpu.driver_version", "CUDA Version": "gpu.cuda_version"}

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.ok = True
        self.gpu = -1
        self.sections: list[tuple[int, str]] = []  # (indent, name) of the open sections
        self.ecc: dict[str, list] = {}             # fact suffix -> [sum, first line]

    def feed(self, line: Line) -> bool:
        text = line.text
        if not text.strip():
            return True
        tree = _parse("q_line", text)
        if tree is None:
            return False
        indent = len(text) - len(text.lstrip())
        if tree.data == "q_gpu":
            self._flush_gpu()
            self.gpu += 1
            self.sections = []
            self.sink.fact(line, f"gpu.{self.gpu}.bus_id", str(_tokens(tree)[0])[4:])
            return True
        key, *value = [str(t) for t in _tokens(tree)]
        if indent == 0 and not value and ":" not in text:
            return self.gpu < 0 and text.startswith("=")  # only the banner stands alone at the top
        while self.sections and self.sections[-1][0] >= indent:
            self.sections.pop()
        if ":" not in text:
            self.sections.append((indent, key))
            return True
        self._value(line, [name for _, name in self.sections], key, value[0] if value else "")
        return True

    def _value(self, line: Line, path: list[str], key: str, value: str) -> None:
        if not path and key in self.TOP_LEVEL:
            self.sink.fact(line, self.TOP_LEVEL[key], value)
            return
        if self.gpu < 0:
            return
        prefix = f"gpu.{self.gpu}"
        section = path[0] if path else ""
        number = _number(value)
        if not path and key == "Product Name":
            self.sink.fact(line, f"{prefix}.name", value)
        elif section == "ECC Errors" and len(path) >= 2 and path[1] == "Volatile" and number is not None:
            self._count_ecc(line, path, key, number)
        elif section == "Retired Pages" and number is not None:
            self._add(f"retired_pages{'_pending' if 'Pending' in key else ''}", number, line)
        elif section == "Remapped Rows" and len(path) == 1:
            self._remapped(line, prefix, key, value, number)
        elif section == "Temperature" and key == "GPU Current Temp" and number is not None:
            self.sink.fact(line, f"{prefix}.temp_c", number, text=value)
        elif section in ("Power Readings", "GPU Power Readings") and key == "Power Draw" and number is not None:
            self.sink.fact(line, f"{prefix}.power_w", number, text=value)
        elif section == "FB Memory Usage" and key in ("Total", "Used") and number is not None:
            self.sink.fact(line, f"{prefix}.mem_{key.lower()}_mib", number, text=value)

    def _count_ecc(self, line: Line, path: list[str], key: str, number) -> None:
        # newer drivers: `DRAM Uncorrectable`, `SRAM Correctable` ...; older: `Double Bit` / `Total`
        subsection = path[2] if len(path) > 2 else ""
        if subsection in ("Single Bit", "Double Bit"):
            if key == "Total":
                self._add("ecc_uncorrected" if subsection == "Double Bit" else "ecc_corrected", number, line)
        elif "Uncorrectable" in key:
            self._add("ecc_uncorrected", number, line)
        elif "Correctable" in key:
            self._add("ecc_corrected", number, line)

    def _remapped(self, line: Line, prefix: str, key: str, value: str, number) -> None:
        names = {"Correctable Error": "remapped_rows_correctable", "Uncorrectable Error": "remapped_rows_uncorrectable",
                 "Pending": "remapped_rows_pending", "Remapping Failure Occurred": "remapped_rows_failure"}
        if key not in names:
            return
        if value in ("Yes", "No"):
            self.sink.fact(line, f"{prefix}.{names[key]}", value == "Yes", text=value)
        elif number is not None:
            self.sink.fact(line, f"{prefix}.{names[key]}", number, text=value)

    def _add(self, suffix: str, number, line: Line) -> None:
        total = self.ecc.setdefault(suffix, [0, line])
        total[0] += number

    def _flush_gpu(self) -> None:
        for suffix, (total, line) in self.ecc.items():
            self.sink.fact(line, f"gpu.{self.gpu}.{suffix}", total)
        self.ecc = {}

    def close(self) -> None:
        self._flush_gpu()


class _TopoBlock(_Block):
    """`nvidia-smi topo -m`: the matrix as text (`gpu.topo`) and its GPU pairs (`gpu.topo_links`)."""

    opener = re.compile(r"^\s*(?:GPU0|NIC0|mlx\w+)\s.*CPU Affinity")
    LEGEND_LINE = re.compile(r"^(?:\s+\S.*|(?:NIC )?Legend:\s*)$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = _parse("topo_header", header.text)
        self.ok = tree is not None
        self.columns = [str(t) for t in _tokens(tree) if t.type == "TOPO_NODE"] if tree else []
        self.lines = [header.text]
        self.links: dict[str, str] = {}
        self.in_legend = False

    def feed(self, line: Line) -> bool:
        if not line.text.strip():
            return True
        if not self.in_legend:
            tree = _parse("topo_row", line.text)
            if tree is not None:
                row, *cells = [str(t) for t in _tokens(tree)]
                self.lines.append(line.text)
                for column, cell in zip(self.columns, cells):
                    if column != row and row.startswith("GPU"):
                        self.links[f"{row}-{column}"] = cell
                return True
        if self.LEGEND_LINE.match(line.text):
            self.in_legend = True
            return True
        return False

    def close(self) -> None:
        self.sink.fact(self.header, "gpu.topo", "\n".join(self.lines))
        if self.links:
            self.sink.fact(self.header, "gpu.topo_links", dict(self.links))


class _IbvBlock(_Block):
    """`ibv_devinfo`: per HCA port, its state and link layer."""

    opener = re.compile(r"^hca_id:\s*\S+")
    WANTED = {"state": "state", "link_layer": "link_layer", "fw_ver": "fw_ver"}

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.hca = ""
        self.port = ""
        self.ok = self.feed(header)

    def feed(self, line: Line) -> bool:
        if not line.text.strip():
            return True
        tree = _parse("ibv_line", line.text)
        if tree is None:
            return False
        key, *value = [str(t) for t in _tokens(tree)]
        value_text = value[0] if value else ""
        if key == "hca_id":
            self.hca, self.port = value_text, ""
        elif key == "port":
            self.port = f"port{value_text}"
        elif key in self.WANTED and self.hca:
            scope = f"ib.{self.hca}.{self.port}." if self.port else f"ib.{self.hca}."
            self.sink.fact(line, scope + self.WANTED[key], value_text.split(" (")[0], text=value_text)
        return True


BLOCKS: tuple[type[_Block], ...] = (_DfBlock, _FreeBlock, _MeminfoBlock, _SmiTableBlock, _SmiQueryBlock,
                                    _TopoBlock, _IbvBlock)


# ------------------------------------------------------------------------------ the parser
class SystemParser(LineParser):
    name = "system"
    prefilter = re.compile("|".join([*(f"(?:{b.opener.pattern})" for b in BLOCKS),
                                     *(f"(?:{rx.pattern})" for _, rx, _ in LINE_FORMATS)]))
    # Every format is anchored at the line start except bash's `ulimit -a` rows (`(-n) 1024`).
    gate_start = re.compile("|".join([*(f"(?:{b.opener.pattern.lstrip('^')})" for b in BLOCKS),
                                      *(f"(?:{rx.pattern.lstrip('^')})" for name, rx, _ in LINE_FORMATS
                                        if name != "ulimit_line"),
                                      r"-[A-Za-z]: ", r"[a-z]"]))
    gate_words = any_word(["(-", ", -"])

    def __init__(self, path, sink) -> None:
        super().__init__(path, sink)
        self._block: _Block | None = None

    @property
    def busy(self) -> bool:
        return self._block is not None

    def feed(self, line: Line) -> bool:
        if self._block is not None:
            if self._block.feed(line):
                return True
            self._close()
        for block_type in BLOCKS:
            if block_type.opener.search(line.text):
                block = block_type(self, line)
                if getattr(block, "ok", True):
                    self._block = block
                    return True
        for start, rx, handler in LINE_FORMATS:
            if rx.search(line.text):
                tree = _parse(start, line.text)
                if tree is not None and getattr(self, handler)(line, tree) is not False:
                    return True
        return False

    def finish(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._block is not None:
            self._block.close()
            self._block = None

    # -- one-line formats
    def _on_mount(self, line: Line, tree: Tree) -> None:
        tokens = [str(t) for t in _tokens(tree)]
        if tree.data == "mount_line":
            device, _path, fstype, options = tokens
        else:
            device, _path, fstype, options, *_ = tokens
        self.sink.fact(line, "shm.mount", options, text=f"{device} {fstype}")
        size = re.search(r"(?:^|,)size=([^,]+)", options)
        if size:
            value = parse_size(size.group(1))
            if value is not None:
                self.sink.fact(line, "shm.size_bytes", value, "B", size.group(1))

    def _on_btime(self, line: Line, tree: Tree) -> None:
        self.sink.fact(line, "host.btime", int(_tokens(tree)[0]), "s")

    def _on_boot_time(self, line: Line, tree: Tree):
        # A bare `YYYY-MM-DD HH:MM:SS` line is `uptime -s` only in a file named for it.
        if "uptime" not in self.path.lower():
            return False
        wall = datetime.strptime(str(_tokens(tree)[0]), "%Y-%m-%d %H:%M:%S")
        self.sink.fact(line, "host.boot_time", wall.isoformat(), text=line.text.strip())
        return None

    def _on_ulimit(self, line: Line, tree: Tree) -> None:
        tokens = _tokens(tree)
        words = " ".join(str(t) for t in tokens if t.type == "LIMIT_WORD")
        flag = next((str(t) for t in tokens if t.type == "ULIMIT_FLAG"), None)
        unit = next((str(t) for t in tokens if t.type == "LIMIT_UNIT"), None)
        limit = str(tokens[-1])
        item = ULIMIT_FLAGS.get(flag) or ULIMIT_NAMES.get(words)
        if item is None:
            return
        if limit == "unlimited":
            self.sink.fact(line, f"ulimit.{item}", "unlimited", text=limit)
        elif item == "memlock" and (unit in _KIB_UNITS or unit is None):
            self.sink.fact(line, "ulimit.memlock", int(limit) * 1024, "B", f"{limit} KiB")
        else:
            self.sink.fact(line, f"ulimit.{item}", int(limit), unit or "", limit)

    def _on_docker(self, line: Line, tree: Tree) -> None:
        """`docker inspect` (HostConfig) or a container's hostconfig.json: the size Docker gave
        the container's /dev/shm, and whether it shares the host's (`IpcMode: host`)."""
        tokens = _tokens(tree)
        key = next(str(t) for t in tokens if t.type == "DOCKER_KEY").strip('"')
        value = next(str(t) for t in tokens if t.type == "DOCKER_VALUE").strip('"')
        if key == "ShmSize":
            self.sink.fact(line, "docker.shm_size_bytes", int(value), "B", text=line.text.strip())
        else:
            self.sink.fact(line, "docker.ipc_mode", value, text=line.text.strip())

    def _on_env(self, line: Line, tree: Tree) -> None:
        tokens = _tokens(tree)
        name = next(str(t) for t in tokens if t.type == "ENV_NAME")
        value = next((str(t) for t in tokens if t.type == "ENV_VALUE"), "").strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        self.sink.fact(line, f"env.{name}", value, text=line.text.strip())
