"""Hostile bundles (issue 19): every input here is DELIBERATELY HOSTILE and generated at
test time (no bomb is committed).  Each class must end in exit 0 or 2 with a message,
within its budget (asserted through the meter's counters and the artifacts' messages,
not through wall-clock timing), read nothing outside the bundle (canary files planted
beside it must not reach any output) and leave the bundle unchanged.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from postmortem import bundle
from postmortem.bundle import tar as bundle_tar
from postmortem.budget import Budget, Meter
from postmortem.run import Options, analyze

ROOT = Path(__file__).resolve().parent.parent
XID_LINE = b"[  12.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
WARN_LINE = (b"node1:1234:1290 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<52311> with status=12 "
             b"opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2\n")
CANARY = "CANARY-7f3a9c-must-never-appear"


def _tree_hash(path: Path) -> str:
    h = hashlib.sha256()
    if path.is_file():
        h.update(path.read_bytes())
        return h.hexdigest()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_symlink():
            h.update(os.readlink(p).encode())
        elif p.is_file():
            with open(p, "rb") as f:
                h.update(f.read(1 << 20))
    return h.hexdigest()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the bundle holding a canary that must never be read."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.log").write_text(f"{CANARY}\n" + XID_LINE.decode() + f"{CANARY} NCCL WARN leaked\n")
    return d


def _cli(args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[int, str, str, int]:
    """Run the CLI in a subprocess; returns (exit code, stdout, stderr, peak RSS in KiB)."""
    driver = ("import resource, sys\nfrom postmortem.cli import main\nrc = main(sys.argv[1:])\n"
              "sys.stdout.flush()\nprint('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
              "sys.exit(rc)\n")
    p = subprocess.run([sys.executable, "-c", driver, *args], cwd=cwd, input=stdin, capture_output=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    rss = int(err.rsplit("RSS ", 1)[1].split()[0]) if "RSS " in err else -1
    return p.returncode, out, err, rss


def _analyze_cli(bundle_path: Path, tmp_path: Path, *extra: str) -> tuple[int, str, int]:
    """analyze with every output written; returns (exit, all output text, RSS KiB)."""
    outdir = tmp_path / "out"
    outdir.mkdir(exist_ok=True)
    before = _tree_hash(bundle_path)
    rc, out, err, rss = _cli(["analyze", str(bundle_path), "--html", str(outdir / "r.html"),
                              "--json", str(outdir / "r.json"), "--markdown", str(outdir / "r.md"), *extra],
                             cwd=tmp_path)
    assert "Traceback" not in err, err
    assert rc in (0, 2), err
    assert _tree_hash(bundle_path) == before, "the bundle was modified"
    texts = [out, err] + [p.read_text(errors="replace") for p in outdir.iterdir()]
    if rc == 0:
        json.loads((outdir / "r.json").read_text())
    everything = "\n".join(texts)
    assert CANARY not in everything, "a file outside the bundle was read"
    assert rss < 500 * 1024, f"peak RSS {rss} KiB"
    return rc, everything, rss


def _message(a, path: str) -> str:
    return next(x.message for x in a.case.artifacts if x.path == path)


# ------------------------------------------------------------------ memory and decompression bombs

def test_gzip_of_newlines_is_counted_not_split(tmp_path, outside):
    b = tmp_path / "b"
    b.mkdir()
    # 256 MiB of newlines in ~250 KB: one event per line would be 268 M lines.
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\n" * (1 << 20)
    data = b"".join(comp.compress(chunk) for _ in range(256)) + comp.flush()
    (b / "log.txt.gz").write_bytes(data)
    (b / "dmesg.txt").write_bytes(XID_LINE)
    rc, text, rss = _analyze_cli(b, tmp_path)
    assert rc == 0
    report = json.loads((tmp_path / "out/r.json").read_text())
    art = next(a for a in report["artifacts"] if a["path"] == "log.txt.gz")
    assert "blank lines counted" in art["message"]
    assert report["verdict"]["cause"] == "gpu_fell_off_bus"


def test_identical_lines_are_counted_not_stored(tmp_path, outside):
    b = tmp_path / "b"
    b.mkdir()
    n = 1_800_000 // len(WARN_LINE)
    (b / "nccl.log").write_bytes(WARN_LINE * n)
    rc, text, rss = _analyze_cli(b, tmp_path)
    assert rc == 0
    a = analyze(b)
    assert len(a.case.events) <= 4 * Budget().repeats
    assert f"{n - Budget().repeats} repeats of identical lines counted" in _message(a, "nccl.log")


def test_tgz_member_bomb_stops_at_the_byte_budget(tmp_path):
    buf = io.BytesIO()
    size = 96 << 20
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("zeros.log")
        info.size = size
        tar.addfile(info, io.BytesIO(b"\x00" * size))
        info = tarfile.TarInfo("dmesg.txt")
        info.size = len(XID_LINE)
        tar.addfile(info, io.BytesIO(XID_LINE))
    p = tmp_path / "bomb.tgz"
    p.write_bytes(buf.getvalue())
    a = analyze(p, Options(budget=Budget(bytes=16 << 20)))
    assert any("read budget of 16 MiB reached" in n for n in a.limits)


def overlapping_zip(path: Path, size: int, entries: int = 300) -> Path:
    """A zip whose `entries` central-directory entries all point at one local header holding
    `size` compressed newlines (DELIBERATELY HOSTILE; Python 3.11's zipfile does not check).
    Also used by bench/hostile_bench.py."""
    raw = b"\n" * size
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    comp = c.compress(raw) + c.flush()
    crc = zlib.crc32(raw)
    name = b"a.log"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(comp), len(raw), len(name), 0) + name
    central = b""
    for i in range(entries):
        n = f"m{i:03}.log".encode()
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(comp), len(raw),
                               len(n), 0, 0, 0, 0, 0, 0) + n
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, entries, entries, len(central), len(local + comp), 0)
    path.write_bytes(local + comp + central + end)
    return path


def test_zip_entries_sharing_one_stream_are_refused(tmp_path, outside):
    """300 central-directory entries pointing at one local header (Python 3.11 does not check)."""
    p = overlapping_zip(tmp_path / "overlap.zip", 64 << 20)
    rc, text, rss = _analyze_cli(p, tmp_path)
    assert rc == 0
    a = analyze(p)
    msgs = [x.message for x in a.case.artifacts]
    assert len(msgs) == 300 and all("overlaps another entry" in m for m in msgs)


def _tar_header(name: str, size: int, kind: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _good_member(name: str = "dmesg.txt", data: bytes = XID_LINE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info.tobuf(format=tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)


@pytest.mark.parametrize("kind, what", [(tarfile.XHDTYPE, "pax"), (tarfile.GNUTYPE_LONGNAME, "GNU long-name"),
                                        (tarfile.XGLTYPE, "pax")])
def test_huge_tar_extended_headers_are_capped(tmp_path, kind, what):
    """A header that declares 1.5 GB (read whole by tarfile) ends the listing with a message."""
    p = tmp_path / "h.tar"
    p.write_bytes(_good_member() + _tar_header("././@Long", 1_500_000_000, kind) + b"x" * 4096)
    a = analyze(p)
    assert a.verdict.cause == "gpu_fell_off_bus"
    msg = _message(a, "(archive)")
    assert f"{what} header of 1500000000 bytes exceeds the cap" in msg


def test_pax_header_regex_bomb_cve_2024_6232(tmp_path):
    """The CVE's shape: a pax header of digits and spaces with no '=' (quadratic in
    tarfile's regex before 3.11.10).  Parsed here in one linear pass."""
    evil = b"60000 " + b"1 " * 29_997
    with pytest.raises(tarfile.TarError):
        bundle_tar._pax_records(evil)
    assert bundle_tar._pax_records(b"") == []
    p = tmp_path / "cve.tar"
    p.write_bytes(_good_member() + _tar_header("././@PaxHeader", len(evil), tarfile.XHDTYPE)
                  + evil + b"\0" * (-len(evil) % 512) + _good_member("b.txt", b"hello\n") + b"\0" * 1024)
    a = analyze(p)
    assert a.verdict.cause == "gpu_fell_off_bus"
    assert "cut or corrupt after 1 members" in _message(a, "(archive)")


def test_tar_of_many_members_is_listed_up_to_the_budget(tmp_path):
    p = tmp_path / "many.tar"
    with open(p, "wb") as f:
        f.write(_good_member())
        for i in range(5000):
            f.write(_tar_header(f"e{i}", 0, tarfile.REGTYPE))
        f.write(b"\0" * 1024)
    a = analyze(p, Options(budget=Budget(files=100)))
    assert len(a.case.artifacts) == 100
    assert any("more than 100 members" in n for n in a.limits)
    assert a.verdict.cause == "gpu_fell_off_bus"


def test_folder_of_many_files_is_read_up_to_the_budget(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    (b / "0-dmesg.txt").write_bytes(XID_LINE)
    for i in range(1000):
        (b / f"f{i:05}.txt").write_bytes(b"")
    meter = Meter(Budget(files=50))
    entries, _ = bundle.open_bundle(b, meter)
    assert len(entries) == 50
    assert any("more than 50 files" in n for n in meter.notes)


def test_text_then_a_100_gb_hole_is_bounded(tmp_path, outside):
    b = tmp_path / "b"
    b.mkdir()
    with open(b / "dmesg.txt", "wb") as f:
        f.write(XID_LINE * 80)
        f.truncate(100 << 30)
    a = analyze(b, Options(budget=Budget(bytes=32 << 20)))
    assert a.verdict.cause == "gpu_fell_off_bus"
    assert any("read budget of 32 MiB reached" in n for n in a.limits)
    assert "read stopped" in _message(a, "dmesg.txt")


def test_long_lines_are_cut_to_a_window(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    (b / "x.log").write_bytes(b"[" * 5_000_000 + b" NCCL WARN x\n" + b" \t" * 40_000 + b"\n" + XID_LINE)
    a = analyze(b)
    assert "2 line(s) longer than 4096 characters cut" in _message(a, "x.log")
    assert a.verdict.cause == "gpu_fell_off_bus"
    assert all(len(e.ref.text) <= Budget().line_chars for e in a.case.events)


def test_time_limit_ends_with_what_was_read():
    """A fake clock: every reading costs 10 s, the limit is 25 s."""
    ticks = iter(range(0, 10**9, 10))
    a = analyze(ROOT / "fixtures/cores", Options(time_limit=25, clock=lambda: next(ticks)))
    assert any("time limit of 25 s reached" in n for n in a.limits)
    unread = [x for x in a.case.artifacts if x.message.startswith("not read: time limit")]
    assert unread and a.verdict.category.value in ("config", "comms", "hardware", "unknown")


def test_time_limit_on_the_command_line(tmp_path):
    rc, out, err, _ = _cli(["analyze", str(ROOT / "fixtures/cores"), "--html", "-", "--time-limit", "0"], tmp_path)
    assert rc == 2 and "--time-limit" in err
    rc, out, err, _ = _cli(["analyze", str(ROOT / "fixtures/cores"), "--html", "-", "--time-limit", "600"], tmp_path)
    assert rc == 0 and "Traceback" not in err


# ------------------------------------------------------------------ reads stay inside

def test_hard_link_to_a_file_outside_is_refused(tmp_path, outside):
    b = tmp_path / "b"
    b.mkdir()
    (b / "dmesg.txt").write_bytes(XID_LINE)
    os.link(outside / "secret.log", b / "linked.log")
    rc, text, _ = _analyze_cli(b, tmp_path)
    assert rc == 0 and "hard links; not read" in text
    a = analyze(b, Options(allow_hardlinks=True))  # read when explicitly allowed
    linked = next(x for x in a.case.artifacts if x.path == "linked.log")
    assert linked.status.value == "ok" and linked.lines == 3


def test_single_hard_linked_file_is_refused(tmp_path, outside):
    os.link(outside / "secret.log", tmp_path / "one.log")
    rc, text, _ = _analyze_cli(tmp_path / "one.log", tmp_path)
    assert rc == 0 and "hard links; not read" in text


def test_symlinks_out_are_not_followed(tmp_path, outside):
    b = tmp_path / "b"
    b.mkdir()
    (b / "dmesg.txt").write_bytes(XID_LINE)
    (b / "out.log").symlink_to(outside / "secret.log")
    (b / "dirlink").symlink_to(outside)
    (b / "rel.log").symlink_to("../outside/secret.log")
    rc, text, _ = _analyze_cli(b, tmp_path)
    assert rc == 0 and "leaves the bundle" in text


def test_folder_swapped_for_a_symlink_mid_run_does_not_escape(tmp_path, outside):
    b = tmp_path / "b"
    (b / "sub").mkdir(parents=True)
    (b / "a.log").write_bytes(XID_LINE)
    (b / "sub" / "secret.log").write_bytes(b"harmless\n")

    def swap(path: str) -> None:
        if path == "a.log":  # after the scan, before sub/secret.log is opened
            (b / "sub").rename(b / "sub.old")
            (b / "sub").symlink_to(outside)

    a = analyze(b, Options(progress=swap))
    assert not any(CANARY in e.ref.text for e in a.case.events)
    art = next(x for x in a.case.artifacts if x.path == "sub/secret.log")
    assert art.status.value == "error"


def test_deep_tree_is_walked_without_recursion(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    fd = os.open(b, os.O_RDONLY)
    try:  # 1,500 levels, built by descriptor (the path is longer than PATH_MAX)
        for _ in range(1500):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("dmesg.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, XID_LINE)
        os.close(wfd)
    finally:
        os.close(fd)
    try:
        a = analyze(b)
        assert a.verdict.cause == "gpu_fell_off_bus"
        assert a.case.artifacts[0].path.count("/") == 1500
    finally:
        _remove_deep(b)


def _remove_deep(top: Path) -> None:
    """shutil.rmtree (and so pytest's cleanup) recurses; remove a deep chain iteratively."""
    fds = [os.open(top, os.O_RDONLY)]
    try:
        while "d" in os.listdir(fds[-1]):
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        while fds:
            fd = fds.pop()
            for name in os.listdir(fd):
                if name == "d":
                    os.rmdir(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
            os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)


# ------------------------------------------------------------------ partial and odd input

def test_tarball_cut_at_90_percent_is_read_as_far_as_it_goes(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i in range(18):
            data = XID_LINE if i == 0 else os.urandom(3000).hex().encode() + b"\n"
            info = tarfile.TarInfo(f"f{i:02}.log")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    p = tmp_path / "cut.tgz"
    p.write_bytes(buf.getvalue()[: len(buf.getvalue()) * 9 // 10])
    rc, text, _ = _analyze_cli(p, tmp_path)
    assert rc == 0
    a = analyze(p)
    ok = [x for x in a.case.artifacts if x.status.value == "ok"]
    assert len(ok) >= 15
    assert a.verdict.cause == "gpu_fell_off_bus"
    said = " ".join(x.message for x in a.case.artifacts if x.status.value == "error")
    assert "cut" in said


def test_utf16_and_utf32_logs_are_decoded(tmp_path):
    for enc in ("utf-16", "utf-16-le", "utf-32", "utf-32-be"):
        b = tmp_path / enc
        b.mkdir()
        (b / "dmesg.txt").write_bytes(XID_LINE.decode().encode(enc) * 3)
        a = analyze(b)
        assert a.verdict.cause == "gpu_fell_off_bus", enc
        assert a.case.artifacts[0].kind.startswith("text (utf-")


def test_duplicate_member_names_are_both_kept(tmp_path):
    p = tmp_path / "dup.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("dmesg.txt", XID_LINE)
        zf.writestr("dmesg.txt", b"second copy\n")
    a = analyze(p)
    paths = sorted(x.path for x in a.case.artifacts)
    assert paths == ["dmesg.txt", "dmesg.txt (copy 2)"]
    assert "holds 2 or more members named 'dmesg.txt'" in _message(a, "dmesg.txt (copy 2)")
    assert a.verdict.cause == "gpu_fell_off_bus"
    t = tmp_path / "dup.tar"
    with tarfile.open(t, "w") as tar:
        for data in (b"first\n", XID_LINE):
            info = tarfile.TarInfo("dmesg.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    a = analyze(t)
    assert sorted(x.path for x in a.case.artifacts) == ["dmesg.txt", "dmesg.txt (copy 2)"]
    assert a.verdict.cause == "gpu_fell_off_bus"


def test_log_on_stdin(tmp_path):
    rc, out, err, _ = _cli(["analyze", "-", "--json", "-"], tmp_path, stdin=XID_LINE * 3)
    assert rc == 0, err
    report = json.loads(out)
    assert report["verdict"]["cause"] == "gpu_fell_off_bus"
    assert report["artifacts"][0]["path"] == "stdin"
    rc, out, err, _ = _cli(["analyze", "-"], tmp_path, stdin=gzip.compress(XID_LINE))
    assert rc == 0 and "reports/stdin.html" in out


def test_gzip_cut_short_keeps_what_it_has(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    data = gzip.compress(XID_LINE + os.urandom(200_000).hex().encode())
    (b / "dmesg.txt.gz").write_bytes(data[: len(data) * 9 // 10])
    a = analyze(b)
    assert a.verdict.cause == "gpu_fell_off_bus"
    assert "file is cut" in _message(a, "dmesg.txt.gz")
