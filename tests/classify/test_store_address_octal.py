"""The store's host written as a zero-padded dotted quad, which glibc's getaddrinfo reads as octal
(signals.toml net.store_address_octal).  Real lines: fixtures/validation30/lab-a/
lab12-hostfile-zero-padded-master-ip-parsed-as-octal (both nodes' torchrun consoles)."""
from __future__ import annotations

import platform
import socket
from pathlib import Path

import pytest

from postmortem.classify.rules.peer_path import _as_glibc_reads
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
_CASE = ROOT / "fixtures/validation30/lab-a/lab12-hostfile-zero-padded-master-ip-parsed-as-octal/bundle"


def _verdict(tmp_path: Path, replace: tuple[str, str] | None = None):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for p in _CASE.iterdir():
        text = p.read_text(encoding="utf-8")
        (bundle / p.name).write_text(text.replace(*replace) if replace else text, encoding="utf-8")
    return analyze(bundle).verdict


def test_a_zero_padded_store_address_is_read_as_the_address_glibc_dials(tmp_path):
    v = _verdict(tmp_path)
    assert any(t.startswith("store-address-octal:") and "dialed 8.112.0.1" in t for t in v.trace), v.trace
    assert (v.category.value, v.cause) == ("comms", "nccl_network"), v.trace
    assert any("2 independent weak signs" in t and "net.store_address_octal" in t for t in v.trace), v.trace


def test_the_same_failure_with_the_address_written_plainly_only_leans(tmp_path):
    """Near miss: the same consoles with the store's address unpadded: one weak sign, no claim."""
    v = _verdict(tmp_path, ("010.112.000.001", "10.112.0.1"))
    assert not any(t.startswith("store-address-octal:") for t in v.trace), v.trace
    assert v.cause == "unknown", v.trace


@pytest.mark.parametrize("written, dialed", [
    ("010.112.000.001", "8.112.0.1"),   # the fixture's address
    ("10.112.0.1", None),               # decimal: as written
    ("001.002.003.004", None),          # padded, but parts below 8 read alike in both bases
    ("08.1.2.3", None),                 # not octal: getaddrinfo fails, nothing is dialed
    ("10.0.0.0377", "10.0.0.255"),      # any length of padding
    ("10.0.0.0400", None),              # 256: no address, getaddrinfo fails
])
def test_the_reading_is_glibcs(written, dialed):
    assert _as_glibc_reads(written) == dialed


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the resolver the rule describes is glibc's")
def test_the_reading_matches_this_hosts_getaddrinfo():
    """The rule's arithmetic against the resolver it describes (None: the decimal reading)."""
    for written in ("010.112.000.001", "001.002.003.004", "0377.0.0.010"):
        got = socket.getaddrinfo(written, 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
        assert (_as_glibc_reads(written) or ".".join(str(int(p)) for p in written.split("."))) == got


_CONNECTED = ROOT / "fixtures/lab/store_octal_connected/bundle"


def test_per_try_lines_of_a_connect_that_reached_a_host_are_not_read():
    """Audit 13 L1, near miss from a real run (fixtures/lab/store_octal_connected/make.sh): the store's
    host written 0177.000.000.001 (127.0.0.1, where the store is); the first tries connect, fail in
    validation ('recvValue failed on SocketImpl(...)', 'Connection reset by peer') and are retried
    ('failed to connect/validate to host 0177.000.000.001:P - retrying'), then the connect succeeds."""
    text = (_CONNECTED / "client.log").read_text(encoding="utf-8")
    assert "to host 0177.000.000.001:" in text and "client connected" in text
    v = analyze(_CONNECTED).verdict
    assert not any(t.startswith("store-address-octal:") for t in v.trace), v.trace
