"""NCCL's 'socketFinalizeAccept: wrong magic' is a stray client, not a failure: misc/socket.cc
(v2.16.5-v2.24.3) closes a connection whose first 8 bytes are not the communicator's magic and
accepts again ('Ignore spurious connection and accept again', return ncclSuccess) -- a port
scanner or an HTTP probe on NCCL's listening port (the real line: an HTTP 'GET /met' read as the
magic, fixtures/validation27/gh/nccl-proxy-listen-port-hit-by-http-probe-wrong-magic-hang-07).
The catalog read it as a failed socket connection (nccl_network, specific); 'wrong type' right
after a good magic does return ncclInternalError and stays a failure."""
from __future__ import annotations

from pathlib import Path

from postmortem.knowledge import catalog

ROOT = Path(__file__).resolve().parents[2]
_LOG = ROOT / "fixtures/validation27/gh/nccl-proxy-listen-port-hit-by-http-probe-wrong-magic-hang-07/bundle/nccl.log"


def _warn_text() -> str:
    line = next(ln for ln in _LOG.read_text(encoding="utf-8").splitlines() if "wrong magic" in ln)
    return line[line.index("misc/socket.cc"):]


def test_a_wrong_magic_is_a_stray_connection_nccl_ignores():
    text = _warn_text()
    assert text.startswith("misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong magic 74656d2f20544547")
    m = catalog.match_nccl(text)
    assert m is not None and m.cause == "context", m


def test_a_wrong_type_after_the_magic_is_still_a_failure():
    """Near miss: the same function's 'wrong type' (the magic matched, the socket type did not)
    closes the socket with ncclInternalError."""
    m = catalog.match_nccl("misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 2 != 3")
    assert m is not None and m.cause == "nccl_network", m
