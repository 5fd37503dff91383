"""Fuzz the core reader: the real kernel cores of fixtures/cores/, decompressed once, then
patched where a reader is steered (the ELF header, the program header table, every note's
header and the start of its descriptor; now and then any byte) with values that break
readers (0, 1, all ones, sign bits, sizes near the file's, counts near PN_XNUM), and cut
short.  DELIBERATELY HOSTILE input generated here.  The seed bytes are never copied: a
patched view serves the reads.  Every `--full-every`-th input of a small core is also written
into a one-file bundle and goes through the whole analysis and every renderer; every
`--compressed-every`-th input is one of the compressed cores (.gz/.zst/.lz4/.xz) with its
bytes patched, read the way `analyze` reads it.

A finding is an exception that escapes, a failure `read_core` had to contain ("core reader
failed"), an input past the alarm (a hang) or a peak RSS 500 MiB over the start: one input
per class is kept in fuzz/crashers/cores/ as a recipe (seed core, patches, cut), replayed by
tests/test_fuzz_crashers.py; inputs whose result shows a fact or problem shape not seen
before are kept in fuzz/corpus/cores/ (recipes too) and patched again.

    python bench/fuzz_cores.py --seconds 600 --seed 1
"""
from __future__ import annotations

import argparse
import gzip
import io
import os
import random
import signal
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

CORES = ROOT / "fixtures" / "cores"
SMALL = 1 << 20
INTERESTING = [0, 1, 2, 3, 4, 7, 8, 12, 16, 55, 56, 64, 0x7F, 0x80, 0xFF, 0x100, 0xFFF, 0x1000,
               0xFFFE, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 40,
               (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


class Patched(io.RawIOBase):
    """Seed bytes seen through patches (offset -> bytes) and a cut; never copies the seed."""

    def __init__(self, data: bytes, patches: list[tuple[int, bytes]], cut: int | None) -> None:
        self.data = memoryview(data)
        self.size = len(data) if cut is None else min(cut, len(data))
        self.patches = sorted(patches)
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError("negative seek")
        self.pos = base + offset
        return self.pos

    def readinto(self, buf) -> int:
        start, end = self.pos, min(self.size, self.pos + len(buf))
        if start >= end:
            return 0
        chunk = bytearray(self.data[start:end])
        for off, value in self.patches:
            lo, hi = max(off, start), min(off + len(value), end)
            if lo < hi:
                chunk[lo - start:hi - start] = value[lo - off:hi - off]
        buf[:len(chunk)] = chunk
        self.pos = end
        return len(chunk)

    def materialize(self) -> bytes:
        self.seek(0)
        return self.read()


def regions(data: bytes) -> dict[str, list[tuple[int, int]]]:
    """Where a core reader is steered: (offset, length) spans per part."""
    out: dict[str, list[tuple[int, int]]] = {"ehdr": [(0, 64)], "phdr": [], "note": [], "desc": []}
    phoff, = struct.unpack_from("<Q", data, 32)
    phnum, = struct.unpack_from("<H", data, 56)
    for i in range(min(phnum, 4096)):
        at = phoff + 56 * i
        if at + 56 > len(data):
            break
        out["phdr"].append((at, 56))
        p_type, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", data, at)
        if p_type != 4:
            continue
        pos, end = off, min(off + filesz, len(data))
        while pos + 12 <= end and len(out["note"]) < 10_000:
            namesz, descsz, _ = struct.unpack_from("<III", data, pos)
            out["note"].append((pos, 12))
            name_end = pos + 12 + ((namesz + 3) & ~3)
            out["desc"].append((name_end, min(descsz, 256)))
            pos = name_end + ((descsz + 3) & ~3)
    return {k: v for k, v in out.items() if v}


def value(rng: random.Random) -> bytes:
    width = rng.choice((1, 2, 4, 4, 8, 8))
    n = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.getrandbits(8 * width)
    if rng.random() < 0.2:
        n += rng.choice((-1, 1))
    return (n % (1 << (8 * width))).to_bytes(width, "little")


def recipe(rng: random.Random, name: str, data: bytes, spans: dict[str, list[tuple[int, int]]]) -> dict:
    patches = []
    for _ in range(rng.randint(1, 8)):
        part = rng.choice(("ehdr", "phdr", "phdr", "note", "note", "desc", "desc", "any"))
        if part in spans:
            off, length = rng.choice(spans[part])
            at = off + rng.randrange(max(1, length))
        else:
            at = rng.randrange(len(data))
        patches.append((at, value(rng)))
    cut = None
    if rng.random() < 0.15:
        end = max(o + n for o, n in spans.get("desc", spans["phdr"]))
        cut = rng.randrange(1, max(2, min(len(data), end + 4096)))
    return {"core": name, "patches": [[o, v.hex()] for o, v in patches], "cut": cut}


def stream_of(seeds: dict[str, bytes], r: dict) -> Patched:
    return Patched(seeds[r["core"]], [(o, bytes.fromhex(v)) for o, v in r["patches"]], r["cut"])


def load_seeds() -> dict[str, bytes]:
    return {p.name.removesuffix(".gz"): gzip.decompress(p.read_bytes()) for p in sorted(CORES.glob("*.core.gz"))}


def compressed_seeds() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(CORES.glob("*.core.*"))}


def features(result) -> set[str]:
    from fuzzkit import shape

    out = {f"problem {shape(p)}" for p in result.problems}
    out |= {f"fact {f.name}" if hasattr(f, "name") else f"fact {type(f).__name__}" for f in result.facts}
    out |= {f"event {e.kind} {','.join(sorted(e.data))}" for e in result.events}
    out.add(f"truncated {result.truncated}")
    return out


class CoreOutcome:
    """What a whole analysis says about a compressed core, in read_core's terms."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        self.problems = problems


def analyze_one(data: bytes, name: str, workdir: Path):
    from postmortem.budget import Budget
    from postmortem.run import Options, analyze

    bundle = workdir / "bundle"
    bundle.mkdir(exist_ok=True)
    for old in bundle.iterdir():
        old.unlink()
    (bundle / name).write_bytes(data)
    return analyze(bundle, Options(budget=Budget(), time_limit=30))


def full_analysis(data: bytes, name: str, workdir: Path) -> None:
    from postmortem.report import html, jsonout, markdown, terminal

    bundle = workdir / "bundle"
    a = analyze_one(data, name, workdir)
    html.render(a, bundle_path=bundle)
    jsonout.render(a)
    markdown.render(a)
    terminal.render(a, out=io.StringIO())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--full-every", type=int, default=200)
    ap.add_argument("--compressed-every", type=int, default=50)
    args = ap.parse_args()
    from fuzzkit import Campaign, Hang

    from postmortem.core import read_core

    seeds = load_seeds()
    packed = compressed_seeds()
    spans = {name: regions(data) for name, data in seeds.items()}
    rng = random.Random(args.seed)
    camp = Campaign("cores", args.seed, args.seconds, hang_seconds=30)
    corpus = [c["recipe"] for c in camp.corpus() if c.get("recipe", {}).get("core") in seeds]
    full = packed_n = 0
    with tempfile.TemporaryDirectory() as tmp:
        while camp.running():
            camp.inputs += 1
            try:
                if not camp.inputs % args.compressed_every:
                    # a compressed core with patched bytes, through the decompressing reader
                    name = rng.choice(sorted(packed))
                    data = bytearray(packed[name])
                    for _ in range(rng.randint(1, 8)):
                        data[rng.randrange(len(data))] = rng.randrange(256)
                    if rng.random() < 0.3:
                        data = data[: rng.randrange(1, len(data))]
                    payload = {"compressed": name, "hex": bytes(data).hex() if len(data) < 400_000 else None}
                    packed_n += 1
                    signal.setitimer(signal.ITIMER_REAL, 90)
                    a = analyze_one(bytes(data), name, Path(tmp))
                    camp.disarm()
                    result = CoreOutcome(problems=tuple(m for art in a.case.artifacts for m in (art.message,) if m))
                else:
                    if corpus and rng.random() < 0.2:   # a kept recipe, patched further
                        base = rng.choice(corpus)
                        more = recipe(rng, base["core"], seeds[base["core"]], spans[base["core"]])
                        r = {"core": base["core"], "patches": base["patches"] + more["patches"],
                             "cut": more["cut"] if more["cut"] is not None else base["cut"]}
                    else:
                        name = rng.choice(sorted(seeds))
                        r = recipe(rng, name, seeds[name], spans[name])
                    payload = {"recipe": r}
                    camp.arm()
                    result = read_core(stream_of(seeds, r), r["core"], search_dirs=(CORES,))
                    camp.disarm()
                    if camp.inputs % args.full_every == 1 and len(seeds[r["core"]]) <= SMALL:
                        full += 1
                        signal.setitimer(signal.ITIMER_REAL, 90)
                        full_analysis(stream_of(seeds, r).materialize(), r["core"], Path(tmp))
                        camp.disarm()
                    if camp.novel(features(result), payload):
                        corpus.append(r)
                failed = [p for p in result.problems if p.startswith("core reader failed")]
                if failed:
                    camp.crashed(None, payload, kind="contained-" + failed[0].split(":")[1].strip()[:40])
                if not camp.inputs % 100 and camp.memory_grew():
                    camp.crashed(None, payload, kind="memory")
            except Hang as exc:
                camp.crashed(exc, payload, kind="hang")
            except Exception as exc:  # noqa: BLE001 - a crasher
                camp.disarm()
                camp.crashed(exc, payload)
    camp.disarm()
    print(f"seed {args.seed}: {camp.inputs:,} cores ({packed_n:,} compressed), {full:,} through the whole analysis")
    return camp.finish({"compressed": packed_n, "whole_analysis": full})


if __name__ == "__main__":
    sys.exit(main())
