"""How strongly NCCL's network-transport messages read (tools/catalogs/gen_nccl.py
NAMES_ONLY_THE_SUBSYSTEM, the async-event and completion-error TEXT_RULES).  NCCL prefixes every
message of its network transports with NET/IB or NET/Socket, benign notices as well as failures:
the prefix alone names the subsystem (weak); a completion error or a fatal async event of the
HCA reads specifically, in every format NCCL has printed it in."""
from __future__ import annotations

import json
from pathlib import Path

from postmortem.knowledge import catalog as C

ROOT = Path(__file__).resolve().parents[1]


def _entry(fmt: str) -> dict:
    data = json.loads((ROOT / "postmortem" / "knowledge" / "catalogs" / "nccl.json").read_text(encoding="utf-8"))
    (e,) = [e for e in data["entries"] if e["format"] == fmt]
    return e


def test_a_fatal_async_event_on_a_qp_reads_specifically():
    # NVIDIA/nccl#1919 (NCCL 2.25.1), the reporter's first error line
    m = C.match_nccl("node-0:139577:139678 [0] transport/net_ib.cc:154 NCCL WARN NET/IB : mlx5_1:1 async fatal event "
                     "on QP (0x7309dc3bb338): invalid request local work queue error")
    assert m and m.cause == "nccl_network" and m.strength == "specific"


def test_a_completion_error_in_the_status_format_reads_like_the_older_error_format():
    # NVIDIA/nccl#1710: the completion error as NCCL 2.21+ prints it ("with status=")
    m = C.match_nccl("node023:10214:10303 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer "
                     "10.1.3.201<33057> with status=9 opcode=0 len=0 vendor err 138 (Send) localGid ::ffff:10.206.1.23 "
                     "remoteGids::ffff:10.206.1.11")
    assert m and m.cause == "nccl_network" and m.strength == "specific"


def test_notices_that_only_carry_the_transport_prefix_are_weak():
    # src/transport/net_socket.cc (v2.30.7): printed, then the thread count is capped and the run goes on
    capped = _entry("NET/Socket : NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to %d")
    assert capped["cause"] == "nccl_network" and capped["strength"] == "subsystem"
    # src/transport/net_ib/common.cc (v2.30.7): port active, LID/SM change, client reregistration ...
    non_fatal = _entry("NET/IB : %s:%d Got non-fatal async event: %s(%d)")
    assert non_fatal["strength"] == "subsystem"
    fatal = _entry("NET/IB : %s:%d async fatal event: %s")
    assert fatal["strength"] == "specific"


def test_a_routine_async_event_in_the_old_one_format_is_no_fault():
    # audit 6 M13, vllm-project/vllm#5342 (NCCL <= 2.18 prints every HCA event as "Got async event : %s");
    # a RoCE GID table change is an address update, not a failure
    m = C.match_nccl("07d92dd514d4:142935:143254 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_3:1 Got async "
                     "event : GID table change")
    assert m and m.cause == "context" and m.strength != "specific"


def test_a_fatal_async_event_in_the_old_one_format_still_reads_specifically():
    # near miss: validation20 roce-mtu-mismatch-two-servers-nccl-2-20-lav-34 (the same format, a QP access error)
    m = C.match_nccl("ubuntu20-server-2:94639:94647 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async "
                     "event : local access violation work queue error")
    assert m and m.cause == "nccl_network" and m.strength == "specific"
