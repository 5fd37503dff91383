"""Write the event-kind tables of docs/kinds.md from postmortem/knowledge/signals.toml.

Every `[kind."<kind>"]` entry whose producer is a parser becomes one row: the kind, its
producer, its role and how it says a process died (if it does), its registered data keys
(`fields`) and what it is (`doc`).  The rows stand between the two markers of
docs/kinds.md; the rest of that file is written by hand.  tests/test_registry.py fails when
the file is not what this script writes:

    python tools/docs/gen_kinds_md.py          # rewrite docs/kinds.md
    python tools/docs/gen_kinds_md.py --check  # exit 1 when it is not current
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIGNALS = ROOT / "postmortem" / "knowledge" / "signals.toml"
KINDS_MD = ROOT / "docs" / "kinds.md"
BEGIN = "<!-- generated from postmortem/knowledge/signals.toml by tools/docs/gen_kinds_md.py: do not edit -->"
END = "<!-- end of generated kinds -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def table(signals: dict) -> str:
    """The generated block: one row per parser-produced kind, in registry order."""
    rows = ["| kind | producer | role | data keys | what |", "|---|---|---|---|---|"]
    for kind, entry in signals.get("kind", {}).items():
        producer = str(entry.get("producer", ""))
        if not producer.startswith("parser:"):
            continue
        role = str(entry.get("role", ""))
        if entry.get("death"):
            role = f"{role}, death: {entry['death']}" if role else f"death: {entry['death']}"
        keys = ", ".join(f"`{f}`" for f in entry.get("fields", ()))
        rows.append(f"| `{kind}` | {producer.split(':', 1)[1]} | {role} | {keys} | {_cell(str(entry.get('doc', '')))} |")
    return "\n".join([BEGIN, *rows, END])


def render(current: str, signals: dict) -> str:
    """`current` (docs/kinds.md) with its generated block replaced."""
    head, sep, rest = current.partition(BEGIN)
    if not sep or END not in rest:
        raise ValueError(f"docs/kinds.md has no generated block (markers {BEGIN!r} ... {END!r})")
    tail = rest.split(END, 1)[1]
    return head + table(signals) + tail


def main(argv: list[str]) -> int:
    signals = tomllib.loads(SIGNALS.read_text(encoding="utf-8"))
    current = KINDS_MD.read_text(encoding="utf-8")
    wanted = render(current, signals)
    if "--check" in argv:
        if wanted != current:
            print("docs/kinds.md is not current: run python tools/docs/gen_kinds_md.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        KINDS_MD.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
