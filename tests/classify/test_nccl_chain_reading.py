"""An NCCL error chain ('misc/socket.cc:567 -> 2' ... 'bootstrap.cc:270 -> 2') from a process that
printed no WARN: ncclSystemError is read by the call that failed (gen_nccl.py RESULT_READINGS
'errno'), and with no WARN naming the call the file the chain starts in says which subsystem's
system call failed -- the socket code's, weakly, as match_nccl reads a socket WARN without an errno.
NCCL 2.18.3-2.18.5 src/misc/socket.cc:567 is socketProgressState's NCCLCHECK(socketPollConnect),
whose SO_ERROR branch other than refused/timed out returns ncclSystemError without a WARN.
Real lines: fixtures/validation23/gh/nccl-dgx-a100-fsdp-containers-bootstrap-ipoib-socket-ifname-05
(NVIDIA/nccl issue: the bootstrap's connect failed over the IPoIB interface)."""
from __future__ import annotations

from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_DGX = ROOT / "fixtures/validation23/gh/nccl-dgx-a100-fsdp-containers-bootstrap-ipoib-socket-ifname-05/bundle/nccl.log"


def _verdict(tmp_path: Path, text: str):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "nccl.log").write_text(text, encoding="utf-8")
    return analyze(bundle).verdict


def _leaning(v) -> tuple[str, str]:
    alt = v.alternatives[0] if v.alternatives else None
    return (alt.cause, alt.signal or alt.rule) if alt else ("", "")


def test_a_system_error_chain_from_the_socket_code_leans_to_the_network(tmp_path):
    text = _DGX.read_text(encoding="utf-8")
    assert "NCCL WARN" not in text   # the case the reading is for: no WARN names the call
    v = _verdict(tmp_path, text)
    assert v.cause == "unknown"      # one weak reading never claims
    assert _leaning(v) == ("nccl_network", "catalog.ncclresult.ncclSystemError"), _leaning(v)


def test_a_process_that_printed_a_warn_is_read_by_its_warn(tmp_path):
    """Near miss: the same chains beside a WARN of the same process are that WARN's failure; the
    chain adds no second sign (a context WARN here: nothing is read at all)."""
    warn = "dso-s1-r1-a100-03:2330:2658 [2] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n" \
           "dso-s1-r1-a100-03:2330:2670 [2] graph/xml.h:85 NCCL WARN Attribute busid of node nic not found\n"
    text = _DGX.read_text(encoding="utf-8").replace("dso-s1-r1-a100-03:2334:2665 [6] NCCL INFO misc/socket.cc:567 -> 2\n", "")
    v = _verdict(tmp_path, warn + text)
    assert _leaning(v)[1] != "catalog.ncclresult.ncclSystemError", _leaning(v)


def test_other_codes_and_context_files_are_not_read(tmp_path):
    """Near misses: ncclRemoteError (6) has its own reading on the exception line, not the chain's;
    a system error first returned by a file of no reading (init.cc) says nothing of a cause."""
    lines = ("dso-s1-r1-a100-03:2330:2658 [2] NCCL INFO misc/socket.cc:567 -> 6\n"
             "dso-s1-r1-a100-03:2330:2658 [2] NCCL INFO bootstrap.cc:270 -> 6\n"
             "dso-s1-r1-a100-03:2331:2659 [3] NCCL INFO init.cc:1201 -> 2\n")
    v = _verdict(tmp_path, lines)
    assert _leaning(v)[1] != "catalog.ncclresult.ncclSystemError", _leaning(v)
    assert v.cause == "unknown"
