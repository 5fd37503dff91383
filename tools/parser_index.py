"""Write postmortem/parsers/index.json (run after editing any module of postmortem/parsers/,
postmortem/signals.py or postmortem/sizes.py, or when running another Python minor version):

    python tools/parser_index.py            # write the index
    python tools/parser_index.py --check    # exit 1 when the index is missing or stale

The index lists every parser of postmortem.parsers.PARSERS in registry order with its name,
module, class, prefilter and gates (pattern and flags), and whether it must be imported at
once; parse_text uses it to import a parser's module only when its prefilter first takes a
line.  It carries the sha256 of the package's sources and the Python version: a stale index
is not used (every parser is imported, as before).  tests/test_parser_index.py fails while
it is stale.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from postmortem import parsers  # noqa: E402
from generated_file import write_or_check  # noqa: E402  (tools/ is sys.path[0] when run)

OUT = ROOT / "postmortem" / "parsers" / parsers.INDEX


def render() -> str:
    return json.dumps(parsers.index(), indent=1, sort_keys=True) + "\n"


def main() -> int:
    text = render()
    return write_or_check(OUT, ROOT, text, __doc__, "python tools/parser_index.py", f"{len(parsers.PARSERS)} parsers")


if __name__ == "__main__":
    sys.exit(main())
