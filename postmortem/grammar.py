"""Load the lark grammars kept in the top-level `grammars/` folder.

The wheel carries them as `postmortem/grammars/*.lark` (hatchling force-include); a
source checkout has them at the top level.  Grammars are LALR with the contextual
lexer, built once per process and only when a parser first needs one.  Never
`cache=True`: lark would unpickle from a predictable temporary path.
"""
from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path


def grammar_text(name: str) -> str:
    """The text of grammars/<name>.lark, from the installed package or the checkout."""
    packaged = resources.files("postmortem").joinpath("grammars", f"{name}.lark")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parent.parent / "grammars" / f"{name}.lark"
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise FileNotFoundError(f"grammar {name}.lark is neither in the package nor in the checkout")


def grammar_names() -> list[str]:
    packaged = resources.files("postmortem").joinpath("grammars")
    if packaged.is_dir():
        return sorted(p.name[:-5] for p in packaged.iterdir() if p.name.endswith(".lark"))
    checkout = Path(__file__).resolve().parent.parent / "grammars"
    return sorted(p.name[:-5] for p in checkout.iterdir() if p.name.endswith(".lark"))


@functools.lru_cache(maxsize=None)
def load(name: str, start: str = "start", strict: bool = False, transformer=None):
    """A LALR parser for grammars/<name>.lark (built once per process)."""
    from lark import Lark

    return Lark(
        grammar_text(name),
        parser="lalr",
        lexer="contextual",
        start=start,
        strict=strict,
        transformer=transformer,
        maybe_placeholders=False,
    )
