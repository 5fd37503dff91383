"""Analyse many crash bundles in parallel and group them by crash signature.

`postmortem triage DIR... [--out DIR] [--baseline triage.json] [--jobs N] [--dask ADDRESS]
[--fail-on new|hardware|any] [-q]`

Each subfolder or archive directly under each DIR is one bundle (a subfolder holding
`bundle/` and `truth.json` - the corpus layout - means its `bundle/`; loose core or log
files count as single-file bundles).  Bundles are analysed in a local process pool, or
on an existing Dask cluster with --dask, and grouped by signature (docs/triage.md).
Writes index.html, triage.json (schema postmortem.triage/1), summary.md and one HTML
report per bundle under --out/bundles/.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_USAGE, EXIT_FAIL_ON = 0, 2, 3
BUNDLE_SECONDS = 60.0   # postmortem.triage.work.BUNDLE_SECONDS (not imported here: --help stays light)
DEFAULT_OUT = Path("reports") / "triage"

EPILOG = """examples:
  postmortem triage /data/crashes/2026-11-29/                          group a night's bundles
  postmortem triage new/ --baseline reports/triage/triage.json --fail-on new
  postmortem triage bundles/ --jobs 8 --out reports/nightly -q

exit status:
  0  triage completed and the --fail-on condition (if any) does not hold
  3  the --fail-on condition holds:
       new       a group whose signature is not in the --baseline (every group when there is none)
       hardware  any bundle with a hardware verdict
       any       any bundle with a verdict other than unknown, or any bundle that could not be analysed
  2  usage error (a DIR that is not a folder, an unreadable --baseline, an unreachable --dask scheduler)
  1  internal error
A bundle that cannot be analysed never stops the batch: it forms its own group, signature error:<reason>;
a bundle that uses up its --time-limit forms the group 'timeout'."""


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return n


def _seconds(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if n < 0 or n != n:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more")
    return n


def configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EPILOG
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="folder holding bundles")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help=f"output folder (default {DEFAULT_OUT})")
    p.add_argument("--baseline", type=Path, metavar="TRIAGE_JSON",
                   help="a previous triage.json: mark groups new / gone against it")
    p.add_argument("--jobs", type=_jobs, default=os.cpu_count() or 1, metavar="N",
                   help="local worker processes (default: the number of cores)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on an existing Dask cluster (tcp://host:8786); bundles must be readable there")
    p.add_argument("--fail-on", choices=("new", "hardware", "any"),
                   help="exit 3 when this condition holds (see exit status below)")
    p.add_argument("--tz", metavar="ZONE", help="time zone for local times that print none")
    p.add_argument("--rules", metavar="FILE", action="append", type=Path, default=[],
                   help="extra knowledge file (TOML)")
    p.add_argument("--no-reports", action="store_true", help="skip the per-bundle HTML reports")
    p.add_argument("--time-limit", type=_seconds, default=BUNDLE_SECONDS, metavar="SECONDS",
                   help=f"time budget of one bundle (default {BUNDLE_SECONDS:g}); a bundle that uses it up "
                        "forms the group 'timeout'; 0 for no limit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary on stdout")


def main(args: argparse.Namespace) -> int:
    from postmortem.triage import execute, group, render
    from postmortem.triage.discover import DiscoveryError, find_bundles
    from postmortem.triage.work import Settings

    try:
        tasks = find_bundles(list(args.dirs))
        baseline = group.load_baseline(args.baseline) if args.baseline else None
        _check_rules(args.rules)
    except (DiscoveryError, group.BaselineError, ValueError) as exc:
        return _usage(str(exc))
    settings = Settings(tz=args.tz, rules=tuple(str(r) for r in args.rules), html=not args.no_reports,
                        time_limit=args.time_limit or None)
    try:
        results = _run(tasks, settings, args, execute)
    except execute.ClusterError as exc:
        return _usage(str(exc))
    doc = group.build(results, [str(d) for d in args.dirs], baseline, str(args.baseline) if args.baseline else None)
    render.write_all(doc, args.out)
    if not args.quiet:
        print(render.render_summary(doc), end="")
        print(f"triage: {args.out / 'index.html'}")
    return EXIT_FAIL_ON if group.fails(doc, args.fail_on) else EXIT_OK


def _run(tasks, settings, args, execute) -> list:
    from postmortem.triage import render

    stream = (execute.run_dask(tasks, settings, args.dask) if args.dask
              else execute.run_local(tasks, settings, args.jobs))
    results = []
    with execute.progress_bar(len(tasks), enabled=not args.quiet) as advance:
        for result in stream:
            if result.html is not None:
                render.write_report(args.out, result.name, result.html)
            results.append(_without_html(result))
            advance(result)
    return results


def _without_html(result):
    from dataclasses import replace
    return replace(result, html=None)   # reports are on disk; keep memory flat for big batches


def _check_rules(rules: list[Path]) -> None:
    if not rules:
        return
    from postmortem import knowledge
    knowledge.load(tuple(rules))   # KnowledgeError is a ValueError: a usage error


def _usage(message: str) -> int:
    print(f"postmortem triage: {message}", file=sys.stderr)
    return EXIT_USAGE
