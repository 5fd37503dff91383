"""Fuzz the archive reader: mutate valid .tar/.tgz/.zip bundles (byte edits, cuts,
splices; DELIBERATELY HOSTILE input generated here) and analyse each under a small
budget.  Prints the number of inputs and every exception other than BundleError
(a crasher: keep it as a seed in tests/test_robustness.py).

    python bench/fuzz_archives.py --seconds 600 --seed 1
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from test_robustness import _SEEDS

    from postmortem.budget import Budget
    from postmortem.bundle import BundleError
    from postmortem.run import Options, analyze

    rng = random.Random(args.seed)
    opts = Options(budget=Budget(bytes=64 << 20, files=500))
    n = crashes = 0
    end = time.monotonic() + args.seconds
    with tempfile.TemporaryDirectory() as tmp:
        while time.monotonic() < end:
            kind = rng.choice(sorted(_SEEDS))
            data = bytearray(_SEEDS[kind])
            for _ in range(rng.randint(0, 16)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            if rng.random() < 0.3:
                at = rng.randrange(len(data))
                data[at:at] = rng.randbytes(rng.randint(1, 1024))
            if rng.random() < 0.3:
                data = data[: rng.randrange(1, len(data))]
            p = Path(tmp) / f"fuzz{kind}"
            p.write_bytes(bytes(data))
            n += 1
            try:
                analyze(p, opts)
            except BundleError:
                pass
            except Exception:  # noqa: BLE001 - a crasher
                crashes += 1
                keep = Path(tmp).parent / f"crasher-{args.seed}-{n}{kind}"
                keep.write_bytes(bytes(data))
                print(f"CRASH #{n} kept at {keep}:\n{traceback.format_exc()}", flush=True)
    print(f"{n} inputs, {crashes} crashers")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
