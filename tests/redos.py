"""A ReDoS checker for every regex the package compiles (used by tests/test_redos.py
and runnable alone: `python tests/redos.py` prints what it flags and the timings).

Patterns are collected from the running process, not from a list: the libraries the
tool uses are imported first and their patterns set aside; then every postmortem
module is imported, the knowledge files and catalogs are loaded, every grammar is
built and a few fixture bundles are analysed, so patterns compiled lazily (lark
terminals, knowledge messages, inline `re.search` literals in re's cache) are caught
too.  The knowledge files' patterns (messages, separators, frame lists, the message
catalogs) are enumerated from the files, each with the way the code runs it.

Each pattern is run the way the tool runs it (`search` anywhere in a line; `match` at one
position for lark terminals, which the lexer only tries at a token boundary, and for the
anchored catalogs and frame lists) on attack strings: long runs of the characters its
quantifiers can accept, alone, in pairs and after the literal words of the pattern, with
a failing character at the end.  A pattern is flagged when the run on a string of its
window (the line cap the reader enforces, or the smaller slice its caller takes) costs
more than a bound in CPU time AND costs more than RATIO times the run on an eighth of
that string (linear: 8, quadratic: 64).  CPU time of this thread, best of three: a loaded
machine slows the wall clock, not the work.
"""
from __future__ import annotations

import gc
import importlib
import pkgutil
import re
import sys
import time
from dataclasses import dataclass
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


RATIO = 24.0        # between linear (8) and quadratic (64) growth over 8x the length
BOUND_S = 0.005     # CPU seconds a run on the whole window may take before growth is measured


@dataclass(frozen=True)
class Checked:
    """One pattern and how the tool runs it."""

    pattern: re.Pattern
    how: str = "search"          # "search" | "match"
    window: int = WINDOW         # the longest text it is ever given
    origin: str = "module"
    sample: str = ""             # a line it matches (knowledge messages): its cut copies repeated attack it


def _patterns_now() -> dict[int, re.Pattern]:
    return {id(o): o for o in gc.get_objects() if isinstance(o, re.Pattern)}


def collect() -> list[re.Pattern]:
    """Every str pattern postmortem compiles, deduplicated by (pattern, flags)."""
    for lib in ("lark", "rich", "rich.console", "rich.table", "rich.markup", "jinja2", "dateutil.parser",
                "dateutil.tz", "elftools.elf.elffile", "tarfile", "zipfile", "gzip", "json", "shlex",
                "argparse", "email.utils", "tomllib", "zoneinfo", "html", "html.parser", "urllib.parse",
                "string", "textwrap", "locale", "fnmatch", "glob", "inspect", "dataclasses", "typing", "difflib",
                "pathlib", "shutil", "tempfile", "subprocess", "zoneinfo", "unicodedata"):
        try:
            importlib.import_module(lib)
        except ImportError:
            pass
    try:   # lark compiles the lexer of its own grammar language at the first grammar: set it aside
        import lark

        lark.Lark('start: "a"  // x', parser="lalr")
    except Exception:  # noqa: BLE001
        pass
    # The parser modules were always imported before this snapshot (the registry imported them
    # with the package), so their module-level patterns are set aside, as they always were; now
    # that the package imports a parser only when a line needs it, import them here to keep
    # exactly that.  Checking them too (drop this) finds 11 more patterns that are
    # super-linear under `search`; most are only ever `.match`ed at a line start: to triage.
    from postmortem import parsers as _parsers

    _parsers.discover()
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


def lark_terminals() -> tuple[set[str], set[str]]:
    """(terminal regexps, terminal names) of every grammar."""
    from postmortem import grammar

    regexps, names = set(), set()
    for name in grammar.grammar_names():
        try:
            parser = grammar.load(name)
        except Exception:  # noqa: BLE001
            continue
        for term in getattr(parser, "terminals", ()):
            regexps.add(term.pattern.to_regexp())
            names.add(term.name)
    return regexps, names


def _is_lexer_pattern(pattern: str, regexps: set[str], names: set[str]) -> bool:
    """A lark terminal, or lark's alternation of named terminals: run by the lexer with
    `match` at a token boundary."""
    if pattern in regexps:
        return True
    groups = re.findall(r"\(\?P<(\w+)>", pattern)
    return pattern.startswith("(?P<") and bool(groups) and all(g in names for g in groups)


def knowledge_patterns() -> list[Checked]:
    """The knowledge files' patterns, each with the way and the window the code uses."""
    from postmortem import knowledge, stacks
    from postmortem.classify.rules import base
    from postmortem.knowledge import catalog

    k = knowledge.load()
    out = [Checked(m.regex, "search", WINDOW, f"messages.toml {m.id}", m.sample) for m in k.messages]
    out += [Checked(p, "search", 400, "separators.txt") for p in base._separators()]   # says_something: text[:400]
    lists = stacks.frame_lists()
    out += [Checked(p, "match", WINDOW, f"frames/{name}.txt") for name in stacks.FRAME_LISTS for p in getattr(lists, name)]
    for name, how in (("nccl", "match"), ("pytorch", "search"), ("kernel", "search")):
        _, entries = catalog._catalog(name)
        out += [Checked(re.compile(e.regex), how, WINDOW, f"catalogs/{name}.json {e.id}") for e in entries if e.regex]
    _, _, rules, _ = catalog._nccl_index()
    out += [Checked(rx, "search", WINDOW, "catalogs/nccl.json file_rules") for rx, _, _ in rules]
    # compiled on first use (startup time), so named here rather than found after the warm-up
    from postmortem.parsers.keywords import any_word

    out += [Checked(any_word(kw for m in k.messages for kw in m.keywords), "search", WINDOW, "messages.toml keywords")]
    out += [Checked(rx, "search", WINDOW, "catalog.cuda_text_patterns") for rx in catalog.cuda_text_patterns()]
    return out


def bounded_windows() -> dict[tuple[str, int], tuple[int, str]]:
    """Module patterns whose callers pass them less than the line window: (pattern, flags) ->
    (window, where the bound is)."""
    import json
    from importlib import resources

    from postmortem import stacks
    from postmortem.knowledge import catalog

    # catalog._LITERAL_TAIL reads the catalogs' own regexes (knowledge data, never bundle text):
    # its window is the longest of them.
    longest = max(len(e.get("regex", "")) for name in ("nccl", "pytorch", "kernel", "cuda", "nv_status", "sxid")
                  for e in json.loads(resources.files("postmortem.knowledge").joinpath("catalogs", f"{name}.json")
                                      .read_text(encoding="utf-8"))["entries"])
    return {(stacks._DECORATION.pattern, stacks._DECORATION.flags): (stacks.DECORATION_WINDOW, "stacks._native_name"),
            (catalog._LITERAL_TAIL.pattern, catalog._LITERAL_TAIL.flags): (longest, "catalog._cut_regex")}


def collect_all() -> list[Checked]:
    """Every pattern the package compiles and every knowledge pattern, deduplicated by
    (pattern, flags, how), each with how it runs."""
    compiled = collect()          # first: it sets aside what was compiled before postmortem was imported
    regexps, names = lark_terminals()
    found: dict[tuple[str, int, str], Checked] = {}
    for c in knowledge_patterns():
        found.setdefault((c.pattern.pattern, c.pattern.flags, c.how), c)
    windows = bounded_windows()
    from postmortem import parsers

    # A parser's gate_start is only ever matched at the start of a line (LineParser.wants).
    starts = {(cls.gate_start.pattern, cls.gate_start.flags) for cls in parsers.discover() if cls.gate_start is not None}
    for p in compiled:
        lexer = _is_lexer_pattern(p.pattern, regexps, names)
        window, where = windows.get((p.pattern, p.flags), (WINDOW, "module"))
        matched = lexer or (p.pattern, p.flags) in starts
        c = Checked(p, "match" if matched else "search", window,
                    "lark terminal" if lexer else "module gate_start" if matched else where)
        if not any(key[:2] == (p.pattern, p.flags) for key in found):
            found[(p.pattern, p.flags, c.how)] = c
    return sorted(found.values(), key=lambda c: (c.pattern.pattern, c.how))


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


def attacks(p: re.Pattern, n: int, sample: str = "") -> list[str]:
    words = list(dict.fromkeys(re.findall(r"(?<![\\(?])[A-Za-z_]{3,}", p.pattern)))[:8]
    runs = [c * n for c in CHARS]
    out = [r for r in runs] + [r + "\x00" for r in runs[:4]]
    out += [(a + b) * (n // 2) + "\x00" for a in PAIR_CHARS for b in PAIR_CHARS if a < b]
    out += ["[" * n + " NCCL WARN x", " \t" * (n // 2)]
    for w in words:
        out += [w + " " + c * n for c in " \ta1:._-/["]
        out += [(w + " ") * (n // (len(w) + 1))]
    if sample:
        # the line it is written for, cut at several places (so it fails late) and repeated:
        # many starts that each get far, the shape of a spliced or flooded log line
        for cut in (len(sample) // 4, len(sample) // 2, 3 * len(sample) // 4, len(sample) - 2, len(sample)):
            piece = sample[:max(cut, 1)]
            out.append((piece * (n // len(piece) + 1))[:n])
            out.append((piece + " ") * (n // (len(piece) + 1)))
    return out


def _cpu(run, s: str, times: int = 1) -> float:
    best = float("inf")
    for _ in range(times):
        t = time.thread_time()
        run(s)
        best = min(best, time.thread_time() - t)
    return best


def check(c: Checked | re.Pattern, bound: float = BOUND_S, ratio: float = RATIO) -> tuple[float, float, str] | None:
    """(CPU seconds on the window, growth over 8x the length, attack) when the pattern is
    super-linear on one of its attack strings, else None."""
    if isinstance(c, re.Pattern):
        c = Checked(c)
    run = c.pattern.search if c.how == "search" else c.pattern.match
    big, small = attacks(c.pattern, c.window, c.sample), attacks(c.pattern, c.window // 8, c.sample)
    for s, s_small in zip(big, small):
        if _cpu(run, s) <= bound:
            continue
        t_big = _cpu(run, s, 3)
        t_small = _cpu(run, s_small, 3)
        growth = t_big / max(t_small, 1e-5)
        if t_big > bound and growth > ratio:
            return t_big, growth, s[:40]
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
    checked = collect_all()
    hows = {h: sum(c.how == h for c in checked) for h in ("search", "match")}
    print(f"{len(checked)} patterns ({hows['search']} run with search, {hows['match']} with match)")
    bad = 0
    for c in checked:
        hit = check(c)
        if hit:
            bad += 1
            print(f"SLOW {hit[0]:.3f}s CPU, x{hit[1]:.0f} over 8x the length, on {hit[2]!r}: "
                  f"{c.how} {c.origin}: {c.pattern.pattern[:160]!r}")
    print(f"{bad} flagged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
