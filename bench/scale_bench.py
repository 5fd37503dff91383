"""Speed and memory of `postmortem analyze` at any rank count, as ratios to grep (issue 17).

    python bench/scale_bench.py                  # 512-rank bundle, dense, 2,000 files, one line, startup
    python bench/scale_bench.py --big            # also the 1 GB single file (slow)
    python bench/scale_bench.py --scaling        # also the 64 -> 8,192 ranks table
    python bench/scale_bench.py --only ranks512  # one figure
    python bench/scale_bench.py --only ranks512 --floor      # also what no parser change removes
    python bench/scale_bench.py --only ranks512 --callgrind  # also instruction counts (valgrind)

Every bundle is built in a temporary folder from real NCCL lines of the fixtures (rank
-rewritten host:pid:tid prefixes, as bench/parse_bench.py does) and deleted afterwards:

* ranks512: 512 `nccl_rank*.log` files of 3,000 real-format INFO lines each (~161 MB), one
  real `NET/IB : Got completion ... with error` WARN on rank 171;
* big: the same lines joined into one file (2,048 ranks, 564 MB; `--big-ranks 3634` for 1.0 GB),
  read with --jobs 0 as newline-aligned ranges on every core (postmortem/ranges.py);
* dense: 38.5 MB of every NCCL line of the corpus (WARNs and error chains included);
* small: 2,000 files of ~6.5 KB;
* oneline: a bundle of one NCCL line;
* startup: `postmortem --help` against `python -c pass`.

Each figure is the real command (`postmortem analyze BUNDLE --html - --json FILE -q
--jobs J`, J = 0: one process per core, and J = 1: one process) in a child process, timed
side by side with `grep -rcE` for 5 tokens over the same files in the same run, the three
commands interleaved; CPU is user + system of the child and its workers (GNU time), peak
RSS the largest single process, "tree" the sampled sum over the parent and its workers.
Medians of --repeat runs; the load average is printed with each row.  Prints figures;
asserts nothing.
"""
from __future__ import annotations

import argparse
import json
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

PM = [sys.executable, "-m", "postmortem"]
GREP_TOKENS = "WARN|Xid|error|Error|Timeout"
LINES_PER_RANK = 3000
# A real NET/IB completion error (fixtures/corpus/ib-gdr-acs-01), put on one rank.
IB_WARN = ("H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
           "fe80::966d:ae03:8b:df78%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)")
BAD_RANK = 171


def rank_lines(base: list[str], rank: int, count: int) -> list[str]:
    host, pid = f"node{rank // 8:03d}", 10000 + rank
    prefix = f"{host}:{pid}:{pid + 7} "
    out = [PREFIX.sub(prefix, base[i % len(base)]) for i in range(count)]
    if rank == BAD_RANK:
        out.insert(count - count // 3, PREFIX.sub(prefix, IB_WARN))
    return out


def build_ranks(into: Path, ranks: int, lines: int = LINES_PER_RANK) -> int:
    base = real_nccl_lines("info")
    into.mkdir(parents=True)
    size = 0
    for r in range(ranks):
        text = "\n".join(rank_lines(base, r, lines)) + "\n"
        (into / f"nccl_rank{r}.log").write_text(text)
        size += len(text)
    return size


def build_single(into: Path, ranks: int) -> int:
    base = real_nccl_lines("info")
    into.mkdir(parents=True)
    size = 0
    with open(into / "nccl.log", "w") as out:
        for r in range(ranks):
            text = "\n".join(rank_lines(base, r, LINES_PER_RANK)) + "\n"
            out.write(text)
            size += len(text)
    return size


def build_dense(into: Path, mb: float = 38.5) -> int:
    base = real_nccl_lines("all")
    into.mkdir(parents=True)
    target, size, rank = int(mb * 1e6), 0, 0
    with open(into / "nccl.log", "w") as out:
        while size < target:
            host, pid = f"node{rank // 8:03d}", 10000 + rank
            text = "".join(PREFIX.sub(f"{host}:{pid}:{pid + 7} ", line) + "\n" for line in base)
            out.write(text)
            size += len(text)
            rank += 1
    return size


def build_small(into: Path, files: int = 2000) -> int:
    base = real_nccl_lines("info")
    into.mkdir(parents=True)
    size = 0
    for r in range(files):
        text = "\n".join(rank_lines(base, r, 65)) + "\n"
        (into / f"nccl_rank{r}.log").write_text(text)
        size += len(text)
    return size


def build_oneline(into: Path) -> int:
    into.mkdir(parents=True)
    text = PREFIX.sub("node000:10000:10007 ", real_nccl_lines("info")[0]) + "\n"
    (into / "nccl.log").write_text(text)
    return len(text)


def _tree_rss_kb(pid: int) -> int:
    """Resident KiB of a process and all its descendants now (shared pages counted in each)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


LAST_TREE_MIB = 0.0   # the last run's sampled peak of the process tree (parent + workers), MiB


def run(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, float, bytes]:
    """(wall seconds, CPU seconds, peak RSS MiB, output) of one child process.  GNU time
    measures the child: os.wait4's ru_maxrss can carry the parent's high-water mark
    into a child started with vfork.  CPU includes the worker processes (reaped children
    count in their parent's rusage); peak RSS is the largest single process, and
    LAST_TREE_MIB the sum over the tree, sampled every 20 ms."""
    global LAST_TREE_MIB
    stats = cwd / ".time"
    timed = ["/usr/bin/time", "-o", str(stats), "-f", "%U %S %M"] + cmd if Path("/usr/bin/time").exists() else cmd
    t0 = time.perf_counter()
    # Output to a pipe, read: GNU grep with stdout on /dev/null stops at the first match.
    proc = subprocess.Popen(timed, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    peak = [0]
    import threading

    done = threading.Event()

    def sample() -> None:
        # Not proc.poll(): it would reap the child before os.wait4 reads its usage.
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    LAST_TREE_MIB = peak[0] / 1024
    if timed is cmd:
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out
    user, system, rss_kb = stats.read_text().split()[-3:]
    return wall, float(user) + float(system), int(rss_kb) / 1024, out


def median_run(cmd: list[str], cwd: Path, repeat: int) -> tuple[float, float, float, bytes]:
    global LAST_TREE_MIB
    runs, trees = [], []
    for _ in range(repeat):
        runs.append(run(cmd, cwd))
        trees.append(LAST_TREE_MIB)
    LAST_TREE_MIB = max(trees)
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            max(r[2] for r in runs), runs[-1][3])


def interleaved(cmds: list[list[str]], cwd: Path, repeat: int,
                envs: list[dict | None] | None = None) -> list[tuple[float, float, float, float, bytes]]:
    """Each command run `repeat` times, round-robin (a change of load hits all alike):
    per command the median wall and CPU, the largest peak RSS and tree RSS, the last output."""
    runs: list[list] = [[] for _ in cmds]
    envs = envs or [None] * len(cmds)
    for _ in range(repeat):
        for i, cmd in enumerate(cmds):
            wall, cpu, rss, out = run(cmd, cwd, envs[i])
            runs[i].append((wall, cpu, rss, LAST_TREE_MIB, out))
    return [(statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), max(r[2] for r in rs),
             max(r[3] for r in rs), rs[-1][4]) for rs in runs]


def analyze_vs_grep(name: str, bundle: Path, size: int, repeat: int, tmp: Path, jobs: tuple[int, ...] = (0, 1),
                    baseline: Path | None = None) -> dict:
    """grep and `analyze --jobs J` for each J (0: one per core), interleaved in one run; with
    `baseline` (a checkout of another commit), its `analyze --jobs J` interleaved as well."""
    grep_cmd = ["grep", "-rcE", GREP_TOKENS, str(bundle)]
    runs = [(j, "") for j in jobs] + ([(j, "base") for j in jobs] if baseline is not None else [])
    pm_cmds = [PM + ["analyze", str(bundle), "--html", "-", "--json", str(tmp / f"{name}-{j}{tag}.json"), "-q",
                     "--jobs", str(j)] for j, tag in runs]
    envs = [None] + [None if not tag else {**os.environ, "PYTHONPATH": str(baseline)} for _, tag in runs]
    results = interleaved([grep_cmd] + pm_cmds, tmp, repeat, envs)
    t_grep, c_grep = results[0][0], results[0][1]
    row: dict = {"bundle": name, "MB": size / 1e6, "grep_s": t_grep, "grep_cpu": c_grep}
    load = os.getloadavg()[0]
    walls = {}
    for (j, tag), (t_pm, c_pm, rss, tree, out) in zip(runs, results[1:]):
        if tag:
            j = f"{j} {tag}"
        walls[j] = t_pm
        out_json = tmp / f"{name}-{j}.json".replace(" ", "")
        verdict = json.loads(out_json.read_text()) if out_json.exists() else {}
        v = verdict.get("verdict", {})
        cited = [f"{r.get('artifact')}:{r.get('line')}" for r in v.get("evidence", [])[:1]]
        row[j] = {"pm_s": t_pm, "ratio": t_pm / t_grep, "pm_cpu": c_pm, "cpu_ratio": c_pm / max(c_grep, 0.01),
                  "rss_MiB": rss, "tree_MiB": tree, "category": v.get("category"), "cause": v.get("cause"),
                  "cited": cited[0] if cited else ""}
        label = f"--jobs {j}" + (f" ({_cores()} cores)" if str(j).startswith("0") else "")
        print(f"{name:9} {size / 1e6:7.1f} MB  {label:17} wall {t_pm:6.2f} s vs grep {t_grep:6.3f} s = "
              f"{t_pm / t_grep:6.1f}x   CPU {c_pm:6.2f} s vs grep {c_grep:5.2f} s = {c_pm / max(c_grep, 0.01):6.1f}x   "
              f"peak RSS {rss:5.0f} MiB (tree {tree:5.0f})   verdict {v.get('category')}/{v.get('cause')} "
              f"{row[j]['cited']}   load {load:.1f}", flush=True)
        if not out_json.exists():
            print(out.decode(errors="replace")[-2000:])
    for j in jobs:
        if f"{j} base" in walls:
            mine, base = row[j], row[f"{j} base"]
            print(f"{name:9} --jobs {j} against the baseline: wall {base['pm_s']:.2f} -> {mine['pm_s']:.2f} s "
                  f"({mine['pm_s'] / base['pm_s'] - 1:+.0%}), CPU {base['pm_cpu']:.2f} -> {mine['pm_cpu']:.2f} s "
                  f"({mine['pm_cpu'] / base['pm_cpu'] - 1:+.0%})", flush=True)
    if 0 in walls and 1 in walls:
        # A single big file is read as ranges on every core (postmortem/ranges.py), many files by a pool
        # (parallel.py): what the cores give, and the peak of the process tree in MB as well as MiB.
        row["speedup"] = walls[1] / walls[0]
        print(f"{name:9} --jobs 0 is {row['speedup']:.2f}x as fast as --jobs 1; peak RSS "
              f"{row[0]['rss_MiB'] * 1.048576:.0f} MB / {row[1]['rss_MiB'] * 1.048576:.0f} MB (tree "
              f"{row[0]['tree_MiB'] * 1.048576:.0f} MB / {row[1]['tree_MiB'] * 1.048576:.0f} MB)", flush=True)
    return row


def floor(bundle: Path, tmp: Path, repeat: int, grep_cpu: float) -> None:
    """What the 512-rank figure cannot go under whatever the parsers do, as ratios to grep's CPU:
    the scanning stage's own C work (read, split into lines, count them: scan._counted's
    floor, in a child) and the fixed cost of an analysis (a bundle of one line of the same
    files: interpreter, imports, knowledge, report).  With N cores the split is shared, the
    fixed cost is not."""
    code = ("import os, sys, time\nfrom collections import Counter\nfrom io import BytesIO\nt = time.process_time()\n"
            "for name in sorted(os.listdir(sys.argv[1])):\n"
            "    with open(os.path.join(sys.argv[1], name), 'rb') as f:\n"
            "        Counter(BytesIO(f.read()).readlines())\n"   # as scan._counted splits (round 12)
            "print(time.process_time() - t)\n")
    split_s = statistics.median(float(subprocess.run([sys.executable, "-c", code, str(bundle)], capture_output=True,
                                                     text=True, check=True).stdout) for _ in range(max(1, repeat)))
    one = tmp / "floor-oneline"
    one.mkdir(exist_ok=True)
    first = min(bundle.iterdir())
    with first.open("rb") as f:
        (one / first.name).write_bytes(f.readline())
    fixed_s = median_run(PM + ["analyze", str(one), "--html", "-", "--json", str(tmp / "floor.json"), "-q"],
                         tmp, max(1, repeat))[1]
    g = max(grep_cpu, 0.01)
    cores = _cores()
    print(f"floor     split + count of every line (C) {split_s:5.2f} s CPU = {split_s / g:5.1f}x grep's CPU; "
          f"fixed cost (one-line bundle) {fixed_s:5.2f} s = {fixed_s / g:5.1f}x; together one process "
          f"{(split_s + fixed_s) / g:5.1f}x, {cores} cores {(split_s / cores + fixed_s) / g:5.1f}x "
          f"(the parse, placement, classification and report of the bundle come on top)", flush=True)


def callgrind(bundle: Path, tmp: Path, jobs: tuple[int, ...] = (1, 0)) -> None:
    """Instructions executed (callgrind's Ir: load-independent, unlike wall and CPU on a shared
    machine) by `analyze` for each J, summed over the processes (a forked worker's count also
    holds what its parent ran before the fork), and by grep."""
    import shutil

    if shutil.which("valgrind") is None:
        print("callgrind  valgrind not installed: skipped", flush=True)
        return

    def irs(cmd: list[str], tag: str) -> list[int]:
        out = tmp / f"cg-{tag}"
        out.mkdir(exist_ok=True)
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p"] + cmd,
                       cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        counts = []
        for f in sorted(out.iterdir()):
            for line in f.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    counts.append(int(line.split()[1]))
                    break
        return counts

    grep_ir = sum(irs(["grep", "-rcE", GREP_TOKENS, str(bundle)], "grep"))
    for j in jobs:
        got = irs(PM + ["analyze", str(bundle), "--html", "-", "--json", str(tmp / f"cg-{j}.json"), "-q",
                        "--jobs", str(j), "--no-time-limit"], f"pm{j}")   # valgrind is ~50x slower: no limit
        print(f"callgrind --jobs {j}: {sum(got) / 1e9:6.2f} G instructions in {len(got)} process(es) "
              f"({', '.join(f'{c / 1e9:.2f}' for c in got)}); grep {grep_ir / 1e9:.3f} G", flush=True)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def startup(repeat: int, tmp: Path) -> None:
    t_pass, _, rss_pass, _ = median_run([sys.executable, "-c", "pass"], tmp, max(repeat, 5))
    t_help, _, rss_help, _ = median_run(PM + ["--help"], tmp, max(repeat, 5))
    print(f"startup   python -c pass {t_pass:.3f} s ({rss_pass:.0f} MiB)  postmortem --help {t_help:.3f} s "
          f"({rss_help:.0f} MiB)  ratio {t_help / t_pass:.1f}x", flush=True)
    bundle = tmp / "oneline"
    build_oneline(bundle)
    t_one, _, rss_one, _ = median_run(PM + ["analyze", str(bundle), "--html", "-", "--json", str(tmp / "one.json"), "-q"],
                                   tmp, max(repeat, 5))
    print(f"oneline   analyze of a one-line bundle {t_one:.3f} s ({rss_one:.0f} MiB)  ratio to python -c pass "
          f"{t_one / t_pass:.1f}x", flush=True)


def scaling(repeat: int, tmp: Path, top: int) -> None:
    """64 -> `top` ranks, 300 lines each, so the table shows growth in ranks, not in bytes.
    Two children per rank count: the real command (CPU, peak RSS, against grep) and one that
    runs the same steps one by one and times each (`--steps-of`)."""
    global BAD_RANK
    print(f"scaling (ranks x 300 lines, one IB WARN on rank {BAD_RANK % 64}):")
    print(f"{'ranks':>6} {'MB':>7} {'wall s':>8} {'CPU s':>8} {'CPU ms/rank':>9} {'RSS MiB':>8} "
          f"{'grep ratio':>10} {'CPU ratio':>9}")
    saved, BAD_RANK = BAD_RANK, BAD_RANK % 64
    steps_table = []
    try:
        ranks = 64
        while ranks <= top:
            bundle = tmp / f"scale{ranks}"
            size = build_ranks(bundle, ranks, 300)
            cmd = PM + ["analyze", str(bundle), "--html", "-", "--json", str(tmp / "scale.json"), "-q"]
            t_grep, c_grep, _, _ = median_run(["grep", "-rcE", GREP_TOKENS, str(bundle)], tmp, repeat)
            t, c, rss, _ = median_run(cmd, tmp, repeat)
            print(f"{ranks:6d} {size / 1e6:7.1f} {t:8.2f} {c:8.2f} {1000 * c / ranks:9.2f} {rss:8.0f} "
                  f"{t / t_grep:10.1f} {c / max(c_grep, 0.01):9.1f}", flush=True)
            steps_table.append((ranks, size, c, rss, _median_steps(bundle, tmp, repeat)))
            subprocess.run(["rm", "-rf", str(bundle)])
            ranks *= 2
    finally:
        BAD_RANK = saved
    print("\nper step (CPU seconds of the step in one child, median of --repeat; `rows` is the timeline folded once "
          "and shared by the JSON, HTML and terminal renderers; peak RSS of the real command):")
    names = ("parse", "placement", "classification", "rows", "json", "html", "terminal")
    print(f"{'ranks':>6} {'MB':>7} {'events':>8} " + " ".join(f"{n:>14}" for n in names) + f" {'CPU s':>7} {'RSS MiB':>8}")
    for ranks, size, c, rss, steps in steps_table:
        print(f"{ranks:6d} {size / 1e6:7.1f} {steps.get('events', 0):8d} "
              + " ".join(f"{steps.get(n, float('nan')):14.3f}" for n in names) + f" {c:7.2f} {rss:8.0f}", flush=True)


def _median_steps(bundle: Path, tmp: Path, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--steps-of", str(bundle)],
                             cwd=tmp, capture_output=True, text=True)
        try:
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            print(out.stdout[-2000:], out.stderr[-2000:])
            return {}
    return {k: statistics.median(r[k] for r in runs) if k != "events" else runs[-1][k] for k in runs[-1]}


def steps_of(bundle: Path) -> None:
    """One analysis of `bundle` as `postmortem analyze BUNDLE --html FILE --json FILE` makes
    it, each step timed in CPU seconds of this process: reading and parsing, placement on
    the timeline, classification, the rows the reports share, then each renderer.  Prints
    one JSON line."""
    import gc
    import io
    import os

    sys.path.insert(0, str(ROOT))
    from postmortem import classify as pm_classify, run as pm_run, timeline
    from postmortem.report import RenderOptions, get, rows

    spent: dict[str, float] = {}

    def timed(name, fn):
        def step(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - t0
        return step

    timeline.place = timed("placement", timeline.place)
    pm_classify.classify = timed("classification", pm_classify.classify)   # run.py imports it after reading
    t0 = time.process_time()
    analysis = pm_run.analyze(bundle)
    spent["parse"] = time.process_time() - t0 - spent["placement"] - spent["classification"]
    gc.freeze()   # as the CLI does after the analysis
    timed("rows", rows.digest)(analysis.case.events)
    options = RenderOptions(bundle_path=bundle)
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for name in ("html", "json"):          # the CLI's order
            timed(name, get(name).render)(analysis, sink, options)
    timed("terminal", get("terminal").render)(analysis, io.StringIO(), options)
    spent["events"] = len(analysis.case.events)
    print(json.dumps(spent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (median)")
    ap.add_argument("--big", action="store_true", help="also the 1 GB single file")
    ap.add_argument("--scaling", action="store_true", help="also the 64 -> 8,192 ranks table")
    ap.add_argument("--top", type=int, default=8192, help="largest rank count of the scaling table")
    ap.add_argument("--big-ranks", type=int, default=2048,
                    help="ranks joined into the single file of `big` (2,048: 564 MB; 3,634: 1.0 GB)")
    ap.add_argument("--only", choices=("ranks512", "big", "dense", "small", "startup", "scaling"))
    ap.add_argument("--floor", action="store_true",
                    help="ranks512: also the split/count and fixed-cost floor as ratios to grep")
    ap.add_argument("--callgrind", action="store_true", help="ranks512: also instruction counts (valgrind)")
    ap.add_argument("--steps-of", type=Path, help=argparse.SUPPRESS)   # the scaling table's step timer
    ap.add_argument("--baseline", type=Path,
                    help="ranks512/big/dense/small: also time the checkout at this path (e.g. `git archive main`), interleaved")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="let the children compile every module on each start (PYTHONDONTWRITEBYTECODE as set)")
    args = ap.parse_args()
    if args.steps_of:
        steps_of(args.steps_of)
        return
    want = {args.only} if args.only else {"ranks512", "dense", "small", "startup"} | (
        {"big"} if args.big else set()) | ({"scaling"} if args.scaling else set())
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, grep -rcE '{GREP_TOKENS}'"
    with tempfile.TemporaryDirectory(prefix="pm-scale-") as t:
        tmp = Path(t)
        if not args.no_bytecode:
            # As an installed package starts: modules loaded from cached bytecode, not compiled
            # on every start (~0.08 s here when PYTHONDONTWRITEBYTECODE is set), in a cache
            # outside the checkout; one warm-up start of each checkout fills it.
            os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
            os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
            for where in [None] + ([args.baseline] if args.baseline else []):
                env = {**os.environ, **({"PYTHONPATH": str(where)} if where else {})}
                subprocess.run(PM + ["--help"], cwd=tmp, env=env, capture_output=True, check=False)
                build_oneline(tmp / "warm")
                subprocess.run(PM + ["analyze", str(tmp / "warm"), "--html", "-", "--json", str(tmp / "warm.json"),
                                     "-q"], cwd=tmp, env=env, capture_output=True, check=False)
                subprocess.run(["rm", "-rf", str(tmp / "warm")])
            env_note += ", bytecode cached"
        print(f"# scale_bench: {env_note}; medians of {args.repeat}", flush=True)
        if "ranks512" in want:
            size = build_ranks(tmp / "ranks512", 512)
            row = analyze_vs_grep("ranks512", tmp / "ranks512", size, args.repeat, tmp, baseline=args.baseline)
            if args.floor:
                floor(tmp / "ranks512", tmp, args.repeat, row["grep_cpu"])
            if args.callgrind:
                callgrind(tmp / "ranks512", tmp)
            subprocess.run(["rm", "-rf", str(tmp / "ranks512")])
        if "big" in want:
            size = build_single(tmp / "big", args.big_ranks)
            analyze_vs_grep("big", tmp / "big", size, args.repeat, tmp, baseline=args.baseline)
            subprocess.run(["rm", "-rf", str(tmp / "big")])
        if "dense" in want:
            size = build_dense(tmp / "dense")
            analyze_vs_grep("dense", tmp / "dense", size, args.repeat, tmp, baseline=args.baseline)
        if "small" in want:
            size = build_small(tmp / "small")
            analyze_vs_grep("small", tmp / "small", size, args.repeat, tmp, baseline=args.baseline)
        if "startup" in want:
            startup(args.repeat, tmp)
        if "scaling" in want:
            scaling(args.repeat, tmp, args.top)


if __name__ == "__main__":
    main()
