"""Write postmortem/dataclass_code.marshal (run after adding or changing a dataclass anywhere in
postmortem/, or when running another Python version):

    python tools/dataclass_code.py            # write the file
    python tools/dataclass_code.py --check    # exit 1 when it is missing or stale

Imports every module of the package with dataclasses' exec() recording the method texts it
compiles for the package's classes, and stores their code objects (postmortem/dataclass_code.py
says why and how they are used).  The file is for the Python version that made it: a stale or
foreign one costs startup time only, never a different method.  tests/test_dataclass_code.py
fails while it is stale.
"""
from __future__ import annotations

import argparse
import builtins
import dataclasses
import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from postmortem import dataclass_code  # noqa: E402  (imports no dataclass of the package)

OUT = ROOT / "postmortem" / dataclass_code.FILE
COMMAND = "python tools/dataclass_code.py"


def recorded() -> set[str]:
    """The method texts dataclasses compiles for the package's classes, importing every module
    (in this process: run before anything of the package that defines a dataclass is imported)."""
    assert "exec" not in vars(dataclasses), "dataclasses' exec is already replaced"
    texts: set[str] = set()

    def record(source, globals=None, locals=None):
        if type(source) is str and str((globals or {}).get("__name__", "")).startswith("postmortem"):
            texts.add(source)
        return builtins.exec(source, globals, locals)

    dataclasses.exec = record
    try:
        import postmortem

        for info in pkgutil.walk_packages(postmortem.__path__, "postmortem."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                importlib.import_module(info.name)
    finally:
        del dataclasses.exec
    return texts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help=f"exit 1 when {OUT.name} differs from a fresh run")
    args = ap.parse_args()
    texts = recorded()
    name = OUT.relative_to(ROOT)
    if args.check:
        stored = dataclass_code.stored()
        if set(stored) != texts:
            print(f"{name} is stale ({len(texts - set(stored))} methods missing, {len(set(stored) - texts)} unused, "
                  f"or made by another Python): run {COMMAND}", file=sys.stderr)
            return 1
        print(f"{name} is current")
        return 0
    OUT.write_bytes(dataclass_code.dumps(texts))
    print(f"wrote {name} ({len(texts)} methods, {OUT.stat().st_size:,} bytes, {dataclass_code.header().decode().strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
