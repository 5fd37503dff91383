"""c10d's connect failure with errno 99 (EADDRNOTAVAIL) reads as the connecting host's network
state (tools/catalogs/gen_pytorch.py ERRNO_READINGS): connect(2) returns it when the host has no
ephemeral port left to give the socket (Linux inet_hash_connect) or no source address for the
peer's family -- never because of the peer.  A refused connect (errno 111: nothing listening yet,
or a dead peer) keeps the template's context reading."""
from __future__ import annotations

from postmortem.knowledge import catalog as C


def test_no_local_address_or_port_on_connect_is_the_hosts_network():
    # fixtures/validation23 lab-a/lab5-node1-reserved-ports-ephemeral/bundle/node1.log line 8 (torch 2.13.0;
    # ip_local_reserved_ports covered all but 3 ports of the ephemeral range)
    m = C.match_message("[W1201 21:52:48.282611072 socket.cpp:764] [c10d] The client socket has failed to connect to "
                        "[6ba0:0:6ddc:0:558b::]:26844 (errno: 99 - Cannot assign requested address).")
    assert m and m.entry.id == "pt.store_connect_failed"
    # one attempt c10d retries: weak whatever its errno (audit 11 H1); the case's connect then timed out,
    # and rules/catalog.py reads the attempts before that final failure specifically
    assert m.cause == "nccl_network" and m.strength == "subsystem"


def test_a_refused_connect_keeps_its_context_reading():
    # composed at test time from the upstream template (c10d socket.cpp "The client socket has failed to
    # connect to {} {}."), not a captured line: torch 2.13 retries a refused connect without this warning
    m = C.match_message("[W1201 19:00:01.000000000 socket.cpp:764] [c10d] The client socket has failed to connect to "
                        "[localhost]:29500 (errno: 111 - Connection refused).")
    assert m and m.entry.id == "pt.store_connect_failed" and m.cause == "context"
