"""nvidia-smi output (docs/formats.md, system): the default table (driver and CUDA
versions, two rows per GPU), `nvidia-smi -q` (an indented `Key : value` report, one
section per GPU: ECC counts, retired pages, remapped rows, temperature, power, memory)
and `nvidia-smi topo -m` (the matrix and its GPU pairs).  Facts: `gpu.*`.
"""
from __future__ import annotations

import re

from lark import Tree

from postmortem.parsers.base import Line
from postmortem.parsers.system_base import Block, leading_number, parse, tree_tokens


class SmiTableBlock(Block):
    """The default `nvidia-smi` table: driver/CUDA versions and two rows per GPU."""

    opener = re.compile(r"^\|\s+NVIDIA-SMI \S+\s+Driver Version:")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("smi_header", header.text)
        self.ok = tree is not None
        self.gpu: int | None = None
        if tree is not None:
            _smi, driver, cuda = [str(t) for t in tree_tokens(tree) if t.type == "VERSION"][-3:]
            self.sink.fact(header, "gpu.driver_version", driver)
            self.sink.fact(header, "gpu.cuda_version", cuda)

    def feed(self, line: Line) -> bool:
        if not line.text.startswith(("|", "+")):
            return False
        gpu_row = parse("smi_gpu_row", line.text)
        if gpu_row is not None:
            self._gpu_row(line, gpu_row)
            return True
        stat_row = parse("smi_stat_row", line.text) if self.gpu is not None else None
        if stat_row is not None:
            self._stat_row(line, stat_row)
        self.gpu = None if stat_row is not None else self.gpu
        return True

    def _gpu_row(self, line: Line, tree: Tree) -> None:
        tokens = tree_tokens(tree)
        self.gpu = int(tokens[0])
        words = [str(t) for t in tokens[1:] if t.type == "CELL_WORD"]
        name = " ".join(words[:-2] if words[-2] in ("On", "Off") else words[:-1])
        bus = next(str(t) for t in tokens if t.type == "BUS_ID")
        ecc = str(tokens[-1])
        prefix = f"gpu.{self.gpu}"
        self.sink.fact(line, f"{prefix}.name", name)
        self.sink.fact(line, f"{prefix}.bus_id", bus)
        if ecc.isdigit():
            self.sink.fact(line, f"{prefix}.ecc_uncorrected", int(ecc), text=ecc)
        elif ecc != "N/A":
            self.sink.fact(line, f"{prefix}.smi_error", ecc, text=ecc)

    def _stat_row(self, line: Line, tree: Tree) -> None:
        values = [str(t) for t in tree_tokens(tree) if t.type in ("SMI_VALUE", "PERF")]
        fan, temp, _perf, power, power_cap, mem_used, mem_total, _util = values[:8]
        prefix = f"gpu.{self.gpu}"
        for name, text in (("temp_c", temp), ("power_w", power), ("power_cap_w", power_cap),
                           ("mem_used_mib", mem_used), ("mem_total_mib", mem_total)):
            value = leading_number(text)
            if value is not None:
                self.sink.fact(line, f"{prefix}.{name}", value, text=text)
        errors = [v for v in values if v.startswith(("ERR!", "[Unknown"))]
        if errors:
            self.sink.fact(line, f"{prefix}.smi_error", errors[0], text=" ".join(values))


class SmiQueryBlock(Block):
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
        tree = parse("q_line", text)
        if tree is None:
            return False
        indent = len(text) - len(text.lstrip())
        if tree.data == "q_gpu":
            self._flush_gpu()
            self.gpu += 1
            self.sections = []
            self.sink.fact(line, f"gpu.{self.gpu}.bus_id", str(tree_tokens(tree)[0])[4:])
            return True
        key, *value = [str(t) for t in tree_tokens(tree)]
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
        number = leading_number(value)
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


class TopoBlock(Block):
    """`nvidia-smi topo -m`: the matrix as text (`gpu.topo`) and its GPU pairs (`gpu.topo_links`)."""

    opener = re.compile(r"^\s*(?:GPU0|NIC0|mlx\w+)\s.*CPU Affinity")
    LEGEND_LINE = re.compile(r"^(?:\s+\S.*|(?:NIC )?Legend:\s*)$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("topo_header", header.text)
        self.ok = tree is not None
        self.columns = [str(t) for t in tree_tokens(tree) if t.type == "TOPO_NODE"] if tree else []
        self.lines = [header.text]
        self.links: dict[str, str] = {}
        self.in_legend = False

    def feed(self, line: Line) -> bool:
        if not line.text.strip():
            return True
        if not self.in_legend:
            tree = parse("topo_row", line.text)
            if tree is not None:
                row, *cells = [str(t) for t in tree_tokens(tree)]
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


BLOCKS = (SmiTableBlock, SmiQueryBlock, TopoBlock)
