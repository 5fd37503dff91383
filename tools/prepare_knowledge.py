"""Write postmortem/knowledge/prepared.json from the knowledge TOML files (run after any
edit of postmortem/knowledge/*.toml or catalogs/readings.toml):

    python tools/prepare_knowledge.py            # validate the TOML files, write prepared.json
    python tools/prepare_knowledge.py --check    # exit 1 when prepared.json is missing or stale

prepared.json holds each file's data as TOML parses it, the sha256 of its text, and the
named groups of every message pattern (found while every pattern is compiled and matched
against its sample).  postmortem reads a file from there only while the digest still holds
(JSON parses ~20x faster than TOML, and no pattern is compiled before a line needs it);
an edited TOML file is read from its text until this is run again.
tests/test_prepared_knowledge.py fails while prepared.json is stale.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from postmortem import knowledge  # noqa: E402
from generated_file import write_or_check  # noqa: E402  (tools/ is sys.path[0] when run)

OUT = ROOT / "postmortem" / "knowledge" / knowledge.PREPARED


def render() -> str:
    """prepared.json's text: stable key order, one run gives the same bytes as the next."""
    return json.dumps(knowledge.prepare(), ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def main() -> int:
    text = render()
    return write_or_check(OUT, ROOT, text, __doc__, "python tools/prepare_knowledge.py",
                          f"{len(text):,} bytes from {', '.join(knowledge.SOURCES)}")


if __name__ == "__main__":
    sys.exit(main())
