"""The `postmortem` command: argparse -> options -> run -> renderers -> exit code.

Exit codes (a contract): 0 analysis completed (whatever the verdict); 2 usage error or
unreadable bundle; 1 internal error (one line; a traceback only with --debug).
Subcommands with an exit code of their own say so in their --help.
No analysis logic lives here, and heavy libraries are imported only when used.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from postmortem import __version__

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="postmortem",
                                description="Post-mortem crash and log analyzer for multi-GPU training failures.")
    p.add_argument("--version", action="version", version=f"postmortem {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    a = sub.add_parser("analyze", help="analyse one crash bundle (folder, .tar[.gz], .zip or file)",
                       description="Analyse one crash bundle and print the verdict; writes the HTML report "
                                   "to reports/<bundle-name>.html unless --html says otherwise.")
    a.add_argument("bundle", type=Path, help="folder, archive or file; '-' reads one log from standard input")
    a.add_argument("--html", metavar="PATH", help="HTML report path (default reports/<bundle-name>.html; '-' for none)")
    a.add_argument("--json", metavar="PATH|-", help="write the JSON verdict (schema postmortem.verdict/1); '-' = stdout")
    a.add_argument("--markdown", metavar="PATH|-", help="write a Markdown summary for a ticket; '-' = stdout")
    a.add_argument("--tz", metavar="ZONE", help="time zone for local times that print none (e.g. Europe/Berlin, +02:00)")
    a.add_argument("--rules", metavar="FILE", action="append", type=Path, default=[], help="extra knowledge file (TOML)")
    a.add_argument("--gdb", action="store_true", help="add a gdb backtrace for cores when gdb and the executable exist")
    a.add_argument("--explain", action="store_true", help="print the classifier's decision trace")
    a.add_argument("--time-limit", metavar="SECONDS", type=float, default=None,
                   help="stop reading after this many seconds and decide from what was read (exit 0)")
    a.add_argument("--allow-hardlinks", action="store_true",
                   help="read bundle files that have more than one hard link (refused by default)")
    a.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    a.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")

    e = sub.add_parser("eval", help="score verdicts against case folders with truth.json",
                       description="Each DIR holds case folders with bundle/ and truth.json (category, cause).")
    e.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    e.add_argument("--json", metavar="PATH|-", help="machine-readable results; '-' = stdout")
    e.add_argument("--rules", metavar="FILE", action="append", type=Path, default=[])
    e.add_argument("--debug", action="store_true")

    x = sub.add_parser("explain", help="what the project knows about a cause (or an Xid code)")
    x.add_argument("cause", nargs="?", help="cause id (e.g. shm_exhausted) or xid:79; omit to list causes")
    x.add_argument("--rules", metavar="FILE", action="append", type=Path, default=[])
    x.add_argument("--debug", action="store_true")

    r = sub.add_parser("rules", help="list the built-in knowledge, or validate rule files")
    r.add_argument("files", nargs="*", type=Path, metavar="FILE")
    r.add_argument("--coverage", action="store_true", help="per upstream catalog and version: entries mapped to a cause, "
                   "marked context, or not yet mapped")
    r.add_argument("--debug", action="store_true")

    for name, module, text in (("collect", "postmortem.collect", "gather evidence on a failing node"),
                               ("check", "postmortem.check", "preflight: will /dev/shm hold the DataLoader?"),
                               ("triage", "postmortem.triage", "analyse many bundles and group them by signature")):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        s = sub.add_parser(name, help=text, description=(mod.__doc__ or text).strip().splitlines()[0])
        mod.configure(s)
        s.set_defaults(_module=mod)
        if not any(act.dest == "debug" for act in s._actions):
            s.add_argument("--debug", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    debug = getattr(args, "debug", False)
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
    except Exception as exc:  # noqa: BLE001 - the one place internal errors are reported
        if debug:
            raise
        print(f"postmortem: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
              file=sys.stderr)
        return EXIT_INTERNAL


def _check_tz(tz: str | None) -> None:
    """--tz takes an IANA zone name or a UTC offset; a name is never opened as a path."""
    from postmortem.parsers.clocks import zone

    if tz is not None and zone(tz) is None:
        raise UsageError(f"--tz {tz!r} is not an IANA time zone name (e.g. Europe/Berlin) or a UTC offset (+02:00)")


def _write(target: str, text: str) -> None:
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


def _analyze(bundle: Path, rules: list[Path], tz: str | None = None, use_gdb: bool = False,
             time_limit: float | None = None, allow_hardlinks: bool = False):
    from postmortem.bundle import BundleError
    from postmortem.run import Options, analyze

    _knowledge_errors(rules)
    if time_limit is not None and time_limit <= 0:
        raise UsageError("--time-limit must be a positive number of seconds")
    try:
        return analyze(bundle, Options(tz=tz, rules=tuple(rules), use_gdb=use_gdb, time_limit=time_limit,
                                       allow_hardlinks=allow_hardlinks))
    except BundleError as exc:
        raise UsageError(str(exc)) from exc


def cmd_analyze(args) -> int:
    from postmortem.bundle import bundle_name
    from postmortem.report import html, jsonout, markdown, terminal

    analysis = _analyze(args.bundle, args.rules, args.tz, args.gdb, args.time_limit, args.allow_hardlinks)
    stdout_taken = args.json == "-" or args.markdown == "-"
    named = args.bundle if str(args.bundle) == "-" else args.bundle.resolve()
    html_target = args.html or str(Path("reports") / f"{bundle_name(named)}.html")
    if html_target != "-":
        _write(html_target, html.render(analysis, bundle_path=None if str(args.bundle) == "-" else args.bundle))
    if args.json:
        _write(args.json, jsonout.render(analysis) + "\n")
    if args.markdown:
        _write(args.markdown, markdown.render(analysis))
    if not stdout_taken:
        terminal.render(analysis, quiet=args.quiet)
        if args.explain:
            print("\n".join(analysis.verdict.trace))
        for note in analysis.limits:
            print(f"note: {note}", file=sys.stderr)
        if not args.quiet and html_target != "-":
            print(f"report: {html_target}")
    elif args.explain:
        print("\n".join(analysis.verdict.trace), file=sys.stderr)
    return EXIT_OK


def cmd_eval(args) -> int:
    from postmortem.evaluate import evaluate, render_lines

    for d in args.dirs:
        if not d.is_dir():
            raise UsageError(f"{d}: not a directory")
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
    from postmortem import knowledge

    _knowledge_errors(args.rules)
    k = knowledge.load(tuple(args.rules))
    if not args.cause:
        for c in k.causes.values():
            print(f"{c.id:28} {c.category:9} {c.title}")
        return EXIT_OK
    if args.cause.lower().startswith("xid:") or args.cause.isdigit():
        code = int(args.cause.split(":")[-1]) if args.cause.split(":")[-1].isdigit() else -1
        info = k.xids.get(code)
        if info is None:
            raise UsageError(f"Xid {args.cause} is not in the catalog")
        print(f"Xid {code} {info.name}\n  {info.meaning}\n  points to: {info.cause or '(a consequence, never a root)'}"
              f" ({info.role})\n  NVIDIA immediate action: {info.immediate}; investigatory: {info.investigatory}")
        return EXIT_OK
    c = k.causes.get(args.cause)
    if c is None:
        raise UsageError(f"unknown cause {args.cause!r}; `postmortem explain` lists them")
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
            except knowledge.KnowledgeError as exc:
                print(f"{f}: {exc}")
                bad += 1
        return EXIT_USAGE if bad else EXIT_OK
    k = knowledge.load()
    for m in k.messages:
        print(f"{m.id:32} {m.role:8} {m.cause or '-':24} {m.weight:.2f}")
    print(f"{len(k.messages)} message patterns, {len(k.causes)} causes, {len(k.xids)} Xid codes")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
