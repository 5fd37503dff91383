"""Load the lark grammars kept in the top-level `grammars/` folder.

The wheel carries them as `postmortem/grammars/*.lark` (hatchling force-include); a
source checkout has them at the top level.  Grammars are LALR with the contextual
lexer, made once per process and only when a parser first needs one.

Building a LALR table from a grammar costs ~0.1 s per grammar, so the tables are built
ahead of time by tools/grammar_tables.py into postmortem/grammar_tables/<name>.json
(checked in, shipped in the package) and loaded with lark's own deserializer.  A table
is used only when it was built from exactly this grammar text (its sha256) by exactly
this lark version; otherwise the grammar is built as before.  tests/test_grammar_tables.py
proves each table equals what its .lark grammar produces now.  Never `cache=True`: lark
would unpickle from a predictable temporary path.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from postmortem.packaged import packaged, sha256_hex

TABLES = "grammar_tables"
OPTIONS = {"parser": "lalr", "lexer": "contextual", "maybe_placeholders": False}


def grammar_text(name: str) -> str:
    """The text of grammars/<name>.lark, from the installed package or the checkout."""
    shipped = packaged("postmortem", "grammars", f"{name}.lark")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parent.parent / "grammars" / f"{name}.lark"
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise FileNotFoundError(f"grammar {name}.lark is neither in the package nor in the checkout")


def grammar_names() -> list[str]:
    shipped = packaged("postmortem", "grammars")
    if shipped.is_dir():
        return sorted(p.name[:-5] for p in shipped.iterdir() if p.name.endswith(".lark"))
    checkout = Path(__file__).resolve().parent.parent / "grammars"
    return sorted(p.name[:-5] for p in checkout.iterdir() if p.name.endswith(".lark"))


def text_digest(text: str) -> str:
    return sha256_hex(text.encode("utf-8"))


@functools.lru_cache(maxsize=None)
def load(name: str, start: str = "start", strict: bool = False, transformer=None):
    """A LALR parser for grammars/<name>.lark (made once per process): from its prebuilt
    table when that table is current, else built from the grammar."""
    if not strict:
        table = prebuilt(name, start)
        if table is not None:
            from lark import Lark

            return Lark._load_from_dict(table["data"], table["memo"], transformer=transformer)
    return build(name, start, strict, transformer)


def build(name: str, start: str = "start", strict: bool = False, transformer=None):
    """A LALR parser built from the grammar text (what the prebuilt tables are made of)."""
    from lark import Lark

    return Lark(grammar_text(name), start=start, strict=strict, transformer=transformer, **OPTIONS)


def prebuilt(name: str, start: str) -> dict | None:
    """The prebuilt table of grammars/<name>.lark for this start rule, when it is current:
    made from this grammar text by the installed lark version."""
    tables = _tables(name)
    if tables is None or start not in tables["starts"]:
        return None
    from lark import __version__ as lark_version

    if tables["lark"] != lark_version or tables["grammar_sha256"] != text_digest(grammar_text(name)):
        return None
    return tables["starts"][start]


@functools.lru_cache(maxsize=None)
def _tables(name: str) -> dict | None:
    path = packaged("postmortem", TABLES, f"{name}.json")
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"), object_hook=decode_object)


# Lark's serialized tables hold tuples and integer-keyed dicts, which JSON has not; they
# are written as {"__tuple__": [...]} and {"__items__": [[key, value], ...]}.
def encode(obj):
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: encode(v) for k, v in obj.items()}
        return {"__items__": [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v) for v in obj]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    return obj


def decode_object(obj: dict):
    if len(obj) == 1:
        if "__tuple__" in obj:
            return tuple(obj["__tuple__"])
        if "__items__" in obj:
            return {k: v for k, v in obj["__items__"]}
    return obj
