"""iproute2's `ip link`, `ip addr`, `ip -s link` (any -s count) and `ip -br addr|link`
(docs/formats.md, system): per network interface, its flags, operational state, MTU,
addresses and error/drop counters.  One Fact `net.interface` per interface printed, its value
a dict: name, flags, state, mtu, carrier (False when the flags say NO-CARRIER), addresses,
and counters (`rx_errors`, `tx_dropped`, `tx_carrier` ... as the column headers name them).

The shapes (iproute2 ip/ipaddress.c print_linkinfo, print_link_stats):

    26: eth0@if27: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue state DOWN ...
        link/ether a6:f7:ec:47:e1:04 brd ff:ff:ff:ff:ff:ff link-netns pm3sw
        inet 10.93.0.2/24 scope global eth0
        RX:  bytes packets errors dropped  missed   mcast
          41670069    1540      0       0       0       0
        TX:  bytes packets errors dropped carrier collsns
          40148072    1571      0      33       0       0

    eth0@if29        UP             10.93.0.1/24 fe80::d825:7aff:fe71:d25b/64      (-br)

A bridge port (`bridge -d link show`, `ip -d link` of a port) also gets `master`, `port_state`
(its STP state) and `port_options` (`learning`, `flood` ... on/off); `bridge fdb show` lines
become Facts `net.fdb_entry` (mac, dev, dst, master, self, state).  The interface's own MAC
(`link/ether` under `ip link`, the third column of `ip -br link`) is kept as `mac`.

`ip -ts monitor link` (iproute2 ip/ipmonitor.c with -ts: utils.c print_timestamp prints
`[%Y-%m-%dT%H:%M:%S.usec] ` in local time before each message) prints the same interface header
for every change of a link's state: each becomes an Event `iproute.link_change` at its time (name,
carrier, admin_up, state, master) -- a history, never a Fact of the current state:

    [2026-12-02T06:30:53.471306] 997: swp2@if996: <BROADCAST,MULTICAST> mtu 1500 master br0 state DOWN

`ip route` lines (the main table as iproute2 ip/iproute.c print_route prints it) become Facts
`net.route` (dest as a prefix, 0.0.0.0/0 for `default`; type: unicast or the type iproute2 prints
first -- blackhole, unreachable, prohibit, throw, local, broadcast ...; via, dev, src, proto, scope,
table; IPv4 only).  `ip route get` answers (`... uid 0`, `cache`) are no table entries and are left:

    default via 10.97.1.254 dev eth0
    10.97.0.0/24 dev eth0 proto kernel scope link src 10.97.0.1
    10.108.2.0/24                                       (a multipath route: `nexthops`, `span`)
    \tnexthop via 10.108.1.1 dev eth0 weight 1
    \tnexthop via 10.108.3.1 dev eth1 weight 1

`ip neigh` lines become Facts `net.neighbour` (addr, dev, lladdr or '', states: the NUD states
as iproute2 ip/ipneigh.c print_neigh / nud_state_n2a prints them, e.g. ('STALE',), ('FAILED',)):

    10.98.0.1 dev eth0 lladdr 0a:b2:5d:6b:44:84 STALE
    10.98.0.1 dev eth1 INCOMPLETE
"""
from __future__ import annotations

import ipaddress
import re

from datetime import datetime

from postmortem.knowledge.registry import KIND
from postmortem.model import ClockKind, Severity, Stamp
from postmortem.parsers.base import Line, emit
from postmortem.parsers.system_base import Block, LineFormat, parse, tree_tokens

FACT = "net.interface"
FDB_FACT = "net.fdb_entry"
NEIGH_FACT = "net.neighbour"
ROUTE_FACT = "net.route"
ROUTE_GET_FACT = "net.route_get_failed"
# route types iproute2 prints before the destination when not unicast (lib/rt_names.c rtnl_rtntype_n2a)
ROUTE_TYPES = ("unreachable", "blackhole", "prohibit", "throw", "local", "broadcast", "multicast", "anycast", "nat")
_ROUTE_KEYS = ("via", "dev", "src", "proto", "scope", "table", "metric", "nhid")
# the neighbour states (Linux include/uapi/linux/neighbour.h NUD_*) as iproute2 nud_state_n2a names them
NUD_STATES = ("PERMANENT", "NOARP", "REACHABLE", "STALE", "NONE", "INCOMPLETE", "DELAY", "PROBE", "FAILED")
_NEIGH_FLAGS = ("router", "proxy", "extern_learn", "offload", "managed")
_MAC = r"(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}"
# STP port states as iproute2 bridge/link.c port_states[] prints them
_PORT_STATES = frozenset({"disabled", "listening", "learning", "forwarding", "blocking"})
_OPTIONS = re.compile(r"^\s+(?:[a-z_]+ (?:on|off)\s+){2,}")
_INDEX = re.compile(r"^\d+: ")


def _name(ifname: str) -> str:
    """`eth0@if27` (a veth's peer index) -> `eth0`."""
    return ifname.split("@", 1)[0]


def _pairs(text: str) -> dict[str, str]:
    """`mtu 1500 qdisc noqueue state DOWN group default` -> {mtu: 1500, qdisc: noqueue, ...}."""
    words = text.split()
    return {words[i]: words[i + 1] for i in range(0, len(words) - 1, 2)}


class IpLinkBlock(Block):
    """One interface of `ip link` / `ip addr` / `ip -s link`: its header line and the indented
    lines under it (addresses, statistics); the next unindented line ends it."""

    # the "N: " index may already be gone: the line reader takes it for a launcher's rank prefix
    opener = re.compile(r"^(?:\d+: )?[^\s:]+: <[A-Z0-9_,-]*> mtu \d+")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        tree = parse("ip_link_header", _INDEX.sub("", header.text, count=1))
        self.ok = tree is not None
        if not self.ok:
            return
        tokens = {t.type: str(t) for t in tree_tokens(tree)}
        flags = tuple(f for f in tokens["IP_FLAGSET"].strip("<>").split(",") if f)
        pairs = _pairs(tokens.get("IP_PAIRS", ""))
        mtu = pairs.get("mtu", "")
        self.info = {"name": _name(tokens["IP_IFNAME"]), "flags": flags, "state": pairs.get("state", ""),
                     "mtu": int(mtu) if mtu.isdecimal() else None, "carrier": "NO-CARRIER" not in flags,
                     "admin_up": "UP" in flags, "addresses": [], "counters": {}}
        if pairs.get("master") and pairs.get("state") in _PORT_STATES:
            # `bridge link` / `ip link` of a bridge port: `master br0 state forwarding` is the
            # port's STP state (net/bridge/br_private.h BR_STATE_*), not the link's operstate
            self.info["master"], self.info["port_state"] = pairs["master"], pairs["state"]
        self._columns: list[str] | None = None   # the statistics header waiting for its row

    def feed(self, line: Line) -> bool:
        text = line.text
        if not text[:1].isspace() or not text.strip():
            return False
        words = text.split()
        if words[0] == "link/ether" and len(words) > 1:
            self.info["mac"] = words[1].lower()
            return True
        if words[0] in ("inet", "inet6") and len(words) > 1:
            self.info["addresses"].append(words[1])
            return True
        if self.info.get("master") and _OPTIONS.match(text):
            # `bridge -d link`: `hairpin off guard off ... learning off flood off ...` (bridge/link.c print_onoff)
            self.info["port_options"] = dict(zip(words[::2], words[1::2]))
            return True
        if self._columns is not None:
            row = parse("ip_stats_row", text)
            if row is not None:
                values = [int(str(t)) for t in tree_tokens(row)]
                self.info["counters"].update(zip(self._columns, values))
            self._columns = None
            if row is not None:
                return True
        header = parse("ip_stats_header", text) if ":" in text else None
        if header is not None:
            tokens = tree_tokens(header)
            direction = str(tokens[0]).split()[0].lower()
            self._columns = [f"{direction}_{t}" for t in map(str, tokens[1:])]
        return True  # link/ether, valid_lft, altname ...: part of the block, nothing to keep

    def close(self) -> None:
        if self.ok:
            self.sink.fact(self.header, FACT, self.info, text=self.header.text.strip())


class IpMonitorLinkBlock(IpLinkBlock):
    """One message of `ip -ts monitor link`: the timestamped interface header and the indented
    `link/ether` line under it.  A change at a time, so an Event, not a Fact."""

    opener = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?)\] (?:\d+: )?[^\s:]+: <[A-Z0-9_,-]*>")

    def __init__(self, parser, header) -> None:
        m = self.opener.match(header.text)
        self.stamp: Stamp | None = None
        if m:
            try:
                # local time without a zone (localtime() in print_timestamp): the timeline reads it in the case's zone
                self.stamp = Stamp(ClockKind.WALL_LOCAL, wall=datetime.fromisoformat(m.group("ts")), resolution_s=1e-6)
            except ValueError:
                self.stamp = None
        stripped = Line(header.path, header.no, header.text[m.end("ts") + 2:] if m else header.text, header.raw,
                        header.host, header.rank, header.stamp)
        super().__init__(parser, stripped)
        self.header = header
        self.ok = self.ok and self.stamp is not None

    def close(self) -> None:
        if self.ok:
            data = {k: self.info.get(k) for k in ("name", "carrier", "admin_up", "state", "master")}
            data["state"] = data["state"] or ""
            emit(self.sink, self.header, KIND.iproute_link_change, Severity.WARNING if _link_down(self.info) else Severity.INFO,
                 stamp=self.stamp, text=self.header.text.strip(), data=data)


def _link_down(info: dict) -> bool:
    """No link in this message: carrier lost, operationally down, or set administratively down."""
    return info.get("carrier") is False or info.get("admin_up") is False or info.get("state") in ("DOWN", "LOWERLAYERDOWN")


def brief(parser, line: Line, tree) -> bool:
    """`ip -br addr` / `ip -br link`: the operational state and the addresses."""
    tokens = tree_tokens(tree)
    rest = next((str(t) for t in tokens if t.type == "IP_PAIRS"), "")
    state = next(str(t) for t in tokens if t.type == "IP_OPERSTATE")
    addresses = [w for w in rest.split() if "/" in w]
    flagset = next((w for w in rest.split() if w.startswith("<") and w.endswith(">")), "")  # -br link
    flags = tuple(f for f in flagset.strip("<>").split(",") if f)
    info = {"name": _name(str(tokens[0])), "flags": flags, "state": state, "mtu": None,
            "carrier": state not in ("DOWN", "LOWERLAYERDOWN") and "NO-CARRIER" not in flags,
            "admin_up": ("UP" in flags) if flags else None, "addresses": addresses, "counters": {}}
    mac = next((w for w in rest.split() if _MAC_WORD.match(w)), None)  # -br link: the device's MAC
    if mac:
        info["mac"] = mac.lower()
    parser.sink.fact(line, FACT, info, text=line.text.strip())
    return True


def neighbour(parser, line: Line, tree) -> bool:
    """`ip neigh`: one neighbour-table entry (iproute2 ip/ipneigh.c print_neigh): the address,
    its device, the link-layer address when one was resolved, and the NUD states."""
    tokens = tree_tokens(tree)
    words = [str(t) for t in tokens[1:]]
    if len(words) < 3 or words[0] != "dev":
        return False
    pairs = dict(zip(words[::2], words[1::2]))
    states = tuple(w for w in words if w in NUD_STATES)
    if not states:
        return False
    parser.sink.fact(line, NEIGH_FACT, {"addr": str(tokens[0]), "dev": _name(words[1]),
                                        "lladdr": pairs.get("lladdr", "").lower(), "states": states,
                                        "router": "router" in words}, text=line.text.strip())
    return True


def fdb_entry(parser, line: Line, tree) -> bool:
    """`bridge fdb show`: one forwarding entry (iproute2 bridge/fdb.c print_fdb): the MAC, the
    port (`dev`), `dst` (a VXLAN remote), `master`/`self`, and its state: `permanent` (a local
    address of the bridge or port, NUD_PERMANENT), `static` (added by hand, NUD_NOARP), none
    (learned)."""
    words = [str(t) for t in tree_tokens(tree)]
    pairs = dict(zip(words[1::2], words[2::2])) if len(words) > 2 else {}
    flags = set(words[1:])
    parser.sink.fact(line, FDB_FACT, {"mac": words[0].lower(), "dev": pairs.get("dev", ""), "dst": pairs.get("dst", ""),
                                      "master": pairs.get("master", ""), "self": "self" in flags,
                                      "state": "permanent" if "permanent" in flags else "static" if "static" in flags else ""},
                     text=line.text.strip())
    return True


def route(parser, line: Line, tree) -> bool:
    """`ip route`: one route of a table (iproute2 ip/iproute.c print_route)."""
    words = [str(t) for t in tree_tokens(tree)]
    kind = words.pop(0) if words and words[0] in ROUTE_TYPES else "unicast"
    if not words or "uid" in words or "cache" in words or "lladdr" in words or set(words) & set(NUD_STATES):
        return False   # `ip route get` (the answer for one address) or a neighbour entry: no route of a table
    dest, rest = words[0], words[1:]
    if ":" in " ".join(rest[i + 1] for i, w in enumerate(rest[:-1]) if w == "via"):
        return False   # `ip -6 route`: `default via fe80::1 dev eth0` names no IPv4 route
    try:
        net = ipaddress.ip_network("0.0.0.0/0" if dest == "default" else dest, strict=False)
    except ValueError:
        return False
    if net.version != 4:
        return False
    pairs = {w: rest[i + 1] for i, w in enumerate(rest[:-1]) if w in _ROUTE_KEYS}
    parser.sink.fact(line, ROUTE_FACT, {"dest": str(net), "type": kind, "via": pairs.get("via", ""),
                                        "dev": _name(pairs.get("dev", "")), "src": pairs.get("src", ""),
                                        "proto": pairs.get("proto", ""), "scope": pairs.get("scope", ""),
                                        "table": pairs.get("table", "main")}, text=line.text.strip())
    return True


_MAC_WORD = re.compile(rf"^{_MAC}$")

class IpRouteGetBlock(Block):
    """`ip route get ADDR` in a shell transcript (the `$ ` prompt line names the address), answered
    by iproute2's error line instead of a route: lib/libnetlink.c __rtnl_talk_iov prints
    'RTNETLINK answers: ' + strerror of the kernel's answer -- ENETUNREACH ('Network is unreachable')
    when no route of the host's tables covers the address (net/ipv4/route.c ip_route_output_key_hash
    -> fib_lookup fails), EHOSTUNREACH for an `unreachable` route.  Fact `net.route_get_failed`:
    {addr, error}.  A route line answering it is no table's route (iproute.route declines it)."""

    opener = re.compile(r"^\$ ?(?:sudo )?ip (?:-4 )?r(?:oute)? get (?:to )?(?P<addr>\d{1,3}(?:\.\d{1,3}){3})\s*(?:#.*)?$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        self.addr = self.opener.match(header.text.strip()).group("addr")
        self.answered = False

    def feed(self, line: Line) -> bool:
        if self.answered:
            return False
        self.answered = True
        m = _RTNETLINK.match(line.text.strip())
        if m is None:
            return False
        self.sink.fact(line, ROUTE_GET_FACT, {"addr": self.addr, "error": m.group("error")}, text=line.text.strip())
        return True


class IpRouteMultipathBlock(Block):
    """A multipath route of `ip route` (ECMP): iproute2 ip/iproute.c print_route prints the
    destination and the route's own keys on one line, then print_rta_multipath one indented
    line per hop ('\tnexthop via A dev D weight W').  One Fact `net.route` for the whole route
    (via/dev of its first hop, `nexthops` all of them, `span` the lines it takes), so the table's
    lines stay one printout (rules/peer_path.py _route_tables joins consecutive route lines)."""

    opener = re.compile(r"^(?P<dest>default|\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?)(?P<keys>(?: (?:proto|metric|table|scope|src|pref) \S+)*)\s*$")
    _HOP = re.compile(r"^\s+nexthop (?P<rest>.*)$")

    def __init__(self, parser, header) -> None:
        super().__init__(parser, header)
        m = self.opener.match(header.text)
        self.dest, self.keys = m.group("dest"), _pairs(m.group("keys"))
        self.hops: list[dict[str, str]] = []

    def feed(self, line: Line) -> bool:
        m = self._HOP.match(line.text)
        if m is None:
            return False
        pairs = _pairs(m.group("rest"))
        self.hops.append({"via": pairs.get("via", ""), "dev": _name(pairs.get("dev", ""))})
        return True

    def close(self) -> None:
        if not self.hops:
            return   # a bare address on a line of its own: no route
        try:
            net = ipaddress.ip_network("0.0.0.0/0" if self.dest == "default" else self.dest, strict=False)
        except ValueError:
            return
        self.sink.fact(self.header, ROUTE_FACT, {"dest": str(net), "type": "unicast", "via": self.hops[0]["via"],
                                                 "dev": self.hops[0]["dev"], "src": self.keys.get("src", ""),
                                                 "proto": self.keys.get("proto", ""), "scope": self.keys.get("scope", ""),
                                                 "table": self.keys.get("table", "main"), "nexthops": self.hops,
                                                 "span": 1 + len(self.hops)},
                       text=self.header.text.strip())


_RTNETLINK = re.compile(r"^RTNETLINK answers: (?P<error>[A-Za-z][A-Za-z ]{2,60})$")

BLOCKS = (IpMonitorLinkBlock, IpLinkBlock, IpRouteGetBlock, IpRouteMultipathBlock)
# the state column, then an address (v4 or v6 with a prefix length), a MAC (-br link), or nothing
LINE_FORMATS = (
    LineFormat("ip_neigh", re.compile(rf"^(?:\d{{1,3}}(?:\.\d{{1,3}}){{3}}|[0-9a-fA-F:]*:[0-9a-fA-F:]*) dev \S+"
                                      rf"(?: lladdr {_MAC})?(?: (?:{'|'.join(_NEIGH_FLAGS)}))*"
                                      rf"(?: (?:{'|'.join(NUD_STATES)}))+\s*$"), neighbour),
    # a route: [type] default|a.b.c.d[/len], then at least one of the keys print_route writes
    LineFormat("ip_route", re.compile(r"^(?:(?:unreachable|blackhole|prohibit|throw) (?:default|\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?)(?: |$)"
                                      r"|(?:default|\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?) (?:[^\n]{0,200} )?(?:via|dev|proto|nhid) \S)"), route),
    LineFormat("bridge_fdb", re.compile(r"^(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2} dev \S+"), fdb_entry),
    LineFormat("ip_brief", re.compile(r"^[^\s:]+\s+(?:UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING)"
                                      r"(?:\s+(?:[0-9a-fA-F.:]+/\d{1,3}|(?:[0-9a-f]{2}:){5}[0-9a-f]{2})\b.*|\s*)$"), brief),
)
