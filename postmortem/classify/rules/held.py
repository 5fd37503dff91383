"""A worker held in a wait that cannot end by itself, read from the state the kernel and the C
library print -- so a hang is named without a timeout, a measured silence or a second dump.

* `ps` (parsers/procs.py): a worker waits for its child (do_wait, or its dump in subprocess's
  wait) while the child sleeps writing a full pipe the worker never reads -- a wait cycle
  (procs.pipe_wait_cycle); a worker sleeps uninterruptibly on a frozen filesystem's write lock
  (procs.write_on_frozen_fs); a worker, or the child it waits for, is stopped by a signal
  (procs.rank_stopped) or a tracer (procs.rank_traced, weak: the collection's own py-spy/gdb stop
  it while they read it).  That rank held the job up (straggler_timeout).
* gdb `thread apply all bt`: a thread waits for a lock taken in the job's own native code while
  no thread of the process is in that code or can enter it -- the lock was left held
  (stacks.lock_held_by_no_thread, app_error).

A single snapshot of a healthy job never shows these: a child evaluating runs (R) or sleeps in
its own work, a parent that reads its child's pipes waits in communicate(), a contended lock has
its holder inside the code (fixtures/lab/held_waits: the near misses beside each hang).
"""
from __future__ import annotations

import dataclasses

from postmortem import stacks as stacklib
from postmortem.classify.rules import app
from postmortem.classify.rules.base import Rule, sign_finding
from postmortem.classify.rules.hang import _who
from postmortem.knowledge.registry import KIND, SIGN, registry
from postmortem.model import Case, Stack
from postmortem.parsers.procs import FACT


def _params(sign) -> dict:
    return registry().signals[sign.id].params


def _wchan_in(wchan: str, names) -> bool:
    """The kernel function WCHAN names is one of `names`: compared without the compiler's clone
    suffix (`sigsuspend.isra.0`, `poll_schedule_timeout.constprop.0`).  A name ps cut to its
    column's width (`ps -l`: `do_wai`) is not read: its start may be another function's."""
    return (wchan or "").split(".", 1)[0] in names


class HeldWait(Rule):
    id = "held-wait"

    def findings(self, case, k, trace):
        out = []
        tasks = [f for f in case.facts if f.name == FACT and isinstance(f.value, dict)]
        if tasks:
            dumps = _main_dumps(case)
            workers = _workers(case, tasks, dumps)
            out += self._pipe_cycles(case, k, trace, tasks, dumps, workers)
            out += self._frozen_writes(case, k, trace, tasks, dumps, workers)
            out += self._stopped(case, k, trace, tasks, dumps, workers)
        if any(s.origin == "gdb" for s in case.stacks):
            out += self._locks_left_held(case, k, trace)
            out += self._handler_waits_on_own_lock(case, k, trace)
        return out

    def _pipe_cycles(self, case, k, trace, tasks, dumps, workers):
        p = _params(SIGN.procs_pipe_wait_cycle)
        by_pid = {(f.ref.path, f.value["pid"]): f for f in tasks}   # a parent's row: in the same table
        out = []
        for child in tasks:
            c = child.value
            if not c["stat"].startswith("S") or not _wchan_in(c["wchan"], p["pipe_write_waits"]):
                continue
            parent = by_pid.get((child.ref.path, c["ppid"]))
            pid = c["ppid"]
            if pid not in workers:
                continue
            sibling = _sibling(tasks, child)
            if sibling is not None:
                # a pipe is read by whoever holds its read end: in a pipeline (producer | consumer, the
                # subprocess docs' "replacing a shell pipeline") that is the writer's sibling, and a writer
                # waiting on a full pipe is its normal backpressure -- ps shows no file descriptors
                trace.append(f"{self.id}: pid {c['pid']} writes a pipe ({child.ref.describe()}), but its parent {pid} "
                             f"has another child, pid {sibling.value['pid']} ({sibling.ref.describe()}): it may be the "
                             "pipe's reader")
                continue
            dump = dumps.get(pid)
            waiting = _subprocess_wait(dump, p) if dump is not None else None
            if not waiting:
                # the parent's do_wait alone does not say the pipe is its own: a child of call() writes the
                # parent's inherited stdout, whose reader is a tee or a log collector
                trace.append(f"{self.id}: pid {c['pid']} writes a pipe ({child.ref.describe()}), but "
                             + (f"its parent {pid}'s dump reads its pipes, made none, or is elsewhere "
                                f"({dump.ref.describe()})" if waiting is False else
                                f"no Python dump of its parent {pid} says the pipe is the parent's own"))
                continue
            reader = _reading_thread(case, dump)
            if reader is not None:
                trace.append(f"{self.id}: pid {c['pid']} writes a pipe ({child.ref.describe()}) while its parent waits, "
                             f"but another thread of the parent reads ({reader.ref.describe()}): it may drain the pipe")
                continue
            who = _name(workers[pid], pid)
            in_do_wait = parent is not None and _wchan_in(parent.value["wchan"], p["child_waits"])
            how = (f"its main thread in {_frame(dump)} ({dump.ref.describe()})"
                   + (f", in do_wait ({parent.ref.describe()})" if in_do_wait else ""))
            summary = (f"{who} waited for its child pid {c['pid']} ({c['cmd'][:80]}): {how}, while the "
                       f"child slept writing a pipe ({c['wchan']}, {child.ref.describe()}) that nobody read -- the "
                       "parent reads only after the child exits, the child exits only after its output is read: "
                       f"a deadlock, and {who} never reached its next collective")
            trace.append(f"{self.id}: {summary}")
            refs = (child.ref,) + ((parent.ref,) if parent is not None else ()) + ((dump.ref,) if dump else ())
            out.append(_advised(sign_finding(k, SIGN.procs_pipe_wait_cycle, self.id, summary, [], "pipe-cycle",
                                             extra_refs=refs, culprits=tuple(r for r in (workers[pid],) if r >= 0)), p))
            break
        return out

    def _frozen_writes(self, case, k, trace, tasks, dumps, workers):
        p = _params(SIGN.procs_write_on_frozen_fs)
        out = []
        for task in tasks:
            t = task.value
            if not t["stat"].startswith("D") or not _wchan_in(t["wchan"], p["frozen_fs_waits"]):
                continue
            pid = t["pid"]
            if pid not in workers:
                continue
            dump = dumps.get(pid)
            first = _first_python(dump)
            if first is not None and _file_in(first.file or "", p["spawn_files"]):
                trace.append(f"{self.id}: pid {pid} waits in {t['wchan']} ({task.ref.describe()}) while starting a "
                             f"process or thread ({dump.ref.describe()}): the cgroup lock, not a frozen filesystem")
                continue
            who = _name(workers[pid], pid)
            doing = f" in {_frame(dump)} ({dump.ref.describe()})" if dump is not None else ""
            summary = (f"{who} slept uninterruptibly (state {t['stat']}) in {t['wchan']} "
                       f"({task.ref.describe()}){doing}: a write waiting for a frozen filesystem (fsfreeze, a "
                       "snapshot hook) to be thawed -- it cannot return until someone thaws it, and "
                       f"{who} never reached its next collective")
            trace.append(f"{self.id}: {summary}")
            refs = (task.ref,) + ((dump.ref,) if dump is not None else ())
            out.append(_advised(sign_finding(k, SIGN.procs_write_on_frozen_fs, self.id, summary, [], "frozen-fs",
                                             extra_refs=refs, culprits=tuple(r for r in (workers[pid],) if r >= 0)), p))
            break
        return out

    def _stopped(self, case, k, trace, tasks, dumps, workers):
        """A worker -- or the child a worker waits for -- stopped by a signal (T) or a tracer (t)."""
        p = _params(SIGN.procs_pipe_wait_cycle)
        by_pid = {(f.ref.path, f.value["pid"]): f for f in tasks}
        for task in tasks:
            t = task.value
            state = t["stat"][:1]
            if state not in ("T", "t"):
                continue
            pid, via = t["pid"], ""
            if pid not in workers:
                parent = by_pid.get((task.ref.path, t["ppid"]))
                dump = dumps.get(t["ppid"])
                if t["ppid"] not in workers or not (
                        (dump is not None and (_subprocess_wait(dump, p) or _fetching_from_children(dump)))
                        or (parent is not None and _wchan_in(parent.value["wchan"], p["child_waits"]))):
                    continue
                if parent is not None and parent.value["stat"][:1] in ("T", "t"):
                    continue   # the parent is stopped itself: read as the worker it is
                pid, via = t["ppid"], f" waited for its child pid {t['pid']} ({t['cmd'][:60]}), which"
            if state == "T" and not _other_worker_runs(tasks, workers, pid):
                # a stopped rank holds the others only if they run: a scheduler's suspend (SIGSTOP to every
                # process of the job) or a Ctrl-Z on the launcher stops them all, and nobody waits for anybody
                trace.append(f"{self.id}: pid {t['pid']} is stopped by a signal (state T, {task.ref.describe()}), but "
                             "no other worker of the job is shown running or waiting: the whole job was stopped "
                             "(a scheduler's suspend, Ctrl-Z), no rank held the others")
                continue
            sign = SIGN.procs_rank_stopped if state == "T" else SIGN.procs_rank_traced
            who = _name(workers[pid], pid)
            how = ("was stopped by a signal (SIGSTOP, Ctrl-Z: state T" if state == "T"
                   else "was held by a debugger or tracer (state t")
            summary = (f"{who}{via} {how}, {t['wchan']}, {task.ref.describe()}): it does not run until it is "
                       f"{'continued (SIGCONT)' if state == 'T' else 'released'}, and {who} never reached its next "
                       "collective")
            trace.append(f"{self.id}: {summary}")
            return [_advised(sign_finding(k, sign, self.id, summary, [], "stopped", extra_refs=(task.ref,),
                                          culprits=tuple(r for r in (workers[pid],) if r >= 0)), _params(sign))]
        return []

    def _locks_left_held(self, case: Case, k, trace):
        p = _params(SIGN.stacks_lock_held_by_no_thread)
        job_dirs = app._job_dirs(case)
        by_file: dict[str, list[Stack]] = {}
        for s in case.stacks:
            if s.origin == "gdb":
                by_file.setdefault(s.ref.path, []).append(s)
        for path, threads in by_file.items():
            if len(threads) < 2:
                continue   # one thread's backtrace: whether another holds the lock is not shown
            if any(t.crashed or any("signal handler" in (f.note or "") for f in t.frames) for t in threads):
                trace.append(f"{self.id}: {path} is the backtrace of a process that crashed (a core, a fatal "
                             "signal): its moment of death, not a hang")
                continue
            for s in threads:
                own = _lock_caller(s, p, job_dirs)
                if own is None:
                    continue
                code = _code_of(own)
                others = [o for o in threads if o is not s]
                inside = [o for o in others if any(_code_of(f) == code for f in o.frames)]
                python = [o for o in others if any((f.function or "") in p["python_eval_functions"] for f in o.frames)]
                if inside or python:
                    o = (inside or python)[0]
                    trace.append(f"{self.id}: {s.thread} waits for a lock in {own.function} ({s.ref.describe()}), but "
                                 f"{o.thread} {'is in that code' if inside else 'runs Python'} ({o.ref.describe()}): "
                                 "it may hold and release it")
                    continue
                private = (s.data or {}).get("futex_private")
                if private != 0:
                    # gdb of one process cannot show a holder in another: a process-shared mutex (in shared
                    # memory, another process may hold it) waits with private=128 (glibc LLL_SHARED)
                    trace.append(f"{self.id}: {s.thread} waits for a lock in {own.function} ({s.ref.describe()}), but "
                                 + ("the lock is process-shared (private=" + str(private) + "): its holder may be "
                                    "another process" if private is not None else
                                    "the backtrace does not show whether the lock is process-private (glibc's "
                                    "futex wait's private=0)"))
                    continue
                rank = stacklib.rank_of(s)
                who = f"rank {rank}" if rank is not None else f"pid {s.tid or '?'}"
                summary = (f"{who}'s {s.thread or 'thread'} waited to acquire a process-private lock (private=0) "
                           f"in the job's own native code {own.function} ({(own.file or own.module or '?').rsplit('/', 1)[-1]}"
                           f"{':' + str(own.line) if own.line else ''}; {s.ref.describe()}), and none of the process's "
                           f"other {len(others)} thread(s) was in that code or running Python ({path}): no thread can "
                           "release it -- the code returned with the lock held (or took it twice): a self-deadlock")
                trace.append(f"{self.id}: {summary}")
                return [_advised(sign_finding(k, SIGN.stacks_lock_held_by_no_thread, self.id, summary, [],
                                              "lock-left-held", extra_refs=(s.ref,) + tuple(o.ref for o in others[:3]),
                                              culprits=(rank,) if rank is not None else ()), p)]
        return []


    def _handler_waits_on_own_lock(self, case: Case, k, trace):
        """A signal handler of the job's own waiting, in the allocator, for the lock the code it
        interrupted (the allocator, fork) holds on the same thread (signals.toml
        stacks.handler_waits_on_own_lock)."""
        p = _params(SIGN.stacks_handler_waits_on_own_lock)
        held = set(app._param(SIGN.app_native_fault.id, "allocator_frames")) | set(p["fork_frames"])
        allocator = set(app._param(SIGN.app_native_fault.id, "allocator_frames"))
        job_dirs = app._job_dirs(case)
        for s in case.stacks:
            if s.origin != "gdb" or s.crashed:
                continue
            frames = list(s.frames)
            marks = [i for i, f in enumerate(frames) if "signal handler" in (f.note or "")]
            if not marks or marks[0] == 0:
                continue
            handler_part, interrupted = frames[:marks[0]], frames[marks[0] + 1:]
            if not any((f.function or "") in p["private_lock_functions"] for f in handler_part) \
                    or not any((f.function or "") in allocator for f in handler_part):
                continue
            # the interrupted code: its C-library frames up to the first outside it
            below = []
            for f in interrupted:
                below.append(f)
                if not app._c_library_frame(f) and f.function is not None:
                    break
            if not any((f.function or "") in held for f in below):
                continue
            handler = handler_part[-1]
            if app._c_library_frame(handler) or not handler.function or (
                    handler.module and not app._own_module(handler.module, job_dirs)):
                trace.append(f"{self.id}: a signal handler waits for the allocator's lock its interrupted code holds "
                             f"({s.ref.describe()}), but the handler {handler.function or '?'} is no code of the job's")
                continue
            was = next((f.function for f in below if (f.function or "") in held), "?")
            rank = stacklib.rank_of(s)
            who = (f"rank {rank}" if rank is not None else f"pid {s.pid or s.tid}" if (s.pid or s.tid)
                   else f"the process of {s.ref.path}")
            where = f"{(handler.file or handler.module or '?').rsplit('/', 1)[-1]}" + (f":{handler.line}" if handler.line else "")
            summary = (f"{who}'s signal handler {handler.function} ({where}; {s.ref.describe()}) called the allocator, "
                       f"which waits for a lock the code it interrupted ({was}) holds on the same thread: malloc is not "
                       "async-signal-safe -- a self-deadlock that never ends, in the job's own handler")
            trace.append(f"{self.id}: {summary}")
            return [_advised(sign_finding(k, SIGN.stacks_handler_waits_on_own_lock, self.id, summary, [],
                                          "handler-deadlock", extra_refs=(s.ref,),
                                          culprits=(rank,) if rank is not None else ()), p)]
        return []


def _advised(found, params):
    """The finding with its sign's own fix first (Finding.advice: shown before the cause's generic fixes)."""
    return dataclasses.replace(found, advice=params["advice"]) if params.get("advice") else found


def _name(rank: int, pid: int) -> str:
    return f"rank {rank} (pid {pid})" if rank >= 0 else _who([rank], {})


def _lock_caller(s: Stack, p, job_dirs):
    """The job's own frame that called a lock acquire, when the stack's innermost frames are the C
    library acquiring a mutex or rwlock and the first frame outside the C library is the job's own."""
    frames = list(s.frames)
    i = 0
    while i < len(frames) and (app._c_library_frame(frames[i]) or frames[i].function is None):
        i += 1
    if i == 0 or i == len(frames):
        return None
    if not any((f.function or "") in p["lock_functions"] for f in frames[:i]):
        return None
    own = {id(f) for f in app._own_frames(frames, job_dirs)}
    return frames[i] if id(frames[i]) in own else None


def _code_of(f) -> tuple[str, str]:
    """Where a native frame's code lives: its module, else its source file."""
    return (f.module or "", "" if f.module else (f.file or "").rsplit("/", 1)[-1])


def _main_dumps(case: Case) -> dict[int, Stack]:
    """pid -> its main thread's hang dump (py-spy first, then faulthandler, gdb)."""
    best: dict[int, tuple[int, Stack]] = {}
    for s in case.stacks:
        if s.pid is None or s.origin not in stacklib.HANG_ORIGINS or not stacklib._is_main_thread(s):
            continue
        order = stacklib.HANG_ORIGINS.index(s.origin)
        if s.pid not in best or order < best[s.pid][0]:
            best[s.pid] = (order, s)
    return {pid: s for pid, (_, s) in best.items()}


def _workers(case: Case, tasks, dumps) -> dict[int, int]:
    """pid -> rank (or -pid when not known) of the job's workers: processes the bundle dumped, the
    launcher names (torchrun's closing signal, exit records), or a launcher's children in the table."""
    pid_rank = {e.pid: e.rank for e in case.events if e.pid is not None and e.rank is not None}
    for s in dumps.values():
        r = stacklib.rank_of(s)
        if r is not None:
            pid_rank.setdefault(s.pid, r)
    pids = set(dumps) | {e.pid for e in case.events if e.kind in (KIND.launcher_sigterm, KIND.launcher_exit)
                         and e.pid is not None}
    return {pid: pid_rank.get(pid, -pid) for pid in pids}


def _subprocess_wait(dump: Stack, p) -> bool | None:
    """True: the main thread waits for a child in subprocess's wait, not through communicate();
    False: it is in subprocess's code that reads the pipes, or elsewhere; None: the dump shows no Python frame."""
    py = [f for f in dump.frames if f.language == "python"]
    if not py:
        return None
    inner = [f for f in py if _file_in(f.file or "", p["subprocess_files"])]
    if not inner or py[0] is not inner[0]:
        return False
    names = {f.function for f in inner}
    return bool(names & set(p["subprocess_wait_functions"])) and not names & set(p["draining_functions"])


def _sibling(tasks, child):
    """Another live process of the same table with the writer's parent: a possible reader of its pipe."""
    c = child.value
    return next((f for f in tasks if f.ref.path == child.ref.path and f.value["ppid"] == c["ppid"]
                 and f.value["pid"] != c["pid"] and f.value["stat"][:1] not in ("Z", "X")), None)


def _other_worker_runs(tasks, workers, pid) -> bool:
    """Some worker of the job other than `pid` has a `ps` row and is not stopped (T, t) or dead (Z, X):
    it runs or waits -- for the stopped one, in its next collective."""
    return any(f.value["pid"] in workers and f.value["pid"] != pid and f.value["stat"][:1] not in ("T", "t", "Z", "X")
               for f in tasks)


def _reading_thread(case: Case, dump: Stack):
    """Another thread of the dumped process that may drain the child's pipe while the main thread
    waits -- one whose innermost frames read or copy a file object, or run the job's own code (a
    reader it wrote, asleep between reads) -- or None.  Library threads (a progress bar's monitor,
    a metrics uploader, pin-memory) read no pipe of the job's child.  py-spy prints a file by its
    name below sys.path (threading.py, tqdm/_monitor.py), so a frame is the job's own by the job's
    own file names (_job_files), not by the path's shape."""
    mine = _job_files(case)
    for s in case.stacks:
        if s is dump or s.pid != dump.pid or s.ref.path != dump.ref.path or s.tid == dump.tid:
            continue
        py = [f for f in s.frames if f.language == "python"]
        names = [(f.function or "").rsplit(".", 1)[-1].lower() for f in py[:4]]
        if any(_job_file(f, mine) for f in py) or any(
                n.startswith(("read", "recv", "_readerthread", "communicate", "copyfileobj")) for n in names):
            return s
    return None


def _job_files(case: Case) -> set[str]:
    """The job's own Python files as the bundle names them: each dumped main thread's outermost
    <module> (the script), and every frame printed with its full path that is the job's own (app._own_frame)."""
    out = set()
    for s in case.stacks:
        py = [f for f in s.frames if f.language == "python" and f.file]
        if py and py[-1].function == "<module>" and app._own_frame(py[-1]):
            out.add(py[-1].file.replace("\\", "/"))
        out.update(f.file.replace("\\", "/") for f in py if f.file.startswith("/") and app._own_frame(f))
    return out


def _job_file(f, mine: set[str]) -> bool:
    """A Python frame in one of the job's own files: the same name, or one path the end of the other
    (py-spy's bare 'train.py' is the traceback's '/home/u/proj/train.py')."""
    path = (f.file or "").replace("\\", "/")
    if not path:
        return False
    return any(path == m or m.endswith("/" + path) or path.endswith("/" + m) for m in mine)


def _fetching_from_children(dump: Stack) -> bool:
    """The main thread waits for its child processes' output: a DataLoader fetching a batch from its workers."""
    waits = _params(SIGN.procs_rank_stopped)["child_output_waits"]
    for f in dump.frames:
        if f.language != "python":
            continue
        path = (f.file or "").replace("\\", "/")
        name = (f.function or "").rsplit(".", 1)[-1]
        if any(path.endswith(where) and name == fn for where, _, fn in (w.rpartition(":") for w in waits)):
            return True
    return False


def _first_python(dump: Stack | None):
    if dump is None:
        return None
    return next((f for f in dump.frames if f.language == "python"), None)


def _frame(dump: Stack | None) -> str:
    f = _first_python(dump)
    if f is None:
        return "?"
    return f"{f.function} ({(f.file or '?').rsplit('/', 1)[-1]}:{f.line})"


def _file_in(path: str, files) -> bool:
    from postmortem.classify.rules.hang import _file_in as file_in

    return file_in(path, files)
