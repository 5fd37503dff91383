"""`analyze --gdb`: a symbolized gdb backtrace added to what the core reader found."""
import gzip
import json
import shutil

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
