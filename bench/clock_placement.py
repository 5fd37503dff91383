"""How far from the truth the timeline places kernel lines, with and without collect's clock triple.

    .venv/bin/python bench/clock_placement.py [fixtures/lab/output/lab-kmsg-clock-berlin]

The case (fixtures/lab/kmsg_clock.sh) wrote marker lines through /dev/kmsg and recorded
time.time() around each write (markers.json).  Printed: per variant of the bundle, the basis
the timeline gives and the worst and median |placed - truth| over the markers.
"""
from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from postmortem.run import analyze

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "fixtures/lab/output/lab-kmsg-clock-berlin"


def placement_errors(bundle: Path, truth: list[dict]) -> tuple[list[float], set[str]]:
    a = analyze(bundle)
    by_text = {}
    for e in a.case.events:
        msg = str(e.data.get("msg") or "")
        if msg.startswith("postmortem-lab: ") and e.when and e.when.at:
            by_text[msg] = e
    errors, notes = [], set()
    for t in truth:
        e = by_text.get(t["text"])
        if e is None:
            continue
        errors.append(abs(e.when.at.timestamp() - t["truth"]))
        notes.add(e.when.note.split("(", 1)[1].split(")", 1)[0] if "(" in e.when.note else e.when.note)
    return errors, notes


def variants(case: Path):
    yield "clock triple (clock.json)", case / "bundle"
    with tempfile.TemporaryDirectory() as tmp:
        b = Path(tmp) / "bundle"
        shutil.copytree(case / "bundle", b)
        (b / "clock.json").unlink()
        yield "no triple: /proc/stat btime", b
        (b / "proc_stat_btime.txt").unlink()
        yield "no triple, no btime: dmesg -T copy", b


def journal_variants(case: Path):
    yield "journal only (journalctl -o json)", case / "bundle"
    with tempfile.TemporaryDirectory() as tmp:
        b = Path(tmp) / "bundle"
        shutil.copytree(case / "bundle", b)
        for name in ("journal_k.json", "journal_k.export"):
            (b / name).unlink()
        yield "short-monotonic + dmesg, no anchor", b


def main() -> None:
    case = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    truth = json.loads((case / "markers.json").read_text())
    journal = (case / "bundle" / "journal_k.json").exists()
    for name, bundle in (journal_variants(case) if journal else variants(case)):
        errors, basis = placement_errors(bundle, truth)
        if not errors:
            print(f"{name:38s} markers  0/{len(truth)}  not placed")
            continue
        print(f"{name:38s} markers {len(errors):2d}/{len(truth)}  max {max(errors) * 1e3:8.2f} ms  "
              f"median {statistics.median(errors) * 1e3:8.2f} ms  basis: {'; '.join(sorted(basis))}")


if __name__ == "__main__":
    main()
