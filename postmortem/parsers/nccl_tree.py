"""grammars/nccl.lark trees -> (shape, dict), for nccl_message.parse_message.

Apart from nccl_message.py because lark costs more to import than a small bundle takes
to read: this module, and lark with it, is imported the first time a message needs
the grammar (most NCCL lines take a regex fast path).
"""
from __future__ import annotations

from lark import Transformer, v_args

from postmortem.parsers.nccl_message import _NET_DEVICE, _channel_data


@v_args(inline=True)
class _ToDict(Transformer):
    """grammars/nccl.lark trees -> (shape, dict) with plain Python values."""

    def start(self, item):
        return item

    def init(self, *parts):
        data: dict = {}
        ints = []
        for p in parts:
            if isinstance(p, tuple):
                data[p[0]] = p[1]
            elif p.type == "API":
                data["api"] = str(p)
            elif p.type == "HEX":
                data["comm"] = str(p)
            elif p.type == "INT":
                ints.append(int(p))
            elif p.type == "PHASE":
                data["phase"] = str(p)
        data["rank"], data["nranks"], data["cudaDev"] = ints
        return "init", data

    def rank_tag(self, n):
        return ("rank_tag", int(n))

    def nvml_dev(self, n):
        return ("nvmlDev", int(n))

    def bus_id(self, b):
        return ("busId", str(b))

    def comm_id(self, h):
        return ("commId", str(h))

    def split_field(self, name, value):
        return (str(name), str(value))

    def channel(self, channel, *rest):
        conn = None
        if isinstance(rest[0], tuple):
            conn, rest = rest[0][1], rest[1:]
        src, srcbus, dst, dstbus = rest[:4]
        direction = rest[4][1] if len(rest) == 6 else None
        return "channel", _channel_data(channel, conn, src, srcbus, dst, dstbus, direction, str(rest[-1]))

    def conn_index(self, n):
        return ("conn", str(n))

    def direction(self, d):
        return ("direction", str(d))

    def ring(self, channel, *rest):
        ranks = [int(t) for t in rest if not isinstance(t, tuple)]
        return "ring", {"channel": int(channel), "ring": ranks}

    def chain(self, file, line, *rest):
        func = thread = None
        rc = None
        for p in rest:
            if isinstance(p, tuple):
                if p[0] == "func":
                    func = p[1]
                else:
                    thread = p[1]
            else:
                rc = int(p)
        return "chain", {"file": str(file), "line": int(line), "func": func, "rc": rc, "thread": thread}

    def func(self, name):
        return ("func", str(name))

    def thread(self, name):
        return ("thread", str(name).strip())

    def version(self, version, cuda=None):
        return "version", {"version": str(version), "cuda": cuda}

    def cuda(self, v):
        return str(v)

    def using_network(self, rest):
        return "network", {"network": str(rest).strip(), "devices": []}

    def net_using(self, name, rest):
        name = str(name)
        if name == "NET/Plugin":  # `NET/Plugin: Using internal network plugin.` names no network
            raise ValueError("not a network selection")
        network = name.split("/", 1)[1] if name.startswith("NET/") else name
        return "network", {"network": network, "devices": _NET_DEVICE.findall(str(rest)) or [str(rest).strip()]}

    def test_failure(self, lib, file, line, quoted):
        msg = str(quoted)[1:-1]
        return "test_failure", {"lib": lib, "file": str(file), "line": int(line), "msg": msg}

    def failed_lib(self, tok):
        return str(tok)

    def device_row(self, rank, *rest):
        if isinstance(rest[0], tuple):
            rest = rest[1:]
        pid, host, device, bus, name = rest
        return "device_row", {"rank": int(rank), "pid": int(pid), "host": str(host), "device": int(device),
                              "bus": str(bus), "name": str(name).strip()}

    def group(self, n):
        return ("group", int(n))


TRANSFORMER = _ToDict()
