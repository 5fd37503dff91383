"""Write a build-time file, or with --check say whether the committed one is current (the
shared end of tools/parser_index.py and tools/prepare_knowledge.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def write_or_check(out: Path, root: Path, text: str, description: str, command: str, summary: str) -> int:
    """The tool's main: exit 0 when written or current, 1 when --check finds `out` stale."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help=f"exit 1 when {out.name} differs from a fresh run")
    args = ap.parse_args()
    name = out.relative_to(root)
    if args.check:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            print(f"{name} is stale: run {command}", file=sys.stderr)
            return 1
        print(f"{name} is current")
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {name} ({summary})")
    return 0
