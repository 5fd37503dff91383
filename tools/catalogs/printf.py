"""Shared by the catalog generators: C printf formats -> linear-time regexes, and C
source scanning for the string-literal first argument of a logging macro.

A conversion becomes a bounded class with no nested quantifier, so a generated regex
runs in time linear in the line (tests/test_catalogs.py checks every pattern's shape).
"""
from __future__ import annotations

import re

# One printf conversion: flags, width, precision, length, conversion.
SPEC = re.compile(r"%([-+ #0']*)(\d+|\*)?(?:\.(\d+|\*))?(hh|h|ll|l|z|j|t|L|q)?([diouxXeEfgGcspn%])")

# inttypes.h macros that stand for the tail of a conversion ("%" PRIu64).
PRI = {"PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIX64": "lX", "PRIi64": "li", "PRIu32": "u",
       "PRId32": "d", "PRIx32": "x", "PRIu16": "u", "PRIu8": "u", "PRIuPTR": "lu", "PRIxPTR": "lx",
       "PRIi32": "i", "PRIo64": "lo"}

# A wildcard for text the format does not fix (a %s, a macro argument): any characters of
# one line, bounded, lazy.  Bounded so a failed match costs at most a constant per start.
TEXT = r"[^\n]{0,240}?"
CLASSES = {
    "d": r"-?\d{1,20}", "i": r"-?\d{1,20}", "u": r"\d{1,20}", "o": r"[0-7]{1,24}",
    "x": r"[0-9a-fA-F]{1,16}", "X": r"[0-9a-fA-F]{1,16}", "p": r"(?:0x[0-9a-fA-F]{1,16}|\(nil\)|0)",
    "c": r"[^\n]", "e": r"[-+0-9.eEinfa]{1,32}", "E": r"[-+0-9.eEINFA]{1,32}",
    "f": r"[-+0-9.infa]{1,40}", "g": r"[-+0-9.eEinfa]{1,32}", "G": r"[-+0-9.eEINFA]{1,32}", "s": TEXT,
}
WILD = "\x00"   # placeholder in a format for a part the source computes (macro argument, #x)


# Linux printk pointer extensions (%pS symbol+off/size [module], %px raw hex, %pGg flags, ...).
KERNEL_P = re.compile(r"[A-Za-z]+")


def printf_to_regex(fmt: str, kernel: bool = False) -> str:
    """The regex that matches what printf(fmt, ...) prints; runs of wildcards collapse.
    kernel=True reads %p followed by letters as a printk pointer extension."""
    out: list[str] = []
    pos = 0
    for m in SPEC.finditer(fmt):
        if m.start() < pos:
            continue
        out.append(_literal(fmt[pos:m.start()]))
        flags, conv = m.group(1), m.group(5)
        ext = KERNEL_P.match(fmt, m.end()) if kernel and conv == "p" else None
        if ext:
            out.append(r"[0-9a-fA-F]{1,16}" if ext.group(0) == "x" else TEXT)
            pos = ext.end()
            continue
        if conv == "%":
            out.append("%")
        elif conv == "n":
            pass
        elif conv in "xX" and "#" in flags:
            out.append(r"(?:0[xX])?" + CLASSES[conv])
        else:
            out.append(CLASSES[conv])
        pos = m.end()
    tail = fmt[pos:]
    if pos and 0 < len(tail) <= 3 and not re.search(r"\w", tail):
        # Closing punctuation after the last conversion is optional: real logs cut lines short.
        out.append("(?:" + _literal(tail) + ")?")
    else:
        out.append(_literal(tail))
    rx = "".join(out)
    # Two text wildcards side by side are one (keeps the pattern simple and linear).
    while TEXT + TEXT in rx:
        rx = rx.replace(TEXT + TEXT, TEXT)
    return rx


def _literal(s: str) -> str:
    parts = s.split(WILD)
    return TEXT.join(re.escape(p) for p in parts)


def literal_text(fmt: str) -> str:
    """The fixed words of a format (what a human reads as 'the message')."""
    return SPEC.sub(" ", fmt).replace(WILD, " ")


def longest_literal(fmt: str) -> str:
    pieces = re.split(r"%|\x00", SPEC.sub("\x00", fmt))
    return max((p.strip() for p in pieces), key=len, default="")


# --- C source scanning ------------------------------------------------------------------

_TOKEN = re.compile(r'''\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\#\s*\w+|\w+|.''', re.S)
# A backslash before a newline inside a literal is a line splice (C translation phase 2): it
# and the newline vanish, the next line's indentation stays in the string.
_ESC = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "0": "\0", "a": "\a", "\n": ""}


def _unescape(lit: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESC.get(m.group(1), m.group(1)), lit[1:-1], flags=re.S)


def first_string_arg(src: str, start: int) -> tuple[str | None, int]:
    """At `start` (just after the '(' of a call), the first argument when it is built from
    string literals (with inttypes macros and macro arguments); None for a computed format.
    Returns (format, end offset)."""
    parts: list[str] = []
    has_literal = False
    depth = 0
    pos = start
    for m in _TOKEN.finditer(src, start):
        tok = m.group(0)
        pos = m.end()
        if tok.isspace() or tok.startswith("//") or tok.startswith("/*"):
            continue
        if depth == 0 and tok in (",", ")"):
            break
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
        if depth:
            return None, pos
        if tok.startswith('"'):
            parts.append(_unescape(tok))
            has_literal = True
        elif tok in PRI:
            parts.append(PRI[tok])
        elif tok.startswith("#") or re.fullmatch(r"\w+", tok):
            parts.append(WILD)
        else:
            return None, pos
    if not has_literal:
        return None, pos
    return "".join(parts), pos
