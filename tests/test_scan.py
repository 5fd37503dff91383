"""The scanning stage (postmortem/scan.py) reads every fixture exactly as line by line reading does.

Both paths are run on every text file of fixtures/ (the blind set excepted) and
../shared/corpus, the scan with tiny blocks so block edges fall everywhere; events (with
their order, lines, counts and data), stacks, facts and line counts must be identical.
Then whole bundles are analysed both ways and their verdicts compared.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from postmortem import bundle, run, scan
from postmortem.parsers import parse_text
from postmortem.parsers.nccl import PREFILTER

PREFIX = re.compile(r"^(\S+?):(\d+):(\d+) ")

from conftest import FIXTURES, ROOT

SHARED_CORPUS = ROOT.parent.parent / "shared" / "corpus"
if not SHARED_CORPUS.is_dir():
    SHARED_CORPUS = Path("/work/shared/corpus")


def _text_files() -> list[Path]:
    roots = [FIXTURES] + ([SHARED_CORPUS] if SHARED_CORPUS.is_dir() else [])
    out = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if not p.is_file() or "frozen" in p.relative_to(root).parts:
                continue
            head = p.open("rb").read(bundle.SNIFF_BYTES)
            if bundle.sniff(head) == "text":
                out.append(p)
    return out


TEXT_FILES = _text_files()


def _both(data: bytes, block: int, shared: dict | None = None, name: str = "f.log"):
    slow_lines, fast_lines = bundle.iter_lines(io.BytesIO(data)), bundle.iter_lines(io.BytesIO(data))
    slow = parse_text(name, slow_lines, host="h")
    fast = scan.scan_text(name, fast_lines, host="h", block_bytes=block, shared=shared)
    assert fast_lines.cut_lines == slow_lines.cut_lines
    return slow, fast


def _same(slow, fast) -> None:
    assert fast.lines == slow.lines
    assert fast.unclaimed == slow.unclaimed
    assert fast.parsers == slow.parsers
    assert [(e.kind, e.ref, e.text, e.stamp, e.host, e.pid, e.tid, e.rank, e.severity, dict(e.data), e.seq)
            for e in fast.sink.events] == \
           [(e.kind, e.ref, e.text, e.stamp, e.host, e.pid, e.tid, e.rank, e.severity, dict(e.data), e.seq)
            for e in slow.sink.events]
    assert fast.sink.stacks == slow.sink.stacks
    assert fast.sink.facts == slow.sink.facts
    assert fast.sink.problems == slow.sink.problems


def test_fixture_set_is_not_empty():
    assert len(TEXT_FILES) > 300


@pytest.mark.parametrize("block,share,across", [(4096, 2.0, False), (1 << 20, 2.0, False),
                                                (1 << 20, scan.DISTINCT_SHARE, False), (4096, 2.0, True)])
def test_scan_reads_every_fixture_like_line_by_line(block, share, across, monkeypatch):
    """`across`: one class cache shared by every file read, as in one analysis."""
    monkeypatch.setattr(scan, "DISTINCT_SHARE", share)  # 2.0: never fall back to line by line
    shared: dict | None = {} if across else None
    for path in TEXT_FILES:
        data = path.read_bytes()
        try:
            _same(*_both(data, block, shared, path.name))
        except AssertionError as exc:
            raise AssertionError(f"{path}: {exc}") from None


def _nccl_lines() -> list[str]:
    lines = []
    for path in TEXT_FILES:
        for line in path.read_text(errors="replace").splitlines():
            if PREFILTER.search(line):
                lines.append(line)
    return lines


def test_repeated_blocks_of_real_lines_count_exactly():
    """Real NCCL lines (WARNs and error chains included) repeated many times, with and
    without 2.26 stamps: repeats are counted, not parsed, and the counts match."""
    lines = _nccl_lines()
    assert len(lines) > 300
    body = "\n".join(lines[:240]) + "\n"
    stamped = "".join(f"[2026-11-29 08:49:{i % 60:02d}] {line}\n" for i, line in enumerate(lines[240:480]))
    data = (body * 5 + stamped * 3 + body).encode()
    slow, fast = _both(data, 64 << 10)
    _same(slow, fast)
    counts = [e.data["count"] for e in fast.sink.events if "count" in e.data]
    assert max(counts) >= 6
    assert any(e.data.get("channel_lines", 0) > len(e.data["channels"]) for e in fast.sink.events
               if e.kind == "nccl.transport")


def test_crlf_nul_and_long_lines_read_alike():
    lines = _nccl_lines()[:200]
    data = ("\r\n".join(lines) + "\rlone cr\x00 line\n" + "x" * (bundle.MAX_LINE_CHARS + 10) + "\n"
            + "\n".join(lines) + "\nno newline at the end").encode()
    _same(*_both(data, 4096))


def _verdict(path: Path, minimum: int, monkeypatch) -> tuple:
    monkeypatch.setattr(scan, "SCAN_MIN_BYTES", minimum)
    monkeypatch.setattr(scan, "DISTINCT_SHARE", 2.0)
    a = run.analyze(path)
    v = a.verdict
    return (v.category, v.cause, v.confidence, v.signature,
            tuple((r.path, r.line) for r in (v.root.evidence if v.root else ())),
            tuple((f.cause, f.confidence) for f in v.symptoms))


def _bundles() -> list[Path]:
    found = {p.parent / "bundle" for p in FIXTURES.rglob("truth.json")
             if "frozen" not in p.relative_to(FIXTURES).parts and (p.parent / "bundle").is_dir()}
    if SHARED_CORPUS.is_dir():
        found |= {p / "bundle" for p in SHARED_CORPUS.iterdir() if (p / "bundle").is_dir()}
    return sorted(found)


def test_every_fixture_verdict_is_unchanged_by_the_scan(monkeypatch):
    bundles = _bundles()
    assert len(bundles) > 50
    for b in bundles:
        assert _verdict(b, 0, monkeypatch) == _verdict(b, 1 << 60, monkeypatch), b


def test_a_line_longer_than_a_block_is_cut_not_joined():
    """A line of 200 blocks' worth of NULs (DELIBERATELY HOSTILE, made here) between real
    lines: each piece stays about one block, the long line is cut, the next line is read
    at its number."""
    xid = b"[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
    chunks = [xid] + [b"\0" * 1000] * 200 + [b"\0" * 10 + b"\n" + xid]
    pieces = list(scan.blocks(iter(chunks), size=4096))
    assert max(map(len, pieces)) <= 4096 + 2 * 1000 + 1    # a block and at most two chunks, never the line
    lines = [line for piece in pieces for line in scan.split_lines(piece.decode())[0]]   # as _Reader.block
    assert [i for i, line in enumerate(lines, 1) if "Xid" in line] == [1, 3] and len(lines) == 3


def test_ranks_share_line_classes_and_still_read_alike():
    """Many ranks' copies of real NCCL lines (hosts and pids differing in digits and in
    letters, WARNs and error chains included) read through one shared class cache give
    the same events per file as line by line reading; the cache is keyed without digits."""
    lines = [line for line in _nccl_lines() if PREFIX.match(line)][:400]
    assert len(lines) > 100
    shared: dict = {}
    for rank, host in enumerate(["node000", "node017", "gpu-a-3", "node", "Traceback", "x1y2"]):
        text = "".join(PREFIX.sub(f"{host}:{1000 + rank * 37}:{7 + rank} ", line) + "\n" for line in lines)
        _same(*_both((text * 3).encode(), 64 << 10, shared))
    assert any(key.startswith("node\0\0\0:") for key in shared)  # node000 and node017 share classes


def test_a_file_read_whole_by_name_keeps_its_own_classes():
    """clock.json is wanted line by line whatever it says: no shared class applies to it."""
    lines = _nccl_lines()[:100]
    data = ("\n".join(lines) + "\n").encode()
    shared: dict = {}
    _same(*_both(data, 4096, shared, "f.log"))
    _same(*_both(data, 4096, shared, "clock.json"))


@pytest.mark.parametrize("data", [
    b"a\xff\xfeb\nok\n\xe2\x82\nok\n\xe2\x82\xac\n",         # invalid and cut UTF-8 sequences
    b"x\ny\r\nx\n", b"x\x00y\nx\n", b"no newline at the end", b"\n\n\n", b"", b"x\ny\nx",
    b"[2024-01-02 03:04:05] a\nb\n[2024-01-02 03:04:06] a\n",  # stamps: counted without them
    b"b\n[2024-01-02 03:04:05] a\n[2024-01-02 03:04:06] a\n",  # the first line without one
    b"[0] x\n[0] x\n",                                        # a bracket that is no stamp
    "é".encode() * 40 + b"\n" + b"e" * 70 + b"\n",            # longer than the cap in bytes only
    b"e" * 90 + b"\nshort\n" + b"e" * 90 + b"\n",             # longer than the cap
])
def test_counted_pieces_are_the_lines_split_lines_gives(data):
    """DELIBERATELY HOSTILE pieces, made here: the lines _counted hands on (split as bytes
    and each distinct line decoded alone where it can) are what split_lines gives for the
    decoded piece, cut alike, and each key is counted as often as it occurs."""
    lines, cut = scan.split_lines(data.decode("utf-8", "replace"), 64)
    keys, counts, got, got_cut = scan._counted(data, 64)
    assert list(got) == lines and [got[i] for i in range(len(lines))] == lines and len(got) == len(lines)
    assert got_cut == cut and len(keys) == len(lines) and sum(counts.values()) == len(lines)
    assert all(counts[key] == keys.count(key) for key in counts)
    if b"] a" in data:  # stamped: the two `a` lines are one key
        assert max(counts.values()) == 2


def test_counted_keys_keep_their_newline_and_an_unended_last_line_is_its_copies_key():
    """_counted splits a piece with BytesIO.readlines (memchr, not bytes.split's byte loop): each
    key is a line with its newline, so a last line that has none must get one, or it would be
    counted apart from its copies (a routine line's `count` one short, an extra distinct line)."""
    keys, counts, got, cut = scan._counted(b"x\ny\nx", 64)
    assert keys == [b"x\n", b"y\n", b"x\n"] and counts == {b"x\n": 2, b"y\n": 1} and cut == 0
    assert list(got) == ["x", "y", "x"] == scan.split_lines("x\ny\nx", 64)[0]
    keys, counts, got, _ = scan._counted(b"\n\nz\n", 64)   # empty lines are keys too
    assert keys == [b"\n", b"\n", b"z\n"] and counts[b"\n"] == 2 and list(got) == ["", "", "z"]
    # exactly at the cap in characters: not cut (the newline is not counted against the cap)
    keys, counts, got, cut = scan._counted(b"e" * 64 + b"\n" + b"e" * 64, 64)
    assert cut == 0 and counts == {b"e" * 64 + b"\n": 2} and list(got) == ["e" * 64] * 2
    keys, counts, got, cut = scan._counted(b"e" * 65 + b"\n", 64)
    assert cut == 1 and list(got) == ["e" * 64]


def test_message_candidates_per_shape_follow_keywords_with_digits():
    """MessageMatcher.candidates remembers, per line shape (scan.py masks the digits of a
    `host:pid:tid ` prefix), the messages whose keywords occur in the line; a keyword with a
    digit can occur in one rank's copy and not in another's of the same shape, so those
    messages are tried on every line.  Fed with and without the shape, alike."""
    from types import SimpleNamespace

    from postmortem.parsers.base import Line, Sink
    from postmortem.parsers.messages import MessageMatcher

    def message(id_, keywords, pattern, role="context"):
        return SimpleNamespace(id=id_, keywords=tuple(keywords), regex=re.compile(pattern), role=role,
                               severity="info")

    k = SimpleNamespace(messages=(
        message("host_digit", ["node17:"], r"node17:\d+:\d+ .*up"),                  # a digit keyword in the prefix
        message("plain_word", ["link up"], r"link up (?P<port>\w+)"),
        message("causal", ["failed"], r"(?P<what>\w+) failed", role="root"),
    ))
    shape_of = {}
    texts = ["node18:100:7 link up ib0", "node17:100:7 link up ib0", "node17:200:9 link up ib0",
             "node27:100:7 send failed", "node17:100:7 send failed", "node99:1:1 nothing here"]
    for text in texts:
        head = scan._THREAD.match(text)[0]
        shape_of[text] = head.translate(scan._DIGITS) + text[len(head):]
    assert shape_of[texts[0]] == shape_of[texts[1]] == shape_of[texts[2]]
    with_shape, without = Sink(), Sink()
    fast, slow = MessageMatcher("f.log", with_shape, k), MessageMatcher("f.log", without, k)
    for no, text in enumerate(texts * 2, 1):
        line = Line("f.log", no, text, text, "h")
        assert fast.feed(line, shape_of[text]) == slow.feed(line)
    assert [(e.kind, e.ref, dict(e.data)) for e in with_shape.events] == \
           [(e.kind, e.ref, dict(e.data)) for e in without.events]
    assert {e.kind for e in with_shape.events} == {"msg.host_digit", "msg.plain_word", "msg.causal"}
