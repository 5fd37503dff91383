"""Time and peak memory of `postmortem analyze` on DELIBERATELY HOSTILE bundles (issue 19).

The bundles are generated here into a temporary folder (no bomb is kept in the repo).
Each run is a subprocess with a timeout; the figures are wall time, peak RSS, exit code,
and the verdict's cause with the number of budget notes.  Compare two checkouts with --pythonpath:

    python bench/hostile_bench.py                      # this checkout
    python bench/hostile_bench.py --pythonpath /tmp/old --timeout 120
"""
from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))   # the hostile builders are shared with tests/test_hostile.py
WARN = (b"node1:1234:1290 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<52311> with status=12 "
        b"opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2\n")


def _gz_newlines(d: Path) -> Path:
    b = d / "gz-newlines"
    b.mkdir()
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\n" * (1 << 20)
    (b / "log.txt.gz").write_bytes(b"".join(comp.compress(chunk) for _ in range(1024)) + comp.flush())
    return b


def _identical_warn(d: Path) -> Path:
    b = d / "identical-warn"
    b.mkdir()
    (b / "nccl.log").write_bytes(WARN * (1_800_000 // len(WARN)))
    return b


def _zip_overlap(d: Path) -> Path:
    from test_hostile import overlapping_zip   # one builder for the test and the bench

    return overlapping_zip(d / "overlap.zip", 256 << 20)


def _tar_header(name: str, size: int, kind: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _pax_size(d: Path) -> Path:
    p = d / "pax-size.tar"
    with open(p, "wb") as f:
        f.write(_tar_header("././@PaxHeader", 1_580_000_000, tarfile.XHDTYPE))
        f.truncate(1_600_000_000)
    return p


def _gnu_longname(d: Path) -> Path:
    p = d / "longname.tar"
    with open(p, "wb") as f:
        f.write(_tar_header("././@LongLink", 2_000_000_000, tarfile.GNUTYPE_LONGNAME))
        f.write(b"a" * (64 << 20))
        f.truncate(2_100_000_000)
    return p


def _cve_pax(d: Path) -> Path:
    evil = b"460000 " + b"1 " * 229_996 + b"\n"
    evil = b"%d " % len(evil) + evil[7:]
    p = d / "cve-2024-6232.tar"
    p.write_bytes(_tar_header("././@PaxHeader", len(evil), tarfile.XHDTYPE) + evil + b"\0" * (-len(evil) % 512)
                  + _tar_header("a.log", 0, tarfile.REGTYPE) + b"\0" * 1024)
    return p


def _tgz_member_bomb(d: Path) -> Path:
    buf = io.BytesIO()
    size = 2 << 30
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as tar:
        info = tarfile.TarInfo("zeros.log")
        info.size = size

        class Zeros(io.RawIOBase):
            left = size

            def readable(self):
                return True

            def readinto(self, b):
                n = min(len(b), self.left)
                b[:n] = b"\0" * n
                self.left -= n
                return n
        tar.addfile(info, io.BufferedReader(Zeros()))
    p = d / "member-bomb.tgz"
    p.write_bytes(buf.getvalue())
    return p


def _redos_lines(d: Path) -> Path:
    b = d / "redos-lines"
    b.mkdir()
    lines = [("unable to write to file </torch_1_2>: " + " a" * 4000), "[" * 65000 + " NCCL WARN x",
             " " * 65536, "\t" * 65536, "error_file: " + "/" * 8000, "/" * 8000 + " segfault at"]
    (b / "stderr.log").write_text("\n".join(f"{line} {i}" for i in range(20) for line in lines) + "\n")
    return b


def _sparse_hole(d: Path) -> Path:
    b = d / "sparse-hole"
    b.mkdir()
    with open(b / "dmesg.txt", "wb") as f:
        f.write(b"[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" * 100)
        f.truncate(100 << 30)
    return b


def _deep_tree(d: Path) -> Path:
    b = d / "deep"
    b.mkdir()
    fd = os.open(b, os.O_RDONLY)
    for _ in range(1500):
        os.mkdir("d", dir_fd=fd)
        nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    w = os.open("x.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(w, b"hello\n")
    os.close(w)
    os.close(fd)
    return b


MILLION = 1_000_000
XID = b"[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"


def _tar_1m_members(d: Path) -> Path:
    """One real member, then a million empty ones (ustar headers made from one template)."""
    p = d / "million-members.tar"
    head = _tar_header("dmesg.txt", len(XID), tarfile.REGTYPE) + XID + b"\0" * (-len(XID) % 512)
    template = bytearray(_tar_header("x", 0, tarfile.REGTYPE))
    template[0:100] = bytes(100)
    template[148:156] = b" " * 8
    base = sum(template)
    with open(p, "wb") as f:
        f.write(head)
        block = []
        for i in range(MILLION):
            name = b"e%07d.log" % i
            h = bytearray(template)
            h[0:len(name)] = name
            h[148:156] = b"%06o\0 " % (base + sum(name))
            block.append(bytes(h))
            if len(block) == 8192:
                f.write(b"".join(block))
                block.clear()
        f.write(b"".join(block) + b"\0" * 1024)
    return p


def _folder_1m_files(d: Path) -> Path:
    """A real dmesg, then a million empty files in one folder."""
    b = d / "million-files"
    b.mkdir()
    (b / "0-dmesg.txt").write_bytes(XID)
    fd = os.open(b, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(MILLION):
            os.close(os.open(f"f{i:07}.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return b


CASES = [_gz_newlines, _identical_warn, _zip_overlap, _pax_size, _gnu_longname, _cve_pax, _tgz_member_bomb,
         _redos_lines, _sparse_hole, _deep_tree, _tar_1m_members, _folder_1m_files]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pythonpath", default=str(ROOT))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for make in CASES:
            if args.only and make.__name__[1:] not in args.only.split(","):
                continue
            target = make(d)
            cmd = ["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "postmortem", "analyze", str(target),
                   "--html", "-", "--json", str(d / "out.json")]
            t = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=d,
                                    env={**os.environ, "PYTHONPATH": args.pythonpath}, start_new_session=True)
            try:
                _, err = proc.communicate(timeout=args.timeout)
                wall, rss = err.decode().strip().splitlines()[-1].split()[-2:]
                rc = proc.returncode
                tb = "Traceback" in err.decode(errors="replace")
                said = ""
                if rc == 0 and (d / "out.json").exists():
                    doc = json.loads((d / "out.json").read_text())
                    said = f"  {doc['verdict']['cause']}; {len(doc.get('limits', []))} limit note(s)"
                    (d / "out.json").unlink()
                print(f"{make.__name__[1:]:18} exit {rc}  {float(wall):7.1f} s  {int(rss) / 1024:8.0f} MiB"
                      f"{'  TRACEBACK' if tb else ''}{said}", flush=True)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)  # the analysis we started, and only it
                proc.communicate()
                print(f"{make.__name__[1:]:18} TIMEOUT after {time.monotonic() - t:.0f} s", flush=True)
            if make in (_deep_tree, _folder_1m_files):
                subprocess.run(["rm", "-rf", str(target)], check=False)
            elif target.is_file():
                target.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
