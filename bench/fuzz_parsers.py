"""Fuzz every line parser and the pipeline behind them: windows of real fixture lines, mutated
(byte edits, splices across files, huge and negative numbers, runs of brackets, controls, cuts;
DELIBERATELY HOSTILE input generated here), fed to `parsers.parse_text` as one artifact each;
one window in `--full-every` also goes through the whole analysis (timeline, classifier,
every renderer) as a one-file bundle.

A crasher is an exception that escapes, a parser failure the dispatcher had to contain
("... parser failed at ..."), an input that runs past the alarm (a hang) or a peak RSS
500 MiB over the start: one input per class is kept in fuzz/crashers/parsers/ (replayed by
tests/test_fuzz_crashers.py), inputs showing an event kind or problem shape not seen before
in fuzz/corpus/parsers/ (and mutated again).  Prints inputs, lines and findings; appends
the run to fuzz/runs.jsonl.

    python bench/fuzz_parsers.py --seconds 600 --seed 1
"""
from __future__ import annotations

import argparse
import io
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

# Text fixtures only; the frozen split is never read (not even as fuzz seeds).
SKIP_PARTS = {"frozen", "cores", "injection"}
TEXT_SUFFIXES = ("", ".txt", ".log", ".out", ".err", ".json", ".export")

SPICE = ["[", "]", ":", " ", "\t", "-", "0", "9", "99999999999999", "-1", "\x00", "\x1b[31m", "\u202e",
         "(", ")", "/", "\\", "%s", "0x", "NCCL WARN ", "NCCL INFO ", "Xid", "pid ", "rank ",
         "Traceback (most recent call last):", "Fatal Python error: ", "#0  ", "Thread 0x",
         "1970-01-01 00:00:00", "9999-12-31T23:59:59", "[" * 200, " " * 300, "é", "\ufffd"]


def seed_files() -> list[list[str]]:
    files = []
    for path in sorted((ROOT / "fixtures").rglob("*")):
        rel = path.relative_to(ROOT / "fixtures").parts
        if not path.is_file() or path.is_symlink() or SKIP_PARTS & set(rel) or path.suffix not in TEXT_SUFFIXES:
            continue
        if path.stat().st_size > 4 << 20:
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (UnicodeDecodeError, OSError):
            continue
        if lines:
            files.append(lines)
    return files


def mutate_line(rng: random.Random, line: str, pool: list[str]) -> str:
    op = rng.randrange(9)
    if not line:
        return rng.choice(SPICE)
    i = rng.randrange(len(line) + 1)
    if op == 0:    # replace one character
        return line[:i] + chr(rng.choice((rng.randrange(32, 127), rng.randrange(0, 32), rng.randrange(128, 0x3000)))) + line[i + 1:]
    if op == 1:    # insert a piece that parsers care about
        return line[:i] + rng.choice(SPICE) + line[i:]
    if op == 2:    # cut
        return line[:i]
    if op == 3:    # splice with another real line
        other = rng.choice(pool)
        return line[:i] + other[rng.randrange(len(other) + 1):]
    if op == 4:    # numbers grow, shrink or turn negative
        out, digits = [], False
        for ch in line:
            if ch.isdigit() and not digits and rng.random() < 0.3:
                out.append(rng.choice(("99999999999999999999", "-", "0", "")))
            out.append(ch)
            digits = ch.isdigit()
        return "".join(out)
    if op == 5:    # repeat a slice
        j = rng.randrange(i, len(line) + 1)
        return line[:j] + line[i:j] * rng.randrange(2, 50) + line[j:]
    if op == 6:    # drop a slice
        j = rng.randrange(i, len(line) + 1)
        return line[:i] + line[j:]
    if op == 7:    # swap case of a slice
        j = rng.randrange(i, len(line) + 1)
        return line[:i] + line[i:j].swapcase() + line[j:]
    return line    # unchanged: keeps real structure around the mutated lines


def window(rng: random.Random, files: list[list[str]], pool: list[str]) -> list[str]:
    lines = rng.choice(files)
    start = rng.randrange(len(lines))
    chunk = lines[start:start + rng.randrange(1, 31)]
    if rng.random() < 0.2:   # splice windows of two formats
        other = rng.choice(files)
        s = rng.randrange(len(other))
        chunk = chunk + other[s:s + rng.randrange(1, 10)]
    return [mutate_line(rng, ln, pool) if rng.random() < 0.5 else ln for ln in chunk]


def full_analysis(lines: list[str], workdir: Path) -> None:
    from postmortem.budget import Budget
    from postmortem.report import html, jsonout, markdown, terminal
    from postmortem.run import Options, analyze

    bundle = workdir / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "log.txt").write_text("".join(lines), encoding="utf-8", errors="surrogatepass")
    a = analyze(bundle, Options(budget=Budget(), time_limit=30))
    html.render(a, bundle_path=bundle)
    jsonout.render(a)
    markdown.render(a)
    terminal.render(a, out=io.StringIO())


def features(result) -> set[str]:
    from fuzzkit import shape

    out = {f"event {e.kind} {e.severity.name} {','.join(sorted(e.data))}" for e in result.sink.events}
    out |= {f"problem {shape(p)}" for p in result.sink.problems}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--full-every", type=int, default=500)
    args = ap.parse_args()

    from fuzzkit import Campaign, Hang

    from postmortem import knowledge
    from postmortem.parsers import parse_text

    k = knowledge.load()
    files = seed_files()
    pool = [ln for f in files for ln in f[:200]]
    rng = random.Random(args.seed)
    camp = Campaign("parsers", args.seed, args.seconds)
    corpus = [c["lines"] for c in camp.corpus() if isinstance(c.get("lines"), list)]
    lines = full = 0
    with tempfile.TemporaryDirectory() as tmp:
        while camp.running():
            if corpus and rng.random() < 0.1:   # a kept input, mutated again
                chunk = [mutate_line(rng, ln, pool) if rng.random() < 0.3 else ln for ln in rng.choice(corpus)]
            else:
                chunk = window(rng, files, pool)
            camp.inputs += 1
            lines += len(chunk)
            whole = camp.inputs % args.full_every == 0
            payload = {"lines": chunk, "whole_analysis": whole}
            try:
                camp.arm()
                result = parse_text("fuzz.log", chunk, k=k)
                failed = [p for p in result.sink.problems if " parser failed at " in p]
                if failed:
                    camp.crashed(None, payload, kind="contained-" + failed[0].split(" parser failed at ")[0][-40:])
                if whole:
                    full += 1
                    camp.disarm()
                    signal.setitimer(signal.ITIMER_REAL, 90)
                    full_analysis(chunk, Path(tmp))
                camp.disarm()
                if camp.novel(features(result), {"lines": chunk}):
                    corpus.append(chunk)
                if not camp.inputs % 100 and camp.memory_grew():
                    camp.crashed(None, payload, kind="memory")
            except Hang as exc:
                camp.crashed(exc, payload, kind="hang")
            except Exception as exc:  # noqa: BLE001 - that is what we are looking for
                camp.disarm()
                camp.crashed(exc, payload)
    camp.disarm()
    print(f"seed {args.seed}: {camp.inputs:,} inputs (windows of 1-40 mutated real lines), {lines:,} lines, "
          f"{full:,} through the whole analysis and every renderer")
    return camp.finish({"lines": lines, "whole_analysis": full})


if __name__ == "__main__":
    sys.exit(main())
