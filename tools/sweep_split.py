"""Split a scored blind sweep into its development and frozen halves by sha1 parity of the case id.

    python tools/sweep_split.py SWEEP_DIR DEV_FOLDER FROZEN_FOLDER [--dry]

SWEEP_DIR holds <group>/<case>/ folders (group = the collector: gh-a, lab-b, ...).  A case whose
sha1(case folder name) ends in an odd hex digit goes to DEV_FOLDER/<group>/<case>, an even one to
FROZEN_FOLDER/<group>/<case>; group-level files (a collector's README, scripts) are copied to both
halves.  The parity is fixed before anyone sees a verdict, so no choice of who goes where is made
by looking at scores.  Writes split.txt into both halves.
"""
import hashlib
import shutil
import sys
from pathlib import Path


def half_of(case_id: str) -> str:
    return "dev" if int(hashlib.sha1(case_id.encode()).hexdigest()[-1], 16) % 2 else "frozen"


def main(argv: list[str]) -> int:
    dry = "--dry" in argv
    sweep, dev, frozen = (Path(a) for a in argv if a != "--dry")
    lines = []
    for group in sorted(p for p in sweep.iterdir() if p.is_dir()):
        for item in sorted(group.iterdir()):
            is_case = item.is_dir() and (item / "truth.json").is_file()
            targets = [dev if half_of(item.name) == "dev" else frozen] if is_case else [dev, frozen]
            for t in targets:
                dest = t / group.name / item.name
                if is_case:
                    lines.append(f"{group.name}/{item.name}\t{'dev' if t is dev else 'frozen'}")
                if dry:
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                if item.is_dir():
                    shutil.copytree(item, dest, symlinks=True)
                else:
                    shutil.copy2(item, dest)
    print("\n".join(lines))
    if not dry:
        for t in (dev, frozen):
            t.mkdir(parents=True, exist_ok=True)
            (t / "split.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
