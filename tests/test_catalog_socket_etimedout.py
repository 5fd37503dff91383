"""ETIMEDOUT in NCCL's socket subsystem (tools/catalogs/gen_nccl.py ERRNO_READINGS['socket']): the
kernel's own timers gave up on the peer's address (SYN retries, tcp_retries2, keepalive) -- a path that
stopped delivering, read specifically like gloo's ETIMEDOUT; other errnos of the same messages keep
their readings (ECONNRESET: a peer process that closed, the subsystem's weak reading)."""
from __future__ import annotations

from postmortem.knowledge import catalog as C


def test_a_connect_that_timed_out_reads_as_the_network():
    # fixtures/validation25/gh/together-b200-dsv3-512gpu-bootstrap-storage-fabric-hang-03 (an owner-written
    # post, rank 508's first error), its two wrapped lines joined as NCCL printed them
    m = C.match_nccl("socketPollConnect: connect to 7.247.226.174<42307> returned Connection timed out, "
                     "exceeded error retry count after 35 attempts")
    assert m and (m.cause, m.strength, m.detail) == ("nccl_network", "specific", "Connection timed out")


def test_a_refused_connect_stays_the_weak_reading():
    # near miss, real: an sglang server log in a public repository (the stored public-code index,
    # find_string id 33312097818): nobody listened at the peer's port -- the peer process not up yet or
    # gone as much as a wrong address (ERRNO_WEAK)
    m = C.match_nccl("tpgds-aihub0006:3996242:3996242 [2] misc/socket.cc:578 NCCL WARN socketPollConnect: connect to "
                     "10.82.101.249<54709> returned Connection refused, exceeded error retry count after 35 attempts")
    assert m and (m.cause, m.strength, m.detail) == ("nccl_network", "subsystem", "Connection refused")


def test_the_format_of_nccl_2_22_to_2_26_is_in_the_catalog():
    # v2.24.3-1 among gen_nccl.py's TAGS: src/misc/socket.cc '%s: connect returned %s, exceeded error retry
    # count (%d)' (2.22-2.26; 2.21 and 2.27 print 'connect to %s returned ...'). Real line: a public report's
    # NCCL 2.26.2 log (the stored public-code index, find_string id 6829418395)
    m = C.match_nccl("vae-bc5a469e-2296-0:10209:10243 [1] misc/socket.cc:544 NCCL WARN socketPollConnect: connect "
                     "returned Connection refused, exceeded error retry count (35)")
    assert m and (m.cause, m.strength, m.detail) == ("nccl_network", "subsystem", "Connection refused")
