"""One pass over every class of issue 19's red-team list, through the real command line
with every output written: exit 0 or 2, no traceback, peak RSS under 500 MB, a canary
planted beside the bundle (and in the working directory) never reaches any output, the
bundle is unchanged, and every output is inert: the Markdown renders (markdown-it-py,
CommonMark + linkify, as GitHub does) without a link, image or HTML from the bundle, the
HTML report carries no element or attribute from the bundle, the terminal text no control,
escape or bidi character, the JSON parses.

Every bundle is DELIBERATELY HOSTILE and generated here at a scale that keeps the suite
quick (bench/hostile_bench.py runs the full-size ones and prints time and memory); each
also holds a file named with raw HTML whose lines carry the injection payloads.
"""
from __future__ import annotations

import gzip
import html.parser
import json
import os
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.report.test_inert import HOSTILE as PAYLOADS, TERMINAL_BAD, _active, _md
from tests.test_core import hostile_core, note_segment
from tests.test_hostile import (CANARY, WARN_LINE, XID_LINE, _cli, outside, _good_member, _tar_header, _tree_hash,
                                overlapping_zip)  # noqa: F401 - outside is a fixture

ROOT = Path(__file__).resolve().parent.parent
EVIL_FILE = "<img src=x onerror=alert(1)>`.log"
EVIL_LINES = "".join(f"[rank0]: NCCL WARN {p}\nerror_file: /tmp/{p}/error.txt\n" for p in PAYLOADS)


def _dir(tmp: Path) -> Path:
    b = tmp / "bundle"
    b.mkdir()
    (b / EVIL_FILE).write_text(EVIL_LINES)
    return b


def _tar(tmp: Path, members: list[tuple[str, bytes]], extra: bytes = b"", gz: bool = False) -> Path:
    raw = b"".join(_good_member(name, data) for name, data in members) + extra + b"\0" * 1024
    p = tmp / ("bundle.tgz" if gz else "bundle.tar")
    p.write_bytes(gzip.compress(raw) if gz else raw)
    return p


# -- each class: a builder returning the path to analyse ------------------------------------------

def gzip_of_newlines(tmp):
    b = _dir(tmp)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    (b / "log.txt.gz").write_bytes(b"".join(comp.compress(b"\n" * (1 << 20)) for _ in range(64)) + comp.flush())
    return b


def identical_warn_lines(tmp):
    b = _dir(tmp)
    (b / "nccl.log").write_bytes(WARN_LINE * 50_000)
    return b


def zip_entries_sharing_one_stream(tmp):
    return overlapping_zip(tmp / "overlap.zip", 16 << 20, entries=60)


def tgz_member_bomb(tmp):
    info = tarfile.TarInfo("zeros.log")
    info.size = 256 << 20
    raw = info.tobuf(format=tarfile.USTAR_FORMAT) + b"\0" * info.size + b"\0" * 1024
    p = tmp / "bomb.tgz"
    p.write_bytes(gzip.compress(raw, compresslevel=1))
    return p


def tar_extended_header_bombs(tmp):
    evil = b"460000 " + b"1 " * 49_996 + b"\n"       # CVE-2024-6232's shape
    evil = b"%d " % len(evil) + evil[7:]
    p = tmp / "headers.tar"
    with open(p, "wb") as f:
        f.write(_good_member() + _good_member(EVIL_FILE, EVIL_LINES.encode())
                + _tar_header("././@PaxHeader", len(evil), tarfile.XHDTYPE) + evil + b"\0" * (-len(evil) % 512)
                + _tar_header("././@LongLink", 2_000_000_000, tarfile.GNUTYPE_LONGNAME) + b"a" * 4096)
        f.truncate(2_100_000_000)                       # sparse
    return p


def tar_links_out_and_evil_names(tmp):
    raw = b""
    for name, target, kind in (("passwd", "/etc/passwd", tarfile.SYMTYPE), ("up", "../../outside/secret.log",
                               tarfile.SYMTYPE), ("hard", "/etc/shadow", tarfile.LNKTYPE)):
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, target
        raw += info.tobuf(format=tarfile.USTAR_FORMAT)
    return _tar(tmp, [("dmesg.txt", XID_LINE), (EVIL_FILE, EVIL_LINES.encode()), ("../../outside/x.log", b"x\n"),
                      ("/abs.log", b"x\n"), ("dup.log", b"one\n"), ("dup.log", b"two\n")], extra=raw, gz=True)


def zip_duplicates_and_evil_names(tmp):
    p = tmp / "bundle.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("dmesg.txt", XID_LINE)
        zf.writestr(EVIL_FILE, EVIL_LINES)
        zf.writestr("dup.log", "one\n")
        zf.writestr("dup.log", "two\n")
        zf.writestr("../outside/secret.log", "x\n")
    return p


def regex_attack_lines(tmp):
    b = _dir(tmp)
    lines = [("unable to write to file </torch_1_2>: " + " a" * 4000), "[" * 65000 + " NCCL WARN x",
             " " * 65536, "\t" * 65536, "error_file: " + "/" * 8000, "/" * 8000 + " segfault at",
             "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL("
             "SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(m " * 80]
    (b / "stderr.log").write_text("\n".join(f"{line} {i}" for i in range(5) for line in lines) + "\n")
    return b


def text_then_a_huge_hole(tmp):
    b = _dir(tmp)
    with open(b / "dmesg.txt", "wb") as f:
        f.write(XID_LINE * 100)
        f.truncate(100 << 30)
    return b


def deep_tree_links_and_hard_links(tmp, outside):
    b = _dir(tmp)
    d = b
    for _ in range(300):
        d = d / "d"
    d.mkdir(parents=True)
    (d / "x.log").write_bytes(XID_LINE)
    (b / "out.log").symlink_to(outside / "secret.log")
    (b / "dirlink").symlink_to(outside)
    os.link(outside / "secret.log", b / "hard.log")
    return b


def hostile_timestamps(tmp):
    b = _dir(tmp)
    (b / "dmesg.txt").write_text("[99999999999999.1] python3[4242]: segfault at 10 ip 00007f sp 00007f error 6\n"
                                 "[90000000000000.5] python3[4242]: segfault at 10 ip 00007f sp 00007f error 6\n")
    (b / "dmesg_T.txt").write_text("[Mon Jan  1 00:00:00 9999] python3[5]: segfault at 10 ip 1 sp 1 error 6\n")
    (b / "proc_stat_btime.txt").write_text("btime 999999999999999\n")
    (b / "clock.json").write_text('{"realtime": 1e300, "monotonic": -1e300, "tz": "/etc/passwd"}')
    (b / "train.log").write_text("E1129 08:40:19.943000 24576 torch/distributed/elastic/multiprocessing/api.py:1002] "
                                 "failed (exitcode: -11) local_rank: 1 (pid: 4242) of binary: /x/python3\n")
    return b


def utf16_and_utf32_logs(tmp):
    b = _dir(tmp)
    (b / "u16.log").write_bytes(("\ufeff" + XID_LINE.decode() + EVIL_LINES).encode("utf-16-le"))
    (b / "u32.log").write_bytes(("\ufeff" + EVIL_LINES).encode("utf-32"))
    return b


def malformed_cores(tmp):
    b = _dir(tmp)
    hostile_core(b / "xnum.core", 0, xnum=60_000_000, size=60_000_000 * 56 + 16384)
    hostile_core(b / "notes.core", 1, note_segment(4096, 4_000_000 * 12), size=4096 + 4_000_000 * 12)
    return b


def core_naming_files_outside(tmp):
    """A real core whose NT_FILE names /tmp/pmcores/crash; its executable, with symbols, is
    planted in the analyst's working directory: its symbols must not be used."""
    b = _dir(tmp)
    shutil.copy(ROOT / "fixtures/cores/segv-maperr.core.gz", b / "segv-maperr.core.gz")
    shutil.copy(ROOT / "fixtures/cores/crash", tmp / "crash")
    return b


CLASSES = [gzip_of_newlines, identical_warn_lines, zip_entries_sharing_one_stream, tgz_member_bomb,
           tar_extended_header_bombs, tar_links_out_and_evil_names, zip_duplicates_and_evil_names,
           regex_attack_lines, text_then_a_huge_hole, deep_tree_links_and_hard_links, hostile_timestamps,
           utf16_and_utf32_logs, malformed_cores, core_naming_files_outside]


class _Elements(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name.startswith("on") or "evil.example" in (value or "") or (tag == "img" and value == "x"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data):
        if self.lasttag == "script" and "alert(1)" in data:
            self.found.append(f"script {data[:60]!r}")


@pytest.mark.parametrize("make", CLASSES, ids=[m.__name__ for m in CLASSES])
def test_hostile_class_through_the_cli(make, tmp_path, outside):
    (tmp_path / "cwd-secret.log").write_text(f"{CANARY}\n")      # a canary in the working directory too
    target = make(tmp_path, outside) if make is deep_tree_links_and_hard_links else make(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    before = _tree_hash(target)
    rc, stdout, stderr, rss = _cli(["analyze", str(target), "--html", str(out / "r.html"), "--json",
                                    str(out / "r.json"), "--markdown", str(out / "r.md")], tmp_path)
    assert "Traceback" not in stderr and rc in (0, 2), stderr[-2000:]
    assert _tree_hash(target) == before, "the bundle was modified"
    assert 0 < rss < 500 * 1024, f"peak RSS {rss} KiB"
    files = {p.name: p.read_text(errors="replace") for p in out.iterdir()}
    everything = "\n".join([stdout, stderr, *files.values()])
    assert CANARY not in everything, "a file outside the bundle was read"
    assert not TERMINAL_BAD.search((stdout + stderr).replace("\n", "")), (stdout + stderr)[-1000:]
    if rc != 0:
        assert stderr.strip()
        return
    json.loads(files["r.json"])
    assert not _active(_md().parse(files["r.md"])), files["r.md"][:2000]
    page = _Elements()
    page.feed(files["r.html"])
    assert not page.found, page.found[:5]
    if make is core_naming_files_outside:
        assert "segv_maperr" not in everything and "segv-maperr.core.gz" in everything
    if make is deep_tree_links_and_hard_links:
        assert "hard link" in everything
