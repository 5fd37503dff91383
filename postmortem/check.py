"""`postmortem check`: preflight for the traps that kill DataLoader / NCCL jobs on a node.

Shared memory needed by the DataLoader setup:

    need = workers x prefetch x batch_bytes x procs_per_node x SHM_MARGIN

Each worker keeps `prefetch_factor` batches in flight, and every batch it hands to the main
process lives in /dev/shm until the main process is done with it.  SHM_MARGIN (1.25) covers what
the formula leaves out: the batch the main process is still using while the next ones arrive, the
pin-memory thread's queue, tmpfs page rounding, and NCCL's own /dev/shm segments on the same node.

The need is also compared with the host's physical memory (/proc/meminfo MemTotal): a tmpfs
page is a page of RAM, so a need above it is answered with "need less", never a --shm-size.

Exit codes: 0 fits (or nothing to compute), 3 will not fit, 2 usage error.  Warnings (Docker's
64 MB default, low `ulimit -n`, limited memlock, leftover segments) never change the exit code.

This module must never import torch.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
from dataclasses import asdict, dataclass

from postmortem.sizes import format_size, parse_size_argument

SHM_MARGIN = 1.25
DEFAULT_PREFETCH = 2              # torch.utils.data.DataLoader's prefetch_factor default
DOCKER_DEFAULT_SHM = 64 * 1024**2  # `docker run` without --shm-size
MIN_NOFILE = 4096
EXIT_FITS, EXIT_USAGE, EXIT_DOES_NOT_FIT = 0, 2, 3

# Segment names left behind in /dev/shm by killed jobs (torch's libshm / file_system strategy, NCCL).
LEFTOVER_PREFIXES = ("torch_", "nccl-", "__KMP_REGISTERED_LIB")

SHM_FIXES = (
    "docker run --shm-size={gib}g ...",
    "docker compose: shm_size: \"{gib}gb\"  (under the service)",
    "kubernetes: volumes: [{{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {gib}Gi}}}}]"
    " + volumeMounts: [{{name: dshm, mountPath: /dev/shm}}]",
    "bare metal: mount -o remount,size={gib}G /dev/shm",
    "or need less: fewer --workers / lower prefetch_factor / smaller batches",
)


# ---------------------------------------------------------------------------------------------
# What is measured

@dataclass(frozen=True)
class Shm:
    path: str
    size_bytes: int
    avail_bytes: int
    used_bytes: int


def read_shm(path: str) -> Shm:
    st = os.statvfs(path)
    size, free, avail = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize
    return Shm(path, size, avail, size - free)


def leftover_segments(path: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if e.name.startswith(LEFTOVER_PREFIXES))
    except OSError:
        return []


# ---------------------------------------------------------------------------------------------
# The DataLoader's need

@dataclass(frozen=True)
class Need:
    workers: int
    prefetch: int
    batch_bytes: int
    procs: int
    margin: float
    bytes: int

    @property
    def formula(self) -> str:
        return (f"{self.workers} workers x {self.prefetch} prefetch x {format_size(self.batch_bytes)}"
                f" x {self.procs} procs x {self.margin} margin")


def shm_need(workers: int, prefetch: int, batch_bytes: int, procs: int) -> Need:
    total = math.ceil(workers * prefetch * batch_bytes * procs * SHM_MARGIN)
    return Need(workers, prefetch, batch_bytes, procs, SHM_MARGIN, total)


@dataclass(frozen=True)
class Memory:
    """The host's RAM: a tmpfs page is a page of it (or of swap), so /dev/shm can never
    usefully be larger than this."""
    total_bytes: int
    available_bytes: int | None


def read_memory(meminfo: str = "/proc/meminfo") -> Memory | None:
    fields = {}
    try:
        with open(meminfo, encoding="ascii", errors="replace") as f:
            for line in f:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    fields[name] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        fields = {}
    if "MemTotal" in fields:
        return Memory(fields["MemTotal"], fields.get("MemAvailable"))
    try:
        return Memory(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), None)
    except (ValueError, OSError, AttributeError):
        return None


def is_tmpfs(path: str, mounts: str = "/proc/self/mounts") -> bool:
    """Is the file system holding `path` RAM-backed (tmpfs, ramfs)?  Unknown counts as yes:
    /dev/shm is a tmpfs almost everywhere."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            table = [line.split()[:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return True
    real = os.path.realpath(path)
    best = max((m for m in table if real == m[1] or real.startswith(m[1].rstrip("/") + "/")),
               key=lambda m: len(m[1]), default=None)
    return best is None or best[2] in ("tmpfs", "ramfs")


def suggested_gib(need: Need, shm: Shm) -> int:
    """Whole GiB to ask for: the need plus what is already in use there."""
    return max(1, math.ceil((need.bytes + shm.used_bytes) / 1024**3))


# ---------------------------------------------------------------------------------------------
# Warnings: one small function per trap; each returns a Trap or None.

@dataclass(frozen=True)
class Trap:
    id: str
    message: str
    fix: str


def warn_docker_default(shm: Shm, args) -> Trap | None:
    if shm.size_bytes != DOCKER_DEFAULT_SHM:
        return None
    return Trap("shm_docker_default",
                   f"{shm.path} is exactly 64 MiB: Docker's default when --shm-size is not given; "
                   "DataLoader workers die with SIGBUS or 'No space left on device' once batches pass it",
                   "docker run --shm-size=8g (compose shm_size, k8s emptyDir medium: Memory)")


def warn_nofile(shm: Shm, args) -> Trap | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= MIN_NOFILE:
        return None
    workers = f" {args.workers} workers x {args.prefetch} prefetch batches" if args.workers else ""
    return Trap("nofile_low",
                   f"ulimit -n (RLIMIT_NOFILE soft) is {soft} < {MIN_NOFILE}: with the default "
                   "'file_descriptor' sharing strategy every tensor a DataLoader worker returns holds an "
                   f"open fd until consumed;{workers} can exhaust it ('Too many open files')",
                   "ulimit -n 65536 (docker --ulimit nofile=65536:65536), or "
                   "torch.multiprocessing.set_sharing_strategy('file_system')")


def warn_memlock(shm: Shm, args) -> Trap | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft == resource.RLIM_INFINITY:
        return None
    return Trap("memlock_limited",
                   f"ulimit -l (RLIMIT_MEMLOCK soft) is {format_size(soft)}, not unlimited: pinned host "
                   "memory (pin_memory=True) and NCCL's InfiniBand/GPUDirect registration lock pages",
                   "ulimit -l unlimited (docker --ulimit memlock=-1:-1; limits.conf memlock unlimited)")


def warn_leftovers(shm: Shm, args) -> Trap | None:
    names = leftover_segments(shm.path)
    if not names:
        return None
    return Trap("shm_leftovers",
                   f"{len(names)} segment(s) left in {shm.path} by earlier jobs (e.g. {names[0]}); "
                   f"{format_size(shm.used_bytes)} in use there",
                   f"remove stale {shm.path}/torch_* and nccl-* files when no job is running")


WARNINGS = (warn_docker_default, warn_nofile, warn_memlock, warn_leftovers)


# ---------------------------------------------------------------------------------------------
# Report

@dataclass(frozen=True)
class Result:
    shm: Shm
    need: Need | None
    fits: bool | None
    warnings: tuple[Trap, ...]
    fixes: tuple[str, ...]
    memory: Memory | None = None
    exceeds_memory: bool = False    # the need is more than the host's RAM: no --shm-size can hold it

    @property
    def exit_code(self) -> int:
        return EXIT_DOES_NOT_FIT if self.fits is False else EXIT_FITS


# What to do when the need is more than the machine's memory: a bigger /dev/shm cannot help.
NEED_LESS_FIXES = (
    "need less: fewer --workers (each keeps prefetch batches in flight), a lower prefetch_factor, "
    "smaller batches, or fewer processes per node",
    "or a node with more memory than the need",
)


def evaluate(args, memory: Memory | None = None) -> Result:
    shm = read_shm(args.shm)
    memory = memory if memory is not None else read_memory()
    need = (shm_need(args.workers, args.prefetch, args.batch_bytes, args.procs)
            if args.workers is not None and args.batch_bytes is not None else None)
    fits = None if need is None else need.bytes <= shm.avail_bytes
    exceeds = bool(need and memory and is_tmpfs(shm.path) and need.bytes + shm.used_bytes > memory.total_bytes)
    fixes: tuple[str, ...] = ()
    if fits is False:
        gib = suggested_gib(need, shm)
        fixes = NEED_LESS_FIXES if exceeds else tuple(fix.format(gib=gib) for fix in SHM_FIXES)
    warnings = tuple(w for w in (check(shm, args) for check in WARNINGS) if w is not None)
    if need and memory and not exceeds and need.bytes > memory.total_bytes // 2:
        warnings += (Trap("shm_over_half_memory",
                          f"the need ({format_size(need.bytes)}) is more than half of this host's "
                          f"{format_size(memory.total_bytes)} of RAM: shm pages compete with the training "
                          "processes' own memory, and the OOM killer may end the job instead",
                          "fewer workers / lower prefetch_factor, or a node with more memory"),)
    return Result(shm, need, fits, warnings, fixes, memory, exceeds)


def render_text(result: Result) -> str:
    shm = result.shm
    lines = [f"shm {shm.path}: size {format_size(shm.size_bytes)}, available {format_size(shm.avail_bytes)}"
             f", used {format_size(shm.used_bytes)}"]
    if result.need is None:
        lines.append("DataLoader need: not computed (give --workers and --batch-bytes)")
    else:
        verdict = "fits" if result.fits else "DOES NOT FIT"
        lines.append(f"DataLoader need: {format_size(result.need.bytes)} = {result.need.formula}"
                     f" -> {verdict} in {format_size(shm.avail_bytes)} available")
        if result.memory is not None:
            compare = "more than" if result.exceeds_memory else "within"
            lines.append(f"host memory: {format_size(result.memory.total_bytes)} in total: the need is {compare} it"
                         + (" — no --shm-size can hold it; the job has to need less" if result.exceeds_memory else ""))
    if result.fixes:
        lines.append("fix (any one):")
        lines.extend(f"  {fix}" for fix in result.fixes)
    for warning in result.warnings:
        lines.append(f"warning [{warning.id}]: {warning.message}")
        lines.append(f"  fix: {warning.fix}")
    return "\n".join(lines)


def render_json(result: Result) -> str:
    need = None if result.need is None else {**asdict(result.need), "formula": result.need.formula}
    return json.dumps({"shm": asdict(result.shm), "need": need, "fits": result.fits,
                       "memory": asdict(result.memory) if result.memory else None,
                       "exceeds_memory": result.exceeds_memory,
                       "warnings": [asdict(w) for w in result.warnings],
                       "fixes": list(result.fixes), "exit_code": result.exit_code}, indent=2)


# ---------------------------------------------------------------------------------------------
# CLI

def size_arg(text: str) -> int:
    try:
        return parse_size_argument(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def workers_arg(text: str) -> int:
    """num_workers may be 0: batches are then loaded in the main process, nothing in shm."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = ("Preflight: will the DataLoader fit in /dev/shm, and are ulimit -n / memlock "
                          f"set for training?  need = workers x prefetch x batch bytes x procs x {SHM_MARGIN}")
    parser.add_argument("--workers", type=workers_arg, metavar="N",
                        help="DataLoader num_workers (0: loading in the main process, nothing in shm)")
    parser.add_argument("--prefetch", type=count_arg, metavar="N", default=DEFAULT_PREFETCH,
                        help=f"DataLoader prefetch_factor (default {DEFAULT_PREFETCH})")
    parser.add_argument("--batch-bytes", type=size_arg, metavar="SIZE",
                        help="bytes of one batch: 512M, 1.5G, 1GiB, 2GB or plain bytes")
    parser.add_argument("--procs", type=count_arg, metavar="N", default=1,
                        help="training processes per node (GPUs per node; default 1)")
    parser.add_argument("--shm", metavar="PATH", default="/dev/shm", help="shared-memory mount (default /dev/shm)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def usage_error(args) -> str | None:
    if (args.workers is None) != (args.batch_bytes is None):
        return "--workers and --batch-bytes go together"
    if not os.path.isdir(args.shm):
        return f"--shm {args.shm}: not a directory"
    return None


def main(args: argparse.Namespace) -> int:
    problem = usage_error(args)
    if problem:
        print(f"postmortem check: {problem}", file=sys.stderr)
        return EXIT_USAGE
    result = evaluate(args)
    print(render_json(result) if args.json else render_text(result))
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main(configure(argparse.ArgumentParser(prog="postmortem check")).parse_args()))
