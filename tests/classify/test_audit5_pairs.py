"""Audit 5 M3 (fixer, round 6): one fault read twice counts once.  Each test uses a real
line (the fixture named beside it) and a near miss that must still claim or must not."""
from __future__ import annotations

from pathlib import Path

from postmortem import knowledge
from postmortem.classify import _independent_signs, run_rules
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
K = knowledge.load()

# Real UCX `Caught signal 7 (Bus error: nonexistent physical address)` blocks with libnccl frames.
_UCX_PIPEDREAM = FIXTURES / "corpus/shm-nccl-sigbus-ucx-06/bundle"               # msr-fiddle/pipedream#76
_UCX_HUGECTR = FIXTURES / "validation7/ucx-sigbus-ncclgroupend-hugectr-01/bundle"  # hugectr_backend#42
# Real gdb `bt`: SIGBUS in ncclShmOpen called from ncclProxyService (NVIDIA/JAX-Toolbox#183).
_GDB_SHMOPEN = FIXTURES / "validation/shm-sigbus-ncclshmopen-gdb-05/bundle"
_DF64 = FIXTURES / "system/shm64_df_h.txt"      # real Docker `df -h /dev/shm`: 64M, 48M used


def _bundle(tmp_path: Path, files: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    for name, text in files.items():
        (bundle / name).write_text(text, encoding="utf-8")
    return bundle


def _copy(case_dir: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in case_dir.iterdir() if p.is_file()}


def _shm(bundle: Path):
    case = analyze(bundle).case
    found = [f for f in run_rules(case, K, []) if f.cause == "shm_exhausted"]
    roots = [f for f in found if f.role == "root"] or found
    return roots, _independent_signs(roots)


def test_a_sigbus_inside_nccl_and_its_death_are_one_weak_sign():
    for case_dir in (_UCX_PIPEDREAM, _UCX_HUGECTR):
        roots, signs = _shm(case_dir)
        assert signs == ["sigbus.in_nccl_code"], signs
        assert all(f.strength == "weak" for f in roots)
        v = analyze(case_dir).verdict
        assert v.cause == "unknown" and "shm_exhausted" in v.summary


def test_the_same_sigbus_beside_a_measured_64m_dev_shm_claims(tmp_path):
    """Near miss: the measurement is another observation (of the machine), so it claims."""
    bundle = _bundle(tmp_path, {**_copy(_UCX_PIPEDREAM), "df_shm.txt": _DF64.read_text(encoding="utf-8")})
    _, signs = _shm(bundle)
    assert "sigbus.small_shm" in signs and "sigbus.in_nccl_code" in signs
    v = analyze(bundle).verdict
    assert v.cause == "shm_exhausted"      # two independent weak signs (audit 6 H2: the size is weak)
    assert any("2 independent weak signs" in t for t in v.trace), v.trace


def test_a_sigbus_whose_own_frame_is_nccl_shm_open_is_strong():
    roots, signs = _shm(_GDB_SHMOPEN)
    assert signs == ["sigbus.at_nccl_shm_segment"], signs     # the stack is read once, precisely
    assert roots[0].strength == "strong" and "ncclShmOpen" in roots[0].summary
    assert analyze(_GDB_SHMOPEN).verdict.cause == "shm_exhausted"


def test_ncclshmopen_as_a_caller_of_the_faulting_frame_is_not_the_fault_site(tmp_path):
    """Near miss (edited at test time): the real gdb bt with a libcuda frame inserted as frame #0,
    so ncclShmOpen is only on the way to the fault -- stays the weak 'somewhere in NCCL'."""
    lines = (_GDB_SHMOPEN / "gdb.txt").read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("#0 "))
    lines[at:at] = ["#0 0x00007f6b5e000010 in cuMemHostRegister_v2 () from /usr/lib/x86_64-linux-gnu/libcuda.so.1"]
    for i in range(at + 1, len(lines)):
        if lines[i].startswith("#"):
            n, rest = lines[i][1:].split(" ", 1)
            lines[i] = f"#{int(n) + 1} {rest}"
    roots, signs = _shm(_bundle(tmp_path, {"gdb.txt": "\n".join(lines) + "\n"}))
    assert signs == ["sigbus.in_nccl_code"] and all(f.strength == "weak" for f in roots)


# ---------------------------------------------------------------- the store's bind warnings and its listen error

# Real stderr of wenet-e2e/wekws#93: two `[W socket.cpp:401] ... failed to bind to ... (errno: 98 -
# Address already in use).` warnings, then `[E socket.cpp:435] ... failed to listen on any local network address.`
_WEKWS = FIXTURES / "validation21/wekws-second-torchrun-standalone-port-29400-in-use-03/bundle/stderr.txt"


def _port(tmp_path: Path, lines: list[str]):
    bundle = _bundle(tmp_path, {"stderr.txt": "\n".join(lines) + "\n"})
    case = analyze(bundle).case
    found = [f for f in run_rules(case, K, []) if f.cause == "port_in_use"]
    return found, _independent_signs(found), analyze(bundle).verdict


def _wekws() -> tuple[list[str], str]:
    lines = _WEKWS.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if "failed to bind to" in line], next(line for line in lines if "listen on any" in line)


def test_bind_warnings_with_eaddrinuse_before_the_listen_error_are_one_strong_sign(tmp_path):
    from postmortem.knowledge.registry import SIGN
    found, signs, v = _port(tmp_path, _WEKWS.read_text(encoding="utf-8").splitlines())
    assert signs == ["store.port_taken"], signs           # three readings of one failure: one sign
    assert v.cause == "port_in_use" and v.confidence == SIGN.store_port_taken.weight  # and one support


def test_the_listen_error_alone_is_a_weak_sign(tmp_path):
    """Near miss: the error line without the warnings (whose errno says why) does not claim."""
    _, error = _wekws()
    found, signs, v = _port(tmp_path, [error])
    assert found and all(f.strength == "weak" for f in found) and v.cause == "unknown"


def test_bind_warnings_after_the_error_or_alone_are_not_its_cause(tmp_path):
    """Near miss: the warnings alone (another address may have bound), and the warnings after the
    error (another attempt's) -- neither is the strong combination; the readings stay one weak sign."""
    binds, error = _wekws()
    for lines in (binds, [error, *binds]):
        found, signs, v = _port(tmp_path / str(len(lines)), lines)
        assert "store.port_taken" not in signs and len(signs) == 1, signs
        assert v.cause == "unknown"


# ---------------------------------------------------------------- L2: a loss count needs its packets counter

_JUMBO_IP = FIXTURES / "validation21/lab3-jumbo-mtu-blackhole/bundle/ip_link.txt"   # real lab `ip -s link`


def _eth0_counters() -> dict:
    case = analyze(_JUMBO_IP).case
    return dict(next(f.value for f in case.facts if isinstance(f.value, dict) and f.value.get("name") == "eth0"
                     and f.value.get("counters", {}).get("tx_dropped"))["counters"])


def test_losses_among_the_frames_of_their_direction_are_counted():
    from postmortem.classify.rules.interfaces import _losses
    counters = _eth0_counters()                      # TX: 51 packets, 84 dropped (the MTU black hole)
    assert _losses({"counters": counters}) == {"tx_dropped": 84}


def test_a_loss_count_without_its_packets_counter_is_not_counted():
    """Near miss (the same real counters, tx_packets removed at test time): no rate, no sign."""
    from postmortem.classify.rules.interfaces import _losses
    counters = _eth0_counters()
    del counters["tx_packets"]
    assert _losses({"counters": counters}) == {}
