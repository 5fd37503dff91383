"""Startup cost of the `postmortem` command, as ratios to `python -c pass` (issue 17).

    python bench/startup_bench.py                 # 15 interleaved rounds, medians
    python bench/startup_bench.py --rounds 31 --imports   # also the slowest imports of each command

Targets: `postmortem --help` <= 3x `python -c pass`; `postmortem analyze` of a one-line bundle
<= 8x.  The commands run as child processes of the installed console script (the venv's
`postmortem` next to this interpreter; `python -m postmortem` when there is none), in
interleaved rounds (pass, help, analyze, pass, help, ...) so load from other processes on the
machine falls on every command alike; each figure is the median of the rounds, wall and CPU
(user+sys of the child, from os.wait4) side by side.  Byte code is cached (in the temporary
folder) as it is for an installed tool.  The one-line bundle is one real NCCL
INFO line (as bench/scale_bench.py builds it) in a temporary folder.  Prints figures;
asserts nothing.

The figures hold for a checkout whose build-time files are current (prepared knowledge,
compiled templates, parser index, grammar tables, precompiled dataclass methods and regexes: each has a `tools/... --check`); a stale
one is not used and its slower fallback is measured instead, so the first line says which
are current.  A venv made by `make test` also holds lark's optional interegular (~3 ms of
lark's import; `make demo` installs without it).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from parse_bench import PREFIX, real_nccl_lines  # noqa: E402

SCRIPT = Path(sys.executable).with_name("postmortem")
PM = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "postmortem"]


def child_env(tmp: Path) -> dict:
    """Byte code cached as an installed tool has it (pip compiles a wheel's modules; a source
    install writes them on first run), but into the temporary folder, not the checkout, and
    whatever PYTHONDONTWRITEBYTECODE this shell has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def run(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def slowest_imports(cmd: list[str], cwd: Path, top: int) -> list[tuple[int, str]]:
    """The `top` largest cumulative import times (microseconds) of one run, -X importtime."""
    py = [sys.executable, "-X", "importtime", "-c", "import sys; from postmortem.cli import main; sys.exit(main())"]
    err = subprocess.run(py + cmd[len(PM):], cwd=cwd, capture_output=True, text=True, env=child_env(cwd)).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def _precompiled_current() -> bool:
    """tools/precompile.py --check (a stale file is used for what it holds; the rest is compiled)."""
    check = [sys.executable, str(ROOT / "tools" / "precompile.py"), "--check"]
    return subprocess.run(check, capture_output=True).returncode == 0


def prepared_state() -> str:
    """Which build-time files of this checkout are current (used), which stale (not used)."""
    sys.path.insert(0, str(ROOT))
    from postmortem import grammar, knowledge, parsers
    from postmortem.report import html

    state = {"knowledge": all(knowledge.prepared_entry(n) is not None for n in knowledge.SOURCES),
             "templates": html.compiled_templates() is not None,
             "parser index": parsers._index() is not None,
             "grammar tables": all(grammar.prebuilt(n, "start") is not None for n in ("nccl", "kernel")),
             "precompiled methods and regexes": _precompiled_current()}
    return ", ".join(f"{name} {'current' if ok else 'STALE'}" for name, ok in state.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (medians over them)")
    ap.add_argument("--imports", action="store_true", help="also list the slowest imports of each command")
    ap.add_argument("--compare", metavar="DIR", type=Path,
                    help="also time the same commands from another checkout (e.g. `git archive` of an older "
                         "commit unpacked in DIR), in the same interleaved rounds")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pm-startup-") as t:
        tmp = Path(t)
        bundle = tmp / "oneline"
        bundle.mkdir()
        (bundle / "nccl.log").write_text(PREFIX.sub("node000:10000:10007 ", real_nccl_lines("info")[0]) + "\n")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "postmortem --help": PM + ["--help"],
            "analyze one line": PM + ["analyze", str(bundle), "--html", "-", "--json", str(tmp / "v.json"), "-q"],
            "analyze + HTML": PM + ["analyze", str(bundle), "--html", str(tmp / "r.html"), "-q"],
        }
        env = child_env(tmp)
        if args.compare:
            other = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(args.compare.resolve())!r}); "
                     "from postmortem.cli import main; sys.exit(main())"]
            for name in ("postmortem --help", "analyze one line", "analyze + HTML"):
                commands[f"{args.compare.name}: {name}"] = other + commands[name][len(PM):]
        for cmd in commands.values():   # warm the page cache and write byte code once; not counted
            run(cmd, tmp, env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, cmd in commands.items():
                times[name].append(run(cmd, tmp, env))
        wall = {n: statistics.median(w for w, _ in v) for n, v in times.items()}
        cpu = {n: statistics.median(c for _, c in v) for n, v in times.items()}
        base_w, base_c = wall["python -c pass"], cpu["python -c pass"]
        print(f"# startup_bench: python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
              f"{os.getloadavg()[0]:.1f} load, medians of {args.rounds} interleaved rounds; {' '.join(PM)}")
        print(f"# build-time files of this checkout: {prepared_state()}")
        print(f"{'command':34} {'wall s':>8} {'ratio':>7} {'CPU s':>8} {'ratio':>7}  target")
        targets = {"postmortem --help": "<= 3x", "analyze one line": "<= 8x"}
        targets |= {f"{args.compare.name}: {n}": t for n, t in targets.items()} if args.compare else {}
        for name in commands:
            print(f"{name:34} {wall[name]:8.3f} {wall[name] / base_w:6.1f}x {cpu[name]:8.3f} "
                  f"{cpu[name] / base_c:6.1f}x  {targets.get(name, '')}")
        if args.imports:
            for name in ("postmortem --help", "analyze one line"):
                print(f"\nslowest imports of {name} (cumulative ms, -X importtime):")
                for us, mod in slowest_imports(commands[name], tmp, 12):
                    print(f"  {us / 1000:7.1f}  {mod}")


if __name__ == "__main__":
    main()
