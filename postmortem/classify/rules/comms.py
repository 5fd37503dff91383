"""Rules for the communication layer: NCCL versions, silent hangs, PCIe topology."""
from __future__ import annotations

import re
from collections import defaultdict

from postmortem.classify.rules.base import Rule, events_of, sign_finding
from postmortem.knowledge.registry import KIND, LIMIT, SIGN, deaths, produced_by, registry
from postmortem.model import Event

_NCCL_KINDS = produced_by("parser:nccl")

class NcclVersionMismatch(Rule):
    """Different NCCL versions in one job (one banner per node or log) cannot talk to each other.

    Bundles and public threads often hold the failing run beside a run after an upgrade (or each
    node run alone to compare), so two versions are strong only when they were seen in one run:
    both banners timed within one rendezvous window, or the two processes are members of one
    communicator (the same commId).  Otherwise they are a weak sign.  NCCL's own "Mismatched NCCL
    version detected" (init.cc) is read by the NCCL catalog."""

    id = "nccl-version-mismatch"

    def findings(self, case, k, trace):
        versions: dict[str, list[Event]] = defaultdict(list)
        for e in events_of(case, (KIND.nccl_version, KIND.msg_nccl_error_in)):
            v = e.data.get("version")
            if isinstance(v, str) and re.fullmatch(r"(?<![\d.])\d+\.\d+\.\d+", v.split("+")[0]):
                versions[v.split("+")[0]].append(e)
        if len(versions) < 2:
            return []
        listing = ", ".join(f"{v} ({versions[v][0].ref.describe()})" for v in sorted(versions))
        one_run = _one_run(case, versions)
        close = "" if one_run else _close_in_time(versions)
        trace.append(f"{self.id}: versions {listing}; seen in one run: {one_run or 'no'}{'; ' + close if close else ''}")
        events = [evs[0] for evs in versions.values()]
        sign = SIGN.nccl_version_mismatch if one_run else SIGN.nccl_versions_in_bundle
        return [sign_finding(k, sign, self.id, f"different NCCL versions in one job: {listing}"
                             + (f" ({one_run})" if one_run else
                                f"; not shown to be one run ({close}: a rerun after an upgrade fits that too)" if close else
                                "; not shown to be one run (the bundle may hold runs before and after an upgrade)"),
                             events, "versions")]


def _close_in_time(versions: dict[str, list[Event]]) -> str:
    """Two versions printed within the window one run's ranks can be apart (torch elastic's join
    timeout). A bound, not a proof: a rerun minutes after `pip install -U` fits it as well, so it
    only words the lean (audit 6 L5)."""
    window = LIMIT.same_run_window_s
    names = sorted(versions)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for x in versions[a]:
                for y in versions[b]:
                    if x.when and x.when.at and y.when and y.when.at and abs((x.when.at - y.when.at).total_seconds()) <= window:
                        return f"{a} and {b} printed {abs((x.when.at - y.when.at).total_seconds()):.0f} s apart"
    return ""


def _one_run(case, versions: dict[str, list[Event]]) -> str:
    """Why two of the versions were seen in one run, or '' when nothing shows it: only processes
    that joined one communicator (the same commId) prove it."""
    names = sorted(versions)
    # members of one communicator: the processes that printed the versions init'ed the same commId
    # (a banner without a host:pid prefix is its file's: "NCCL version 2.14.3+cuda11.7" alone on a line)
    comm_of: dict[tuple, set[str]] = defaultdict(set)
    for e in events_of(case, KIND.nccl_init):
        if e.data.get("commId"):
            comm_of[(e.host, e.pid) if e.pid is not None else e.ref.path].add(str(e.data["commId"]))
            comm_of[e.ref.path].add(str(e.data["commId"]))
    by_version = {v: set().union(*(comm_of.get((e.host, e.pid) if e.pid is not None else e.ref.path, set()) for e in evs))
                  for v, evs in versions.items()}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = by_version[a] & by_version[b]
            if shared:
                return f"processes on {a} and {b} are members of communicator {sorted(shared)[0]}"
    return ""


def host_only_interface() -> re.Pattern | None:
    """Interface names that exist only on their host (loopback, container bridges, veth ends),
    as the sign net.host_only_interface lists them; None when it lists none."""
    names = registry().signals[SIGN.net_host_only_interface.id].params.get("interfaces", ())
    return re.compile(r"^(?:" + "|".join(names) + r")") if names else None


class HostOnlySocketInterface(Rule):
    """NCCL's bootstrap or socket transport using interfaces that exist only inside one host:
    container bridges and their veth ends, libvirt's bridge, loopback.  NCCL itself skips
    docker* and lo unless nothing else is up (src/misc/socket.cc: "Then look for anything else
    (but not docker or lo) ... Finally look for docker, then lo"), and never skips the others.
    A peer on another node cannot reach such an address: with ranks on two or more hosts it
    is the network setup (NCCL_SOCKET_IFNAME); on one host alone it only leans that way."""

    id = "host-only-interface"

    def findings(self, case, k, trace):
        local = host_only_interface()
        hits: list[tuple[Event, str]] = []
        for e in events_of(case, KIND.nccl_network) if local is not None else ():
            if e.data.get("network") not in ("Bootstrap", "Socket"):
                continue
            found = [d.split(":", 1)[0] for d in e.data.get("devices") or () if local.match(str(d))]
            if found:
                hits.append((e, found[0]))
        if not hits:
            return []
        hosts = {e.host for e in case.events if e.host and e.kind in _NCCL_KINDS}
        sign = SIGN.net_host_only_interface_multi_host if len(hosts) >= 2 else SIGN.net_host_only_interface
        iface = hits[0][1]
        summary = (f"NCCL's {hits[0][0].data.get('network')} interfaces include {iface} ({hits[0][0].ref.describe()}), "
                   "an interface that exists only on this host (container bridge, veth, libvirt bridge or loopback)"
                   + (f"; the job's NCCL lines come from {len(hosts)} hosts, which cannot reach it" if len(hosts) >= 2 else ""))
        trace.append(f"{self.id}: host-only interface {iface}; hosts seen: {len(hosts)}")
        return [sign_finding(k, sign, self.id, summary, [e for e, _ in hits[:4]], iface)]


class GlooHostOnlyRemote(Rule):
    """A gloo connect that failed to a peer address which an `ip addr` of the bundle puts on a
    host-local interface (container bridge, veth, libvirt bridge, loopback): the address the
    peer advertised exists only inside one host.  With the job's lines from two or more hosts
    the transport's interface choice is the fault (GLOO_SOCKET_IFNAME, /etc/hosts); with one
    host seen it only leans that way (ranks on one host do reach each other there)."""

    id = "gloo-host-only-remote"

    def findings(self, case, k, trace):
        local = host_only_interface()
        if local is None:
            return []
        bridged = {str(a).split("/", 1)[0]: (f.value.get("name"), f) for f in case.facts
                   if f.name == "net.interface" and isinstance(f.value, dict) and local.match(str(f.value.get("name") or ""))
                   for a in f.value.get("addresses") or ()}
        if not bridged:
            return []
        remote_text = re.compile(SIGN.net_gloo_remote_host_only_multi_host.params["remote"])
        hits = [(e, m.group("addr")) for e in case.events
                if e.kind in (KIND.msg_gloo_connect_failed, KIND.msg_gloo_connect_unreachable)
                for m in [remote_text.search(e.text or "")] if m and m.group("addr") in bridged]
        if not hits:
            return []
        e, addr = hits[0]
        iface, fact = bridged[addr]
        hosts = {x.host for x in case.events if x.host}
        sign = SIGN.net_gloo_remote_host_only_multi_host if len(hosts) >= 2 else SIGN.net_gloo_remote_host_only
        summary = (f"gloo failed to connect to the peer at {addr} ({e.ref.describe()}), an address of {iface} "
                   f"({fact.ref.describe()}), an interface that exists only inside its host"
                   + (f"; the job's lines come from {len(hosts)} hosts, which cannot reach it: set GLOO_SOCKET_IFNAME "
                      "to the interface the hosts share" if len(hosts) >= 2 else ""))
        trace.append(f"{self.id}: remote {addr} is on host-only {iface}; hosts seen: {len(hosts)}")
        return [sign_finding(k, sign, self.id, summary, [x for x, _ in hits[:4]], iface, extra_refs=(fact.ref,))]


class SilentCollectiveHang(Rule):
    """nccl-tests that set up its GPUs, printed no result and no error: it hung.

    With all GPUs in one process the traffic is intra-node peer-to-peer; GPUs under
    different PCIe host bridges (`nvidia-smi topo -m`: NODE/SYS) are where IOMMU/ACS
    redirection breaks P2P."""

    id = "silent-collective-hang"

    def findings(self, case, k, trace):
        header = events_of(case, KIND.msg_nccl_tests_header)
        devices = events_of(case, KIND.msg_nccl_tests_device)
        if not header or not devices:
            return []
        if events_of(case, KIND.msg_nccl_tests_result):
            return []
        if any(e.severity.value in ("error", "fatal") and e.kind not in (KIND.msg_libibverbs_missing, KIND.nccl_warn)
               for e in case.events):
            return []
        hosts = {e.data.get("node") for e in devices}
        split_roots = _gpus_across_host_bridges(case)
        if len(hosts) != 1:
            return []
        # A log that merely ends early is no P2P hang: want a sign that P2P was in play.
        p2p_lines = any(e.kind == KIND.nccl_transport and "P2P" in str(e.data.get("transport", "")) for e in case.events)
        sign = (SIGN.hang_nccltests_split_roots if split_roots else SIGN.hang_nccltests_p2p if p2p_lines
                else SIGN.hang_nccltests_silent)
        why = " across two PCIe root complexes" if split_roots else ""
        trace.append(f"{self.id}: nccl-tests on {len(devices)} GPUs of one host printed no result and no error{why}")
        return [sign_finding(k, sign, self.id,
                             f"nccl-tests initialised {len(devices)} GPUs of one node{why} and then produced no result and no error: a P2P hang",
                             header + devices, "hang")]

# `nvidia-smi topo -m` legend: NODE crosses PCIe host bridges within a NUMA node, SYS the
# SMP interconnect between NUMA nodes — traffic between such GPUs goes through the root
# complexes, where ACS/IOMMU redirection breaks P2P.
_ACROSS_HOST_BRIDGES = frozenset({"NODE", "SYS"})


def _gpus_across_host_bridges(case) -> bool:
    """Measured, not guessed from bus numbers: the topology matrix puts two GPUs of the
    node on different host bridges."""
    links = [f for f in case.facts if f.name == "gpu.topo_links" and isinstance(f.value, dict)]
    return any(str(v).strip() in _ACROSS_HOST_BRIDGES for f in links for v in f.value.values())


class NcclStoppedDuringInit(Rule):
    """NCCL on several GPUs of one host started and then nothing happened, with no error at
    all: the log stops before any communicator completed init, or the job's progress bar sat
    at 0% after init.  On one host that hang is peer-to-peer traffic (IOMMU/ACS) first.
    Weak on purpose: a pasted excerpt can stop early too."""

    id = "nccl-stopped-during-init"

    def findings(self, case, k, trace):
        nccl = events_of(case, _NCCL_KINDS)
        if not nccl:
            return []
        completed = [e for e in events_of(case, KIND.nccl_init) if e.data.get("phase") == "COMPLETE"]
        stalled = [e for e in events_of(case, KIND.msg_progress_bar) if str(e.data.get("pct")) == "0"
                   and (not completed or e.seq > max(c.seq for c in completed))]
        if completed and not stalled:
            return []
        noise = {(e.ref.path, e.ref.line) for e in case.events if e.kind == KIND.msg_libibverbs_missing}
        if any(e.severity.value in ("error", "fatal") for e in case.events):
            return []
        if any(e.kind == KIND.nccl_warn and (e.ref.path, e.ref.line) not in noise for e in nccl):
            return []
        hosts = {e.host for e in nccl if e.host}
        devices = {(e.pid, e.data.get("dev")) for e in nccl if e.pid is not None and e.data.get("dev") is not None}
        if len(hosts) != 1 or len({d for _, d in devices}) < 2:
            return []
        trace.append(f"{self.id}: {len(devices)} GPU processes on {next(iter(hosts))} stopped logging before init completed")
        what = ("the job's progress stayed at 0% after NCCL init" if completed else
                "the log stops before any communicator completed init")
        return [sign_finding(k, SIGN.hang_nccl_stopped_during_init, self.id,
                        f"NCCL on {len({d for _, d in devices})} GPUs of one host started, then {what}, with no error: "
                        "a hang, and on one host P2P traffic (IOMMU/ACS) is the leading suspect — confirm with "
                        "NCCL_P2P_DISABLE=1", nccl[:1] + nccl[-1:] + stalled[:1], "hang")]


class QuietPcieTopology(Rule):
    """No error anywhere, and the GPUs talk peer-to-peer over PCIe (`nvidia-smi topo -m`
    shows PIX/PXB/PHB/NODE/SYS between GPUs, no NVLink): the classic silent hang is P2P
    traffic broken by PCIe ACS or the IOMMU.  Weak on purpose: any error line outweighs it."""

    id = "quiet-pcie-topology"
    PCIE = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})

    def findings(self, case, k, trace):
        links = [f for f in case.facts if f.name == "gpu.topo_links" and isinstance(f.value, dict)]
        if not links or any(e.severity.value in ("error", "fatal") for e in case.events):
            return []
        kinds = {v for f in links for pair, v in f.value.items() if pair.startswith("GPU") and "-GPU" in pair}
        if not kinds or not kinds <= self.PCIE:
            return []
        crosses = bool(kinds & {"NODE", "SYS"})
        trace.append(f"{self.id}: no error lines; GPU pairs linked by {sorted(kinds)} only")
        sign = SIGN.hang_quiet_pcie_topology_cross_bridge if crosses else SIGN.hang_quiet_pcie_topology
        return [sign_finding(k, sign, self.id,
                        f"no error anywhere and the GPUs reach each other only over PCIe ({', '.join(sorted(kinds))}"
                        f"{', across host bridges' if crosses else ''}): a silent hang of P2P traffic (ACS/IOMMU) is the "
                        "likeliest reading; confirm with NCCL_P2P_DISABLE=1",
                        [], "topology", extra_refs=tuple(f.ref for f in links[:2]))]

class KernelRdmaFault(Rule):
    """The host's RDMA NIC driver (mlx5_core, ib_core ...) logged a fault, a link going down or
    a health syndrome during the job: a sign of the IB/RoCE path, weak alone (one port of
    many, or a link the job did not use), decisive beside NCCL's own transport errors."""

    id = "kernel-rdma-fault"

    def findings(self, case, k, trace):
        events = events_of(case, KIND.kernel_ib)
        if not events:
            return []
        devices = sorted({str(e.data.get("device") or "?") for e in events})
        first = " ".join(str(events[0].data.get("msg") or events[0].text).split())[:160]
        trace.append(f"{self.id}: {len(events)} RDMA driver fault line(s) on {', '.join(devices)}")
        return [sign_finding(k, SIGN.ib_kernel_fault, self.id,
                             f"the RDMA NIC driver reported trouble on {', '.join(devices)}: {first}"
                             + (f" (×{len(events)})" if len(events) > 1 else ""), events, "kernel-ib")]


class RefusedWhilePeerWaited(Rule):
    """A rank's connection to a peer's advertised address refused (retries exhausted) while
    another process of the job was still waiting for its own connections afterwards, and no
    process died.  gloo (and c10d) publish a pair's listening address only after the listener
    exists, so a refusal from a live, listening peer means that address is not where the peer
    listens as seen from this host: the network setup (the interface or address the backend
    chose, GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME unset, a host name resolving to a loopback
    address such as Debian's 127.0.1.1), not a dead peer.  The texts to read are the sign's params."""

    id = "refused-while-peer-waited"

    def findings(self, case, k, trace):
        params = SIGN.net_refused_while_peer_waited.params
        refused_text = re.compile(params["refused"])
        refused = [e for e in case.events if refused_text.search(e.text or "")]
        if not refused:
            return []
        stamped = [e for e in refused if e.when and e.when.at]
        if not stamped:
            return []
        at = min(e.when.at for e in stamped)
        waiting_text = re.compile(params["waiting"])
        refusers = {(e.ref.path, e.pid, e.rank) for e in refused}
        waited = [e for e in case.events if e.when and e.when.at and e.when.at > at
                  and waiting_text.search(e.text or "") and not refused_text.search(e.text or "")
                  and (e.ref.path, e.pid, e.rank) not in refusers
                  and (e.ref.path not in {p for p, _, _ in refusers} or e.pid is not None or e.rank is not None)]
        if not waited:
            return []
        if any(_fatal(e) for e in events_of(case, deaths("fatal_signal", "exit", "kernel_kill"))):
            trace.append(f"{self.id}: a process died: the refusal may be a dead peer's")
            return []
        remote = next((m.group("addr") for e in refused for m in [re.search(params["remote"], e.text or "")] if m), "")
        loopback = bool(remote) and re.match(params["loopback"], remote) is not None
        summary = (f"the connection to the peer at {remote or 'its advertised address'} was refused "
                   f"({stamped[0].ref.describe()}) while another process of the job was still waiting for its "
                   f"connections afterwards ({waited[0].ref.describe()}): the peer was alive and listening, "
                   "so the address it advertised is not reachable from here")
        if loopback:
            summary += (f"; {remote} is a loopback address -- the peer's host name resolves to loopback "
                        "(/etc/hosts), so other hosts cannot reach it: set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME "
                        "to the interface the hosts share")
        # The waiter is the refused peer itself only when the job has two processes (gloo's
        # 'rank=, size=' fields) or its own lines name the refused address as theirs (local=[...]):
        # in a larger mesh it may be waiting for the same dead peer.
        sizes = {int(m.group(1)) for e in refused for m in [re.search(params["size"], e.text or "")] if m}
        owner = bool(remote) and any(m.group("addr") == remote for e in waited
                                     for m in [re.search(params["local"], e.text or "")] if m)
        the_peer = sizes == {2} or owner
        if not the_peer:
            summary = summary.replace("the peer was alive and listening", "if that process is the refused peer, it was "
                                      "alive and listening") + ("; the job has more than two processes and nothing shows "
                                                                "the waiting one is the refused peer")
        trace.append(f"{self.id}: refused at {stamped[0].ref.describe()}, peer still waiting at {waited[0].ref.describe()}"
                     + (f", remote {remote} is loopback" if loopback else "")
                     + f"; the waiter is the refused peer: {the_peer} (size {sorted(sizes) or '?'}, owner {owner})")
        sign = SIGN.net_refused_while_peer_waited if the_peer else SIGN.net_refused_while_some_process_waited
        return [sign_finding(k, sign, self.id, summary, [stamped[0], waited[0]], "refused-live-peer")]


def _fatal(e: Event) -> bool:
    from postmortem.classify.rules.hang import _death

    return bool(_death(e))


class StoreServerWaited(Rule):
    """The rendezvous store's server waited for clients that never joined (TCPStore:
    'Timed out after N seconds waiting for clients. J/W clients joined.') while a client of
    the same job failed to connect to a store address: the server was up and listening, the
    client could not reach it -- the path between them (a firewall, a route, the address the
    client was given), not a dead or absent server.  The server's wait is a second observation,
    by another process, beside the client's own connect failure."""

    id = "store-server-waited"

    def findings(self, case, k, trace):
        params = SIGN.net_store_server_waited.params
        waited_text = re.compile(params["server_waited"])
        waited = [(e, m) for e in case.events for m in [waited_text.search(e.text or "")]
                  if m and int(m.group("joined")) < int(m.group("world"))]
        if not waited:
            return []
        client_text = re.compile(params["client_failed"])
        server_files = {e.ref.path for e, _ in waited}
        clients = [e for e in case.events if client_text.search(e.text or "")
                   and (e.ref.path not in server_files or e.host != waited[0][0].host)]
        e, m = waited[0]
        clients = [c for c in clients if _overlapped(e, int(m.group("seconds")), c, params)]
        if not clients:
            trace.append(f"{self.id}: the server's wait and the clients' attempts did not overlap in time")
            return []
        if any(_fatal(x) for x in events_of(case, deaths("fatal_signal", "exit", "kernel_kill"))):
            trace.append(f"{self.id}: a process died: the clients may be dead, not cut off")
            return []
        summary = (f"the store's server waited {m.group('seconds')} s and only {m.group('joined')}/{m.group('world')} "
                   f"clients joined ({e.ref.describe()}) while a client could not connect to it ({clients[0].ref.describe()}): "
                   "the server was listening, the path from the client to it was closed (a firewall, a route, a wrong address)")
        trace.append(f"{self.id}: server waited at {e.ref.describe()}, client failed at {clients[0].ref.describe()}")
        return [sign_finding(k, SIGN.net_store_server_waited, self.id, summary, [e, clients[0]], "store-unreached")]


def _overlapped(server: Event, waited_s: int, client: Event, params) -> bool:
    """The client's attempt and the server's wait overlapped.  Both lines must carry a time:
    without one, an earlier attempt's client failure could pair with a later launch's server
    wait (audit 5 L9)."""
    if not (server.when and server.when.at and client.when and client.when.at):
        return False
    m = re.search(params["client_timeout"], client.text or "")
    tried_s = int(m.group("ms")) / 1000 if m else 0.0
    return ((server.when.at - client.when.at).total_seconds() <= waited_s
            and (client.when.at - server.when.at).total_seconds() <= tried_s)
