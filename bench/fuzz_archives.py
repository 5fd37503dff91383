"""Fuzz the archive reader: mutate valid .tar/.tgz/.zip bundles (byte edits, cuts,
splices; DELIBERATELY HOSTILE input generated here) and analyse each under a small
budget.  A finding is any exception other than BundleError, an input past the alarm (a
hang) or a peak RSS 500 MiB over the start: one input per class is kept in
fuzz/crashers/archives/ (replayed by tests/test_fuzz_crashers.py); archives whose artifacts
show a status or problem shape not seen before are kept in fuzz/corpus/archives/ and
mutated again.  Appends the run to fuzz/runs.jsonl.

    python bench/fuzz_archives.py --seconds 600 --seed 1
"""
from __future__ import annotations

import argparse
import base64
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]


def mutate(rng: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.randint(0, 16)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    if rng.random() < 0.3:
        at = rng.randrange(len(data))
        data[at:at] = rng.randbytes(rng.randint(1, 1024))
    if rng.random() < 0.3:
        data = data[: rng.randrange(1, len(data))]
    return bytes(data)


def features(a) -> set[str]:
    from fuzzkit import shape

    out = {f"artifact {art.status.value} {art.kind}" for art in a.case.artifacts}
    out |= {f"message {shape(art.message)}" for art in a.case.artifacts}
    out |= {f"parsers {','.join(art.parsers)}" for art in a.case.artifacts}
    out |= {f"limit {shape(n)}" for n in a.limits}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from fuzzkit import Campaign, Hang
    from test_robustness import _SEEDS

    from postmortem.budget import Budget
    from postmortem.bundle import BundleError
    from postmortem.run import Options, analyze

    rng = random.Random(args.seed)
    camp = Campaign("archives", args.seed, args.seconds, hang_seconds=60)
    corpus = [(c["suffix"], base64.b64decode(c["b64"])) for c in camp.corpus()]
    opts = Options(budget=Budget(bytes=64 << 20, files=500))
    with tempfile.TemporaryDirectory() as tmp:
        while camp.running():
            if corpus and rng.random() < 0.2:
                kind, base = rng.choice(corpus)
            else:
                kind = rng.choice(sorted(_SEEDS))
                base = _SEEDS[kind]
            data = mutate(rng, base)
            p = Path(tmp) / f"fuzz{kind}"
            p.write_bytes(data)
            camp.inputs += 1
            payload = {"suffix": kind, "b64": base64.b64encode(data).decode()}
            try:
                camp.arm()
                a = analyze(p, opts)
                camp.disarm()
                if camp.novel(features(a), payload):
                    corpus.append((kind, data))
                if not camp.inputs % 50 and camp.memory_grew():
                    camp.crashed(None, payload, kind="memory")
            except BundleError:
                camp.disarm()
            except Hang as exc:
                camp.crashed(exc, payload, kind="hang")
            except Exception as exc:  # noqa: BLE001 - a crasher
                camp.disarm()
                camp.crashed(exc, payload)
    camp.disarm()
    return camp.finish()


if __name__ == "__main__":
    sys.exit(main())
