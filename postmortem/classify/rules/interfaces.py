"""Comms family: the state of the host's network interfaces as `ip link` / `ip addr` /
`ip -s link` printed it (parsers/iproute.py), read beside the job's collective timeouts.

A network fault that never reaches NCCL's or gloo's own error paths (a switch port going
down, frames dropped on the way) shows in the job only as collectives that time out on every
rank.  The interface the traffic used says why: no carrier, or packets dropped.
"""
from __future__ import annotations

import re

from postmortem.classify.rules.base import Rule, events_of, sign_finding
from postmortem.classify.rules.config import TIMEOUT_KINDS
from postmortem.knowledge.registry import KIND, LIMIT, SIGN, registry
from postmortem.model import Case, Fact
from postmortem.parsers.iproute import FACT

# iproute2 print_link_stats column names (ip -s link, "RX:"/"TX:" rows) whose non-zero value
# says the interface lost traffic.  RX "dropped" is left out: the kernel counts frames for
# protocols nobody listens to there, on healthy hosts too.
_LOSS_COUNTERS = ("tx_dropped", "tx_errors", "rx_errors", "tx_carrier")
# `ip -br` operational states of a link that is down (RFC 2863 ifOperStatus as iproute2 prints it)
_DOWN_STATES = frozenset({"DOWN", "LOWERLAYERDOWN"})


def _host_local(name: str) -> bool:
    """Loopback, container bridges and veth ends: not the path between nodes."""
    names = registry().signals[SIGN.net_host_only_interface.id].params.get("interfaces", ())
    return bool(names) and re.match(r"^(?:" + "|".join(names) + r")", name) is not None


def _down(info: dict) -> bool:
    """Configured to carry traffic (administratively UP, or holding an address) and without a link."""
    configured = info.get("admin_up") or (info.get("admin_up") is None and info.get("addresses"))
    return bool(configured) and (info.get("carrier") is False or info.get("state") in _DOWN_STATES)


# the packets counter each loss counter is a share of (lost frames are not in it)
_PACKETS_OF = {"tx_dropped": "tx_packets", "tx_errors": "tx_packets", "tx_carrier": "tx_packets", "rx_errors": "rx_packets"}


def _losses(info: dict) -> dict[str, int]:
    """Loss counters at or above LIMIT.interface_loss_pct of the frames of their direction:
    the counters run since boot, so a handful of losses among millions of frames is no fault."""
    counters = info.get("counters") or {}
    out = {}
    for c in _LOSS_COUNTERS:
        lost, sent = counters.get(c), counters.get(_PACKETS_OF[c])
        if not isinstance(lost, int) or lost <= 0:
            continue
        if isinstance(sent, int) and 100 * lost / (sent + lost) < LIMIT.interface_loss_pct:
            continue
        out[c] = lost
    return out


def job_interfaces(case: Case) -> set[str]:
    """The interfaces the job's traffic used, as its own lines and settings name them: NCCL's
    'Bootstrap : Using [0]eth0:10.0.0.1<0>' / 'NET/Socket : Using ...' and NCCL_SOCKET_IFNAME /
    GLOO_SOCKET_IFNAME (a list of names or prefixes; '^' excludes, '=' asks an exact name)."""
    names: set[str] = set()
    for e in events_of(case, KIND.nccl_network):
        if e.data.get("network") in ("Bootstrap", "Socket"):
            names.update(str(d).split(":", 1)[0] for d in e.data.get("devices") or () if d)
    for f in case.facts:
        if f.name in ("env.NCCL_SOCKET_IFNAME", "env.GLOO_SOCKET_IFNAME") and not str(f.value).startswith("^"):
            names.update(n.strip().lstrip("=") for n in str(f.value).split(",") if n.strip())
    return {n for n in names if n}


def _named(iface: str, names: set[str]) -> bool:
    """NCCL_SOCKET_IFNAME entries are prefixes unless '='; a device name printed is exact."""
    base = iface.split("@", 1)[0]
    return any(base == n or base.startswith(n) for n in names)


class InterfaceFaults(Rule):
    """A non-local interface without carrier, or one whose counters show lost frames; with
    collective timeouts beside it, the timeouts are its fallout — cited as what it explains, not
    counted as an independent sign (they are in every hang)."""

    id = "interface-faults"

    def findings(self, case, k, trace):
        interfaces = [f for f in case.facts if f.name == FACT and isinstance(f.value, dict)
                      and not _host_local(str(f.value.get("name", "")))]
        used = job_interfaces(case)
        if used:
            others = [f for f in interfaces if not _named(str(f.value.get("name", "")), used)]
            if others:
                trace.append(f"{self.id}: not the job's interfaces ({', '.join(sorted(used))}): "
                             + ", ".join(sorted({str(f.value.get('name')) for f in others})))
            interfaces = [f for f in interfaces if f not in others]
        down = [f for f in interfaces if _down(f.value)]
        lossy = [(f, _losses(f.value)) for f in interfaces]
        lossy = [(f, loss) for f, loss in lossy if loss]
        if not down and not lossy:
            return []
        timeouts = events_of(case, TIMEOUT_KINDS)
        parts, signs, refs = [], [], []
        if down:
            f = down[0]
            parts.append(f"interface {f.value['name']} had no link ({_state(f)}, {f.ref.describe()})")
            signs.append(SIGN.net_link_down)
            refs += [d.ref for d in down[:2]]
        if lossy:
            f, loss = lossy[0]
            parts.append(f"interface {f.value['name']} lost frames ("
                         + ", ".join(f"{c} {n}" for c, n in loss.items())
                         + (f", mtu {f.value['mtu']}" if f.value.get("mtu") else "") + f", {f.ref.describe()})")
            signs.append(SIGN.net_interface_losses)
            refs += [x.ref for x, _ in lossy[:2]]
        if timeouts:
            parts.append(f"{len(timeouts)} collective timeout(s) waited on that traffic "
                         f"(first {timeouts[0].ref.describe()})")
            # the timeouts are the symptom being explained, present in every hang: cited, not
            # counted as a second sign (audit 4 H2)
        if not used and len(signs) > 1:
            # Nothing says which interface the job used: however many faults, one lean.
            parts.append("the bundle does not say which interface the job used (NCCL's 'Using' lines, NCCL_SOCKET_IFNAME)")
            signs = signs[:1]
        trace.append(f"{self.id}: " + "; ".join(parts))
        return [sign_finding(k, signs[0], self.id, "; ".join(parts), timeouts[:2], "interface",
                             extra_refs=tuple(dict.fromkeys(refs)), combined=tuple(signs[1:]))]


def _state(f: Fact) -> str:
    flags = f.value.get("flags") or ()
    return ("NO-CARRIER" if "NO-CARRIER" in flags else "") or f"state {f.value.get('state') or '?'}"
