"""Comms family: the state of the host's network interfaces as `ip link` / `ip addr` /
`ip -s link` printed it (parsers/iproute.py), read beside the job's collective timeouts.

A network fault that never reaches NCCL's or gloo's own error paths (a switch port going
down, frames dropped on the way) shows in the job only as collectives that time out on every
rank.  The interface the traffic used says why: no carrier, or packets dropped.
"""
from __future__ import annotations

import re

from postmortem.classify.rules.base import Rule, events_of, sign_finding
from postmortem.classify.rules.comms import host_only_interface
from postmortem.classify.rules.config import TIMEOUT_KINDS
from postmortem.classify.rules.hang import waits, waits_text
from postmortem.knowledge.registry import KIND, LIMIT, SIGN, produced_by
from postmortem.model import Case, Fact
from postmortem.parsers.iproute import FACT, FDB_FACT
from postmortem.parsers.iptables import FACT as FIREWALL_FACT
from postmortem.parsers.tc import FACT as QDISC_FACT
from postmortem.parsers.ss import FACT as TCP_FACT

# iproute2 print_link_stats column names (ip -s link, "RX:"/"TX:" rows) whose non-zero value
# says the interface lost traffic.  RX "dropped" is left out: the kernel counts frames for
# protocols nobody listens to there, on healthy hosts too.
_LOSS_COUNTERS = ("tx_dropped", "tx_errors", "rx_errors", "tx_carrier")
# `ip -br` operational states of a link that is down (RFC 2863 ifOperStatus as iproute2 prints it)
_DOWN_STATES = frozenset({"DOWN", "LOWERLAYERDOWN"})


def _host_local(name: str) -> bool:
    """Loopback, container bridges and veth ends: not the path between nodes."""
    local = host_only_interface()
    return local is not None and local.match(name) is not None


def _down(info: dict) -> bool:
    """Configured to carry traffic (administratively UP, or holding an address) and without a link."""
    configured = info.get("admin_up") or (info.get("admin_up") is None and info.get("addresses"))
    return bool(configured) and (info.get("carrier") is False or info.get("state") in _DOWN_STATES)


# the packets counter each loss counter is a share of (lost frames are not in it)
_PACKETS_OF = {"tx_dropped": "tx_packets", "tx_errors": "tx_packets", "tx_carrier": "tx_packets", "rx_errors": "rx_packets"}


def _losses(info: dict) -> dict[str, int]:
    """Loss counters at or above LIMIT.interface_loss_pct of the frames of their direction:
    the counters run since boot, so a handful of losses among millions of frames is no fault.
    A loss count without its direction's packets counter has no rate and is not counted
    (audit 5 L2): one dropped frame in months of uptime is not a fault either."""
    counters = info.get("counters") or {}
    out = {}
    for c in _LOSS_COUNTERS:
        lost, sent = counters.get(c), counters.get(_PACKETS_OF[c])
        if not isinstance(lost, int) or lost <= 0 or not isinstance(sent, int):
            continue
        if 100 * lost / (sent + lost) < LIMIT.interface_loss_pct:
            continue
        out[c] = lost
    return out


def job_interfaces(case: Case) -> tuple[set[str], set[str]]:
    """The interfaces the job's traffic used, as its own lines and settings name them: (exact
    names, name prefixes).  NCCL's 'Bootstrap : Using [0]eth0:10.0.0.1<0>' / 'NET/Socket : Using
    ...' print exact device names; NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME entries are prefixes
    unless written '=name' (exact), and '^' excludes (src/misc/socket.cc matchIfList)."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for e in events_of(case, KIND.nccl_network):
        if e.data.get("network") in ("Bootstrap", "Socket"):
            exact.update(str(d).split(":", 1)[0] for d in e.data.get("devices") or () if d)
    for f in case.facts:
        if f.name in ("env.NCCL_SOCKET_IFNAME", "env.GLOO_SOCKET_IFNAME") and not str(f.value).startswith("^"):
            entries = [n.strip() for n in str(f.value).split(",") if n.strip()]
            if str(f.value).startswith("="):    # NCCL: a leading '=' makes the whole list exact
                exact.update(n.lstrip("=") for n in entries)
            else:
                prefixes.update(entries)
    return {n for n in exact if n}, {n for n in prefixes if n}


def _named(iface: str, exact: set[str], prefixes: set[str]) -> bool:
    """Named by the job: a device name NCCL printed or an '=' entry exactly, a plain
    NCCL_SOCKET_IFNAME entry as a prefix (eth1 is not eth10 or eth1.100 when NCCL printed it)."""
    base = iface.split("@", 1)[0]
    return base in exact or any(base.startswith(n) for n in prefixes)


def _rdma_data_path(case: Case) -> bool:
    """NCCL's data path is NET/IB ('NET/IB : Using [0]mlx5_3:1/RoCE ; OOB eth1'): its traffic
    goes through the HCA's port, whose netdev (RoCE) the bootstrap lines never name."""
    return any(e.data.get("network") == "IB" for e in events_of(case, KIND.nccl_network))


class InterfaceFaults(Rule):
    """A non-local interface without carrier, or one whose counters show lost frames; with
    collective timeouts beside it, the timeouts are its fallout — cited as what it explains, not
    counted as an independent sign (they are in every hang).

    No carrier and frame losses on the same interface are one sign: frames sent to a device
    without carrier are dropped and counted (tx_dropped, tx_carrier).  A second sign is a fault
    of another interface the job is known to use.  When NCCL's data path is NET/IB, an interface
    the bootstrap lines do not name may be the HCA's netdev: its fault is kept, as a lean."""

    id = "interface-faults"

    def findings(self, case, k, trace):
        interfaces = [f for f in case.facts if f.name == FACT and isinstance(f.value, dict)
                      and not _host_local(str(f.value.get("name", "")))]
        exact, prefixes = job_interfaces(case)
        used = exact | prefixes
        lean_only: set[str] = set()
        if used:
            others = [f for f in interfaces if not _named(str(f.value.get("name", "")), exact, prefixes)]
            if others and _rdma_data_path(case):
                lean_only = {str(f.value.get("name")) for f in others}
                trace.append(f"{self.id}: NCCL's data path is NET/IB; not named by its bootstrap lines "
                             f"({', '.join(sorted(used))}), so a lean at most: " + ", ".join(sorted(lean_only)))
            elif others:
                trace.append(f"{self.id}: not the job's interfaces ({', '.join(sorted(used))}): "
                             + ", ".join(sorted({str(f.value.get('name')) for f in others})))
                interfaces = [f for f in interfaces if f not in others]
        down = [f for f in interfaces if _down(f.value)]
        lossy = [(f, _losses(f.value)) for f in interfaces]
        lossy = [(f, loss) for f, loss in lossy if loss]
        if not down and not lossy:
            return []
        timeouts = events_of(case, TIMEOUT_KINDS)
        parts, signs, refs, faulty = [], [], [], []
        if down:
            f = down[0]
            parts.append(f"interface {f.value['name']} had no link ({_state(f)}, {f.ref.describe()})")
            signs.append(SIGN.net_link_down)
            refs += [d.ref for d in down[:2]]
            faulty.append(str(f.value["name"]))
        # losses on an interface already without carrier are that fault's consequence, not a second sign
        own_losses = [(f, loss) for f, loss in lossy if str(f.value.get("name")) in faulty]
        other_losses = [(f, loss) for f, loss in lossy if str(f.value.get("name")) not in faulty]
        for f, loss in (own_losses[:1] + other_losses[:1]):
            parts.append(f"interface {f.value['name']} lost frames ("
                         + ", ".join(f"{c} {n}" for c, n in loss.items())
                         + (f", mtu {f.value['mtu']}" if f.value.get("mtu") else "") + f", {f.ref.describe()})"
                         + (": the frames it could not send without a link" if (f, loss) in own_losses else ""))
            refs.append(f.ref)
        if other_losses:
            signs.append(SIGN.net_interface_losses)
            faulty.append(str(other_losses[0][0].value["name"]))
        if timeouts:
            parts.append(f"{len(timeouts)} collective timeout(s) waited on that traffic "
                         f"(first {timeouts[0].ref.describe()})")
            # the timeouts are the symptom being explained, present in every hang: cited, not
            # counted as a second sign (audit 4 H2)
        if len(signs) > 1 and not used:
            # Nothing says which interface the job used: however many faults, one lean.
            parts.append("the bundle does not say which interface the job used (NCCL's 'Using' lines, NCCL_SOCKET_IFNAME)")
            signs = signs[:1]
        elif len(signs) > 1 and any(name in lean_only for name in faulty):
            parts.append("an interface NCCL's bootstrap lines do not name may be the NET/IB port's netdev, or not the job's")
            signs = signs[:1]
        trace.append(f"{self.id}: " + "; ".join(parts))
        return [sign_finding(k, signs[0], self.id, "; ".join(parts), timeouts[:2], "interface",
                             extra_refs=tuple(dict.fromkeys(refs)), combined=tuple(signs[1:]))]


def _state(f: Fact) -> str:
    flags = f.value.get("flags") or ()
    return ("NO-CARRIER" if "NO-CARRIER" in flags else "") or f"state {f.value.get('state') or '?'}"


class TcpConnectionLosses(Rule):
    """The job's collectives timed out and `ss -ti` shows a TCP connection with data in flight
    whose segments the kernel had marked lost (tcp_info tcpi_lost): the path under it was
    dropping packets at the snapshot.  The kernel's TCP state is an observation of its own, not
    the watchdog's; the timeouts are cited as what it explains, never counted (audit 4 H2)."""

    id = "tcp-connection-losses"

    def findings(self, case, k, trace):
        timeouts = waits(case)   # collective timeouts, or the stop that ended a measured stall
        if not timeouts:
            return []
        losing = [f for f in case.facts if f.name == TCP_FACT and isinstance(f.value, dict) and _losing(f.value)]
        if not losing:
            return []
        if not _spans_hosts(case):
            # a job on one host runs its collectives over loopback or shared memory: no path between
            # hosts carries them, whatever a host's other connections lose (audit 11 H3)
            trace.append(f"{self.id}: {len(losing)} connection(s) lost segments, but nothing says the job spans hosts")
            return []
        # only the job's own connections speak for the job's path (audit 6 M12): a host runs other
        # TCP traffic (NFS, monitoring, loopback services) whose losses say nothing about it
        addrs, ports = _job_endpoints(case)
        theirs = [f for f in losing if _the_jobs(f.value["peer"], addrs, ports) or _between_hosts(case, f)]
        if not theirs:
            trace.append(f"{self.id}: {len(losing)} connection(s) lost segments, none to an address or port the job's"
                         " logs name (or loopback): not the job's path")
            return []
        losing = theirs
        f = losing[0]
        info = f.value["info"]
        what = (f"TCP connection {f.value['local']} -> {f.value['peer']} had {info['lost']} segment(s) marked lost"
                + (f", {info['retrans']} retransmitted and unacknowledged" if info.get("retrans") else "")
                + (f", RTO backoff {info['backoff']}" if info.get("backoff") else "")
                + f" with {f.value['send_q']} bytes queued ({f.ref.describe()})")
        summary = what + f"; {waits_text(timeouts)}: the path between the nodes was losing packets"
        trace.append(f"{self.id}: {what}; {len(losing)} such connection(s)")
        return [sign_finding(k, SIGN.net_tcp_segments_lost, self.id, summary, timeouts[:2], "tcp-loss",
                             extra_refs=tuple(x.ref for x in losing[:2]))]


class SegmentsExceedReceiverMtu(Rule):
    """One TCP connection seen from both of its hosts (`ss -ti` of each): the sender's data sits
    unacknowledged with its retransmission timer expired (or segments marked lost), and the
    segments it sends (its mss plus the least header) are larger than the receiving end's path
    MTU.  TCP chose the mss at setup from both ends' MSS and lowers it only for the sender's own
    route or an ICMP 'fragmentation needed': an MTU lowered later on the receiver's interface
    leaves every full segment, and every retransmission of it, too large to arrive."""

    id = "segments-exceed-receiver-mtu"

    def findings(self, case, k, trace):
        conns = [f for f in case.facts if f.name == TCP_FACT and isinstance(f.value, dict)
                 and f.value.get("state") in ("", "ESTAB")]
        if len(conns) < 2:
            return []
        ends: dict[tuple, list[Fact]] = {}
        for f in conns:
            ends.setdefault((_split_endpoint(str(f.value.get("local"))), _split_endpoint(str(f.value.get("peer")))), []).append(f)
        header = int(SIGN.net_segments_exceed_receiver_mtu.params["header_bytes"])
        for f in conns:
            info = f.value.get("info") or {}
            mss, unacked = info.get("mss"), info.get("unacked")
            stalled = isinstance(unacked, int) and unacked > 0 and (info.get("backoff") or info.get("lost"))
            local, peer = _split_endpoint(str(f.value.get("local"))), _split_endpoint(str(f.value.get("peer")))
            if not isinstance(mss, int) or not stalled or _LOOPBACK.match(local[0]) or _LOOPBACK.match(peer[0]):
                continue
            for g in ends.get((peer, local), ()):
                pmtu = (g.value.get("info") or {}).get("pmtu")
                if g.ref.path == f.ref.path or not isinstance(pmtu, int) or mss + header <= pmtu:
                    continue
                what = (f"TCP connection {f.value['local']} -> {f.value['peer']} sends segments of {mss} bytes of data "
                        f"({mss + header} or more with headers; {f.ref.describe()}), while the receiving end's path MTU is "
                        f"{pmtu} ({g.ref.describe()}, the same connection); {unacked} segment(s) unacknowledged"
                        + (f", RTO backoff {info['backoff']}" if info.get("backoff") else "")
                        + f", {f.value.get('send_q', 0)} bytes queued")
                trace.append(f"{self.id}: {what}")
                summary = (what + ": the receiver's interface takes smaller frames than the sender puts on the wire "
                           "(an MTU lowered on one host after the connection was set up, or a segment that does not "
                           "report it), so the full segments and their retransmissions are dropped on arrival")
                return [sign_finding(k, SIGN.net_segments_exceed_receiver_mtu, self.id, summary, waits(case)[:2],
                                     "mtu", extra_refs=(f.ref, g.ref))]
        return []


# an IPv4 address, optionally with :port, as NCCL (Bootstrap/NET/Socket "eth0:10.0.0.1<0>"), gloo
# ("remote=[10.0.0.1]:port"), c10d and launchers (MASTER_ADDR, --master-addr) print them
_ADDR_PORT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?:\]?:(\d{2,5}))?(?![\d.])")
_KERNEL_KINDS = produced_by("parser:kernel")
_LOOPBACK = re.compile(r"^(?:127\.|::1$|::ffff:127\.|localhost)")


def _split_endpoint(text: str) -> tuple[str, int | None]:
    """ss's "10.0.0.1:5000" / "[::ffff:10.0.0.1]:5000" -> ("10.0.0.1", 5000)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if host.startswith("::ffff:"):
        host = host[len("::ffff:"):]
    return host, int(port) if port.isdigit() else None


# (events, endpoints) of the last two cases: several rules ask, and reading every event's text is
# the cost (issue 17: ~11,000 events a walk at 512 ranks); kept as classify/index.py keeps its indexes.
_ENDPOINTS: list[tuple] = []


def _job_endpoints(case: Case) -> tuple[frozenset[str], frozenset[int]]:
    """Addresses and ports the job's own log lines name (never the ss capture itself).  Not the
    kernel log's or a journal's: the kernel names the servers of everything the host mounts or
    talks to ("nfs: server %s not responding"), exactly the traffic that is not the job's (audit 7 H4)."""
    got = next((found for events, found in _ENDPOINTS if events is case.events), None)
    if got is None:
        got = _endpoints_of(case)
        _ENDPOINTS[:] = [(case.events, got), *_ENDPOINTS[:1]]
    return got


def _endpoints_of(case: Case) -> tuple[frozenset[str], frozenset[int]]:
    kernel_files = {e.ref.path for e in events_of(case, _KERNEL_KINDS)}
    addrs: set[str] = set()
    ports: set[int] = set()
    for e in case.events:
        if e.ref.path in kernel_files:
            continue
        for m in _ADDR_PORT.finditer(e.text or ""):
            if _LOOPBACK.match(m.group(1)):
                continue
            addrs.add(m.group(1))
            if m.group(2):
                ports.add(int(m.group(2)))
    return frozenset(addrs), frozenset(ports)


def _the_jobs(peer: str, addrs: frozenset[str], ports: frozenset[int]) -> bool:
    host, port = _split_endpoint(peer)
    if _LOOPBACK.match(host):
        return False
    return host in addrs or (port is not None and port in ports)


def _hosts_of(case: Case) -> dict[str, str]:
    """address -> the `ss` capture (file) that shows it as a local address: the bundle's hosts."""
    out: dict[str, str] = {}
    for f in case.facts:
        if f.name == TCP_FACT and isinstance(f.value, dict):
            host, _ = _split_endpoint(str(f.value.get("local", "")))
            if host and not _LOOPBACK.match(host):
                out.setdefault(host, f.ref.path)
    return out


def _between_hosts(case: Case, f: Fact) -> bool:
    """A connection from one host of the bundle to another: its peer is a local address of ANOTHER
    `ss` capture of the bundle.  The job's hosts' connections to each other are the job's path,
    whatever their ports (gloo's pairs listen on ephemeral ones: audit 11 H2)."""
    peer, _ = _split_endpoint(str(f.value.get("peer", "")))
    other = _hosts_of(case).get(peer)
    return other is not None and other != f.ref.path


def path_healthy(case: Case) -> str:
    """What shows the path between the job's hosts healthy at the snapshot (`ss` of their
    connections to each other: established, nothing queued unacknowledged, nothing lost, no
    retransmission backoff), or "" when the bundle does not show it."""
    conns = [f for f in case.facts if f.name == TCP_FACT and isinstance(f.value, dict)
             and f.value.get("state") in ("", "ESTAB", "SYN-SENT") and _between_hosts(case, f)]
    if not conns:
        return ""
    for f in conns:
        info = f.value.get("info") or {}
        if f.value.get("state") != "ESTAB" or _losing(f.value) or info.get("lost") or info.get("backoff") \
                or (isinstance(info.get("unacked"), int) and info["unacked"] > 0):
            return ""
    return f"{len(conns)} connection(s) between the job's hosts with nothing lost or unacknowledged ({conns[0].ref.describe()})"


def _losing(conn: dict) -> bool:
    """Data in flight and segments marked lost (ss prints lost: only when tcpi_lost > 0)."""
    info = conn.get("info") or {}
    lost = info.get("lost")
    in_flight = conn.get("send_q", 0) > 0 or (isinstance(info.get("unacked"), int) and info["unacked"] > 0)
    return isinstance(lost, int) and lost > 0 and in_flight and conn.get("state") in ("", "ESTAB")


class PathDiscards(Rule):
    """Measured discards on the path, beside collectives that timed out: the path stayed up and
    silently discarded the traffic, so the job saw nothing but collectives waiting past their
    timeout.  Two measurements, one sign (either says the same thing):

    * a switch port (a Linux bridge port as `bridge -d link` prints it: Cumulus, SONiC and
      host bridges alike) that cannot deliver unicast to the host behind it;
    * a queueing discipline (`tc -s qdisc`) that dropped at least LIMIT.interface_loss_pct of
      the packets it handled (tc_util.c print_tcstats_attr 'Sent N bytes M pkt (dropped D, ...)':
      a shaper whose rate the traffic exceeds, a queue that overflows, emulated loss) on an
      interface that is not host-local.

    Linux net/bridge: a port forwards only in STP state forwarding (br_forward.c
    should_deliver -> br_allowed_egress / p->state == BR_STATE_FORWARDING; listening,
    learning and blocking ports drop); and with learning off (BR_LEARNING clear: br_fdb_update
    is skipped, no entry for the host is learned) and unicast flood off (BR_FLOOD clear:
    br_flood skips the port for unknown unicast) a host reachable only through that port gets
    frames only for MACs the forwarding table holds for it by hand -- so it counts only when the
    bundle's `bridge fdb` shows no learned or static entry on that port (permanent entries are
    the port's own addresses).  'disabled' with the link down is the link-down reading's, not
    this one; 'disabled' with the link up (LOWER_UP: carrier) is a port the bridge itself
    stopped -- its BPDU guard (br_stp_bpdu.c br_stp_rcv -> br_stp_disable_port) or an operator
    (`bridge link set ... state 0`) -- and should_deliver() sends nothing through it.  The timeouts are cited as what it explains, never counted (audit 4 H2)."""

    id = "path-discards"

    def findings(self, case, k, trace):
        timeouts = waits(case)   # collective timeouts, or the stop that ended a measured stall
        if not timeouts:
            return []
        bad = self._ports(case, trace) + self._qdiscs(case, trace)
        if not bad:
            return []
        if not _spans_hosts(case):
            # a job on one host sends its collectives over no switch port or egress queue (audit 11 H3)
            trace.append(f"{self.id}: {bad[0][1]}: {bad[0][2]}, but nothing says the job spans hosts: not its path")
            return []
        f, what, why = bad[0]
        summary = f"{what} ({f.ref.describe()}): {why}; {waits_text(timeouts)}: the path silently discarded it"
        trace.append(f"{self.id}: {what}: {why}")
        return [sign_finding(k, SIGN.net_path_discards, self.id, summary, timeouts[:2], "path-discards",
                             extra_refs=tuple(dict.fromkeys(x.ref for x, _, _ in bad[:2])))]

    @staticmethod
    def _bridge_up(case, ports, info) -> bool:
        """The port's bridge is up: its own link listed with UP, or another of its ports in a state
        other than disabled (br_stp_disable_bridge disables them all when the bridge goes down)."""
        bridge = info.get("master")
        if any(g.value.get("name") == bridge and "UP" in (g.value.get("flags") or ()) for g in case.facts
               if g.name == FACT and isinstance(g.value, dict)):
            return True
        return any(g.value is not info and g.value.get("master") == bridge
                   and g.value.get("port_state") not in (None, "", "disabled") for g in ports)

    def _qdiscs(self, case, trace) -> list[tuple[Fact, str, str]]:
        out = []
        for f in case.facts:
            if f.name != QDISC_FACT or not isinstance(f.value, dict) or _host_local(str(f.value.get("dev") or "")):
                continue
            sent, dropped = f.value.get("sent_packets"), f.value.get("dropped")
            if isinstance(sent, int) and isinstance(dropped, int) and dropped > 0 \
                    and 100 * dropped / (sent + dropped) >= LIMIT.interface_loss_pct:
                if not f.value.get("dev"):
                    # `tc -s qdisc show dev X` saved without its command line names no device: the
                    # drops may be docker0's or lo's, not the path's (audit 8 M4)
                    trace.append(f"{self.id}: queueing discipline {f.value['kind']} dropped {dropped} packets "
                                 f"({f.ref.describe()}) on a device the output does not name: keep the command "
                                 "line (`tc -s qdisc show dev X`) or list all devices")
                    continue
                where = f" on {f.value['dev']}"
                out.append((f, f"queueing discipline {f.value['kind']}{where} ({f.value.get('params', '')})".replace(" ()", ""),
                            f"dropped {dropped} of {sent + dropped} packets"))
        return out

    def _ports(self, case, trace) -> list[tuple[Fact, str, str]]:
        params = SIGN.net_path_discards.params
        ports = [f for f in case.facts if f.name == FACT and isinstance(f.value, dict) and f.value.get("master")]
        if not ports:
            return []
        fdb = [f.value for f in case.facts if f.name == FDB_FACT and isinstance(f.value, dict)]
        bad: list[tuple[Fact, str]] = []
        for f in ports:
            info = f.value
            options = info.get("port_options") or {}
            if info.get("port_state") in params["blocking_states"]:
                # STP blocks every redundant port in its steady state (the alternate path), and a port
                # listens/learns for one forward delay after any port comes up: only a bridge left
                # with no forwarding port at all is cut off (audit 8 M4)
                others = [g.value.get("name") for g in ports if g is not f
                          and g.value.get("master") == info.get("master") and g.value.get("port_state") == "forwarding"]
                if others:
                    trace.append(f"{self.id}: port {info.get('name')} is {info['port_state']} but bridge "
                                 f"{info.get('master')} forwards on {', '.join(map(str, others[:3]))}: a redundant path")
                    continue
                bad.append((f, f"STP state {info['port_state']} and no port of bridge {info.get('master')} forwarding"))
            elif info.get("port_state") == params["disabled_state"] and "LOWER_UP" in (info.get("flags") or ()):
                if not self._bridge_up(case, ports, info):
                    # a bridge that is down puts EVERY port in state disabled with the port's link
                    # untouched (net/bridge br_device.c br_dev_stop -> br_stp_disable_bridge)
                    trace.append(f"{self.id}: port {info.get('name')} is disabled with carrier, but its bridge "
                                 f"{info.get('master')} is not shown up: a bridge that is down disables every port")
                    continue
                bad.append((f, f"STP state {info['port_state']} with its link up (carrier): the bridge stopped the "
                               "port itself (BPDU guard, or by hand), so it forwards nothing"))
            elif all(options.get(o) == "off" for o in params["no_delivery_options"]):
                port = str(info.get("name"))
                entries = [e for e in fdb if e.get("dev") == port]
                if not entries:
                    trace.append(f"{self.id}: port {port} has {', '.join(o + ' off' for o in params['no_delivery_options'])}"
                                 " but the bundle holds no `bridge fdb` of it: a static entry may deliver")
                    continue
                if any(not e.get("self") and e.get("state") != "permanent" for e in entries):
                    continue   # a learned or static entry for a host behind the port: frames reach it
                bad.append((f, ", ".join(o + " off" for o in params["no_delivery_options"])
                            + " and no learned or static forwarding entry on it"))
        return [(f, f"switch port {f.value['name']} (bridge {f.value['master']}) cannot deliver unicast to the host "
                    "behind it", why) for f, why in bad]


class FirewallDiscards(Rule):
    """A packet filter on the host or on a router of the path (`iptables -L -v -n`) counted TCP
    packets it dropped or rejected -- a DROP/REJECT rule that matched, or a built-in chain whose
    DROP policy caught packets -- while the job's own connections failed (connect timed out,
    refused, reset, no route).  netfilter's counters are the kernel's record of packets the
    filter discarded (iptables.c print_firewall: pkts per rule, 'policy DROP N packets' per
    built-in chain); the job's failed connects are a separate observation by other programs.
    Rules bound to loopback or host-only interfaces (docker0 ...) and rules for other protocols
    (UDP, ICMP) are not the job's TCP path; OUTPUT is the host's own traffic.  Weak: a filter
    also drops unrelated traffic (scanners), so it needs the job's failure beside it."""

    id = "firewall-discards"

    def findings(self, case, k, trace):
        params = SIGN.net_firewall_discards.params
        chains = [f for f in case.facts if f.name == FIREWALL_FACT and isinstance(f.value, dict)
                  and f.value.get("chain") not in params["own_traffic_chains"]]
        if not chains:  # nothing to read against: no walk of every event's text (issue 17)
            return []
        failed_text = re.compile(params["connect_failed"])
        failed = [e for e in case.events if failed_text.search(e.text or "")]
        # The job's own peers: the addresses and ports its failed connects name (audit 8 H10): a rule
        # for another port or host (fail2ban on 22, kube-proxy's service REJECTs) is not its path.
        ports = {int(p) for e in failed for p in _PORT.findall(e.text or "") if p.isdigit()}
        addrs = {a for e in failed for a in _IPV4.findall(e.text or "")}
        hits: list[tuple[Fact, str, str]] = []
        for f in chains:
            info = f.value
            if info.get("policy") in params["discarding_targets"] and info.get("policy_packets", 0) > 0:
                if info.get("chain") in params["policy_chains"]:
                    hits.append((f, f"chain {info['chain']} policy {info['policy']}: {info['policy_packets']} packet(s)",
                                 info["policy"]))
                else:
                    # an INPUT policy counts every unsolicited packet from anywhere, of every protocol
                    # (scanners, UDP syslog, broadcasts): no sign that the job's TCP was among them
                    trace.append(f"{self.id}: chain {info['chain']} policy {info['policy']} counted "
                                 f"{info['policy_packets']} packet(s) of any protocol from anywhere: not read as the job's")
            for rule in info.get("rules") or ():
                if (rule.get("target") in params["discarding_targets"] and rule.get("packets", 0) > 0
                        and str(rule.get("prot")).lower() in params["tcp_protocols"]
                        and not any(_local_side(rule.get(side, "*")) for side in ("in", "out"))
                        and _covers(rule, ports, addrs)):
                    hits.append((f, f"chain {info['chain']}: {rule['target']} matched {rule['packets']} packet(s)"
                                    + (f" ({rule['match']})" if rule.get("match") else ""), rule["target"]))
        if not hits:
            return []
        if not failed:
            trace.append(f"{self.id}: a filter discarded packets ({hits[0][1]}) but none of the job's connections failed")
            return []
        # A DROP answers nothing: the client's SYNs go unanswered until its timeout.  A refused or
        # unreachable connect got an answer (an RST, an ICMP error) -- the path delivered it and
        # nobody listened, or a REJECT sent it -- so a DROP does not explain it (audit 8 H10 c).
        answered = re.compile(params["connect_answered"])
        unanswered = [e for e in failed if not answered.search(e.text or "")]
        paired = [(h, failed if h[2] != "DROP" else unanswered) for h in hits]
        paired = [(h, lines) for h, lines in paired if lines]
        if not paired:
            trace.append(f"{self.id}: a filter dropped packets ({hits[0][1]}) but the job's connects were answered "
                         f"(refused or unreachable, {failed[0].ref.describe()}): a DROP sends no answer")
            return []
        (f, what, _), lines = paired[0]
        summary = (f"a packet filter discarded TCP packets: {what} ({f.ref.describe()}), while the job's connection "
                   f"failed ({lines[0].ref.describe()}): the filter on the path blocks the job's traffic")
        trace.append(f"{self.id}: {what}; the job's connect failed at {lines[0].ref.describe()}")
        return [sign_finding(k, SIGN.net_firewall_discards, self.id, summary, lines[:2], "firewall",
                             extra_refs=tuple(dict.fromkeys(h[0].ref for h, _ in paired[:2])))]


_PORT = re.compile(r"(?:, |:)(\d{2,5})\)?(?:\.|\s|$)")
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_RULE_PORTS = re.compile(r"\bdpts?:(\d{1,5})(?::(\d{1,5}))?|\bdports ([\d,:]+)")


def _covers(rule: dict, ports: set[int], addrs: set[str]) -> bool:
    """Could the rule have matched the job's connects?  Not when it names destination ports none
    of which is a port the job's failed connects name, nor a destination address that is not
    one of theirs; a rule naming neither matches all TCP (the job's too).  With no port or
    address in the job's lines, only such a rule counts."""
    match = str(rule.get("match") or "")
    named: list[tuple[int, int]] = []
    for lo, hi, multi in _RULE_PORTS.findall(match):
        if multi:
            for part in multi.split(","):
                a, _, b = part.partition(":")
                named.append((int(a), int(b or a)))
        else:
            named.append((int(lo), int(hi or lo)))
    if named and not any(a <= p <= b for p in ports for a, b in named):
        return False
    dest = str(rule.get("destination") or "0.0.0.0/0")
    if dest not in ("0.0.0.0/0", "::/0", "anywhere") and not _in_any(dest, addrs):
        return False
    return True


def _in_any(net: str, addrs: set[str]) -> bool:
    import ipaddress
    try:
        network = ipaddress.ip_network(net, strict=False)
        return any(ipaddress.ip_address(a) in network for a in addrs)
    except ValueError:
        return False


def _local_side(name: str) -> bool:
    """An iptables in/out field naming loopback or a host-only interface ('!docker0' is the
    opposite: traffic NOT on it, which the path between hosts is)."""
    name = str(name or "*")
    return name != "*" and not name.startswith("!") and (name == "lo" or _host_local(name.rstrip("+")))


class HostOffNetwork(Rule):
    """A host of a job that spans hosts, whose full interface listing (`ip link` / `ip -br
    addr`: the loopback is in it) shows no interface outside the host that could carry a
    packet: every one administratively down (no UP among iproute2's flags, IFF_UP clear), without
    carrier or operationally down, or shown by `ip -br addr` holding no address.  Then the host
    could reach none of its peers -- whatever the job's transport (NCCL's bootstrap, gloo and
    the c10d store all use IP sockets between hosts) -- and its collectives and store calls time
    out.  The weakness of a single link-down reading (net.link_down: the bundle may not say it
    was the job's interface) does not apply when no interface is left.  Read only beside the
    job's failure (a collective or store timeout, or a rank's failure)."""

    id = "host-off-network"

    def findings(self, case, k, trace):
        by_file: dict[str, list[Fact]] = {}
        for f in case.facts:
            if f.name == FACT and isinstance(f.value, dict):
                by_file.setdefault(f.ref.path, []).append(f)
        if not by_file:
            return []
        failed = events_of(case, TIMEOUT_KINDS) or events_of(case, {KIND.launcher_child_failed})
        if not failed or not _spans_hosts(case):
            return []
        for path, facts in sorted(by_file.items()):
            names = {str(f.value.get("name", "")) for f in facts}
            if not any(_LOOPBACK_IF.match(n) for n in names):
                continue   # one interface shown (`ip link show eth0`): not the host's whole listing
            outside = [f for f in facts if not _host_local(str(f.value.get("name", "")))]
            if not outside:
                continue
            views: dict[str, list[dict]] = {}
            for f in outside:
                views.setdefault(str(f.value["name"]), []).append(f.value)
            if any(_usable(v) for v in views.values()):
                continue
            what = "; ".join(f"{name}: {_why_unusable(v)}" for name, v in sorted(views.items())[:4])
            summary = (f"the interface listing {path} shows no interface of the host that could carry the job's "
                       f"traffic ({what}) while the job, which spans hosts, failed ({failed[0].ref.describe()}): "
                       "that host could reach none of its peers")
            trace.append(f"{self.id}: {path}: {what}")
            return [sign_finding(k, SIGN.net_host_off_network, self.id, summary, failed[:2], "host-off-network",
                                 extra_refs=tuple(f.ref for f in outside[:3]))]
        return []


_LOOPBACK_IF = re.compile(r"^lo$")


def _usable(views: list[dict]) -> bool:
    """Up in every view, with carrier, and holding an address where a view shows addresses."""
    for v in views:
        if v.get("admin_up") is False or v.get("carrier") is False or v.get("state") in _DOWN_STATES:
            return False
        if _shows_addresses(v) and not v.get("addresses"):
            return False
    return True


def _shows_addresses(v: dict) -> bool:
    """`ip -br addr` prints the addresses where `ip -br link` prints the MAC and the flags: a
    brief view without flags is the address view (parsers/iproute.py brief)."""
    return v.get("admin_up") is None and not v.get("flags") and v.get("mtu") is None


def _why_unusable(views: list[dict]) -> str:
    for v in views:
        if v.get("admin_up") is False:
            return "administratively down"
        if v.get("carrier") is False or v.get("state") in _DOWN_STATES:
            return f"no link ({v.get('state') or 'NO-CARRIER'})"
    return "up, no address"


def _spans_hosts(case: Case) -> bool:
    """The job ran on more than one host: a torchrun failure entry whose global rank differs
    from its local rank (rank = node rank x processes per node + local rank, so a second
    agent), or events from two hosts."""
    for e in events_of(case, KIND.launcher_child_failed):
        local = e.data.get("local_rank")
        if e.rank is not None and isinstance(local, int) and e.rank != local:
            return True
    # torchrun agents of two logs each tearing down its own workers: one agent per node
    agents = {(e.ref.path, e.data.get("agent_pid")) for e in events_of(case, (KIND.launcher_sigterm,))
              if e.data.get("launcher") == "torchrun" and e.data.get("agent_pid") is not None}
    if len({path for path, _ in agents}) >= 2:
        return True
    return len({e.host for e in case.events if e.host}) >= 2
