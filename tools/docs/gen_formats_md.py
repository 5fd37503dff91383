"""Write the "Formats the parsers read" index of docs/formats.md from the parser modules.

Every parser in `postmortem.parsers.PARSERS` (discovered from the package) becomes one row: its
name, its module, its grammar (if it has one), its fixture folder (if `fixtures/<name>/`
exists) and what it reads: the first paragraph of its module docstring.  So a new format is
documented by its own module; the sections below the index are hand-written depth for the
older formats.  The rows stand between the two markers; tests/test_architecture.py fails when
the block is not what this script writes:

    python tools/docs/gen_formats_md.py          # rewrite docs/formats.md
    python tools/docs/gen_formats_md.py --check  # exit 1 when it is not current
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORMATS_MD = ROOT / "docs" / "formats.md"
BEGIN = "<!-- generated from the parser modules by tools/docs/gen_formats_md.py: do not edit -->"
END = "<!-- end of generated formats -->"


def _summary(doc: str | None) -> str:
    first = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(first.split()).replace("|", "\\|")


def table(parsers, root: Path = ROOT) -> str:
    """The generated block: one row per parser, in the order the pipeline offers lines."""
    rows = ["| parser | module | grammar | fixtures | what it reads |", "|---|---|---|---|---|"]
    for parser in parsers:
        module = importlib.import_module(parser.__module__)
        path = parser.__module__.replace(".", "/") + ".py"
        names = (getattr(parser, "grammar_name", None), parser.name, parser.__module__.rsplit(".", 1)[1])
        grammar = next((n for n in names if n and (root / "grammars" / f"{n}.lark").exists()), "")
        grammar_cell = f"`grammars/{grammar}.lark`" if grammar else ""
        fixtures = f"`fixtures/{parser.name}/`" if (root / "fixtures" / parser.name).is_dir() else ""
        rows.append(f"| `{parser.name}` | `{path}` | {grammar_cell} | {fixtures} | {_summary(module.__doc__)} |")
    return "\n".join([BEGIN, *rows, END])


def render(current: str, parsers, root: Path = ROOT) -> str:
    """`current` (docs/formats.md) with its generated block replaced."""
    head, sep, rest = current.partition(BEGIN)
    if not sep or END not in rest:
        raise ValueError(f"docs/formats.md has no generated block (markers {BEGIN!r} ... {END!r})")
    return head + table(parsers, root) + rest.split(END, 1)[1]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    from postmortem.parsers import PARSERS
    current = FORMATS_MD.read_text(encoding="utf-8")
    wanted = render(current, PARSERS)
    if "--check" in argv:
        if wanted != current:
            print("docs/formats.md is not current: run python tools/docs/gen_formats_md.py", file=sys.stderr)
            return 1
        return 0
    FORMATS_MD.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
