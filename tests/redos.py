"""A ReDoS checker for every regex the package compiles (used by tests/test_redos.py
and runnable alone: `python tests/redos.py` prints what it flags and the timings).

Patterns are collected from the running process, not from a list: the libraries the
tool uses are imported first and their patterns set aside; then every postmortem
module is imported, the knowledge files and catalogs are loaded, every grammar is
built and a few fixture bundles are analysed, so patterns compiled lazily (lark
terminals, knowledge messages, inline `re.search` literals in re's cache) are caught
too.  Each pattern is then searched on attack strings: long runs of the characters
its quantifiers can accept, alone, in pairs and after the literal words of the
pattern, with a failing character at the end.  A pattern is flagged when one search
on an 8 KiB string (the line window the reader enforces) takes more than a bound and
the time grows faster than linearly from 2 KiB to 8 KiB.
"""
from __future__ import annotations

import gc
import importlib
import pkgutil
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from postmortem.budget import Budget  # noqa: E402

WINDOW = Budget().line_chars   # the reader cuts longer lines: no regex sees more
CHARS = " \t\x0ba1A_.:/-[]()=,0x\"'<>|@#+*\\;!?{}%$~`^&"
PAIR_CHARS = " \ta1:.-/[=_x0"
# Words the parsers' prefilters look for, to get attack lines past them.
PARSER_WORDS = ["NCCL WARN", "NCCL INFO", "NCCL failure", "Caught signal", "kernel:", "segfault at", "error_file:",
                "#0 ", "frame #", "Thread ", 'File "', "Traceback", "Xid", "NVRM:", "torch_shm", "/dev/shm",
                "nThread", "| Asserted", "- Assertion", "backtrace (tid:", "Exception raised from", "ECC"]


def _patterns_now() -> dict[int, re.Pattern]:
    return {id(o): o for o in gc.get_objects() if isinstance(o, re.Pattern)}


def collect() -> list[re.Pattern]:
    """Every str pattern postmortem compiles, deduplicated by (pattern, flags)."""
    for lib in ("lark", "rich", "rich.console", "rich.table", "rich.markup", "jinja2", "dateutil.parser",
                "dateutil.tz", "elftools.elf.elffile", "tarfile", "zipfile", "gzip", "json", "shlex",
                "argparse", "email.utils", "tomllib", "zoneinfo", "html", "html.parser", "urllib.parse",
                "string", "textwrap", "locale", "fnmatch", "glob", "inspect", "dataclasses", "typing"):
        try:
            importlib.import_module(lib)
        except ImportError:
            pass
    before = _patterns_now()
    import postmortem

    for mod in pkgutil.walk_packages(postmortem.__path__, "postmortem."):
        if mod.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:  # noqa: BLE001 - optional modules (torch-only tools) may not import
            pass
    _warm_up()
    found: dict[tuple[str, int], re.Pattern] = {}
    for key, p in _patterns_now().items():
        if key in before or not isinstance(p.pattern, str):
            continue
        found.setdefault((p.pattern, p.flags), p)
    return sorted(found.values(), key=lambda p: p.pattern)


def _warm_up() -> None:
    from postmortem import grammar, knowledge, stacks
    from postmortem.run import analyze

    k = knowledge.load()
    stacks.frame_lists()   # compiled only when a bundle has stacks: here always
    for name in grammar.grammar_names():
        try:
            parser = grammar.load(name)
        except Exception:  # noqa: BLE001
            continue
        for term in getattr(parser, "terminals", ()):
            try:
                re.compile(term.pattern.to_regexp(), sum(getattr(re, f.upper()) for f in term.pattern.flags))
            except Exception:  # noqa: BLE001
                pass
    for case in sorted((ROOT / "fixtures/corpus").glob("*/bundle"))[::8]:
        try:
            analyze(case)
        except Exception:  # noqa: BLE001
            pass
    for mod_name in ("postmortem.knowledge.catalog",):
        mod = sys.modules.get(mod_name)
        for attr in dir(mod) if mod else ():
            fn = getattr(mod, attr)
            if callable(fn) and attr.startswith(("load", "catalog")) and getattr(fn, "__code__", None) \
                    and fn.__code__.co_argcount == 0:
                try:
                    fn()
                except Exception:  # noqa: BLE001
                    pass
    del k


def attacks(p: re.Pattern, n: int) -> list[str]:
    words = list(dict.fromkeys(re.findall(r"(?<![\\(?])[A-Za-z_]{3,}", p.pattern)))[:8]
    runs = [c * n for c in CHARS]
    out = [r for r in runs] + [r + "\x00" for r in runs[:4]]
    out += [(a + b) * (n // 2) + "\x00" for a in PAIR_CHARS for b in PAIR_CHARS if a < b]
    out += ["[" * n + " NCCL WARN x", " \t" * (n // 2)]
    for w in words:
        out += [w + " " + c * n for c in " \ta1:._-/["]
        out += [(w + " ") * (n // (len(w) + 1))]
    return out


def _time(p: re.Pattern, s: str) -> float:
    t = time.perf_counter()
    p.search(s)
    return time.perf_counter() - t


def check(p: re.Pattern, bound: float = 0.05, ratio: float = 6.0) -> tuple[float, str] | None:
    """(seconds, attack) when one search of `p` on an attack of WINDOW characters takes
    more than `bound` and grows more than `ratio` times from a quarter of the size
    (linear: 4, quadratic: 16, cubic: 64), else None."""
    for s in attacks(p, WINDOW):
        t = _time(p, s)
        if t <= bound:
            continue
        small = s[: len(s) // 4] if not s.endswith(" NCCL WARN x") else "[" * (WINDOW // 4) + " NCCL WARN x"
        t_small = min(_time(p, small) for _ in range(3))
        t_big = min([t] + [_time(p, s) for _ in range(2)])
        if t_big > bound and t_big > ratio * max(t_small, 1e-4):
            return t_big, s[:40]
    return None


def line_attacks(words: list[str]) -> list[str]:
    """Whole lines for the end-to-end check, each WINDOW characters long."""
    n = WINDOW
    out = [c * n for c in CHARS] + ["[" * (n - 12) + " NCCL WARN x", " \t" * (n // 2)]
    out += [(a + b) * (n // 2) for a in PAIR_CHARS for b in PAIR_CHARS if a < b]
    for w in words:
        out += [(w + " " + c * n)[:n] for c in " \t1/[:."]
        out += [(c * n)[: n - len(w) - 1] + " " + w for c in " /["]
        out.append(((w + " ") * n)[:n])
    return out


def main() -> int:
    import time as _t

    from postmortem import knowledge
    from postmortem.parsers import parse_text

    k = knowledge.load()
    parse_text("x", ["warm up\n"], k=k)
    words = sorted({m.keywords[0] for m in k.messages} | set(PARSER_WORDS))
    worst = []
    for line in line_attacks(words):
        t = _t.perf_counter()
        parse_text("x.log", [line], k=k)
        worst.append((_t.perf_counter() - t, line[:30]))
    worst.sort(reverse=True)
    print(f"end to end: {len(worst)} attack lines of {WINDOW} chars; slowest:")
    for t, line in worst[:5]:
        print(f"  {t:.3f}s {line!r}")
    pats = collect()
    print(f"{len(pats)} patterns")
    bad = 0
    for p in pats:
        hit = check(p)
        if hit:
            bad += 1
            print(f"SLOW {hit[0]:.3f}s on {hit[1]!r}: {p.pattern[:160]!r}")
    print(f"{bad} flagged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
