"""Write postmortem/precompiled/*.marshal (run after adding or changing a dataclass or a regex
anywhere in postmortem/, or when running another Python version):

    python tools/precompile.py            # write the files
    python tools/precompile.py --check    # exit 1 when one is missing or stale

Records, in this fresh process, the method texts dataclasses compiles for the package's
classes and the patterns re compiles for the package and the standard library (not for other
packages: their versions vary) while it runs `postmortem --help` and `postmortem analyze` of a
one-line bundle three ways (terminal + HTML, JSON only, Markdown) and of a one-file bundle big
enough for the scanning stage (JSON only); stores their compiled forms
(postmortem/precompiled.py says why and how they are used).  A file is for the Python version
that made it; a stale or foreign one costs startup time only, never a different result.
tests/test_precompiled.py fails while they are stale.
"""
import builtins
import sys
from re import _compiler

_RECORDED: dict[str, set] = {"methods": set(), "regexes": set()}
_ORIGINAL_COMPILE = _compiler.compile


def _ours(module: str) -> bool:
    """The package's, or the standard library's (whose patterns are fixed by the Python version)."""
    return module.startswith("postmortem") or module.split(".")[0] in sys.stdlib_module_names


def _record_regex(pattern, flags=0):
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in ("re", "functools"):
        frame = frame.f_back
    if frame is not None and type(pattern) in (str, bytes) and _ours(frame.f_globals.get("__name__", "")):
        _RECORDED["regexes"].add((pattern, flags))
    return _ORIGINAL_COMPILE(pattern, flags)


_compiler.compile = _record_regex   # before anything else is imported: their patterns count too

import dataclasses  # noqa: E402


def _record_method(source, globals=None, locals=None):
    if type(source) is str and str((globals or {}).get("__name__", "")).startswith("postmortem"):
        _RECORDED["methods"].add(source)
    return builtins.exec(source, globals, locals)


dataclasses.exec = _record_method

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from postmortem import precompiled  # noqa: E402

OUT = ROOT / "postmortem" / precompiled.FOLDER
COMMAND = "python tools/precompile.py"
# The line tests/test_startup.py and bench/startup_bench.py analyse (a real NCCL INFO line).
NCCL_LINE = "node000:10000:10007 [0] NCCL INFO Bootstrap : Using [0]eth1:9.73.133.81<0>\n"


def record() -> dict[str, set]:
    from postmortem.cli import main

    with tempfile.TemporaryDirectory(prefix="pm-precompile-") as t:
        tmp = Path(t)
        (tmp / "b").mkdir()
        (tmp / "b" / "nccl.log").write_text(NCCL_LINE, encoding="utf-8")
        # A file big enough for the scanning stage (scan.py): its reader asks every parser's
        # gates and prefilters at once (~50 ms of compiling otherwise, issue 17).
        from postmortem import scan

        (tmp / "s").mkdir()
        (tmp / "s" / "nccl.log").write_text(NCCL_LINE * (scan.SCAN_MIN_BYTES // len(NCCL_LINE) + 1), encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()):
            b, s = str(tmp / "b"), str(tmp / "s")
            for argv in (["--help"], ["analyze", b, "--html", str(tmp / "r.html")],
                         ["analyze", b, "--html", "-", "--json", str(tmp / "v.json"), "-q"],
                         ["analyze", b, "--html", "-", "--markdown", "-"],
                         ["analyze", s, "--html", "-", "--json", str(tmp / "s.json"), "-q"]):
                if main(argv) != 0:
                    raise SystemExit(f"postmortem {' '.join(argv)} failed")
    return _RECORDED


def files(recorded: dict[str, set]) -> dict[str, dict]:
    return {precompiled.METHODS: {t: None for t in recorded["methods"]},
            precompiled.REGEXES: {k: None for k in recorded["regexes"]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when a file differs from a fresh run")
    args = ap.parse_args()
    recorded = record()
    stale = 0
    for name, keys in files(recorded).items():
        path = OUT / name
        shown = path.relative_to(ROOT)
        if args.check:
            have = set(precompiled.stored(name))
            if have != set(keys):
                print(f"{shown} is stale ({len(set(keys) - have)} missing, {len(have - set(keys))} unused, or made "
                      f"by another Python): run {COMMAND}", file=sys.stderr)
                stale += 1
            else:
                print(f"{shown} is current")
            continue
        if name == precompiled.METHODS:
            values = {t: precompiled.compiled_method(t) for t in keys}
        else:
            values = {(p, f): precompiled.compiled_regex(p, f) for p, f in keys}
        OUT.mkdir(exist_ok=True)
        path.write_bytes(precompiled.dumps(values))
        print(f"wrote {shown} ({len(values)} entries, {path.stat().st_size:,} bytes)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
