"""Build postmortem/grammar_tables/<name>.json from grammars/<name>.lark (run after any
grammar edit, or after upgrading lark):

    python tools/grammar_tables.py            # write every table
    python tools/grammar_tables.py --check    # exit 1 when a table is missing or stale

One table per start rule a parser uses: every rule of the grammar no other rule refers to
(`start` for most grammars; one per line family for launcher.lark and system.lark).  Each
table is lark's own serialization of the LALR parser (Lark.memo_serialize, what Lark.save
pickles), written as JSON with the sha256 of the grammar text and the lark version, so
postmortem.grammar uses it only while both still hold.  Lark numbers tokens and parser
states in set iteration order (object addresses), so the table is renumbered canonically
before it is written: the same grammar gives the same bytes on every run, and
tests/test_grammar_tables.py compares each table with a fresh build of its grammar.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from postmortem import grammar  # noqa: E402

OUT = ROOT / "postmortem" / grammar.TABLES


def start_rules(name: str) -> list[str]:
    """The rules of grammars/<name>.lark that no other rule refers to."""
    from lark import Lark
    from lark.load_grammar import load_grammar

    text = grammar.grammar_text(name)
    defined, _ = load_grammar(text, f"{name}.lark", [], False)
    names = [str(d[0]) for d in defined.rule_defs if not d[1]]   # templates are no start
    every = Lark(text, start=names, **grammar.OPTIONS)
    referred = {s.name for r in every.rules for s in r.expansion if not s.is_term}
    return sorted({str(r.origin.name) for r in every.rules} - referred)


def serialize(parser) -> dict:
    """Lark's serialization of a LALR parser, with its parse table in canonical order."""
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["parser"]["parser"] = canonical_table(data["parser"]["parser"])
    return {"data": data, "memo": memo}


def canonical_table(table: dict) -> dict:
    """The same automaton, numbered independently of set iteration order: tokens by name,
    states in breadth-first order from the start states (by start name), each state's
    actions by token name."""
    names = table["tokens"]
    token_ids = {name: i for i, name in enumerate(sorted(names.values()))}
    order: list[int] = []
    seen: set[int] = set()
    queue = [table["start_states"][s] for s in sorted(table["start_states"])]
    while queue:
        state = queue.pop(0)
        if state in seen:
            continue
        seen.add(state)
        order.append(state)
        for token in sorted(table["states"][state], key=lambda t: names[t]):
            action, arg = table["states"][state][token]
            if action == 0:   # shift (or goto): arg is the next state
                queue.append(arg)
    order += sorted(set(table["states"]) - seen)   # none in a LALR table; kept, not dropped
    state_ids = {old: new for new, old in enumerate(order)}
    states = {}
    for old in order:
        actions = table["states"][old]
        states[state_ids[old]] = {
            token_ids[names[t]]: (0, state_ids[arg]) if action == 0 else (action, arg)
            for t, (action, arg) in sorted(actions.items(), key=lambda item: names[item[0]])}
    return {**table, "tokens": {i: name for name, i in token_ids.items()}, "states": states,
            "start_states": {s: state_ids[v] for s, v in sorted(table["start_states"].items())},
            "end_states": {s: state_ids[v] for s, v in sorted(table["end_states"].items())}}


def table_text(name: str) -> str:
    import lark

    text = grammar.grammar_text(name)
    doc = {"grammar": f"grammars/{name}.lark", "grammar_sha256": grammar.text_digest(text),
           "lark": lark.__version__, "made_by": "tools/grammar_tables.py",
           "starts": {start: serialize(grammar.build(name, start)) for start in start_rules(name)}}
    return json.dumps(grammar.encode(doc), sort_keys=True, separators=(",", ":")) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only say whether every table is current")
    args = ap.parse_args()
    stale = []
    OUT.mkdir(exist_ok=True)
    for name in grammar.grammar_names():
        path = OUT / f"{name}.json"
        text = table_text(name)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)} ({len(text) // 1024} KiB)")
    if args.check and stale:
        print(f"stale or missing tables: {', '.join(stale)} (run python tools/grammar_tables.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
