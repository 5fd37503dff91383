"""Bad input never costs the analysis: whatever a file holds, analyze() returns a verdict."""
import gzip
import io
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parent.parent
REAL_LINES = [l for f in sorted((ROOT / "fixtures/corpus").glob("*/bundle/*"))
              for l in f.read_text(errors="replace").splitlines()]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blobs=st.lists(st.binary(max_size=4000), min_size=1, max_size=3))
def test_random_bytes_never_raise(tmp_path_factory, blobs):
    b = tmp_path_factory.mktemp("b")
    for i, blob in enumerate(blobs):
        (b / f"f{i}.log").write_bytes(blob)
    a = analyze(b)
    assert a.verdict.category.value in ("config", "comms", "hardware", "unknown")
    assert len(a.case.artifacts) == len(blobs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, len(REAL_LINES) - 1), min_size=1, max_size=60),
       cut=st.integers(0, 200), junk=st.binary(max_size=64))
def test_shuffled_and_cut_real_lines_never_raise(tmp_path_factory, picks, cut, junk):
    """Real lines in any order, one cut mid-way, NULs and junk between them."""
    lines = [REAL_LINES[i] for i in picks]
    lines[0] = lines[0][:cut]
    text = "\n".join(lines).encode() + b"\x00" + junk
    b = tmp_path_factory.mktemp("b")
    (b / "mixed.txt").write_bytes(text)
    a = analyze(b)
    assert a.verdict.cause
    for r in (a.verdict.root.evidence if a.verdict.root else ()):
        assert r.path == "mixed.txt"


def test_truncated_gzip_and_tar_members(tmp_path):
    data = (ROOT / "fixtures/corpus/xid79-fell-off-bus-01/bundle/dmesg.txt").read_bytes()
    b = tmp_path / "b"
    b.mkdir()
    (b / "dmesg.txt.gz").write_bytes(gzip.compress(data)[:-20])  # cut before the gzip trailer
    a = analyze(b)
    art = a.case.artifacts[0]
    assert art.status.value in ("ok", "error")
    tgz = tmp_path / "cut.tgz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(ROOT / "fixtures/corpus/ecc-uncorrectable-01/bundle/stderr.log", arcname="stderr.log")
        tar.add(ROOT / "fixtures/corpus/xid79-fell-off-bus-01/bundle/dmesg.txt", arcname="dmesg.txt")
    tgz.write_bytes(buf.getvalue()[: len(buf.getvalue()) * 2 // 3])
    try:
        analyze(tgz)
    except Exception as exc:  # only the bundle-level error is allowed, with a message
        from postmortem.bundle import BundleError
        assert isinstance(exc, BundleError) and str(exc)


# ---------------------------------------------------------------- archive reader fuzzing
# Valid archives, then random byte edits, cuts and splices (DELIBERATELY HOSTILE, generated
# here).  Whatever the bytes, analyze() returns an Analysis or raises BundleError with a
# message; nothing else escapes.  A crasher found this way is kept below as a seed.

def _seed_archives() -> dict[str, bytes]:
    import zipfile

    data = (ROOT / "fixtures/corpus/xid79-fell-off-bus-01/bundle/dmesg.txt").read_bytes()[:4000]
    out = {}
    for mode, suffix in (("w", ".tar"), ("w:gz", ".tgz")):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode=mode, format=tarfile.PAX_FORMAT) as tar:
            for name in ("dmesg.txt", "a/" + "long" * 40 + ".log", "b.log"):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.pax_headers = {"comment": "x" * 50}
                tar.addfile(info, io.BytesIO(data))
        out[suffix] = buf.getvalue()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("dmesg.txt", data)
        zf.writestr("b.log", data[:500])
    out[".zip"] = buf.getvalue()
    return out


_SEEDS = _seed_archives()
FUZZ_COUNT = {"inputs": 0}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(_SEEDS)), edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)),
                                                            max_size=12),
       cut=st.one_of(st.none(), st.floats(0.05, 1.0)), splice=st.binary(max_size=600))
def test_fuzzed_archives_never_raise(tmp_path_factory, kind, edits, cut, splice):
    from postmortem.budget import Budget
    from postmortem.bundle import BundleError
    from postmortem.run import Options

    data = bytearray(_SEEDS[kind])
    for pos, value in edits:
        data[pos % len(data)] = value
    if splice:
        at = len(splice) * 7 % len(data)
        data[at:at] = splice
    if cut is not None:
        data = data[: int(len(data) * cut)]
    p = tmp_path_factory.mktemp("f") / f"fuzz{kind}"
    p.write_bytes(bytes(data))
    FUZZ_COUNT["inputs"] += 1
    try:
        a = analyze(p, Options(budget=Budget(bytes=64 << 20, files=500)))
    except BundleError as exc:
        assert str(exc)
        return
    assert a.verdict.category.value in ("config", "comms", "hardware", "unknown")


def test_fuzz_crashers_zip_headers(tmp_path):
    """Crashers found by bench/fuzz_archives.py (seed 1): a local header whose name differs
    from the central directory's, an impossible date, an unknown compression method."""
    import zipfile

    from postmortem.run import Options

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("dmesg.txt", (ROOT / "fixtures/corpus/xid79-fell-off-bus-01/bundle/dmesg.txt").read_bytes())
        zf.writestr("b.log", b"hello\n")
    good = buf.getvalue()
    local_name = good.index(b"dmesg.txt")
    central = good.rindex(b"PK\x01\x02", 0, good.rindex(b"b.log"))
    cases = {
        "name.zip": good[:local_name] + b"dmXsg.txt" + good[local_name + 9:],
        "date.zip": good[:central + 12] + b"\xff\xff" + good[central + 14:],        # central mod time
        "method.zip": good[:central + 10] + b"\x63\x00" + good[central + 12:],      # compression 99
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        a = analyze(p, Options())
        assert a.verdict.category.value in ("config", "comms", "hardware", "unknown"), name
        assert any(x.status.value == "error" for x in a.case.artifacts) or name == "date.zip", name


# Found by bench/fuzz_parsers.py (seeds 11 and 12): mutated real lines that made a parser fail.
FUZZ_CRASHERS = [
    ["tmpfs on /dev/shm type tmpfs (rw,relatime,size=" + "2468365" * 60 + "k)\n"],
    ["Filesystem       1B-blocks  Used   Available Use% Mounted on\n",
     "tmpfs          " + "2527606352760635" * 30 + "     0 25276063744   0% /dev/shm\n"],
    ["[ 1071.101539] oom-kill:constraint=constraint_memcg,NODEMASK=(NULL),CPUSET=/,mems_allowed=0,"
     "oom_memcg=/pmlab,task_memcg=/pmlab,task=python3,pid=24650,uid=0\n"],
    ["[Sun Nov 29 08:35:26 2026] oom-kill:constraint=\u2fdcONSTRAINT_MEMCG,nodemask=(null),cpuset=/\n"],
    ["[dgxa100:1035 :\x1e:1035] Caught signal 7 (Bus error: nonexistent physical address)\n"],
    # seed 22 of this session: a circled digit is a digit to str.isdigit() but not to int()
    ['Thread 12339 (idle): "Thread-2 (dump_on_sigterm)"\n', "    Thread.run (threading.py:98\u2462)\n"],
]


@pytest.mark.parametrize("text", ["98\u2462", "\u00b3", "1\u00b2", "\u2460\u2461"])
def test_digits_int_cannot_read_are_not_numbers(text):
    """str.isdigit() is true for superscripts and circled digits, which int() rejects: every
    parser and rule asks isdecimal() before int() (a fuzz find)."""
    from postmortem import signals

    assert text.isdigit() and not text.isdecimal()
    assert signals.name_of(text) is None     # it raised ValueError before


@pytest.mark.parametrize("lines", FUZZ_CRASHERS)
def test_fuzz_crashers_cost_no_parser_failure(lines):
    from postmortem.parsers import parse_text

    result = parse_text("fuzz.log", lines)
    assert not [p for p in result.sink.problems if " parser failed at " in p]
