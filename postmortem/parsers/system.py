"""System state, one module per tool that prints it; everything here becomes Facts.

The formats (docs/formats.md, system) and their modules:

* memory.py — df, free, /proc/meminfo, the /dev/shm line of mount and /proc/mounts;
* nvidia_smi.py — the nvidia-smi table, `nvidia-smi -q`, `nvidia-smi topo -m`;
* ibv_devinfo.py — HCA ports;  iproute.py — `ip link|addr`, `ip -s link`, `ip -br`, `ip neigh`, `ip route`;
* hosts.py — host-name records (`getent hosts`, /etc/hosts lines);
* boot_time.py — /proc/stat `btime`, `uptime -s`;
* ss.py — `ss -t -i` (TCP connections and their tcp_info);  iptables.py — `iptables -L -v -n`;
* tc.py — `tc -s qdisc show` (queueing disciplines: drops, shaping, emulated loss);
* ping.py — iputils `ping` (what a probe from the host reached: sent, received, ICMP errors);
* shm_listing.py — `ls -l /dev/shm` (the files the tmpfs held);
* xfrm.py — `ip xfrm policy` / `ip xfrm state` (IPsec policies and security associations);
* ulimit.py — `ulimit -a`;  environment.py — `env` dumps;  docker.py — `docker inspect`.

Each module lists its tables and reports (`BLOCKS`, system_base.Block: a header line opens
a block, the parser is busy while the following lines are rows of it) and its one-line
formats (`LINE_FORMATS`, system_base.LineFormat: a regex picks the line, a start rule of
grammars/system.lark parses it).  `SystemParser` tries them in the order below.
"""
from __future__ import annotations

import re

from postmortem.parsers import (boot_time, docker, environment, hosts, ibv_devinfo, iproute, iptables, memory, nvidia_smi, ping,
                                shm_listing, ss, tc, ulimit, xfrm)
from postmortem.parsers.base import Line, LineParser
from postmortem.parsers.keywords import any_word
from postmortem.parsers.system_base import Block, LineFormat, parse

BLOCKS: tuple[type[Block], ...] = (*memory.BLOCKS, *nvidia_smi.BLOCKS, *ibv_devinfo.BLOCKS, *iproute.BLOCKS, *ss.BLOCKS,
                                     *iptables.BLOCKS, *tc.BLOCKS, *xfrm.BLOCKS, *ping.BLOCKS, *shm_listing.BLOCKS)
LINE_FORMATS: tuple[LineFormat, ...] = (*memory.LINE_FORMATS, *boot_time.LINE_FORMATS, *ulimit.LINE_FORMATS,
                                        *environment.LINE_FORMATS, *docker.LINE_FORMATS,
                                        *iproute.LINE_FORMATS, *tc.LINE_FORMATS, *xfrm.LINE_FORMATS,
                                        *hosts.LINE_FORMATS)


class SystemParser(LineParser):
    name = "system"
    order = 100
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
        self._block: Block | None = None
        self.free_scale: int | None = None   # the unit a `free -m` command line set for the table after it (memory.py)

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
        for start, rx, read in LINE_FORMATS:
            if rx.search(line.text):
                tree = parse(start, line.text)
                if tree is not None and read(self, line, tree) is not False:
                    return True
        return False

    def finish(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._block is not None:
            self._block.close()
            self._block = None
