"""Audit 5 findings (over-claims of the verdict engine), each with the real line that was
over-claimed and the near miss that must still claim.  Real lines come from the fixtures named
beside them; edits made at test time are marked as such."""
from __future__ import annotations

from pathlib import Path

import pytest

from postmortem import knowledge
from postmortem.classify import rules
from postmortem.knowledge import registry
from postmortem.run import analyze

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
K = knowledge.load()


def _bundle(tmp_path: Path, files: dict[str, str]):
    bundle = tmp_path / "bundle"
    bundle.mkdir(parents=True)
    for name, text in files.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(text, encoding="utf-8")
    return analyze(bundle)


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setitem(registry.LIMIT.__dict__["_by_name"], "weak_sign_alone_claims", 0.0)


# ---------------------------------------------------------------- H1: ENOMEM under a memlock limit

_MLOCK_LAB = FIXTURES / "bundles/lab-mlock-ctypes-enomem/bundle"           # real: fixtures/lab/mlock_enomem.sh
_LIMITS = FIXTURES / "validation22/lab4-mlock-cache-memlock/bundle"         # real `ulimit -a` (-l 8192), free
_EFA = FIXTURES / "validation22/efa-libfabric-enomem-post-rx-buffers-memlock-65536-07/bundle/stderr.txt"
_DMABUF = FIXTURES / "validation16/nccl-buffsize-dmabuf-enomem-vllm-04/bundle/nccl.log"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_enomem_of_mlock_under_a_small_limit_is_the_memlock_limit(tmp_path):
    # Near miss that must claim: the program's own mlock() wrapper raised ENOMEM under 8 MiB.
    v = analyze(_MLOCK_LAB).verdict
    assert (v.category.value, v.cause) == ("config", "memlock_limit"), v.trace
    assert set(v.root.signs) == {"limits.enomem_in_locking_call", "limits.memlock_beside_enomem"}


def test_enomem_of_fork_is_never_the_memlock_limit(tmp_path):
    # The DataLoader fork failure (traceback lines of facebookresearch/maskrcnn-benchmark#599 as
    # the audit's probe g1 holds them) beside the lab's real ulimit (-l 8192) and free output.
    tb = ("Traceback (most recent call last):\n"
          '  File "/home/u/miniconda3/lib/python3.6/multiprocessing/process.py", line 105, in start\n'
          "    self._popen = self._Popen(self)\n"
          '  File "/home/u/miniconda3/lib/python3.6/multiprocessing/popen_fork.py", line 66, in _launch\n'
          "    self.pid = os.fork()\n"
          "OSError: [Errno 12] Cannot allocate memory\n")
    a = _bundle(tmp_path, {"train.log": tb, "ulimit.txt": _read(_LIMITS / "ulimit.txt"),
                           "free.txt": _read(_LIMITS / "free.txt")})
    assert a.verdict.cause != "memlock_limit", a.verdict.trace
    assert rules.EnomemUnderMemlock().findings(a.case, K, []) == []


def test_enomem_raised_without_naming_a_locking_call_is_not_read_as_the_limit():
    # lab4-mlock-cache-memlock: the job's own code raised ENOMEM; its lines never say which call.
    a = analyze(_LIMITS)
    assert rules.EnomemUnderMemlock().findings(a.case, K, []) == []


def test_a_dmabuf_registration_enomem_is_not_the_memlock_limit(tmp_path):
    # umem_dmabuf.c charges no RLIMIT_MEMLOCK: NCCL's ibv_reg_dmabuf_mr ENOMEM beside an ordinary ulimit.
    v = _bundle(tmp_path, {"nccl.log": _read(_DMABUF), "ulimit.txt": _read(_LIMITS / "ulimit.txt"),
                           "free.txt": _read(_LIMITS / "free.txt")}).verdict
    assert v.cause != "memlock_limit" and all(f.cause != "memlock_limit" for f in v.alternatives), v.trace
    assert not any(m.id == "ib_memlock" and m.regex.search(_read(_DMABUF)) for m in K.messages)


def test_ibv_reg_mr_enomem_still_reads_as_the_memlock_limit(tmp_path):
    # Near miss: the same WARN for ibv_reg_mr (umem.c charges pinned pages to RLIMIT_MEMLOCK).
    line = _read(_DMABUF).replace("ibv_reg_dmabuf_mr", "ibv_reg_mr")   # edited at test time
    v = _bundle(tmp_path, {"nccl.log": line}).verdict
    assert v.cause == "memlock_limit", v.trace


def test_efa_enomem_beside_a_large_memlock_limit_is_not_claimed(tmp_path):
    # The audit's probe g8: the public EFA stderr + `ulimit -l` of 64 GiB (edited at test time).
    ulimit = _read(_LIMITS / "ulimit.txt").replace("(kbytes, -l) 8192", "(kbytes, -l) 67108864")
    v = _bundle(tmp_path, {"stderr.txt": _read(_EFA), "ulimit.txt": ulimit}).verdict
    assert v.cause == "unknown", v.trace


def test_efa_enomem_beside_the_default_memlock_limit_is_claimed(tmp_path):
    v = _bundle(tmp_path, {"stderr.txt": _read(_EFA), "ulimit.txt": _read(_LIMITS / "ulimit.txt")}).verdict
    assert v.cause == "memlock_limit", v.trace


def test_memory_plentiful_is_no_sign_of_the_memlock_limit_and_needs_a_kernel_log(tmp_path):
    assert "mem.enomem_with_memory_free" not in registry.registry().signals
    # Without a kernel log "no OOM kill seen" proves nothing: no counter against host_oom.
    from postmortem.classify.counter_evidence import has_kernel_log, memory_plentiful
    a = analyze(_LIMITS)   # 87% of memory available, but its dmesg.txt is empty
    assert not has_kernel_log(a.case) and memory_plentiful(a.case) is None
    assert has_kernel_log(analyze(_MLOCK_LAB).case)   # the collector's dmesg, read as a kernel log


# ---------------------------------------------------------------- H4: where the exception was raised

def test_an_exception_raised_in_the_standard_library_is_one_weak_sign(strict):
    # lab-readonly-shm-loader: OSError [Errno 30] raised in multiprocessing/synchronize.py, reached
    # from the job's script: the raise site is not the job's, and the traceback is no second sign.
    case = analyze(FIXTURES / "bundles/lab-readonly-shm-loader/bundle").case
    (f,) = [f for f in rules.AppError().findings(case, K, []) if "Errno 30" in f.summary]
    assert f.signal == "app.exception" and f.strength == "weak" and not f.signs


def test_an_exception_raised_in_the_job_s_own_code_is_one_strong_sign(strict):
    # Near miss that must claim: IndexError raised in the job's label_of (rank_crash.py).
    v = analyze(FIXTURES / "bundles/lab-torchrun-app-exception/bundle").verdict
    assert v.cause == "app_error" and v.root.signal == "app.exception_in_own_code", v.trace
    assert v.root.strength == "strong" and "app.exception" not in (v.root.signs or ())


def test_a_segfault_in_the_job_s_extension_is_one_strong_sign():
    v = analyze(FIXTURES / "validation21/lab3-ctypes-gather-segv-core/bundle").verdict
    assert v.cause == "app_error" and v.root.signal == "app.native_frames" and not v.root.signs, v.trace


def test_a_segfault_whose_fault_site_is_the_runtime_stays_weak():
    # The same gdb frames with the fault site moved into libcuda (edited at test time).
    from postmortem.classify.rules.app import _fault_site_is_own
    from postmortem.model import Frame
    frames = (Frame(note="signal handler called"), Frame(function="__memcpy_avx512_unaligned_erms",
              file="../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S"),
              Frame(function="cuLaunchKernel", module="/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
              Frame(function="gather_rows", module="/w/ext/fastgather.so"))
    assert not _fault_site_is_own(frames, ("/w/ext/",))
    # the job's own module: under a folder of the job (audit 6 M9: own by inclusion, not by exclusion)
    assert _fault_site_is_own(frames[:2] + frames[3:], ("/w/ext/",))
    assert not _fault_site_is_own(frames[:2] + frames[3:])   # no folder of the job known: not claimed as its own


def test_glibc_s_own_assertion_is_not_the_job_s_assert():
    # L8: gdb names no module for glibc frames it has debug info for (probe g7's frame #10).
    from postmortem.classify.rules.app import _assert_caller
    from postmortem.model import Frame, Ref, Stack
    frames = (Frame(function="__GI_abort", file="./stdlib/abort.c"),
              Frame(function="__assert_fail_base", file="./assert/assert.c"),
              Frame(function="__assert_fail", file="./assert/assert.c"),
              Frame(function="___pthread_mutex_lock", file="./nptl/pthread_mutex_lock.c", line=94),
              Frame(function="segment_sum", file="/w/ext/segsum.c", line=14))
    stack = Stack(frames=frames, origin="gdb", ref=Ref(path="gdb_bt.txt", line=1, text=""))
    assert _assert_caller(stack) is None
    own = Stack(frames=frames[:3] + frames[4:], origin="gdb", ref=Ref(path="gdb_bt.txt", line=1, text=""))
    assert _assert_caller(own).function == "segment_sum"


# ---------------------------------------------------------------- M4: two NCCL versions in a bundle

_ACCEL = FIXTURES / "validation21/accelerate-multinode-docker-bridge-nccl-unhandled-system-error-08/bundle/stderr.txt"
_GENOA = FIXTURES / "validation13/nccl-too-old-rtx5090-maxsharedmem-01/bundle/nccl-tests.log"
_MISMATCH_CASE = FIXTURES / "corpus/nccl-version-mismatch-01/bundle"


def test_two_versions_from_two_unrelated_runs_are_a_weak_sign(tmp_path, strict):
    # The audit's probe g5: accelerate#2107's stderr (NCCL 2.18.1) beside another run's banner (2.25.1).
    banner = next(line for line in _read(_GENOA).splitlines() if "NCCL version 2.25.1" in line)
    a = _bundle(tmp_path, {"run1_stderr.txt": _read(_ACCEL), "run2_after_upgrade.log": banner + "\n"})
    (f,) = rules.NcclVersionMismatch().findings(a.case, K, [])
    assert f.strength == "weak" and f.signal == "nccl.versions_in_bundle"
    assert a.verdict.cause != "nccl_version_mismatch", a.verdict.trace


def test_two_versions_in_one_communicator_are_strong(tmp_path):
    # Near miss that must claim: nccl-version-mismatch-01's two node logs, node 1's edited at test
    # time to carry the 'Init START' line of the communicator node 2's line names (the same commId).
    files = {p.name: _read(p) for p in _MISMATCH_CASE.iterdir()}
    init = next(line for line in files["nccl_instance-8g-96c-2.log"].splitlines() if "Init START" in line)
    files["nccl_instance-8g-96c-1.log"] += (init.replace("instance-8g-96c-2:525781:525957", "instance-8g-96c-1:525765:525972")
                                            .replace("rank 0 nranks 1", "rank 1 nranks 2") + "\n")
    a = _bundle(tmp_path, files)
    (f,) = rules.NcclVersionMismatch().findings(a.case, K, [])
    assert f.strength == "strong" and "communicator 0x795b968dc454cfee" in f.summary, f.summary
    assert a.verdict.cause == "nccl_version_mismatch", a.verdict.trace


# ---------------------------------------------------------------- M1/M2/L1: interfaces

_JUMBO = FIXTURES / "validation21/lab3-jumbo-mtu-blackhole/bundle"     # real lab: eth0 UP, tx_dropped 84 of 135
_PORT_DOWN = FIXTURES / "validation21/lab3-switch-port-down/bundle"    # real lab: eth0 NO-CARRIER, tx_dropped 33
_ROCE = FIXTURES / "corpus/multi-roce-hca-enodev-08/bundle/nccl.log"   # NVIDIA/nccl#799: Bootstrap eth1, NET/IB mlx5_3 RoCE
_NOCARRIER = FIXTURES / "system/ip_addr_nocarrier.txt"                 # real ip addr: pma NO-CARRIER with an address
_USING = ("jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO Bootstrap : Using [0]{0}:10.2.3.32<0>\n"
          "jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO NET/Socket : Using [0]{0}:10.2.3.32<0>\n")
# (fixtures/corpus/nccl-p2p-iommu-01/bundle/nccl.log's two lines; the interface name put in at test time)


def _interface_finding(v):
    return next((f for f in (v.root, *v.alternatives, *v.symptoms) if f is not None and f.rule == "interface-faults"), None)


def test_no_carrier_and_its_dropped_frames_are_one_sign(tmp_path):
    # lab3-switch-port-down: eth0 without carrier, and the 33 frames it dropped for want of one.
    files = {"node1_ip.txt": _read(_PORT_DOWN / "node1_ip.txt"), "node0.log": _read(_PORT_DOWN / "node0.log"),
             "nccl.log": _USING.format("eth0")}
    f = _interface_finding(_bundle(tmp_path, files).verdict)
    assert f is not None and f.signal == "net.link_down" and not f.signs, f
    assert "tx_dropped 33" in f.summary


def test_losses_on_another_interface_the_job_uses_are_a_second_sign(tmp_path):
    # Near miss: beside the dead eth0, the jumbo lab's UP interface (renamed eth1 at test time) lost
    # frames; NCCL_SOCKET_IFNAME=eth (a prefix) names both.
    other = _read(_JUMBO / "ip_link.txt").replace("eth0@if45", "eth1@if45").replace("eth0", "eth1")
    files = {"node1_ip.txt": _read(_PORT_DOWN / "node1_ip.txt"), "ip_link.txt": other,
             "node0.log": _read(_PORT_DOWN / "node0.log"), "env.txt": "NCCL_SOCKET_IFNAME=eth\n"}
    f = _interface_finding(_bundle(tmp_path, files).verdict)
    assert f is not None and set(f.signs) == {"net.link_down", "net.interface_losses"}, f


def test_a_name_nccl_printed_is_matched_exactly(tmp_path):
    # L1: NCCL printed eth1; the jumbo lab's lossy eth0 renamed eth10 at test time is another interface.
    ip = _read(_JUMBO / "ip_link.txt").replace("eth0", "eth10")
    v = _bundle(tmp_path, {"ip_link.txt": ip, "node0.log": _read(_JUMBO / "node0.log"), "nccl.log": _USING.format("eth1")}).verdict
    assert _interface_finding(v) is None, v.trace
    # near miss: a plain NCCL_SOCKET_IFNAME entry is a prefix (src/misc/socket.cc matchIfList) ...
    (tmp_path / "p").mkdir()
    v = _bundle(tmp_path / "p", {"ip_link.txt": ip, "node0.log": _read(_JUMBO / "node0.log"),
                                 "env.txt": "NCCL_SOCKET_IFNAME=eth1\n"}).verdict
    assert _interface_finding(v) is not None, v.trace


def test_an_ifname_list_written_with_equals_is_exact():
    # NCCL src/misc/socket.cc matchIfList: a leading '=' makes every entry an exact name.
    from postmortem.classify.rules.interfaces import _named, job_interfaces
    from postmortem.model import Case, Fact, Ref

    def named(value: str, iface: str) -> bool:
        case = Case("t", (), (), (Fact("env.NCCL_SOCKET_IFNAME", value, Ref("env.txt", 1)),), ())
        return _named(iface, *job_interfaces(case))
    assert not named("=eth1,ib0", "eth10") and named("=eth1,ib0", "ib0") and named("=eth1", "eth1")
    assert named("eth1", "eth10")   # near miss: a plain entry is a prefix


def test_with_net_ib_an_interface_the_bootstrap_lines_do_not_name_stays_a_lean(tmp_path):
    # M1: NCCL's data path is the RoCE HCA (NET/IB), whose netdev the Bootstrap line (eth1) never names.
    using = "".join(line + "\n" for line in _read(_ROCE).splitlines() if " : Using " in line)
    files = {"nccl.log": using, "ip_addr.txt": _read(_NOCARRIER), "node0.log": _read(_PORT_DOWN / "node0.log")}
    v = _bundle(tmp_path, files).verdict
    f = _interface_finding(v)
    assert f is not None and "pma had no link" in f.summary and not f.signs, v.trace
    # Near miss: without the NET/IB line the job's traffic is the bootstrap's eth1 alone.
    (tmp_path / "s").mkdir()
    files["nccl.log"] = "\n".join(line for line in files["nccl.log"].splitlines() if "NET/IB : Using" not in line) + "\n"
    v = _bundle(tmp_path / "s", files).verdict
    assert _interface_finding(v) is None and any("not the job's interfaces" in t for t in v.trace), v.trace


# ---------------------------------------------------------------- M5: a refusal while a process waited

_LOOPBACK = FIXTURES / "validation22/lab4-hostname-loopback-gloo/bundle"   # real lab: 2 ranks, gloo, 127.0.1.1


def _loopback_files(**edit: tuple[str, str]) -> dict[str, str]:
    files = {p.name: _read(p) for p in _LOOPBACK.iterdir()}
    for name, (old, new) in edit.items():
        assert old in files[name.replace("_", ".")]
        files[name.replace("_", ".")] = files[name.replace("_", ".")].replace(old, new)
    return files


def test_a_refusal_while_the_only_other_process_waited_is_strong(tmp_path):
    a = _bundle(tmp_path, _loopback_files())
    (f,) = rules.RefusedWhilePeerWaited().findings(a.case, K, [])
    assert f.signal == "net.refused_while_peer_waited" and f.strength == "strong"


def test_a_refusal_in_a_larger_mesh_is_weak_unless_the_waiter_owns_the_address(tmp_path):
    # The same real lines with gloo's size=2 edited to size=4 at test time: the waiting process may
    # be waiting for the same dead peer.
    a = _bundle(tmp_path, _loopback_files(node0_log=("size=2", "size=4")))
    (f,) = rules.RefusedWhilePeerWaited().findings(a.case, K, [])
    assert f.signal == "net.refused_while_some_process_waited" and f.strength == "weak", f


# ---------------------------------------------------------------- M3: one fact read twice

def _signs_of(case_dir: Path, cause: str, extra: dict[str, str] | None = None, tmp_path: Path | None = None):
    from postmortem.classify import _independent_signs, run_rules
    if extra:
        files = {str(p.relative_to(case_dir)): _read(p) for p in case_dir.rglob("*") if p.is_file()}
        case = _bundle(tmp_path, {**files, **extra}).case
    else:
        case = analyze(case_dir).case
    found = [f for f in run_rules(case, K, []) if f.cause == cause]
    return _independent_signs([f for f in found if f.role == "root"] or found)


@pytest.mark.parametrize("case_dir, cause, one", [
    ("corpus/nccl-p2p-iommu-01", "nccl_p2p", {"hang.nccltests_silent", "hang.nccl_stopped_during_init"}),
    ("validation19/acs-hang-allreduce-a100-03", "nccl_p2p", {"hang.nccltests_silent", "hang.nccl_stopped_during_init"}),
])
def test_one_failure_read_twice_is_one_sign(case_dir, cause, one):
    signs = _signs_of(FIXTURES / case_dir / "bundle", cause)
    assert len(signs) == 1 and signs[0] in one, signs


# ---------------------------------------------------------------- H2: a small /dev/shm beside a bare system error

_DF64 = FIXTURES / "system/shm64_df_h.txt"          # real Docker `df -h /dev/shm`: 64M, 48M used, 75%
_NET_LINE = next(line for line in _read(FIXTURES / "validation/nccl-shm-attach-regression-09/bundle/nccl.log").splitlines()
                 if "via NET/IB" in line)
_SHM_LINE = next(line for line in _read(FIXTURES / "validation16/iommu-acs-hang-a6000-tp2-vllm-01/bundle/vllm.log").splitlines()
                 if "via SHM/" in line)


def _shm_small(v) -> bool:
    """The measurement was counted as a sign (the rule says so in the trace, or why not)."""
    said = [t for t in v.trace if t.startswith("shm-small-beside-failure:")]
    return bool(said) and all("not counted" not in t for t in said)


def test_an_idle_small_dev_shm_is_no_second_sign(tmp_path):
    # The audit's probe p3: accelerate#2107's bare 'unhandled system error' (truth: the bridge network)
    # beside the real Docker df edited at test time to 0% used.
    idle = _read(_DF64).replace("48M   16M  75%", " 0M   64M   0%")
    v = _bundle(tmp_path, {"stderr.txt": _read(_ACCEL), "df_shm.txt": idle}).verdict
    assert not _shm_small(v) and v.cause != "shm_exhausted", v.trace


def test_a_small_dev_shm_in_use_beside_the_bare_error_is_a_second_sign(tmp_path):
    # Near miss that must still count: the real df as taken (75% used).
    v = _bundle(tmp_path, {"stderr.txt": _read(_ACCEL), "df_shm.txt": _read(_DF64)}).verdict
    assert _shm_small(v), v.trace


def test_a_job_across_nodes_or_a_named_warn_leaves_the_size_out(tmp_path):
    idle = _read(_DF64).replace("48M   16M  75%", " 0M   64M   0%")
    # NCCL's SHM transport in play would count it ...
    v = _bundle(tmp_path / "a", {"stderr.txt": _read(_ACCEL), "df_shm.txt": idle, "nccl.log": _SHM_LINE + "\n"}).verdict
    assert _shm_small(v), v.trace
    # ... but not beside a channel across nodes (the network is as likely) ...
    v = _bundle(tmp_path / "b", {"stderr.txt": _read(_ACCEL), "df_shm.txt": _read(_DF64),
                                 "nccl.log": _SHM_LINE + "\n" + _NET_LINE + "\n"}).verdict
    assert not _shm_small(v), v.trace
    # ... nor beside an NCCL WARN naming the failing call (corpus multi-roce-hca-enodev-08's ibv_modify_qp)
    warn = next(line for line in _read(_ROCE).splitlines() if "NCCL WARN" in line)
    v = _bundle(tmp_path / "c", {"stderr.txt": _read(_ACCEL), "df_shm.txt": _read(_DF64), "nccl.log": warn + "\n"}).verdict
    assert not _shm_small(v), v.trace


# ---------------------------------------------------------------- H5: two dumps of one instant

def test_flight_recorder_and_py_spy_dumps_of_one_instant_are_one_sign(tmp_path):
    # The audit's probe g9: only the real flightrec/ and pyspy/ folders of lab-flightrec-hang-stacks.
    import shutil
    src = FIXTURES / "bundles/lab-flightrec-hang-stacks/bundle"
    for folder in ("flightrec", "pyspy"):   # binary FR dumps: copied as they are
        shutil.copytree(src / folder, tmp_path / "bundle" / folder)
    v = analyze(tmp_path / "bundle").verdict
    assert v.cause == "unknown", v.trace
    assert not any("independent weak signs" in t for t in v.trace), v.trace


# ---------------------------------------------------------------- L7: Xid strength per entry

def test_xid_strength_is_marked_per_entry_not_derived_from_its_weight():
    assert K.xids[79].strength == "strong" and K.xids[48].strength == "strong"
    # 46 'GPU stopped processing' weighs what a strong reading weighs, but NVIDIA lists several causes
    assert K.xids[46].weight >= 0.6 and K.xids[46].strength == "weak"
    from postmortem.classify.rules.known_messages import _xid_strength
    assert _xid_strength(K.xids[46]) == "weak" and _xid_strength(K.xids[79]) == "strong"
    # the readings gen_nvidia.py derived from a mnemonic carry no mark: weak
    generated = [x for x in K.xids.values() if x.role == "root" and not x.strength]
    assert generated and all(_xid_strength(x) == "weak" for x in generated)


# ---------------------------------------------------------------- L9: a store server's wait beside a client's failure

_STORE = FIXTURES / "validation22/lab4-store-port-rejected/bundle"   # real lab: iptables REJECT on the store's node


def _store_signs(case) -> list:
    return [f for f in rules.StoreServerWaited().findings(case, K, [])]


def test_a_server_wait_and_a_client_failure_that_overlapped_are_read(tmp_path):
    assert _store_signs(analyze(_STORE).case)


def test_a_server_wait_without_a_time_does_not_pair_with_a_client_failure(tmp_path):
    # The same real lines, the server's DistStoreError alone in its file (no timed line to place it).
    server = next(line for line in _read(_STORE / "node0.log").splitlines() if "waiting for clients" in line)
    a = _bundle(tmp_path, {"node0.log": server + "\n", "node1.log": _read(_STORE / "node1.log")})
    assert not _store_signs(a.case)


def test_two_versions_printed_close_in_time_only_word_the_lean():
    # Audit 6 L5: banners within the rendezvous window are a bound, not a proof of one run (a rerun
    # minutes after `pip install -U` fits it too). The two real banners of nccl-version-mismatch-01,
    # placed 120 s apart at test time.
    from datetime import datetime, timedelta, timezone
    from postmortem.classify.rules.comms import _close_in_time, _one_run
    from postmortem.model import Basis, Event, Ref, When
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    lines = [l for p in sorted(_MISMATCH_CASE.iterdir()) for l in _read(p).splitlines() if l.startswith("NCCL version")][:2]
    evs = {f"v{i}": [Event(kind="nccl.version", text=l, ref=Ref(path=f"n{i}.log", line=1, text=l),
                           when=When(t0 + timedelta(seconds=120 * i), Basis.MEASURED))] for i, l in enumerate(lines)}
    assert "120 s apart" in _close_in_time(evs)

    class _NoInits:
        events = ()
        stacks = ()
    assert _one_run(_NoInits(), evs) == ""
