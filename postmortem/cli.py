"""The `postmortem` command: argparse -> options -> run -> renderers -> exit code.

Exit codes (a contract): 0 analysis completed (whatever the verdict); 2 usage error or
unreadable bundle; 1 internal error (one line; a traceback only with --debug).
Subcommands with an exit code of their own say so in their --help.
No analysis logic lives here, and heavy libraries are imported only when used.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys

from postmortem import DEFAULT_SECONDS, __version__, precompiled

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    from pathlib import Path

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141   # what a shell reports for a writer killed by SIGPIPE (`... | head`)

ANALYZE_EPILOG = """examples:
  postmortem analyze ./crash_bundle/                 verdict on the terminal, reports/crash_bundle.html
  postmortem analyze node7.tar.gz --markdown -       a ticket body on stdout
  postmortem analyze ./b --json verdict.json -q      JSON for a script, one line on the terminal
  postmortem analyze ./b --explain                   the classifier's decision trace

exit status:
  0  the analysis completed, whatever the verdict
  2  usage error, or the bundle cannot be read at all
  1  internal error (one line; a traceback with --debug)
  141  the reader of stdout went away (`| head`): nothing more is written"""

EVAL_EPILOG = """examples:
  postmortem eval fixtures/validation*/            score every case folder
  postmortem eval cases/ --json -                  the same as JSON

exit status:
  0  every case was scored (whatever the score)
  2  usage error: a DIR that is not a folder, or no case (bundle/ + truth.json) in any DIR
  1  internal error"""

EXPLAIN_EPILOG = """examples:
  postmortem explain                  every cause, with its category and title
  postmortem explain shm_exhausted    what it means, the fix, commands that confirm it
  postmortem explain xid:79           an Xid code (also: 79, Xid79, xid 79)

exit status:
  0  found
  2  unknown cause or Xid (close matches are suggested)"""

RULES_EPILOG = """examples:
  postmortem rules                    every built-in message pattern, with a header line
  postmortem rules site.toml          validate a rule file (same layout as postmortem/knowledge)

exit status:
  0  listed, or every FILE is valid
  2  a FILE is not valid (the message names the file and entry)"""

# Examples and exit codes for subcommands whose own module gives none.
MODULE_EPILOGS = {
    "collect": """examples:
  postmortem collect --out bundle.tar.gz             on the failing node, before it is rebooted
  postmortem collect --since 2h --out ./bundle/

exit status:
  0  collected (what could not be read is listed in manifest.json)
  2  usage error
  1  internal error""",
    "check": """examples:
  postmortem check                                                   /dev/shm, ulimits, leftovers
  postmortem check --workers 8 --prefetch 2 --batch-bytes 256M --procs 8

exit status:
  0  fits (or nothing to compute)
  3  /dev/shm will not hold what the DataLoader puts there (the fix is printed)
  2  usage error""",
}


class UsageError(Exception):
    pass


def _columns() -> int:
    """shutil.get_terminal_size().columns, without importing shutil (bz2, lzma, fnmatch: a
    few milliseconds of every start) just for that: COLUMNS, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Help(argparse.HelpFormatter):
    """argparse's help layout, at the width argparse would choose (see _columns)."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _RawHelp(_Help, argparse.RawDescriptionHelpFormatter):
    """argparse.RawDescriptionHelpFormatter, at the width argparse would choose."""


def _path(text: str) -> Path:
    """argparse's `type` for paths: pathlib only once a path is given (startup time)."""
    from pathlib import Path

    return Path(text)


# Subcommands whose module configures its own parser; a module is imported only when its
# command is the one being run (or for the full parser), so `--help` stays fast.
MODULE_COMMANDS = (("collect", "postmortem.collect", "gather evidence on a failing node"),
                   ("check", "postmortem.check", "preflight: will /dev/shm hold the DataLoader?"),
                   ("triage", "postmortem.triage", "analyse many bundles and group them by signature"))


def _command(argv: list[str]) -> str | None:
    """The subcommand named in argv (the top level has no option that takes a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser; given a command, module subcommands other than it are listed
    (name and help) without importing their module."""
    p = argparse.ArgumentParser(prog="postmortem", formatter_class=_Help,
                                description="Post-mortem crash and log analyzer for multi-GPU training failures.")
    p.add_argument("--version", action="version", version=f"postmortem {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    raw = _RawHelp
    a = sub.add_parser("analyze", help="analyse one crash bundle (folder, .tar[.gz], .zip or file)",
                       description="Analyse one crash bundle and print the verdict; writes the HTML report "
                                   "to reports/<bundle-name>.html unless --html says otherwise.",
                       epilog=ANALYZE_EPILOG, formatter_class=raw)
    a.add_argument("bundle", type=_path, help="folder, archive or file; '-' reads one log from standard input")
    a.add_argument("--html", metavar="PATH", help="HTML report path (default reports/<bundle-name>.html; '-' for none)")
    a.add_argument("--json", metavar="PATH|-", help="write the JSON verdict (schema postmortem.verdict/1); '-' = stdout")
    a.add_argument("--markdown", metavar="PATH|-", help="write a Markdown summary for a ticket; '-' = stdout "
                                                     "(only one of --json and --markdown can be '-')")
    a.add_argument("--tz", metavar="ZONE", help="time zone for local times that print none (e.g. Europe/Berlin, +02:00)")
    a.add_argument("--rules", metavar="FILE", action="append", type=_path, default=[], help="extra knowledge file (TOML)")
    a.add_argument("--gdb", action="store_true", help="add a gdb backtrace for cores when gdb and the executable exist")
    a.add_argument("--explain", action="store_true", help="print the classifier's decision trace")
    a.add_argument("--time-limit", metavar="SECONDS", type=float, default=DEFAULT_SECONDS,
                   help=f"stop reading after this many seconds and decide from what was read, saying so "
                        f"(exit 0; default {DEFAULT_SECONDS:g})")
    a.add_argument("--no-time-limit", action="store_true", help="read the whole bundle however long it takes")
    a.add_argument("--allow-hardlinks", action="store_true",
                   help="read bundle files that have more than one hard link (refused by default)")
    a.add_argument("--jobs", type=_jobs, default=0, metavar="N",
                   help="processes reading a big folder bundle's files (default 0: one per core; "
                        "1: this process only); the result is the same")
    a.add_argument("-q", "--quiet", action="store_true",
                   help="print only problems: one verdict line and the artifacts that could not be read")
    a.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")

    e = sub.add_parser("eval", help="score verdicts against case folders with truth.json",
                       description="Each DIR holds case folders with bundle/ and truth.json (category, cause).",
                       epilog=EVAL_EPILOG, formatter_class=raw)
    e.add_argument("dirs", nargs="+", type=_path, metavar="DIR")
    e.add_argument("--json", metavar="PATH|-", help="machine-readable results; '-' = stdout")
    e.add_argument("--rules", metavar="FILE", action="append", type=_path, default=[])
    e.add_argument("--debug", action="store_true")

    x = sub.add_parser("explain", help="what the project knows about a cause (or an Xid code)",
                       description="Print what the project knows about a cause — what it means, the fix, the "
                                   "commands that confirm it, the messages that point to it — or about an "
                                   "NVIDIA Xid code.  Without an argument, list every cause.",
                       epilog=EXPLAIN_EPILOG, formatter_class=raw)
    x.add_argument("cause", nargs="?", help="cause id (e.g. shm_exhausted) or xid:79; omit to list causes")
    x.add_argument("--rules", metavar="FILE", action="append", type=_path, default=[])
    x.add_argument("--debug", action="store_true")

    r = sub.add_parser("rules", help="list the built-in knowledge, or validate rule files",
                       description="List the built-in message patterns (id, role, cause, weight), or "
                                   "validate rule files given as arguments.",
                       epilog=RULES_EPILOG, formatter_class=raw)
    r.add_argument("files", nargs="*", type=_path, metavar="FILE")
    r.add_argument("--coverage", action="store_true", help="per upstream catalog and version: entries mapped to a cause, "
                   "marked context, or not yet mapped")
    r.add_argument("--debug", action="store_true")

    for name, module, text in MODULE_COMMANDS:
        if command is not None and command != name:
            sub.add_parser(name, help=text, formatter_class=_Help)
            continue
        try:
            import importlib

            mod = importlib.import_module(module)
        except ImportError:
            continue
        s = sub.add_parser(name, help=text, description=(mod.__doc__ or text).strip().splitlines()[0],
                           formatter_class=_Help)
        mod.configure(s)
        if not s.epilog and name in MODULE_EPILOGS:
            s.epilog = MODULE_EPILOGS[name]
            s.formatter_class = argparse.RawDescriptionHelpFormatter
        s.set_defaults(_module=mod)
        if not any(act.dest == "debug" for act in s._actions):
            s.add_argument("--debug", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with _collector_off():   # patterns compiled at build time (startup time)
        precompiled.install_regexes()
    parser = _parser(_command(argv) or "")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    debug = getattr(args, "debug", False)
    with _collector_off():   # every command creates the package's dataclasses: precompiled (startup time)
        precompiled.install_methods()
    try:
        _check_tz(getattr(args, "tz", None))
        if hasattr(args, "_module"):
            return int(args._module.main(args))
        return {"analyze": cmd_analyze, "eval": cmd_eval, "explain": cmd_explain, "rules": cmd_rules}[args.command](args)
    except UsageError as exc:
        print(f"postmortem: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("postmortem: interrupted", file=sys.stderr)
        return EXIT_INTERNAL
    except BrokenPipeError:
        return _stdout_gone()
    except Exception as exc:  # noqa: BLE001 - the one place internal errors are reported
        import errno

        if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
            return _stdout_gone()
        if debug:
            raise
        print(f"postmortem: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
              file=sys.stderr)
        return EXIT_INTERNAL


def _stdout_gone() -> int:
    """The reader of stdout left (`| head`): say nothing, and keep Python from complaining
    when it flushes stdout at exit (https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def _check_tz(tz: str | None) -> None:
    """--tz takes an IANA zone name or a UTC offset; a name is never opened as a path."""
    if tz is None:
        return
    from postmortem.parsers.clocks import zone

    if zone(tz) is None:
        raise UsageError(f"--tz {tz!r} is not an IANA time zone name (e.g. Europe/Berlin) or a UTC offset (+02:00)")


def _write(target: str, text: str) -> None:
    from pathlib import Path

    if target == "-":
        sys.stdout.write(text)
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _knowledge_errors(rules: list[Path]) -> None:
    from postmortem import knowledge

    try:
        knowledge.load(tuple(rules))
    except knowledge.KnowledgeError as exc:
        raise UsageError(f"bad rules file: {exc}") from exc


class _collector_off:
    """Importing the analysis (and loading the knowledge) makes tens of thousands of objects
    that live until exit and next to no garbage: collections meanwhile are wasted time (one
    of them ~10% of a small bundle's run, issue 17).  Once frozen, later collections skip
    them too."""

    def __enter__(self):
        gc.disable()

    def __exit__(self, *exc):
        gc.freeze()
        gc.enable()
        return False


def _analyze(bundle: Path, rules: list[Path], tz: str | None = None, use_gdb: bool = False,
             time_limit: float | None = None, allow_hardlinks: bool = False, jobs: int = 1):
    with _collector_off():
        from postmortem.bundle import BundleError
        from postmortem.run import Options, analyze

        _knowledge_errors(rules)
    if time_limit is not None and time_limit <= 0:
        raise UsageError("--time-limit must be a positive number of seconds")
    try:
        with _progress(f"analysing {bundle.name or bundle}"):
            return analyze(bundle, Options(tz=tz, rules=tuple(rules), use_gdb=use_gdb, time_limit=time_limit,
                                           allow_hardlinks=allow_hardlinks, jobs=jobs))
    except BundleError as exc:
        raise UsageError(str(exc)) from exc


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 (one per core) or more")
    return n


PROGRESS_AFTER_S = 1.0   # analyses shorter than this print nothing extra


class _progress:
    """A spinner on stderr, shown only when stderr is a terminal and only once the analysis
    has taken longer than PROGRESS_AFTER_S (POSTMORTEM_PROGRESS_AFTER overrides, for tests)."""

    def __init__(self, label: str):
        self.label, self.status, self.timer = label, None, None

    def __enter__(self):
        if not sys.stderr.isatty() or os.environ.get("NO_COLOR") == "progress-off":
            return self
        import threading

        try:
            after = float(os.environ.get("POSTMORTEM_PROGRESS_AFTER", PROGRESS_AFTER_S))
        except ValueError:
            after = PROGRESS_AFTER_S
        self.timer = threading.Timer(after, self._start)
        self.timer.daemon = True
        self.timer.start()
        return self

    def _start(self):
        from rich.console import Console
        from postmortem.report.text import terminal_text

        self.status = Console(stderr=True, markup=False, highlight=False).status(terminal_text(self.label, 60))
        self.status.start()

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
        if self.status is not None:
            self.status.stop()
        return False


def cmd_analyze(args) -> int:
    from pathlib import Path

    with _collector_off():
        from postmortem.bundle import bundle_name
        from postmortem.report import RenderOptions, get

    if args.json == "-" and args.markdown == "-":
        raise UsageError("--json - and --markdown - would both go to stdout: send one of them to a file")
    analysis = _analyze(args.bundle, args.rules, args.tz, args.gdb, None if args.no_time_limit else args.time_limit,
                        args.allow_hardlinks, args.jobs)
    # The analysis is millions of acyclic objects kept until exit: left in the collector's
    # generations, every collection the renderers trigger would walk them all again.
    gc.freeze()
    stdout_taken = args.json == "-" or args.markdown == "-"
    from_stdin = str(args.bundle) == "-"
    named = args.bundle if from_stdin else args.bundle.resolve()
    if not from_stdin and named.name == "bundle" and named.parent.name:
        named = named.parent   # the case layout (<case>/bundle/): name the report after the case
    html_target = args.html or str(Path("reports") / f"{bundle_name(named)}.html")
    report = html_target if html_target != "-" else None
    options = RenderOptions(bundle_path=None if from_stdin else args.bundle, quiet=args.quiet, report=report)
    for name, target in (("html", report), ("json", args.json), ("markdown", args.markdown)):
        if target:
            _render_to(name, analysis, target, options)
    if not stdout_taken:
        get("terminal").render(analysis, sys.stdout, options)
        if args.explain:
            print("\n".join(analysis.verdict.trace))
    elif args.explain:
        print("\n".join(analysis.verdict.trace), file=sys.stderr)
    for note in analysis.limits:   # on stderr whatever stdout carries: a cut analysis always says so
        print(f"note: {note}", file=sys.stderr)
    return EXIT_OK


def _render_to(name: str, analysis, target: str, options) -> None:
    from pathlib import Path

    from postmortem.report import get

    if target == "-":
        get(name).render(analysis, sys.stdout, options)
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        get(name).render(analysis, out, options)


def cmd_eval(args) -> int:
    import json

    from postmortem.evaluate import evaluate, find_cases, render_lines

    for d in args.dirs:
        if not d.is_dir():
            raise UsageError(f"{d}: not a directory")
    if not find_cases(args.dirs):
        raise UsageError(f"no case folders (each with bundle/ and truth.json) in {', '.join(map(str, args.dirs))}")
    _knowledge_errors(args.rules)
    result = evaluate(args.dirs, tuple(args.rules))
    if args.json == "-":
        print(json.dumps(result, indent=2))
    else:
        for line in render_lines(result):
            print(line)
        if args.json:
            _write(args.json, json.dumps(result, indent=2) + "\n")
    return EXIT_OK


def cmd_explain(args) -> int:
    import re

    from postmortem import knowledge

    _knowledge_errors(args.rules)
    k = knowledge.load(tuple(args.rules))
    if not args.cause:
        print(f"{'CAUSE':28} {'CATEGORY':9} TITLE")
        for c in k.causes.values():
            print(f"{c.id:28} {c.category:9} {c.title}")
        return EXIT_OK
    xid = re.fullmatch(r"\s*(?:xid[\s:_-]*)?(\d+)\s*", args.cause, re.I)
    if xid:
        code = int(xid[1])
        info = k.xids.get(code)
        if info is None:
            near = sorted(k.xids, key=lambda c: abs(c - code))[:3]
            raise UsageError(f"Xid {code} is not in the catalog; close: {', '.join(f'xid:{c}' for c in near)}")
        print(f"Xid {code} {info.name}\n  {info.meaning}\n  points to: {info.cause or '(a consequence, never a root)'}"
              f" ({info.role})\n  NVIDIA immediate action: {info.immediate}; investigatory: {info.investigatory}")
        return EXIT_OK
    c = k.causes.get(args.cause.strip().lower().replace("-", "_"))
    if c is None:
        raise UsageError(f"unknown cause {args.cause!r}" + _suggest(args.cause, k) + "; `postmortem explain` lists them")
    print(f"{c.id} ({c.category}): {c.title}\n\n{c.explanation}\n\nFix:")
    print("\n".join(f"  - {x}" for x in c.remediation))
    print("Confirm with:")
    print("\n".join([f"  $ {x}" for x in c.commands] + [f"  - {x}" for x in c.steps]))
    pats = [m for m in k.messages if m.cause == c.id]
    if pats:
        print("Recognised by:")
        print("\n".join(f"  - {m.id}: {m.sample[:110]}" for m in pats))
    print(f"Source: {c.source}")
    return EXIT_OK


def _suggest(word: str, k) -> str:
    """Causes whose id or title contains the word, else the closest ids by spelling."""
    import difflib

    w = word.strip().lower().replace("-", "_")
    hits = [c.id for c in k.causes.values() if w and (w in c.id or w.replace("_", " ") in c.title.lower())]
    hits = hits or difflib.get_close_matches(w, list(k.causes), n=3, cutoff=0.5)
    return f" (did you mean {', '.join(hits[:4])}?)" if hits else ""


def cmd_rules(args) -> int:
    from postmortem import knowledge

    if getattr(args, "coverage", False):
        from postmortem.knowledge import catalog
        print(catalog.coverage_table())
        return EXIT_OK
    if args.files:
        bad = 0
        for f in args.files:
            try:
                k = knowledge.load((f,))
                print(f"{f}: ok ({len(k.messages)} message patterns, {len(k.causes)} causes, {len(k.xids)} Xids in total)")
                for note in knowledge.unstated_strengths(f):
                    print(f"{f}: warning: {note}")
            except knowledge.KnowledgeError as exc:
                print(f"{f}: {exc}")
                bad += 1
        return EXIT_USAGE if bad else EXIT_OK
    k = knowledge.load()
    print(f"{'PATTERN':32} {'ROLE':8} {'CAUSE':24} WEIGHT")
    for m in k.messages:
        print(f"{m.id:32} {m.role:8} {m.cause or '-':24} {m.weight:.2f}")
    print(f"{len(k.messages)} message patterns, {len(k.causes)} causes, {len(k.xids)} Xid codes")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
