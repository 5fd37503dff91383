"""`analyze --gdb`: a symbolized gdb backtrace added to what the core reader found."""
import gzip
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

CORES = ROOT / "fixtures/cores"


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_gdb_backtrace_of_an_uncompressed_core_with_its_executable(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "core.1234").write_bytes(gzip.decompress((CORES / "segv-maperr.core.gz").read_bytes()))
    shutil.copy(CORES / "crash", bundle / "crash")
    r = run_cli("analyze", str(bundle), "--gdb", "--json", "-", "--html", "-")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    gdb_stacks = [s for s in v["stacks"] if s["origin"] == "gdb"]
    assert gdb_stacks, [a for a in v["artifacts"]]
    functions = [f["function"] for s in gdb_stacks for f in s["frames"]]
    # the same function gdb named when the fixture was made (segv-maperr.gdb.txt)
    expected = [l.split(" in ")[1].split(" (")[0] if " in " in l else l.split()[1]
                for l in (CORES / "segv-maperr.gdb.txt").read_text().splitlines() if l.startswith("#0")][0]
    assert expected in functions
    # and the core reader named the pc from the executable's symbol table too
    core_frames = [f["function"] for s in v["stacks"] if s["origin"] == "core" for f in s["frames"]]
    assert expected in core_frames


def test_gdb_on_a_gzip_core_says_why_not(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    shutil.copy(CORES / "abort.core.gz", bundle / "abort.core.gz")
    r = run_cli("analyze", str(bundle), "--gdb", "--json", "-", "--html", "-")
    v = json.loads(r.stdout)
    (art,) = [a for a in v["artifacts"] if a["path"] == "abort.core.gz"]
    assert "--gdb" in art["message"] and "uncompressed" in art["message"]


# Deliberately hostile input generated at test time: the real segv-maperr core with every
# mention of its executable (NT_FILE, AT_EXECFN string, psargs) renamed, byte for byte, to a
# gdb option of the same length.  "CN" is the canary file the option would create.
HOSTILE_NAME = b"-ex=shell touch CN"


def hostile_core() -> bytes:
    data = gzip.decompress((CORES / "segv-maperr.core.gz").read_bytes())
    assert len(HOSTILE_NAME) == len(b"/tmp/pmcores/crash") and b"/tmp/pmcores/crash" in data
    return data.replace(b"/tmp/pmcores/crash", HOSTILE_NAME)


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_an_executable_named_like_a_gdb_option_runs_nothing(tmp_path):
    bundle = tmp_path / "b"
    (bundle / "cores").mkdir(parents=True)
    (bundle / "cores" / "core.1234").write_bytes(hostile_core())
    shutil.copy(CORES / "crash", bundle / HOSTILE_NAME.decode())
    # The analyst stands inside the bundle, at its top, where the executable is; the core is
    # in a sub-folder: a name resolved against the cwd would reach gdb as an option.
    r = run_cli("analyze", ".", "--gdb", "--json", "-", "--html", "-", cwd=bundle)
    assert r.returncode == 0, r.stderr
    assert not (bundle / "CN").exists() and not (tmp_path / "CN").exists()
    v = json.loads(r.stdout)
    # gdb did run, on the file as a file: its backtrace is there.
    assert [s for s in v["stacks"] if s["origin"] == "gdb"], v["artifacts"]
    assert sorted(p.name for p in bundle.iterdir()) == sorted(["cores", HOSTILE_NAME.decode()])


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_the_executable_is_never_taken_from_outside_the_bundle(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "core.1234").write_bytes(hostile_core())
    shutil.copy(CORES / "crash", tmp_path / HOSTILE_NAME.decode())    # beside the bundle, in the cwd
    (bundle / "link").symlink_to(tmp_path / HOSTILE_NAME.decode())
    r = run_cli("analyze", "b", "--gdb", "--json", "-", "--html", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "CN").exists()
    v = json.loads(r.stdout)
    (art,) = [a for a in v["artifacts"] if a["path"] == "core.1234"]
    assert "not found in the bundle" in art["message"]
    assert not [s for s in v["stacks"] if s["origin"] == "gdb"]


def test_gdb_gets_absolute_names_after_a_double_dash(tmp_path):
    from postmortem.core.gdb import gdb_command

    argv = gdb_command("/usr/bin/gdb", Path("-ex=shell touch CN"), Path("-c"))
    operands = argv[argv.index("--") + 1:]
    assert operands == [str(Path.cwd() / "-c"), str(Path.cwd() / "-ex=shell touch CN")]
    assert all(not a.startswith("-") or a in ("-batch", "-nx", "-iex", "-ex") for a in argv[1:argv.index("--")])
