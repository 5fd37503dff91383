"""postmortem/precompiled/*.marshal (made by tools/precompile.py) hold the compiled methods of
the package's dataclasses and its compiled regexes, so that the command does not compile them
on every start.  Every stored result must be exactly what compiling gives (what dataclasses and
re would use without them), and the command must use them.  Staleness is not a failure here:
a class or pattern changed since is compiled as before, costing only startup time
(bench/startup_bench.py says when the files are stale; `tools/precompile.py --check`)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import _sre
import pytest

from postmortem import precompiled
from postmortem.packaged import packaged

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run python tools/precompile.py and commit postmortem/precompiled/"
NCCL_LINE = "node000:10000:10007 [0] NCCL INFO Bootstrap : Using [0]eth1:9.73.133.81<0>\n"


def _made_here() -> bool:
    f = packaged("postmortem", precompiled.FOLDER, precompiled.METHODS)
    return not f.is_file() or f.read_bytes().startswith(precompiled.header())


same_python = pytest.mark.skipif(not _made_here(), reason="made by another Python version: not used here")


@same_python
def test_every_stored_method_is_what_its_text_compiles_to():
    stored = precompiled.stored(precompiled.METHODS)
    assert stored, REGENERATE
    for text, code in stored.items():
        assert text.startswith("def __create_fn__(")
        assert code == compile(text, "<string>", "exec", dont_inherit=True), text


@same_python
def test_every_stored_regex_is_what_re_compiles():
    stored = precompiled.stored(precompiled.REGEXES)
    assert stored, REGENERATE
    for (pattern, flags), made in stored.items():
        ours, re_s = _sre.compile(pattern, *made), re._compiler.compile(pattern, flags)
        # Pattern equality compares pattern, flags and the compiled code
        assert ours == re_s and (ours.groups, ours.groupindex) == (re_s.groups, re_s.groupindex), pattern


def test_a_file_for_another_python_or_damaged_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(precompiled, "__file__", str(tmp_path / "precompiled.py"))
    (tmp_path / precompiled.FOLDER).mkdir()
    f = tmp_path / precompiled.FOLDER / precompiled.REGEXES
    good = precompiled.dumps({("a+(?P<b>c)", 0): precompiled.compiled_regex("a+(?P<b>c)", 0)})
    for data in (good.replace(b"cpython-", b"pypy-", 1), precompiled.header() + b"\x00garbage", b""):
        f.write_bytes(data)
        assert precompiled.stored(precompiled.REGEXES) == {}
    f.write_bytes(good)
    assert list(precompiled.stored(precompiled.REGEXES)) == [("a+(?P<b>c)", 0)]


def _compiled_at_run(tmp_path: Path, *argv: str) -> dict:
    """What the command compiled from source in a fresh process: dataclass methods (audit
    hook), and the patterns re's parser read once main() runs, with the module that asked."""
    code = ("import json, sys\nfrom re import _parser\nmethods, parsed = [], []\n"
            "def text(s):\n    return s.decode('utf-8', 'replace') if isinstance(s, bytes) else str(s)\n"
            "sys.addaudithook(lambda e, a: methods.append(text(a[0])) if e == 'compile' "
            "and text(a[0]).startswith('def __create_fn__(') else None)\n"
            "parse = _parser.parse\n"
            "def counted(p, *a, **k):\n"
            "    f = sys._getframe(1)\n"
            "    while f is not None and f.f_globals.get('__name__', '').split('.')[0] in ('re', 'functools'):\n"
            "        f = f.f_back\n"
            "    parsed.append([f.f_globals.get('__name__', '') if f is not None else '', text(p)])\n"
            "    return parse(p, *a, **k)\n"
            "from postmortem.cli import main\n"   # (argparse's import compiles gettext's pattern before main)
            "_parser.parse = counted\n"
            "rc = main(sys.argv[1:])\n"
            "print(json.dumps({'rc': rc, 'methods': methods, 'patterns': parsed}))")
    r = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["rc"] == 0
    return out


@same_python
def test_a_one_line_analysis_compiles_nothing_that_is_stored(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "nccl.log").write_text(NCCL_LINE)
    out = _compiled_at_run(tmp_path, "analyze", "b", "--html", "-", "--json", "v.json", "-q")
    methods, patterns = precompiled.stored(precompiled.METHODS), precompiled.stored(precompiled.REGEXES)
    assert methods and patterns, REGENERATE
    assert [m for m in out["methods"] if m in methods] == []
    stored_patterns = {p if isinstance(p, str) else p.decode("utf-8", "replace") for p, _ in patterns}
    assert [p for _, p in out["patterns"] if p in stored_patterns] == []
    # and what it stores is most of what such a run compiles (a few may be new since it was made)
    ours = [p for module, p in out["patterns"] if module.startswith("postmortem")]
    assert len(out["methods"]) < len(methods) // 4 and len(ours) < len(patterns) // 4, REGENERATE
    assert json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))["verdict"]["category"] == "unknown"
    assert json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))["verdict"]["category"] == "unknown"


def test_the_library_leaves_dataclasses_and_re_alone():
    code = ("import dataclasses, re, postmortem.run\n"   # the analysis, imported as a library (fresh process)
            "print('exec' in vars(dataclasses), re._compiler.compile.__module__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "re._compiler"]
