"""Regex denial of service (issue 19): no regex that sees bundle text may take
super-linear time on the line window the reader enforces.

Attack strings are DELIBERATELY HOSTILE and generated here (see tests/redos.py).  Time
bounds are generous on purpose (a loaded machine passes; the cases fixed here took
68-120 s per line before): the first test runs whole attack lines through the parsers
as analyze does; the second checks the patterns found cubic or worse; the third runs the
checker over every pattern the package compiles and every knowledge file's pattern, each
the way the tool runs it, and asserts none grows faster than linearly (CPU time, best of
three, growth over 8x the length: robust to a loaded machine).  `python tests/redos.py`
prints the same with its figures.
"""
from __future__ import annotations

import time

import redos
from postmortem import knowledge
from postmortem.budget import Budget
from postmortem.parsers import parse_text

LINE_BOUND_S = 5.0      # per attack line of Budget().line_chars characters, through every parser


def test_the_regex_window_is_the_line_cap():
    assert redos.WINDOW == Budget().line_chars <= 8192


def test_attack_lines_through_the_parsers_are_bounded():
    k = knowledge.load()
    parse_text("x", ["warm up\n"], k=k)
    words = sorted({m.keywords[0] for m in k.messages} | set(redos.PARSER_WORDS))
    lines = redos.line_attacks(words)
    assert len(lines) > 500
    slow = []
    for line in lines:
        took = float("inf")
        for _ in range(3):   # a slow run is measured again: load slows one run, a bad pattern all
            t = time.perf_counter()
            parse_text("x.log", [line], k=k)
            took = min(took, time.perf_counter() - t)
            if took <= LINE_BOUND_S:
                break
        if took > LINE_BOUND_S:
            slow.append((round(took, 2), line[:40]))
    assert not slow, slow


def test_the_fixed_patterns_are_linear():
    """The patterns issue 19 found cubic or worse, now on their own attack strings."""
    from postmortem.parsers import gdb, kernel, native, nccl

    k = knowledge.load()
    by_id = {m.id: m.regex for m in k.messages}
    n = Budget().line_chars
    cases = [
        (by_id["torch_shm_write_failed"], "unable to write to file </torch_1_2>: " + " a" * (n // 2)),
        (by_id["torch_shm_alloc_failed"], "unable to allocate shared memory(shm) for file <x>: " + " \t" * (n // 2)),
        (by_id["error_file_pointer"], "error_file: " + "/" * n),
        (by_id["nccl_tests_header"], " " * n),
        (nccl._HEADER, "[" + "a" * n),
        (nccl._INFO_PREFIX, "[" + "a1" * (n // 2)),
        (native.PREFILTER, "/" * n),
        (kernel.PREFILTER, "[" * n + " NCCL WARN x"),
        (gdb.PREFILTER, " \t" * (n // 2)),
    ]
    # The NCCL header patterns are only ever matched at the start of a line (parsers/nccl.py
    # uses match/fullmatch); a search would try every start and is not how they run.
    anchored = {nccl._HEADER, nccl._INFO_PREFIX}
    for rx, attack in cases:
        took = float("inf")
        for _ in range(3):   # the best of three: a loaded machine slows a run, never all three
            t = time.perf_counter()
            rx.match(attack)
            if rx not in anchored:
                rx.search(attack)
            took = min(took, time.perf_counter() - t)
        # linear takes well under a millisecond here; the quadratic forms took seconds
        assert took < 1.0, (rx.pattern[:80], took)


def test_every_pattern_of_the_package_and_the_knowledge_files_is_linear():
    checked = redos.collect_all()
    origins = {c.origin.split()[0] for c in checked}
    # the collection really reached every source of patterns
    assert {"module", "lark", "messages.toml", "separators.txt", "catalogs/nccl.json", "catalogs/pytorch.json",
            "catalogs/kernel.json", "frames/prefix.txt"} <= origins, origins
    assert len(checked) > 1000
    slow = []
    for c in checked:
        hit = redos.check(c)
        if hit:
            slow.append((c.origin, c.how, c.pattern.pattern[:100], hit))
    assert not slow, slow


def test_the_checker_flags_a_quadratic_pattern_and_passes_its_linear_rewrite():
    """The checker itself: the pre-issue-19 form of a pattern fixed here is flagged, the fix is not."""
    import re

    assert redos.check(redos.Checked(re.compile(r"(\d+)(?:\.(?:pkl|json))?$")))
    assert redos.check(redos.Checked(re.compile(r"(?<!\d)(\d+)(?:\.(?:pkl|json))?$"))) is None
