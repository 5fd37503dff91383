"""Compile the HTML report's jinja2 templates (postmortem/report/templates/*.j2) to Python
modules in postmortem/report/templates_compiled/ (run after any template edit, or after
upgrading jinja2):

    python tools/compile_templates.py            # write the modules and manifest.json
    python tools/compile_templates.py --check    # exit 1 when they are missing or stale

jinja2's own Environment.compile_templates, with the report's environment (autoescape,
StrictUndefined, trim/lstrip blocks, finalize, filters); loaded by jinja2's ModuleLoader.
manifest.json records the jinja2 version and the sha256 of every template: the report uses
the compiled modules only while both still hold, and compiles from the templates otherwise.
tests/test_compiled_templates.py fails while they are stale.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from postmortem.report import html  # noqa: E402

OUT = ROOT / "postmortem" / "report" / html.COMPILED


def build(folder: Path) -> None:
    """The compiled modules and their manifest, written to `folder` (emptied first)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    env = html.environment(compiled=False)
    env.compile_templates(str(folder), filter_func=lambda name: name.endswith(".j2"), zip=None,
                          ignore_errors=False, log_function=lambda _: None)
    (folder / "manifest.json").write_text(json.dumps(html.templates_manifest(), indent=1, sort_keys=True) + "\n",
                                          encoding="utf-8")


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*")) if p.is_file()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when the compiled templates differ from a fresh build")
    args = ap.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp) / "out")
            if contents(Path(tmp) / "out") != (contents(OUT) if OUT.is_dir() else {}):
                print(f"{OUT.relative_to(ROOT)} is stale: run python tools/compile_templates.py", file=sys.stderr)
                return 1
        print(f"{OUT.relative_to(ROOT)} is current")
        return 0
    build(OUT)
    print(f"wrote {OUT.relative_to(ROOT)}: {', '.join(sorted(contents(OUT)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
