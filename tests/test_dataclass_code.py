"""postmortem/dataclass_code.marshal (made by tools/dataclass_code.py) holds the compiled
methods of the package's dataclasses, so that the command does not compile them on every
start.  It must be current, and every stored code object must be exactly what compiling its
text gives (what dataclasses would run without it)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem import dataclass_code
from postmortem.packaged import packaged

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run python tools/dataclass_code.py and commit postmortem/dataclass_code.marshal"
FILE = packaged("postmortem", dataclass_code.FILE)
same_python = pytest.mark.skipif(FILE.is_file() and not FILE.read_bytes().startswith(dataclass_code.header()),
                                 reason="dataclass_code.marshal was made by another Python version: not used here")


@same_python
def test_the_file_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "dataclass_code.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"{r.stderr.strip()}: {REGENERATE}"


@same_python
def test_every_stored_code_object_is_what_its_text_compiles_to():
    stored = dataclass_code.stored()
    assert stored, REGENERATE
    for text, code in stored.items():
        assert text.startswith("def __create_fn__(")
        assert code == dataclass_code.compiled(text), text


def test_a_file_for_another_python_or_damaged_is_not_used(tmp_path, monkeypatch):
    good = dataclass_code.dumps(["def __create_fn__():\n def f():\n  return 1\n return f"])
    for data in (good.replace(b"cpython-", b"pypy-", 1), dataclass_code.header() + b"\x00garbage", b""):
        (tmp_path / dataclass_code.FILE).write_bytes(data)
        monkeypatch.setattr("postmortem.packaged.packaged", lambda package, *parts: tmp_path.joinpath(*parts))
        assert dataclass_code.stored() == {}
    (tmp_path / dataclass_code.FILE).write_bytes(good)
    assert len(dataclass_code.stored()) == 1


def _compiled_methods(tmp_path: Path, *argv: str) -> list[str]:
    """The dataclass method texts compiled from source while the command ran (audit hook)."""
    code = ("import json, sys\ncompiled = []\n"
            "def text(s):\n    return s.decode('utf-8', 'replace') if isinstance(s, bytes) else str(s)\n"
            "sys.addaudithook(lambda e, a: compiled.append(text(a[0])) if e == 'compile' "
            "and text(a[0]).startswith('def __create_fn__(') else None)\n"
            "from postmortem.cli import main\nrc = main(sys.argv[1:])\nprint(json.dumps([rc, compiled]))")
    r = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rc, compiled = json.loads(r.stdout.splitlines()[-1])
    assert rc == 0
    return compiled


@same_python
def test_the_command_compiles_no_dataclass_method(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "nccl.log").write_text("node000:10000:10007 [0] NCCL INFO Bootstrap : Using [0]eth1:9.73.133.81<0>\n")
    assert _compiled_methods(tmp_path, "analyze", "b", "--html", "r.html", "--json", "v.json", "-q") == []
    assert json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))["verdict"]["category"] == "unknown"


def test_the_library_leaves_dataclasses_alone():
    import dataclasses

    import postmortem.run  # noqa: F401 - the analysis, imported as a library

    assert "exec" not in vars(dataclasses)
