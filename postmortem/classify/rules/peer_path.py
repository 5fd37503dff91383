"""Comms family: the host's path to the job's own peer addresses -- the kernel's neighbour table
(`ip neigh`, parsers/iproute.py) and its IPsec policies (`ip xfrm`, parsers/xfrm.py) -- beside
the job's failure.

The neighbour table is the host's layer-2 view of each next hop: the kernel creates an entry
when it routes a packet out of a device to an address on that link, asks for the address's
link-layer address (ARP / neighbour discovery) and records the answer.  Two readings say the
job's packets could not reach its peer, whatever the job printed:

* the entry for the peer stays unresolved -- INCOMPLETE (asked, no answer yet) or FAILED (the
  probes ran out, Linux net/core/neighbour.c neigh_timer_handler: NUD_FAILED after
  mcast_probes + ucast_probes unanswered): nothing on that link answers for the peer's
  address (it is down, unplugged, or the host sends into a network the peer is not on);
* the entry names a link-layer address that is not the one the peer's own interface listing
  shows for the interface holding that address: frames for the peer go to another machine
  (a duplicate address answering ARP, a spoofed or stale takeover).

Each is weak: a peer that crashed stops answering ARP too, and one snapshot may be old.  With
every rank timed out in one collective after logging the same step (timeout.ranks_level) --
nobody was late, the collective stopped moving -- the pair names the network.
"""
from __future__ import annotations

import functools
import ipaddress
import re

from postmortem.classify.rules.base import Rule, connection_failure_kinds, events_of, sign_finding
from postmortem.classify.rules.catalog import store_side_alive
from postmortem.classify.rules.config import TIMEOUT_KINDS, level_stall
from postmortem.classify.rules.interfaces import _host_local, _job_endpoints, _named, job_interfaces
from postmortem.knowledge.registry import KIND, SIGN, produced_by
from postmortem.model import Case, Fact
from postmortem.parsers.hosts import FACT as NAME_FACT
from postmortem.parsers.iproute import FACT, NEIGH_FACT, ROUTE_FACT, ROUTE_GET_FACT
from postmortem.parsers.iptables import FACT as FIREWALL_FACT
from postmortem.parsers.ping import FACT as PING_FACT
from postmortem.parsers.xfrm import LISTING_FACT, POLICY_FACT, STATE_FACT


def _failure(case: Case):
    """The job's failure the neighbour state may explain: its collective or store timeouts,
    else a rank's failure entry (torchrun ChildFailedError)."""
    return events_of(case, TIMEOUT_KINDS) or events_of(case, {KIND.launcher_child_failed})


def _paired(case: Case, k, trace: list[str], rule: str) -> tuple:
    """timeout.ranks_level as the second, independent sign when the collective-timeout reading found it."""
    level = level_stall(case, k)
    if level is None:
        return ()
    trace.append(f"{rule}: paired with timeout.ranks_level: every rank timed out in one collective after logging the same step")
    return (SIGN.timeout_ranks_level,)


def _peer_neighbours(case: Case) -> tuple[list[Fact], frozenset[str]]:
    entries = [f for f in case.facts if f.name == NEIGH_FACT and isinstance(f.value, dict)]
    if not entries:
        return [], frozenset()   # the job's addresses cost a walk of every event (issue 17): only when read
    addrs, _ = _job_endpoints(case)
    # A file with several readings of one entry is a history (`ip monitor neigh`, a periodic
    # `ip neigh` log): the entry's state is its LAST reading there.  A FAILED/INCOMPLETE line
    # followed by REACHABLE is a resolution that succeeded (a peer that came up late), not an
    # unresolved peer (audit 9 s15; REAL fixtures/lab/neigh_history).
    last: dict[tuple, Fact] = {}
    for f in sorted(entries, key=lambda f: (f.ref.path, f.ref.line or 0)):
        if f.value.get("addr") in addrs:
            last[(f.ref.path, f.value.get("addr"), f.value.get("dev"))] = f
    return list(last.values()), addrs


class PeerUnresolved(Rule):
    """The neighbour entry for an address the job's own lines name (MASTER_ADDR, a gloo or NCCL
    peer) is INCOMPLETE or FAILED (signals.toml net.peer_unresolved)."""

    id = "peer-unresolved"

    def findings(self, case, k, trace):
        params = SIGN.net_peer_unresolved.params
        neighbours, _ = _peer_neighbours(case)
        bad = [f for f in neighbours if set(f.value.get("states") or ()) & set(params["unresolved_states"])]
        if not bad:
            return []
        failed = _failure(case)
        if not failed:
            trace.append(f"{self.id}: not counted: {bad[0].value['addr']} unresolved ({bad[0].ref.describe()}) but the job shows no failure")
            return []
        f = bad[0]
        what = (f"the neighbour entry for the job's peer {f.value['addr']} on {f.value['dev']} is "
                f"{'/'.join(f.value['states'])} ({f.ref.describe()}): nothing on that link answered for the peer's address")
        summary = what + f"; the job failed beside it ({failed[0].ref.describe()})"
        trace.append(f"{self.id}: {what}")
        return [sign_finding(k, SIGN.net_peer_unresolved, self.id, summary, failed[:2], "neighbour",
                             extra_refs=tuple(x.ref for x in bad[:2]), combined=_paired(case, k, trace, self.id))]


class PeerAddressElsewhere(Rule):
    """The neighbour entry for an address the job's own lines name resolves to a link-layer
    address that no interface holding that address in the bundle's listings has
    (signals.toml net.peer_address_elsewhere)."""

    id = "peer-address-elsewhere"

    def findings(self, case, k, trace):
        params = SIGN.net_peer_address_elsewhere.params
        neighbours, _ = _peer_neighbours(case)
        confirmed = [f for f in neighbours if f.value.get("lladdr") and not f.value.get("router")
                     and set(f.value.get("states") or ()) & set(params["confirmed_states"])]
        if not confirmed:
            return []
        holders, mac_holders = _address_holders(case)
        for f in confirmed:
            addr, mac = f.value["addr"], f.value["lladdr"]
            macs = holders.get(addr)
            if not macs or {m for m, _ in macs} == {mac}:
                continue
            # A REACHABLE entry whose MAC no listing shows is the normal state of every proxy-ARP
            # access layer (a routed fabric, Calico's 169.254.1.1, Azure's vSwitch answering with
            # one MAC): the router answers for the peer and forwards (audit 9 H4, REAL s7).  Read
            # only what the bundle shows: the entry's MAC on another machine's interface (a
            # duplicate of the peer's address, or a host answering for it).
            if mac not in mac_holders:
                trace.append(f"{self.id}: not counted: {addr} resolves to {mac} ({f.ref.describe()}), a MAC no "
                             "listing of the bundle holds: a router answering for the peer (proxy ARP) is the healthy reading")
                continue
            macs = {(m, r) for m, r in macs if m != mac}
            failed = _failure(case)
            if not failed:
                return []
            owner_mac, owner = min(macs, key=lambda m: m[0])
            what = (f"the neighbour entry for the job's peer {addr} names {mac} ({f.ref.describe()}), but the "
                    f"interface holding {addr} has {owner_mac} ({owner.describe()}): the peer's frames go to another machine")
            summary = what + f"; the job failed beside it ({failed[0].ref.describe()})"
            trace.append(f"{self.id}: {what}")
            return [sign_finding(k, SIGN.net_peer_address_elsewhere, self.id, summary, failed[:2], "neighbour-mac",
                                 extra_refs=(f.ref, owner, mac_holders[mac][0][0]), combined=_paired(case, k, trace, self.id))]
        return []


def _address_holders(case: Case) -> tuple[dict[str, set[tuple[str, object]]], dict[str, list[tuple[object, frozenset]]]]:
    """address -> {(MAC, ref)} of the interfaces holding it, and MAC -> [(ref, addresses)].  An
    `ip addr` block gives both in one fact; only an `ip -br link` view (MAC, no addresses) and an
    `ip -br addr` view (addresses, no MAC) of one interface in one file are joined -- never two
    complete blocks of one name, which are two hosts' interfaces (a cluster-wide `for h in ...;
    ip addr` collection in one file; audit 9 H4, REAL s12)."""
    complete: list[tuple[str, set[str], object]] = []
    macs_only: dict[tuple[str, str], list[tuple[str, object]]] = {}
    addrs_only: dict[tuple[str, str], set[str]] = {}
    for f in case.facts:
        if f.name != FACT or not isinstance(f.value, dict):
            continue
        key = (f.ref.path, str(f.value.get("name", "")))
        addresses = {str(a).split("/", 1)[0] for a in f.value.get("addresses") or ()}
        mac = f.value.get("mac") if f.value.get("mac") != "00:00:00:00:00:00" else None
        if mac and addresses:
            complete.append((mac, addresses, f.ref))
        elif mac:
            macs_only.setdefault(key, []).append((mac, f.ref))
        elif addresses:
            addrs_only.setdefault(key, set()).update(addresses)
    for key, found in macs_only.items():
        if len(found) == 1:                 # one link view of that name in the file: one interface
            complete.append((found[0][0], addrs_only.get(key, set()), found[0][1]))
    out: dict[str, set[tuple[str, object]]] = {}
    by_mac: dict[str, list[tuple[object, frozenset]]] = {}
    for mac, addresses, ref in complete:
        by_mac.setdefault(mac, []).append((ref, frozenset(addresses)))
        for a in addresses:
            out.setdefault(a, set()).add((mac, ref))
    return out, by_mac


class IpsecPolicyWithoutSa(Rule):
    """An outbound IPsec policy whose selector covers an address the job's own lines name and
    whose required template has no security association in the same host's `ip xfrm state`
    listing (signals.toml net.ipsec_policy_without_sa).

    Linux net/xfrm/xfrm_policy.c: a packet matching an outbound policy with templates is sent
    only through the SAs the templates resolve to (xfrm_lookup -> xfrm_tmpl_resolve ->
    xfrm_state_find); with none, the kernel asks the key manager for one (km_query, an ACQUIRE)
    and, with net.core.xfrm_larval_drop = 1 (the default), drops the packet meanwhile.  With no
    key manager answering, every packet to the peer is dropped while the link itself is fine."""

    id = "ipsec-policy-without-sa"

    def findings(self, case, k, trace):
        policies = [f for f in case.facts if f.name == POLICY_FACT and isinstance(f.value, dict)
                    and f.value.get("dir") == "out" and f.value.get("action") == "allow"
                    and any(not t.get("optional") for t in f.value.get("templates") or ())]
        if not policies:
            return []
        listed = {f.ref.path for f in case.facts if f.name == LISTING_FACT}
        states = [f for f in case.facts if f.name == STATE_FACT and isinstance(f.value, dict)]
        addrs, _ = _job_endpoints(case)
        for f in policies:
            if f.ref.path not in listed:
                trace.append(f"{self.id}: not counted: policy {f.ref.describe()} but no `ip xfrm state` listing of the same host")
                continue
            # xfrm_selector_match matches both sides: the policy must cover the job's own packets
            # (its source selector one address of the job, its destination ANOTHER -- a host's own
            # address is no peer of its own), not another subnet's (an IKE daemon's on-demand trap
            # policy for a container subnet: audit 9 H3, REAL s5)
            # the host's own address: one the job names, or a transport-mode template's source (in
            # transport mode the SA's endpoints are the packet's own: RFC 4301 4.1)
            here = set(addrs) | {t["src"] for t in f.value["templates"] if t.get("mode") == "transport" and t.get("src")}
            own = {a for a in here if _covers(f.value.get("src", ""), a)}
            peers = sorted(a for a in addrs if _covers(f.value.get("dst", ""), a) and own - {a})
            if not peers:
                continue
            missing = [t for t in f.value["templates"] if not t.get("optional")
                       and not any(_sa_for(t, s.value) for s in states if s.ref.path == f.ref.path)]
            if not missing:
                continue
            # a larval drop is silence (the packets vanish), never a peer's reset: only timeouts
            failed = events_of(case, TIMEOUT_KINDS)
            if not failed:
                trace.append(f"{self.id}: not counted: policy without SA for {peers[0]} ({f.ref.describe()}) but the job shows no timeout")
                return []
            t = missing[0]
            what = (f"an outbound IPsec policy for {f.value['dst']} ({f.ref.describe()}) requires {t.get('proto') or 'an'} "
                    f"SA {t.get('src') or '?'} -> {t.get('dst') or '?'} and the host's `ip xfrm state` lists none: "
                    f"the kernel drops the packets to the job's peer {peers[0]} until a key manager installs one")
            summary = what + f"; the job failed beside it ({failed[0].ref.describe()})"
            trace.append(f"{self.id}: {what}")
            return [sign_finding(k, SIGN.net_ipsec_policy_without_sa, self.id, summary, failed[:2], "ipsec",
                                 extra_refs=(f.ref,), combined=_paired(case, k, trace, self.id))]
        return []


def _covers(selector: str, addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr) in ipaddress.ip_network(selector or "0.0.0.0/0", strict=False)
    except ValueError:
        return False


def _sa_for(template: dict, state: dict) -> bool:
    """The SA the template resolves to: same protocol and, where the template names them (a
    transport-mode template may leave them to the packet's), the same endpoints."""
    if template.get("proto") and state.get("proto") != template["proto"]:
        return False
    return all(not template.get(side) or template[side] == state.get(side) for side in ("src", "dst"))


class SourceRewrittenOnPath(Rule):
    """A source-NAT rule on a host's egress (iptables nat POSTROUTING, `-j SNAT --to-source X`)
    that matched packets, covers the job's peers' addresses, and rewrites to an address the
    job's lines never name for any rank (signals.toml net.source_rewritten_on_path).

    netfilter (net/netfilter/nf_nat_core.c, xt_nat.c): SNAT rewrites the source of every packet
    of a connection conntrack maps through the rule -- conntrack also picks up established TCP
    flows mid-stream (nf_conntrack_tcp_loose = 1, the default) -- so the peer receives the job's
    segments from an address it has no connection with and answers with a reset: each side's
    transport reports the other closed the connection.  MASQUERADE is left out: it rewrites to
    the egress interface's own primary address, the one the peers already know."""

    id = "source-rewritten-on-path"

    def findings(self, case, k, trace):
        params = SIGN.net_source_rewritten_on_path.params
        chains = [f for f in case.facts if f.name == FIREWALL_FACT and isinstance(f.value, dict)
                  and f.value.get("chain") == params["chain"]]
        if not chains:
            return []
        addrs, _ = _job_endpoints(case)
        if not addrs:
            return []
        # every address the bundle's interface listings hold: the peers first (one of those may be
        # this host's own), and a to-source one of them holds is no stranger
        held = {str(a).split("/", 1)[0] for g in case.facts if g.name == FACT and isinstance(g.value, dict)
                for a in g.value.get("addresses") or ()}
        for f in chains:
            for rule in f.value.get("rules") or ():
                to = str(rule.get("match") or "")
                target_addr = next((w.split(":", 1)[1].split("-")[0] for w in to.split() if w.startswith("to:")), "")
                target_addr = target_addr.split(":")[0]
                if (rule.get("target") != params["target"] or rule.get("packets", 0) <= 0 or not target_addr
                        or target_addr in addrs or _host_local(str(rule.get("out", "*")).lstrip("!").rstrip("+"))):
                    continue
                covered = sorted((a for a in addrs if _covers(str(rule.get("destination") or "0.0.0.0/0"), a)),
                                 key=lambda a: (a in held, a))
                # the rule must rewrite the JOB's packets (its source selector covers an address the
                # job names, not a container subnet's) to an address no interface of the bundle holds
                # (the host's own secondary address is what MASQUERADE does): audit 9 H1, REAL s1
                sources = [a for a in addrs if _covers(str(rule.get("source") or "0.0.0.0/0"), a)]
                if (not covered or not sources or not held or target_addr in held
                        or str(rule.get("prot", "0")).lower() not in params["protocols"]):
                    continue
                failed = _failure(case) or events_of(case, connection_failure_kinds(k))
                if not failed:
                    trace.append(f"{self.id}: not counted: SNAT to {target_addr} ({f.ref.describe()}) but the job shows no failure")
                    return []
                what = (f"a source-NAT rule on the egress ({f.ref.describe()}: SNAT to {target_addr}, {rule['packets']} "
                        f"packet(s) matched) rewrites the job's packets to its peer {covered[0]} to an address the job's "
                        "lines never name: the peer sees them from a stranger and resets the connection")
                summary = what + f"; the job failed beside it ({failed[0].ref.describe()})"
                trace.append(f"{self.id}: {what}")
                return [sign_finding(k, SIGN.net_source_rewritten_on_path, self.id, summary, failed[:2], "snat",
                                     extra_refs=(f.ref,), combined=_paired(case, k, trace, self.id))]
        return []


class LinkDownDuringJob(Rule):
    """A timestamped record of link changes (`ip -ts monitor link` on a host or on the switch the
    hosts hang off) shows an interface outside the host losing its link after the job's first
    timed line and before its first failure (signals.toml net.link_down_during_job).  Frames
    sent while a link is down are lost; TCP retransmits them with exponential backoff
    (RFC 6298, Linux tcp_retransmit_timer), so even a link that comes back can leave a
    collective waiting past its timeout, and repeated short outages (a flapping port) keep the
    backed-off retransmissions missing the up windows."""

    id = "link-down-during-job"

    def findings(self, case, k, trace):
        changes = [e for e in events_of(case, {KIND.iproute_link_change}) if e.when and e.when.at
                   and not _host_local(str(e.data.get("name", "")))]
        if not changes:
            return []
        failed = _failure(case)
        # the failure's time as its own lines print it (a watchdog line's stamp, torchrun's failure
        # entry): an untimed traceback line is only placed after its file's previous timed line
        printed = [e for e in [*failed, *events_of(case, {KIND.launcher_child_failed})]
                   if e.stamp is not None and e.when and e.when.at]
        if not failed or not printed:
            return []
        first_fail = min(e.when.at for e in printed)
        change_files = {e.ref.path for e in changes}
        job_times = [e.when.at for e in case.events if e.when and e.when.at and e.ref.path not in change_files
                     and e.kind not in _KERNEL_KINDS]
        if not job_times:
            return []
        start = min(job_times)
        exact, prefixes = job_interfaces(case)
        holding = _interfaces_holding(case, _job_endpoints(case)[0])
        downs = []
        for e in changes:
            name = str(e.data.get("name", ""))
            if not _jobs_link(e, name, exact, prefixes, holding):
                continue
            if _down(e.data) and start <= e.when.at <= first_fail and _was_up_before(e, changes):
                downs.append(e)
        if not downs:
            return []
        first = min(downs, key=lambda e: e.when.at)
        name = str(first.data.get("name"))
        history = sorted((e for e in changes if e.data.get("name") == name), key=lambda e: e.when.at)
        outages = sum(1 for a, b in zip(history, history[1:]) if not _down(a.data) and _down(b.data)) + (
            1 if history and _down(history[0].data) else 0)
        what = (f"interface {name} lost its link at {first.when.at.time().isoformat(timespec='seconds')} "
                f"({first.ref.describe()}), after the job started and before its first failure "
                f"({failed[0].ref.describe()})" + (f"; {outages} outage(s) in the record" if outages > 1 else ""))
        trace.append(f"{self.id}: {what}")
        return [sign_finding(k, SIGN.net_link_down_during_job, self.id, what + ": the path lost the job's frames",
                             failed[:2] + [first], "link-down-during-job", combined=_paired(case, k, trace, self.id))]


def _interfaces_holding(case: Case, addrs: frozenset[str]) -> set[tuple[str, str]]:
    """(file, interface) of the bundle's listings that hold an address the job's lines name."""
    return {(f.ref.path, str(f.value.get("name", "")).split("@", 1)[0]) for f in case.facts
            if f.name == FACT and isinstance(f.value, dict)
            and {str(a).split("/", 1)[0] for a in f.value.get("addresses") or ()} & addrs}


def _jobs_link(e, name: str, exact: set[str], prefixes: set[str], holding: set[tuple[str, str]]) -> bool:
    """An interface the job's traffic used (audit 9 H2): named by the job (NCCL 'Using' lines,
    NCCL_/GLOO_SOCKET_IFNAME), or holding an address the job's lines name.  A bridge/switch port
    ('master X') carries every host's frames only when its bridge is not host-local (a VM's vnetN
    on libvirt's virbr0 carries the VM's), and is read only when the job names no interface of its
    own -- then the record cannot say which port the job's hosts hang off."""
    base = name.split("@", 1)[0]
    if _named(base, exact, prefixes) or any(n == base for _, n in holding):
        return True
    m = _MASTER.search(f" {e.text or ''} ")
    master = str(e.data.get("master") or (m.group(1) if m else ""))
    return bool(master) and not _host_local(master) and not (exact or prefixes)


_MASTER = re.compile(r" master (\S+) ")


def _was_up_before(e, changes) -> bool:
    """A transition, not a message that shows a link down: rtnetlink sends RTM_NEWLINK for any
    attribute change (an MTU set on a spare NIC that is down the whole time prints 'state DOWN'),
    so the record must show the same link with its link up earlier (audit 9 H2, REAL s13)."""
    return any(c.ref.path == e.ref.path and c.data.get("name") == e.data.get("name") and c.when.at < e.when.at
               and not _down(c.data) for c in changes)


def _down(data: dict) -> bool:
    return data.get("carrier") is False or data.get("admin_up") is False or data.get("state") in ("DOWN", "LOWERLAYERDOWN")


_KERNEL_KINDS = produced_by("parser:kernel")


# ---------------------------------------------------------------- a host's routing table and its peers

# route types whose match drops the packet (ip-route(8): unreachable/prohibit/blackhole; a throw
# in the main table ends the lookup without a route: net/ipv4/fib_semantics.c fib_props)
_DROPPING = frozenset({"unreachable", "prohibit", "blackhole", "throw"})


def _route_tables(routes: list[Fact]) -> list[list[Fact]]:
    """One `ip route` printout per run of route lines on consecutive lines of one file (iproute2
    prints a table without blank lines; anything between two runs is another command's output)."""
    tables: list[list[Fact]] = []
    for f in sorted(routes, key=lambda f: (f.ref.path, f.ref.line or 0)):
        last = tables[-1][-1] if tables else None
        # a multipath route takes its header and one line per hop (iproute.py IpRouteMultipathBlock: span)
        if last is not None and last.ref.path == f.ref.path and (f.ref.line or 0) == (last.ref.line or 0) + last.value.get("span", 1):
            tables[-1].append(f)
        else:
            tables.append([f])
    return tables


def _connected_sources(table: list[Fact], local) -> list[str]:
    """The host's own addresses a table shows: the preferred source of its connected routes
    (`proto kernel scope link src A`, added by the kernel with the address), host-local
    interfaces (docker0, br-*, veth ...) left out."""
    return [f.value["src"] for f in table
            if f.value.get("src") and f.value.get("scope") == "link" and f.value.get("type") == "unicast"
            and not (local is not None and local.match(f.value.get("dev") or ""))]


def _lookup(table: list[Fact], addr: ipaddress.IPv4Address) -> Fact | None:
    """The main-table route the kernel would pick for addr: the longest matching prefix
    (net/ipv4/fib_trie.c), local/broadcast entries of the local table aside."""
    best = None
    for f in table:
        if f.value.get("type") in ("local", "broadcast", "multicast", "anycast", "nat"):
            continue
        net = ipaddress.ip_network(f.value["dest"])
        if addr in net and (best is None or net.prefixlen > ipaddress.ip_network(best.value["dest"]).prefixlen):
            best = f
    return best


def _listed_elsewhere(case: Case, asked: Fact) -> frozenset[str]:
    """IPv4 addresses of the interfaces another host's `ip addr` listing in the bundle shows (another
    file, or a host known to differ), host-local interfaces aside: the job's other hosts.  The host
    that asked is never refused its own addresses (the local table routes them)."""
    out: set[str] = set()
    for x in case.facts:
        if x.name != FACT or not isinstance(x.value, dict) or x.ref.path == asked.ref.path \
                or (x.host is not None and x.host == asked.host) or _host_local(str(x.value.get("name", ""))):
            continue
        for a in x.value.get("addresses") or ():
            addr = str(a).split("/", 1)[0]
            if "." in addr and not addr.startswith("127."):
                out.add(addr)
    return frozenset(out)


def _same_host(e, f) -> bool:
    """An event and a fact of one host, or of hosts the bundle does not tell apart."""
    return e.host is None or f.host is None or e.host == f.host


class PeerAnswersPing(Rule):
    """The host the job's store client failed to reach with the kernel's no-path answer answered
    this host's ping (signals.toml net.peer_answers_ping): the peer was up, the job's traffic lost."""

    id = "peer-answers-ping"

    def findings(self, case, k, trace):
        runs = [f for f in case.facts if f.name == PING_FACT and isinstance(f.value, dict)
                and isinstance(f.value.get("received"), int)]
        if not runs:
            return []
        last: dict[tuple, Fact] = {}   # the address's last reading in its file, as peer-probe-lost reads it
        for f in sorted(runs, key=lambda f: (f.ref.path, f.ref.line or 0)):
            last[(f.ref.path, f.value.get("addr"))] = f
        answered = [f for f in last.values() if f.value["received"] > 0]
        if not answered:
            return []
        params = SIGN.net_peer_answers_ping.params
        connect_failed, path_error = re.compile(params["connect_failed"]), re.compile(params["path_error"])
        for e in case.events:
            m = connect_failed.search(e.text or "")
            if not m or not path_error.search(e.text or ""):
                continue
            host = m["host"].strip("[]")
            run = next((f for f in answered if host in (f.value.get("addr"), f.value.get("name")) and _same_host(e, f)), None)
            if run is None:
                continue
            what = (f"{host} answered this host's ping: {run.value['transmitted']} sent, {run.value['received']} received "
                    f"({run.ref.describe()}), while the job's store client could not reach it ({e.ref.describe()}): "
                    "the peer was up, the job's connections to it were lost on the way")
            trace.append(f"{self.id}: {what}")
            return [sign_finding(k, SIGN.net_peer_answers_ping, self.id, what, [e], "ping", extra_refs=(run.ref,))]
        return []


class PeerUnroutable(Rule):
    """A host's `ip route` table has no route to the address of another host of the job
    (signals.toml net.peer_unroutable): that host can neither reach the peer nor answer it."""

    id = "peer-unroutable"

    def _route_get_failed(self, case, k, trace) -> list:
        """The host's own answer for one address: `ip route get PEER` refused with no route
        (parsers/iproute.py net.route_get_failed), PEER an address the job's lines name."""
        params = SIGN.net_peer_unroutable.params
        answers = [f for f in case.facts if f.name == ROUTE_GET_FACT and isinstance(f.value, dict)
                   and f.value.get("error") in params["no_route_answers"]]
        if not answers:
            return []
        named, _ = _job_endpoints(case)
        mine = [f for f in answers if f.value.get("addr") in named or f.value.get("addr") in _listed_elsewhere(case, f)]
        if not mine:
            trace.append(f"{self.id}: not read: `ip route get` refused {answers[0].value['addr']} "
                         f"({answers[0].ref.describe()}), an address the job's lines do not name "
                         "and no other host's listing of the bundle holds")
            return []
        f = mine[0]
        connect_failed = re.compile(params["connect_failed"])
        failed = [e for e in case.events if connect_failed.search(e.text or "")]
        restated = [e for e in failed if f.value["error"] in (e.text or "") and _same_host(e, f)]
        if restated:
            # connect(2) fails with ENETUNREACH / EHOSTUNREACH from the lookup `ip route get` repeats
            # (tcp_v4_connect -> ip_route_connect -> fib_lookup): the job's line already printed
            # this answer, so the refusal explains it but is no second sign (audit 13 H1)
            trace.append(f"{self.id}: not counted: `ip route get` {f.value['addr']} answered '{f.value['error']}' "
                         f"({f.ref.describe()}), the answer the job's connect printed ({restated[0].ref.describe()}): "
                         "one route lookup read twice")
            return []
        failed = failed or _failure(case)
        if not failed:
            return []
        what = (f"the host's kernel has no route to the job's peer {f.value['addr']}: `ip route get` answered "
                f"'{f.value['error']}' ({f.ref.describe()})")
        trace.append(f"{self.id}: {what}")
        return [sign_finding(k, SIGN.net_peer_unroutable, self.id, what + f"; the job failed beside it ({failed[0].ref.describe()})",
                             failed[:2], "route", extra_refs=(f.ref,))]

    def findings(self, case, k, trace):
        asked = self._route_get_failed(case, k, trace)
        if asked:
            return asked
        routes = [f for f in case.facts if f.name == ROUTE_FACT and isinstance(f.value, dict)]
        if not routes:
            return []
        other = sorted({f.value.get("table") for f in routes} - {"main", "local"})
        if other:
            trace.append(f"{self.id}: not read: routing tables other than main are printed ({', '.join(other)}): "
                         "policy routing may send the job's traffic through them")
            return []
        params = SIGN.net_peer_unroutable.params
        connect_failed = re.compile(params["connect_failed"])
        failed = [e for e in case.events if connect_failed.search(e.text or "")] or _failure(case)
        if not failed:
            return []
        from postmortem.classify.rules.comms import host_only_interface

        local = host_only_interface()
        tables = _route_tables(routes)
        sources = [set(_connected_sources(t, local)) for t in tables]
        named, _ = _job_endpoints(case)
        for i, table in enumerate(tables):
            if not sources[i]:
                continue   # no connected route: not a whole table (`ip route show dev X`, a grep)
            for j, theirs in enumerate(sources):
                if j == i or not theirs or theirs & sources[i]:
                    continue   # the same host's table printed twice
                # the other host's one address, or those the job's lines name (a second NIC the
                # job does not use need not be reachable from here)
                peers = sorted(theirs) if len(theirs) == 1 else sorted(theirs & named)
                for peer in peers:
                    best = _lookup(table, ipaddress.ip_address(peer))
                    if best is not None and best.value.get("type") not in _DROPPING:
                        continue
                    how = ("has no route to it" if best is None else
                           f"sends it to a {best.value['type']} route ({best.ref.describe()})")
                    what = (f"the routing table of the host with {', '.join(sorted(sources[i]))} "
                            f"({table[0].ref.describe()}) {how}: {peer}, the address of another host of the job "
                            f"({tables[j][0].ref.describe()}), can be neither reached from it nor answered")
                    trace.append(f"{self.id}: {what}")
                    return [sign_finding(k, SIGN.net_peer_unroutable, self.id,
                                         what + f"; the job's connection failed beside it ({failed[0].ref.describe()})",
                                         failed[:2], "route", extra_refs=(table[0].ref, tables[j][0].ref))]
        return []


def _fabric_address(addr: str) -> bool:
    """A private-use address (RFC 1918, RFC 4193, the documentation ranges): the cluster's own
    network, where the job's peers and the gateways between them live -- not a loopback."""
    try:
        a = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return False
    return a.is_private and not (a.is_loopback or a.is_link_local or a.is_unspecified)


class PeerProbeLost(Rule):
    """A ping from a host of the bundle to an address of the job's network got no reply at all,
    beside the job's failure (signals.toml net.peer_probe_lost)."""

    id = "peer-probe-lost"

    def findings(self, case, k, trace):
        runs = [f for f in case.facts if f.name == PING_FACT and isinstance(f.value, dict)
                and isinstance(f.value.get("transmitted"), int) and f.value["transmitted"] > 0]
        if not runs:
            return []
        last: dict[tuple, Fact] = {}   # the address's last reading in its file: a later answered run is the path back
        for f in sorted(runs, key=lambda f: (f.ref.path, f.ref.line or 0)):
            last[(f.ref.path, f.value.get("addr"))] = f
        most = SIGN.net_peer_probe_lost.params["received_at_most"]
        lost = [f for f in last.values() if f.value.get("received") is not None and f.value["received"] <= most]
        if not lost:
            return []
        named, _ = _job_endpoints(case)
        # the job's failure: its timeouts or a rank's failure entry, else its connects that failed
        # (a probe is ICMP, answered by the peer's kernel: a store that was not up yet still answers)
        connect_failed = re.compile(SIGN.net_peer_unroutable.params["connect_failed"])
        job_failure = _failure(case)
        failed = job_failure or [e for e in case.events if connect_failed.search(e.text or "")]
        # With no failure but the connects, a lost probe of the address they failed to reach is the
        # same fact -- the address answers nobody -- whether its host is off or the path is cut (audit 14 H1)
        store_connect = re.compile(SIGN.net_peer_answers_ping.params["connect_failed"])
        dialled = set() if job_failure else {m.group("host") for e in failed for m in [store_connect.search(e.text or "")] if m}
        if dialled and store_side_alive(case, k, failed) is not None:
            dialled = set()    # the store's side shown alive: the probe says the path, not a dead host
        unresolved: set[str] = set()
        if job_failure:    # what peer-unresolved counts (it reads the neighbour table beside the same failures)
            neighbours, _ = _peer_neighbours(case)
            states = set(SIGN.net_peer_unresolved.params["unresolved_states"])
            unresolved = {f.value["addr"] for f in neighbours if set(f.value.get("states") or ()) & states}
        for f in lost:
            addr = str(f.value.get("addr") or "")
            if not (addr in named or addr in _listed_elsewhere(case, f) or _fabric_address(addr)):
                trace.append(f"{self.id}: not counted: ping to {addr} lost ({f.ref.describe()}), an address "
                             "outside the job's network")
                continue
            if addr in unresolved:
                trace.append(f"{self.id}: not counted: ping to {addr} lost ({f.ref.describe()}), the peer whose "
                             "unresolved neighbour entry peer-unresolved reads: one fact read twice")
                continue
            if not failed:
                trace.append(f"{self.id}: not counted: ping to {addr} lost ({f.ref.describe()}) but the job shows no failure")
                return []
            if addr in dialled:
                trace.append(f"{self.id}: not counted: ping to {addr} lost ({f.ref.describe()}), the address the job's store "
                             "connects failed to reach, whose side nothing shows alive: one fact (nothing answers there), a dead host's as much as a cut path's")
                continue
            errors = f.value.get("unreachable_from") or []
            what = (f"a ping to {addr} got no reply: {f.value['transmitted']} sent, {f.value['received']} received "
                    f"({f.ref.describe()})" + (f", ICMP errors from {', '.join(errors)}" if errors else "")
                    + ": the host's packets to that address of the job's network did not come back")
            summary = what + f"; the job failed beside it ({failed[0].ref.describe()})"
            trace.append(f"{self.id}: {what}")
            return [sign_finding(k, SIGN.net_peer_probe_lost, self.id, summary, failed[:2], "probe",
                                 extra_refs=(f.ref,), combined=_paired(case, k, trace, self.id))]
        return []


# ---------------------------------------------------------------- the store's host name, resolved on each host

def _store_names(case: Case, pattern: re.Pattern) -> dict[str, object]:
    """Host names (not address literals) the job's failed connects to the store name, with the
    first line naming each."""
    names: dict[str, object] = {}
    for e in case.events:
        for m in pattern.finditer(e.text or ""):
            host = (m.group("host") or m.group("host2") or "").lower()
            if host and not re.match(r"^[\d.]+$|^\[?[0-9a-f:]+\]?$", host):
                names.setdefault(host, e)
    return names


def _answers_for(name: str, records: list[Fact]) -> dict[str, set[str]]:
    """Per file, the non-loopback addresses its records give the name (the short name matches a
    record's fully qualified name by its first label, as a resolver's search list expands it)."""
    out: dict[str, set[str]] = {}
    for f in records:
        names = f.value.get("names") or ()
        if name in names or ("." not in name and any(n.split(".", 1)[0] == name for n in names)):
            addr = str(f.value.get("addr") or "")
            if addr and not addr.startswith("127.") and addr not in ("::1",):
                out.setdefault(f.ref.path, set()).add(addr)
    return out


class NameResolvesApart(Rule):
    """The store's host name, which the job's connects failed to reach, resolves to addresses
    that do not meet on two hosts of the bundle (signals.toml net.name_resolves_apart)."""

    id = "name-resolves-apart"

    def findings(self, case, k, trace):
        records = [f for f in case.facts if f.name == NAME_FACT and isinstance(f.value, dict)]
        if len(records) < 2:
            return []
        params = SIGN.net_name_resolves_apart.params
        for name, failed in _store_names(case, re.compile(params["store_host"])).items():
            answers = _answers_for(name, records)
            files = sorted(answers)
            pair = next(((a, b) for i, a in enumerate(files) for b in files[i + 1:] if not answers[a] & answers[b]), None)
            if pair is None:
                continue
            a, b = pair
            what = (f"the store's host name {name}, which the job failed to connect to ({failed.ref.describe()}), "
                    f"resolves to {', '.join(sorted(answers[a]))} in {a} and to {', '.join(sorted(answers[b]))} in {b}: "
                    "the hosts do not agree where the store is, so one of them dials another machine")
            trace.append(f"{self.id}: {what}")
            refs = tuple(f.ref for f in records if f.ref.path in pair)[:2]
            return [sign_finding(k, SIGN.net_name_resolves_apart, self.id, what, [failed], "name", extra_refs=refs)]
        return []


# a dotted quad of decimal-digit parts (one with a leading zero is what inet_aton reads as octal)
_DOTTED_QUAD = re.compile(r"^(\d{1,12})\.(\d{1,12})\.(\d{1,12})\.(\d{1,12})$")


def _as_glibc_reads(quad: str) -> str | None:
    """The address glibc's getaddrinfo dials for a dotted quad when a zero-padded part makes it
    another one than its decimal reading (inet_aton: a leading 0 is octal); else None."""
    m = _DOTTED_QUAD.match(quad)
    if m is None:
        return None
    parts = m.groups()
    if any(p.startswith("0") and len(p) > 1 and set(p) - set("01234567") for p in parts):
        return None   # not octal either: getaddrinfo fails (a gai error), no address is dialed
    read = [int(p, 8) if p.startswith("0") and len(p) > 1 else int(p) for p in parts]
    if any(v > 255 for v in read) or read == [int(p) for p in parts]:
        return None
    return ".".join(map(str, read))


@functools.lru_cache(maxsize=8)
def _heads(pattern: str) -> tuple[str, ...] | None:
    """The literal text each top-level branch of `pattern` begins with, or None when a branch
    begins otherwise (or case is ignored): no match is where none of them is, and `in`
    finds them far faster than sre tries every branch at every position."""
    try:
        from re import _parser

        parsed = _parser.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return None
        items = parsed.data
        branches = items[0][1][1] if len(items) == 1 and items[0][0] is _parser.BRANCH else [items]
        heads = []
        for branch in branches:
            head = []
            for op, arg in getattr(branch, "data", branch):
                if op is not _parser.LITERAL:
                    break
                head.append(chr(arg))
            if not head:
                return None
            heads.append("".join(head))
        return tuple(heads)
    except Exception:  # noqa: BLE001 - an internal parser that changed: no shortcut, the full search
        return None


class StoreAddressOctal(Rule):
    """The store's host, as the job's failed connects print it, is a dotted quad that glibc reads
    as another address (a zero-padded part of 8 or more is octal; signals.toml net.store_address_octal).
    Only a connect that failed says the address reached nothing: a retry after a connected
    socket's validation failed (TCPStore's per-try line with a reset as its error) reached a host."""

    id = "store-address-octal"

    def findings(self, case, k, trace):
        written_as = SIGN.net_store_address_octal.params["store_host"]
        heads = _heads(written_as)
        if heads is not None:  # every event's text searched at once for what a match begins with
            joined = "\n".join([e.text or "" for e in case.events])
            if not any(head in joined for head in heads):
                return []
        pattern = re.compile(written_as)
        for e in case.events:
            for m in pattern.finditer(e.text or ""):
                written = m.group("host") or m.group("host2") or ""
                dialed = _as_glibc_reads(written)
                if dialed is None:
                    continue
                what = (f"the store's address is written {written} ({e.ref.describe()}): glibc's getaddrinfo reads "
                        f"a part with a leading zero as octal, so the job dialed {dialed}, not the host it meant")
                trace.append(f"{self.id}: {what}")
                return [sign_finding(k, SIGN.net_store_address_octal, self.id, what, [e], "store-address")]
        return []
