"""postmortem/parsers/index.json (made by tools/parser_index.py) lets parse_text import a
parser's module only when its prefilter first takes a line.  It must be what the package
makes now, and reading through its stand-ins must give exactly what the real parsers give."""
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem import parsers
from postmortem.bundle import iter_lines

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import parser_index  # noqa: E402

REGENERATE = "run python tools/parser_index.py and commit postmortem/parsers/index.json"
STORED = json.loads(parser_index.OUT.read_text(encoding="utf-8")) if parser_index.OUT.is_file() else {}
THIS_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
# Prefilters may depend on the Python version (pytrace's builtin exception names): an index
# made by another version is not used there (its digest differs) and is not checked here.
same_python = pytest.mark.skipif(STORED.get("python", THIS_PYTHON) != THIS_PYTHON,
                                 reason="index.json was made by another Python version: not used here")


@same_python
def test_the_index_is_current():
    assert parser_index.OUT.is_file(), f"no postmortem/parsers/index.json: {REGENERATE}"
    stored = json.loads(parser_index.OUT.read_text(encoding="utf-8"))
    assert stored["digest"] == parsers.index_digest(), f"the parsers' sources changed: {REGENERATE}"
    assert parser_index.OUT.read_text(encoding="utf-8") == parser_index.render(), REGENERATE


@same_python
def test_the_index_lists_every_parser_in_registry_order():
    stored = json.loads(parser_index.OUT.read_text(encoding="utf-8"))["parsers"]
    assert [(e["module"], e["class"]) for e in stored] == [(c.__module__, c.__qualname__) for c in parsers.discover()]
    assert any(not e["eager"] for e in stored)
    # ClockParser reads files by their name (it overrides `wants`): never a stand-in
    assert next(e for e in stored if e["class"] == "ClockParser")["eager"]


def test_a_stale_index_is_not_used(monkeypatch):
    monkeypatch.setattr(parsers, "_INDEX_STATE", [])
    monkeypatch.setattr(parsers, "index_digest", lambda: "0" * 64)
    assert parsers._index() is None
    monkeypatch.setattr(parsers, "PARSERS", parsers._Registry())
    made = parsers._instances("x.log", parsers.Sink(), imported={})
    assert [type(p) for p in made] == list(parsers.discover())


def _fixture_logs() -> list[Path]:
    out = []
    for p in sorted((ROOT / "fixtures").rglob("*")):
        rel = p.relative_to(ROOT / "fixtures").parts
        if not p.is_file() or "frozen" in rel or p.suffix in (".json", ".py", ".md", ".gz", ".zip", ".tar", ".pkl", ".sh"):
            continue
        if p.stat().st_size > 1 << 20:
            continue
        head = p.read_bytes()[:4096]
        if b"\0" in head:
            continue
        out.append(p)
    return out


def _read(path: Path) -> tuple:
    with open(path, "rb") as f:
        r = parsers.parse_text(str(path), iter_lines(f))
    return (r.lines, r.unclaimed, r.parsers, r.sink.events, r.sink.stacks, r.sink.facts, r.sink.problems)


def test_stand_ins_read_every_fixture_as_the_real_parsers_do(monkeypatch):
    logs = _fixture_logs()
    assert len(logs) > 100
    monkeypatch.setattr(parsers, "PARSERS", parsers.discover())   # the real classes
    real = [_read(p) for p in logs]
    assert sum(len(r[3]) for r in real) > 1000
    monkeypatch.setattr(parsers, "PARSERS", parsers._Registry())  # not read yet: stand-ins
    monkeypatch.setattr(parsers, "_INDEX_STATE", [parsers.index()["parsers"]])   # this Python's index
    monkeypatch.setattr(parsers, "_instances", functools.partial(parsers._instances, imported={}))
    for path, want in zip(logs, real):
        got = _read(path)
        assert got == want, path.relative_to(ROOT)


@same_python
def test_a_one_line_nccl_file_imports_only_the_parsers_it_needs(tmp_path):
    """A fresh process: the NCCL line imports the NCCL parser; a kernel line, the kernel parser."""
    (tmp_path / "nccl.log").write_text("node000:10000:10007 [0] NCCL INFO Bootstrap : Using [0]eth1:9.73.133.81<0>\n")
    code = """if 1:
        import sys
        from pathlib import Path
        from postmortem.run import Options, analyze
        bundle = Path(sys.argv[1])
        analyze(bundle, Options())
        print(" ".join(sorted(m for m in sys.modules if m.startswith("postmortem.parsers."))))
        (bundle / "dmesg.txt").write_text("[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\\n")
        a = analyze(bundle, Options())
        print(a.verdict.cause, "postmortem.parsers.kernel" in sys.modules)
    """
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    loaded = set(first.split())
    assert "postmortem.parsers.nccl" in loaded
    assert not loaded & {"postmortem.parsers.kernel", "postmortem.parsers.launcher", "postmortem.parsers.gdb",
                         "postmortem.parsers.system", "postmortem.parsers.pytrace"}, loaded
    assert second == "gpu_fell_off_bus True"
