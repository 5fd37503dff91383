"""postmortem.core on real kernel cores (fixtures/cores), checked against gdb's view of each.

Every expected value comes from the `gdb -batch -ex 'p $_siginfo' -ex 'info proc mappings'
-ex 'thread apply all bt'` output saved beside the core when it was made (make_cores.sh),
so a decoding mistake shows up as a disagreement with gdb, not with numbers copied here.
"""
from __future__ import annotations

import gzip
import io
import json
import random
import re
import shutil
import struct
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.core import CoreResult, gdb_backtrace, is_core, read_core
from postmortem.model import Severity

CORES = Path(__file__).resolve().parent.parent / "fixtures" / "cores"
ALL_CORES = ("shm-sigbus", "shm-sigbus-faulthandler", "segv-maperr", "segv-accerr", "abort",
             "threads-segv")
SIGNAL_NAMES_SEEN = {"SIGBUS", "SIGSEGV", "SIGABRT"}


# --------------------------------------------------------------------------- gdb's view


@dataclass(frozen=True)
class GdbView:
    signal: str
    si_signo: int
    si_code: int
    si_addr: int
    mappings: tuple[tuple[int, int, int, str], ...]   # start, end, offset, objfile
    crashed_lwp: int
    threads: dict[int, tuple[int, ...]]                # LWP -> frame addresses gdb printed

    def mapping_of(self, addr: int) -> tuple[int, int, int, str] | None:
        return next((m for m in self.mappings if m[0] <= addr < m[1]), None)


def gdb_view(name: str) -> GdbView:
    text = (CORES / f"{name}.gdb.txt").read_text()
    siginfo = re.search(r"\$1 = \{si_signo = (\d+), si_errno = \d+, si_code = (-?\d+),", text)
    addr = re.search(r"_sigfault = \{si_addr = (0x[0-9a-f]+)", text)
    mappings = tuple(
        (int(m[1], 16), int(m[2], 16), int(m[4], 16), m[5])
        for m in re.finditer(r"^\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S.*)$",
                             text, re.M))
    current = re.search(r"\[Current thread is \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)\)\]", text)
    first_lwp = re.search(r"^\[New LWP (\d+)\]", text, re.M)
    threads: dict[int, tuple[int, ...]] = {}
    for block in re.split(r"^Thread \d+ ", text, flags=re.M)[1:]:
        lwp = int(re.search(r"\(LWP (\d+)\)", block)[1])
        threads[lwp] = tuple(int(a, 16) for a in re.findall(r"^#\d+\s+(0x[0-9a-f]+) in ", block, re.M))
    return GdbView(
        signal=re.search(r"Program terminated with signal (SIG\w+)", text)[1],
        si_signo=int(siginfo[1]), si_code=int(siginfo[2]), si_addr=int(addr[1], 16),
        mappings=mappings, crashed_lwp=int((current or first_lwp)[1]), threads=threads)


def core_bytes(name: str) -> bytes:
    return gzip.decompress((CORES / f"{name}.core.gz").read_bytes())


def read_named(name: str, search_dirs=(CORES,)) -> CoreResult:
    with gzip.open(CORES / f"{name}.core.gz", "rb") as f:
        return read_core(f, f"cores/{name}.core.gz", search_dirs)


def facts(result: CoreResult) -> dict:
    return {f.name: f.value for f in result.facts}


def signal_event(result: CoreResult):
    (event,) = [e for e in result.events if e.kind == "core.signal"]
    return event


# --------------------------------------------------------------------------- agreement with gdb


@pytest.mark.parametrize("name", ALL_CORES)
def test_signal_and_code_agree_with_gdb(name):
    gdb, result = gdb_view(name), read_named(name)
    event = signal_event(result)
    assert result.problems == () and result.truncated is False
    assert event.severity is Severity.FATAL
    assert event.data["signal"] == gdb.signal == facts(result)["core.signal"]
    assert event.data["signo"] == gdb.si_signo
    if event.data["how"] == "sigframe":   # gdb shows the re-raise; we show the fault under it
        assert event.data["reraised_si_code_name"] == "SI_TKILL" and gdb.si_code == -6
    else:
        assert event.data["si_code"] == gdb.si_code


@pytest.mark.parametrize("name", ["shm-sigbus", "segv-maperr", "segv-accerr", "threads-segv"])
def test_fault_address_and_mapping_agree_with_gdb(name):
    gdb, result = gdb_view(name), read_named(name)
    event, known = signal_event(result), facts(result)
    assert event.data["how"] == "siginfo"
    assert event.data["addr"] == gdb.si_addr == known["core.fault_addr"]
    gdb_mapping = gdb.mapping_of(gdb.si_addr)
    if gdb_mapping is None:
        assert event.data["mapping"] is None and "core.fault_mapping" not in known
    else:
        start, _, offset, objfile = gdb_mapping
        assert event.data["mapping"] == objfile == known["core.fault_mapping"]
        assert event.data["mapping_offset"] == gdb.si_addr - start + offset


def test_shm_sigbus_is_64_mib_into_the_torch_segment():
    event = signal_event(read_named("shm-sigbus"))
    assert event.data["si_code_name"] == "BUS_ADRERR"
    assert re.fullmatch(r"/dev/shm/torch_\d+_0", event.data["mapping"])
    assert event.data["mapping_offset"] == 64 << 20
    assert event.text.startswith("SIGBUS (BUS_ADRERR) at 0x")
    assert event.text.endswith(f"= 64.0 MiB into {event.data['mapping']}")


def test_faulthandler_reraise_is_recovered_from_the_signal_frame():
    gdb, result = gdb_view("shm-sigbus-faulthandler"), read_named("shm-sigbus-faulthandler")
    event, known = signal_event(result), facts(result)
    assert gdb.si_code == -6                      # gdb only sees the re-raise
    assert event.data["how"] == known["core.fault_how"] == "sigframe"
    assert event.data["si_code_name"] == known["core.si_code"] == "BUS_ADRERR"
    assert event.data["trapno"] == 14             # a page fault
    start, _, offset, objfile = gdb.mapping_of(event.data["addr"])
    assert re.fullmatch(r"/dev/shm/torch_\d+_0", objfile)
    assert event.data["mapping"] == objfile == known["core.fault_mapping"]
    # memcpy's stores run a few bytes into the page where the 64 MB tmpfs ran out.
    assert event.data["mapping_offset"] == event.data["addr"] - start + offset
    assert (64 << 20) <= event.data["mapping_offset"] < (64 << 20) + 4096
    # The fact points at the frame's bytes in the core, the event at the SI_TKILL note.
    fault_ref = next(f.ref for f in result.facts if f.name == "core.fault_addr")
    assert fault_ref.offset != event.ref.offset


def test_signal_frame_is_not_invented_without_a_handler():
    assert signal_event(read_named("abort")).data["how"] == "none"


@pytest.mark.parametrize("name", ALL_CORES)
def test_threads_and_crashing_thread_agree_with_gdb(name):
    gdb, result = gdb_view(name), read_named(name)
    assert facts(result)["core.threads"] == len(gdb.threads) == len(result.stacks)
    (crashed,) = [s for s in result.stacks if s.crashed]
    assert crashed.tid == gdb.crashed_lwp == signal_event(result).tid
    assert {s.tid for s in result.stacks} == set(gdb.threads)


@pytest.mark.parametrize("name", ["shm-sigbus", "segv-maperr", "threads-segv"])
def test_frame_pointer_walk_finds_only_frames_gdb_found(name):
    gdb, result = gdb_view(name), read_named(name)
    for stack in result.stacks:
        walked = [f.address for f in stack.frames[1:] if f.module and f.module.endswith("/crash")]
        assert set(walked) <= set(gdb.threads[stack.tid])
    (crashed,) = [s for s in result.stacks if s.crashed]
    assert any(f.function == "main" or f.function == "worker" for f in crashed.frames)


def test_pc_frames_are_module_plus_offset_and_symbols_come_from_search_dirs():
    gdb = gdb_view("segv-maperr")
    with_symbols = read_named("segv-maperr")
    without = read_named("segv-maperr", search_dirs=())   # /tmp/pmcores/crash is gone
    pc = with_symbols.stacks[0].frames[0]
    assert pc.module == "/tmp/pmcores/crash" and pc.function == "store"
    bare = without.stacks[0].frames[0]
    start, _, offset, _ = next(m for m in gdb.mappings if m[3] == pc.module and m[2] == 0)
    assert bare.function is None and bare.offset == bare.address - start
    assert [f.function for f in with_symbols.stacks[0].frames[:3]] == ["store", "segv_maperr", "main"]


def test_process_facts():
    known = facts(read_named("shm-sigbus-faulthandler"))
    assert known["core.comm"] == "python3"
    assert known["core.cmdline"].endswith("shm_faulthandler.py")
    assert known["core.exe"] == "/usr/bin/python3.11"
    assert known["core.execfn"] == "/usr/bin/python3"
    assert known["core.arch"] == "x86-64"
    assert known["core.truncated"] is False
    gdb = gdb_view("shm-sigbus-faulthandler")
    assert set(known["core.mappings"]) == set(gdb.mappings)
    assert "/usr/lib/x86_64-linux-gnu/libc.so.6" in known["core.build_ids"]
    assert all(re.fullmatch(r"[0-9a-f]{40}", b) for b in known["core.build_ids"].values())


def test_evidence_refs_point_at_notes_in_the_core():
    data = core_bytes("shm-sigbus")
    result = read_named("shm-sigbus")
    event = signal_event(result)
    assert event.ref.path == "cores/shm-sigbus.core.gz"
    # n_namesz=5, n_descsz=128, n_type=NT_SIGINFO ("SIGI"), name "CORE"
    assert data[event.ref.offset:event.ref.offset + 17] == (
        b"\x05\0\0\0\x80\0\0\0IGIS" + b"CORE\0")


# --------------------------------------------------------------------------- sniffing and streams


def test_is_core():
    raw = core_bytes("abort")
    assert is_core(raw[:64])
    assert is_core((CORES / "abort.core.gz").read_bytes()[:512])
    assert not is_core((CORES / "crash").read_bytes()[:64])          # an ELF, not a core
    assert not is_core(gzip.compress(b"hello world" * 10)[:64])
    assert not is_core(b"") and not is_core(b"\x1f\x8b") and not is_core(b"\x7fELF")


def test_plain_file_gzip_and_tar_member_read_the_same(tmp_path):
    raw = core_bytes("shm-sigbus")
    with io.BytesIO(raw) as f:
        plain = read_core(f, "x")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("host1/core.123")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:gz") as tar:
        member = read_core(tar.extractfile("host1/core.123"), "x")
    assert plain.events == member.events == read_core(
        gzip.open(CORES / "shm-sigbus.core.gz"), "x").events
    assert plain.facts == member.facts


# --------------------------------------------------------------------------- damaged cores


def assert_degraded(result: CoreResult) -> None:
    assert isinstance(result, CoreResult)
    assert result.truncated or result.problems


@pytest.mark.parametrize("name", ["shm-sigbus-faulthandler", "threads-segv"])
def test_cut_cores_are_truncated_never_raise(name):
    raw = core_bytes(name)
    rng = random.Random(7)
    cuts = [0, 1, 10, 63, 64, 100, 0x200, 0x5b8, 0x800, 0x1000, 0x3000, len(raw) // 2, len(raw) - 1]
    cuts += rng.sample(range(len(raw)), 10)
    for cut in cuts:
        result = read_core(io.BytesIO(raw[:cut]), "cut")
        assert_degraded(result)
        if cut >= 64:
            assert result.truncated, cut


def test_a_core_cut_after_its_notes_still_names_the_fault():
    raw = core_bytes("shm-sigbus")
    result = read_core(io.BytesIO(raw[:0x4000]), "cut")
    assert result.truncated
    assert facts(result)["core.truncated"] is True
    assert signal_event(result).data["mapping_offset"] == 64 << 20


def test_cut_gzip_core_is_truncated():
    packed = (CORES / "threads-segv.core.gz").read_bytes()
    for cut in (20, 200, 4000, len(packed) // 2, len(packed) - 10):
        result = read_core(gzip.GzipFile(fileobj=io.BytesIO(packed[:cut])), "cut.gz")
        assert result.truncated, cut
        assert result.problems


@pytest.mark.parametrize("keep", [16, 64, 0x200, 0x800])
def test_random_bytes_after_the_header_never_raise(keep):
    raw = core_bytes("segv-maperr")
    rng = random.Random(keep)
    for _ in range(20):
        noise = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 6000)))
        assert_degraded(read_core(io.BytesIO(raw[:keep] + noise), "noise"))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_never_raise(data):
    result = read_core(io.BytesIO(data), "random")
    assert isinstance(result, CoreResult)
    assert is_core(data) in (True, False)


HEADER_AND_NOTES = core_bytes("threads-segv")[:0x3000]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(HEADER_AND_NOTES) - 1), st.integers(0, 255)),
                min_size=1, max_size=40))
def test_flipped_bytes_in_headers_and_notes_never_raise(flips):
    data = bytearray(HEADER_AND_NOTES)
    for at, value in flips:
        data[at] = value
    assert isinstance(read_core(io.BytesIO(bytes(data)), "flipped"), CoreResult)


# --------------------------------------------------------------------------- gdb


def test_gdb_backtrace_missing_files(tmp_path):
    assert gdb_backtrace(tmp_path / "core", tmp_path / "exe") is None


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb not installed")
def test_gdb_backtrace_runs(tmp_path):
    core = tmp_path / "core"
    core.write_bytes(core_bytes("threads-segv"))
    text = gdb_backtrace(core, CORES / "crash", timeout=60)
    assert text is not None and "LWP" in text and "#0" in text


# --------------------------------------------------------------------------- hostile cores
# Deliberately hostile input generated at test time: ELF core headers written here, the rest
# a sparse hole.  Timings of the same cases are printed by bench/hostile_cores.py.

def hostile_core(path: Path, phnum: int, phdrs: bytes = b"", xnum: int | None = None,
                 size: int = 0) -> Path:
    """An ET_CORE x86-64 header, its program headers at 64, PN_XNUM's count in section 0."""
    shoff = 64 + len(phdrs) + 64 if xnum is not None else 0
    header = (b"\x7fELF\x02\x01\x01" + bytes(9)
              + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, shoff, 0, 64, 56,
                            0xFFFF if xnum is not None else phnum, 64, 1 if xnum is not None else 0, 0))
    data = header + phdrs
    if xnum is not None:
        data += bytes(shoff - len(data)) + struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, xnum, 0, 0)
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(max(size, len(data)))
    return path


def read_hostile(path: Path) -> CoreResult:
    with open(path, "rb") as f:
        return read_core(f, path.name)


def test_pn_xnum_claiming_60_million_program_headers_is_capped(tmp_path):
    core = hostile_core(tmp_path / "core", 0, xnum=60_000_000, size=60_000_000 * 56 + 16384)
    result = read_hostile(core)
    assert any("60000000 program headers" in p and "only the first" in p for p in result.problems)
    assert not result.events


def note_segment(offset: int, size: int) -> bytes:
    return struct.pack("<IIQQQQQQ", 4, 0, offset, 0, 0, size, 0, 4)


def test_millions_of_empty_notes_are_capped(tmp_path):
    # 22 M empty notes (12 zero bytes each) in one PT_NOTE: over the byte budget, not read.
    big = hostile_core(tmp_path / "big", 1, note_segment(4096, 22_000_000 * 12), size=4096 + 22_000_000 * 12)
    assert any("ignored" in p for p in read_hostile(big).problems)
    # Within the byte budget, the note count stops the walk.
    many = hostile_core(tmp_path / "many", 1, note_segment(4096, 4_000_000 * 12), size=4096 + 4_000_000 * 12)
    assert any("notes: the rest are not read" in p for p in read_hostile(many).problems)


def test_many_note_segments_on_the_same_bytes_are_read_once(tmp_path):
    same = b"".join(note_segment(8 << 20, 1 << 20) for _ in range(65_534))
    core = hostile_core(tmp_path / "same", 65_534, same, size=9 << 20)
    result = read_hostile(core)
    assert not any("notes: the rest" in p for p in result.problems)
    # Shifted by 4 bytes each: all distinct, so the byte budget stops them.
    shifted = b"".join(note_segment((8 << 20) + 4 * i, 1 << 20) for i in range(65_534))
    core = hostile_core(tmp_path / "shifted", 65_534, shifted, size=10 << 20)
    assert any("MiB in all" in p or "notes: the rest" in p for p in read_hostile(core).problems)


# --------------------------------------------------------------------------- compressed cores
# segv-maperr.core.{zst,lz4,xz}: the real core stored as systemd-coredump stores cores
# (fixtures/cores/make_compressed.sh).

@pytest.mark.parametrize("suffix,module", [("zst", "zstandard"), ("lz4", "lz4"), ("xz", "lzma")])
def test_compressed_cores_read_like_the_plain_core(suffix, module):
    pytest.importorskip(module)
    from postmortem.core.compressed import Decompressed, codec_of

    path = CORES / f"segv-maperr.core.{suffix}"
    codec = codec_of(path.read_bytes()[:8])
    assert codec == {"zst": "zstd", "lz4": "lz4", "xz": "xz"}[suffix]
    with Decompressed(lambda: open(path, "rb"), codec, path.name) as raw:
        packed = read_core(raw, "core")
    plain = read_core(io.BytesIO(core_bytes("segv-maperr")), "core")
    assert not packed.truncated and packed.events and packed.stacks
    assert (packed.events, packed.stacks, packed.facts) == (plain.events, plain.stacks, plain.facts)


def test_analyze_reads_a_zstd_core_by_its_magic_not_its_name(tmp_path):
    pytest.importorskip("zstandard")
    from conftest import run_cli

    (tmp_path / "core.python.1234").write_bytes((CORES / "segv-maperr.core.zst").read_bytes())
    r = run_cli("analyze", str(tmp_path), "--json", "-", "--html", "-")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    (art,) = v["artifacts"]
    assert art["kind"] == "core (zstd)" and art["status"] == "ok"
    assert any(e["kind"] == "core.signal" and "SEGV_MAPERR" in e["text"] for e in v["timeline"])


def test_a_zstd_bomb_is_bounded_by_the_budget():
    # Deliberately hostile input generated at test time: a real core whose PT_LOAD claims
    # 100 GB beyond it, then 64 MiB of zeros, compressed: reading stops at the budget.
    zstandard = pytest.importorskip("zstandard")
    from postmortem.core.compressed import Decompressed

    data = bytearray(core_bytes("segv-maperr"))
    phoff = struct.unpack_from("<Q", data, 32)[0]
    struct.pack_into("<Q", data, phoff + 32, 100 << 30)        # first segment's p_filesz
    bomb = zstandard.ZstdCompressor().compress(bytes(data) + bytes(64 << 20))
    assert len(bomb) < (1 << 20)
    with Decompressed(lambda: io.BytesIO(bomb), "zstd", "bomb", budget=16 << 20) as raw:
        result = read_core(raw, "bomb")
        assert raw.spent <= 16 << 20
    assert result.truncated
    assert any("MiB decompressed" in p for p in result.problems)
