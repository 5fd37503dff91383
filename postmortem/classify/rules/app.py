"""The job's own code failed (cause app_error): an uncaught exception, a fatal signal in
native code the job loads.  CUDA faults of the job's kernels come as message patterns
(knowledge/messages.toml: cuda_device_assert, cuda_illegal_access) and application-fault
Xids from one process through the Xid catalog; they meet here by cause.

The other ranks' timeouts and connection errors after it are its fallout (causes.toml
app_error `explains`)."""
from __future__ import annotations

import functools
import itertools
import re

from postmortem import stacks as stack_code
from postmortem.classify.rules.base import Rule, chain_links, died_of, events_of, handler_fallout, sign_finding
from postmortem.knowledge.registry import KIND, SIGN, deaths, produced_by, registry
from postmortem.model import Case, Event, Fact, Frame, Stack
from postmortem.sizes import UNITS

_KERNEL_KINDS = produced_by("parser:kernel")
_SIGNAL_DEATHS = deaths("fatal_signal", "exit")
# Library code: a frame here is not the job's own (site-packages, the interpreter, the runtime),
# nor a console script pip or conda generated for an installed package (<prefix>/bin/torchrun,
# accelerate, deepspeed; audit 8 L3) -- the launcher's own traceback, not the job's code.
_LIBRARY_FILE = re.compile(r"(?:site|dist)-packages/|/lib/python3[\d.]*/|^<frozen |^<string>$|/torch/|/_?pytest/"
                           r"|/torchinductor_[^/]+/")
# pip's and conda's console-script wrapper (pip/_vendor/distlib/scripts.py SCRIPT_TEMPLATE:
# `from pkg import main` / `sys.exit(main())`) is an extension-less file under bin/ that
# defines no function: its only frame is `<module>`.  A bin/ file with functions of its own
# (<proj>/bin/train's main, load_schedule) is the job's entry script (audit 9 M3).
_CONSOLE_SCRIPT = re.compile(r"/s?bin/[\w-]+$")
# The C library's own modules; with the C++, CUDA, NCCL, Python and verbs runtimes: the runtime.
_C_LIBRARIES = r"libc|libpthread|libm|libdl|ld-linux"


def _compiled_library_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    names = "|".join((_C_LIBRARIES, *_param(SIGN.app_native_frames.id, "library_modules")))
    dirs = _param(SIGN.app_native_frames.id, "library_dirs")
    # A path below a job folder, or relative to the launcher's working directory, has no root:
    # the system's folders (^/usr/, ^/lib/ ...) cannot be under it -- <proj>/lib/libmyops.so is
    # the job's build (audit 9 L3, REAL fixtures/lab/relative_lib_segv.sh); an environment's or a
    # cache's folder inside it (<proj>/.venv/lib/, <proj>/miniconda3/lib/) still is a library.
    return (re.compile(r"(?:^|/)(?:" + names + r")(?:[.-]|$)"),
            re.compile("|".join(dirs) or r"(?!)"),
            re.compile("|".join(d for d in dirs if not d.startswith("^")) or r"(?!)"))


def _param(sign_id: str, key: str) -> tuple[str, ...]:
    return tuple(registry().signals[sign_id].params.get(key, ()))


_LIBRARY_MODULE, _LIBRARY_DIR, _LIBRARY_DIR_BELOW = _compiled_library_patterns()


def _library_module(module: str) -> bool:
    """A native module that is a library, not the job's code: a known runtime, interconnect or
    HPC library by name, or anything under a folder of installed software (signals.toml
    app.native_frames library_modules / library_dirs)."""
    return bool(_LIBRARY_MODULE.search(module) or _LIBRARY_DIR.search(module))


def _job_dirs(case: Case) -> tuple[str, ...]:
    """The job's own folders as the bundle shows them: those of its own Python files in any
    stack (the script's folder, its package's) -- where its own native modules are built."""
    dirs = {f.file.rsplit("/", 1)[0] + "/" for s in case.stacks for f in s.frames
            if f.language == "python" and f.file and f.file.startswith("/") and _own_frame(f)}
    return tuple(sorted(d for d in dirs if d.count("/") >= 2))   # never "/" itself


def _own_module(module: str, job_dirs: tuple[str, ...]) -> bool:
    """A native module the job built: under one of its folders, or a relative path (loaded
    from the launcher's working directory), and not a library -- by name, or by its folder
    (installed software, even inside a job folder: <proj>/miniconda3/lib/; audit 8 L2).  A bare
    file name without a folder (gdb's `from libcupti.so.12`) says only that the dynamic linker
    found it on its search path: a library, not a file the job built."""
    if not module or _LIBRARY_MODULE.search(module) or "/" not in module:
        return False
    if not module.startswith("/"):
        return not _LIBRARY_DIR_BELOW.search("/" + module)
    home = next((d for d in job_dirs if module.startswith(d)), None)
    # the folders below the job's own: a conda env or a compiler cache kept inside the project
    return home is not None and not _LIBRARY_DIR_BELOW.search("/" + module[len(home):])


def exception_sign(case: Case, e: Event):
    """The sign one uncaught exception is.  One exception is one sign: where it was raised
    qualifies it, it is no second observation."""
    stack = _traceback_of(case, e)
    own = [f for f in (stack.frames if stack else ()) if _own_frame(f)]
    return (SIGN.app_native_module_noexec if noexec_mount_of(case, e) is not None
            else SIGN.app_exception_in_own_code if _raised_in_own_code(case, e)
            else SIGN.app_import_from_own_file if own and _imported_from_own_file(case, e)
            else SIGN.storage_remote_service_error if _remote_service_failure(e)
            else SIGN.app_exception_in_dataset if stack and _in_dataset_fetch(stack) and not _os_error(e)
            else SIGN.app_exception_argument_error if stack and own and (
                _argument_error(e) or _missing_name(e) or (_path_errno(e, stack) and not _in_dataset_fetch(stack)))
            else SIGN.app_exception)


def noexec_mount_of(case: Case, e: Event) -> Fact | None:
    """The mount-table line of a noexec filesystem holding the shared object the dynamic linker
    could not map (signals.toml app.native_module_noexec): the deepest mount point the bundle
    shows above the path, when its options hold noexec; None otherwise."""
    text = f"{e.data.get('message') or e.text or ''}\n{e.data.get('continuation') or ''}"
    paths = [m.group(1) for p in _param(SIGN.app_native_module_noexec.id, "map_failure") for m in re.finditer(p, text)]
    if not paths:
        return None
    # the failing process's own host's table, when both are known (another node's /tmp says nothing)
    points = [f for f in case.facts if f.name == "mount.point" and isinstance(f.value, str)
              and not (f.host and e.host and f.host != e.host)]
    for path in paths:
        above = [f for f in points if path == f.value or path.startswith(f.value.rstrip("/") + "/")]
        deepest = max(above, key=lambda f: len(f.value), default=None)
        if deepest is not None and "noexec" in str(deepest.text or "").split(","):
            return deepest
    return None


def _rank(sign) -> tuple:
    return (sign.strength == "strong", sign.weight)


def catalog_reads_instead(case: Case, e: Event, catalog_sign) -> bool:
    """One exception line is one sign (audit 8 H1): when the PyTorch catalog reads the job's
    exception as app_error too, the stronger of the two readings stands for the line (a
    specific torch message over a bare exception; the exception where it was raised says more)."""
    return _rank(catalog_sign) > _rank(exception_sign(case, e))


def own_exception(case: Case, k) -> Event | None:
    """The exception AppError reads as the job's failure (None: none): the first uncaught one
    that is not fallout, a communication error or another cause's message."""
    kernel_files = {e.ref.path for e in events_of(case, _KERNEL_KINDS)}
    return AppError._first_own_exception(case, kernel_files, AppError._lines_with_a_cause(case, k))


def _catalog_app_reading(e: Event):
    """The catalog sign of a PyTorch message reading this exception as app_error, or None."""
    from postmortem.knowledge import catalog  # here, not at the top: startup time (issue 17)
    from postmortem.knowledge.registry import catalog_signal

    # the text the catalog rule reads: the message and its continuation lines
    more = "\n".join(str(e.data[k]) for k in ("what", "continuation") if e.data.get(k))
    m = catalog.match_message(f"{e.text or ''}\n{more}" if more else (e.text or ""), ("pytorch",))
    if m is None or m.cause != SIGN.app_exception.cause:
        return None
    return catalog_signal(m.entry.catalog, m.entry.id, m.cause,
                          m.strength if m.strength in ("specific", "subsystem") else "subsystem", m.entry.why)


class AppError(Rule):
    """An uncaught exception that is not itself a communication error or a known cause's
    message, and a SIGSEGV/SIGFPE/SIGILL in native code: the job's own code, named by rank,
    host and top frames."""

    id = "app-error"

    def findings(self, case, k, trace):
        out = []
        kernel_files = {e.ref.path for e in events_of(case, _KERNEL_KINDS)}
        exc = own_exception(case, k)
        read = _catalog_app_reading(exc) if exc is not None else None
        if read is not None and catalog_reads_instead(case, exc, read):
            trace.append(f"{self.id}: {exc.ref.describe()} is read by the catalog ({read.id}): one sign")
        elif exc is not None:
            out.append(self._exception_finding(case, k, exc, trace))
        alike = _every_rank_alike(case, exc) if exc is not None else []
        if alike:
            out.append(self._every_rank_finding(case, k, exc, alike, trace))
        fault = next((e for e in events_of(case, _SIGNAL_DEATHS) if e.ref.path not in kernel_files
                      and any(died_of(e, s) for s in _param(SIGN.app_native_fault.id, "signals"))), None)
        if fault is None:
            fault = self._own_abort(case, kernel_files)
        if fault is not None:
            out.append(self._native_finding(case, k, fault, trace))
        return out

    @staticmethod
    def _own_abort(case: Case, kernel_files: set[str]) -> Event | None:
        """A SIGABRT is any library's way to stop (NCCL, c10's terminate, a watchdog), so it is
        the job's own fault only when the crashing stack shows glibc's assert() failing
        (assert/assert.c __assert_fail -> abort), or libstdc++'s std::terminate (an uncaught throw,
        a joinable std::thread destroyed), called from a frame outside the system and GPU
        runtime: the job's extension asserted on its input or failed its own C++ rules."""
        abort = [e for e in events_of(case, _SIGNAL_DEATHS) if e.ref.path not in kernel_files
                 and any(died_of(e, s) for s in _param(SIGN.app_native_fault.id, "abort_signals"))]
        if not abort:
            return None
        signal = next(s for s in _param(SIGN.app_native_fault.id, "abort_signals") if died_of(abort[0], s))
        # faulthandler's Python-only dump of the same death, read to its native frames (gdb's bt of the core)
        crashed = _with_native_frames(stack_code.crashing(case.stacks, case.events), case.stacks, signal)
        # (a heap-state check also: some code of this process corrupted its heap -- a weak lean, audit 7 M10)
        return (abort[0] if crashed and (_assert_caller(crashed, _job_dirs(case)) is not None or _heap_state_check(crashed))
                else None)

    @staticmethod
    def _lines_with_a_cause(case: Case, k) -> set[tuple]:
        """Lines a message pattern already reads as some cause (a CUDA OOM raised as
        RuntimeError is gpu_oom, not the job's code)."""
        causal = {f"msg.{m.id}" for m in k.messages if m.cause}
        return {(e.ref.path, e.ref.line) for e in events_of(case, causal)}

    @staticmethod
    def _first_own_exception(case: Case, kernel_files: set[str], explained: set[tuple]) -> Event | None:
        handlers = handler_fallout(case)
        fallout_types = _param(SIGN.app_exception.id, "fallout_types")
        fallout_text = re.compile("|".join(_param(SIGN.app_exception.id, "fallout_text")) or r"(?!)")
        own_code_readings = set(_param(SIGN.app_exception.id, "own_code_readings"))
        job_frame_readings = set(_param(SIGN.app_exception.id, "job_frame_readings"))
        own_write_types = set(_param(SIGN.app_exception.id, "own_write_types"))

        def set_aside(e: Event) -> bool:
            """Fallout, a communication error or another cause's message: not the job's failure."""
            if (e.ref.path, e.ref.line) in explained:
                return True
            etype = str(e.data.get("type") or "").rsplit(".", 1)[-1]
            if etype in fallout_types and not (etype in own_write_types and _raised_in_own_code(case, e)
                                               and _writes_own_output(e)):
                return True
            if fallout_text.search(e.text) or _raised_by_distributed_layer(case, e) or _parent_gone_at_start(case, e):
                return True
            from postmortem.knowledge import catalog  # here, not at the top: startup time (issue 17)

            read = catalog.match_message(e.text or "", ("pytorch",))
            # (past _raised_by_distributed_layer a job_frame_readings entry has a frame of the job's)
            # an upstream message with its own reading (a host allocation failure ...)
            return bool(read and read.cause not in ("", catalog.CONTEXT, SIGN.app_exception.cause)
                        and not ((read.entry.id in own_code_readings and _raised_in_own_code(case, e))
                                 or read.entry.id in job_frame_readings))

        links = chain_links(case)
        for e in events_of(case, KIND.py_exception):
            if e.ref.path in kernel_files or (e.ref.path, e.ref.line) in handlers or set_aside(e):
                continue
            # Raised `from` (or while handling) an earlier exception of its chain that is set aside:
            # the job's report of that failure (a wrapper adding the step), not a failure of its own
            # (audit 12 M1).  An earlier link that is the job's own error was returned before this one.
            if any(set_aside(x) for x in links.get((e.ref.path, e.ref.line), ())):
                continue
            return e
        return None

    def _exception_finding(self, case: Case, k, e: Event, trace: list[str]):
        stack = _traceback_of(case, e)
        own = [f for f in (stack.frames if stack else ()) if _own_frame(f)]
        raised_own = _raised_in_own_code(case, e)
        where = _who(e)
        top = ", ".join(_frame_text(f) for f in (own or list(stack.frames if stack else ()))[:3])
        summary = (f"{where} raised {str(e.data.get('type') or 'an exception')}: "
                   f"{str(e.data.get('message') or '').strip()[:160]}" + (f" — in {top}" if top else ""))
        trace.append(f"{self.id}: uncaught exception at {e.ref.describe()} "
                     f"({'raised in the job' + chr(39) + 's own code' if raised_own else 'raised outside the job' + chr(39) + 's own code'})")
        refs = (stack.ref,) if stack else ()
        sign = exception_sign(case, e)
        if sign is SIGN.app_native_module_noexec:
            mount = noexec_mount_of(case, e)
            summary += f" — the library lies on {mount.value}, mounted noexec ({mount.ref.describe()}): no code there can be mapped executable"
            trace.append(f"{self.id}: the shared object is under {mount.value}, mounted noexec ({mount.ref.describe()})")
            refs = (*refs, mount.ref)
            return sign_finding(k, sign, self.id, summary, [e], str(e.data.get("type") or "exception"), extra_refs=refs)
        if sign is SIGN.app_import_from_own_file:
            path = _imported_from_own_file(case, e)
            summary += (f" — the module was loaded from {path}, a file in the job's own folder: the job's module lacks"
                        " the name, or a file of the job's shadows the library module of that name")
            trace.append(f"{self.id}: the import loaded {path}, one of the job's own files")
        if sign is SIGN.storage_remote_service_error:
            trace.append(f"{self.id}: the exception reports a remote service's failure, not the job's code or data")
        errno = _errno_of(e) if not _terminal_call(e) else None
        if errno in _param(SIGN.storage_job_io_errno.id, "device_errnos"):
            # The device or file server under the call failed: where it was raised says nothing (audit 7 H7)
            trace.append(f"{self.id}: errno {errno} reports the storage's state, not the job's code")
            sign = SIGN.storage_job_io_errno
        elif errno in _param(SIGN.storage_job_io_errno.id, "state_errnos"):
            trace.append(f"{self.id}: errno {errno} reports the filesystem's state, not the job's code")
            sign = SIGN.app_exception
        return sign_finding(k, sign, self.id, summary, [e], str(e.data.get("type") or "exception"), extra_refs=refs)

    def _every_rank_finding(self, case: Case, k, exc: Event, alike: list[Event], trace: list[str]):
        """The second sign (signals.toml app.exception_every_rank): the other ranks' lines."""
        ranks = sorted({e.rank for e in (exc, *alike) if e.rank is not None})
        site = _own_site(case, exc)
        where = f"{site.file.rsplit('/', 1)[-1]}:{site.line}" if site and site.file else "one line of the job's code"
        summary = (f"every rank that printed a traceback (ranks {', '.join(map(str, ranks))}) raised the same "
                   f"{str(exc.data.get('type') or 'exception')} at {where}: the program failing alike on each rank "
                   "-- no one host's fault or a peer's death makes every rank raise this at its own line")
        trace.append(f"{self.id}: ranks {ranks} raised the same exception at {where} ({', '.join(e.ref.describe() for e in alike[:4])})")
        return sign_finding(k, SIGN.app_exception_every_rank, self.id, summary, alike,
                            str(exc.data.get("type") or "exception"), culprits=tuple(ranks))

    def _native_finding(self, case: Case, k, e: Event, trace: list[str]):
        signal = next(s for s in (*_param(SIGN.app_native_fault.id, "signals"), *_param(SIGN.app_native_fault.id, "abort_signals"))
                      if died_of(e, s))
        crashed = _with_native_frames(stack_code.crashing(case.stacks, case.events), case.stacks, signal)
        job_dirs = _job_dirs(case)
        asserted = (_assert_caller(crashed, job_dirs) if crashed and signal in _param(SIGN.app_native_fault.id, "abort_signals")
                    else None)
        own = [asserted] if asserted else _own_frames(crashed.frames if crashed else (), job_dirs)
        aborted = signal in _param(SIGN.app_native_fault.id, "abort_signals")
        # an abort is the job's own only through its assert's (or freed pointer's) caller, never by the site
        at_own = asserted is not None or (not aborted and crashed is not None and _fault_site_is_own(crashed.frames, job_dirs))
        top = ", ".join(_frame_text(f) for f in (own or list(crashed.frames if crashed else ()))[:3])
        summary = f"{_who(e)} died of {signal}" + (f" in {top}" if top else "")
        site_now = _fault_site(crashed.frames) if crashed is not None and at_own and not asserted else None
        if site_now is not None and _interpreter_frame(site_now):
            summary += (f" — the Python interpreter's C API ({_frame_text(site_now)}) faulted on the call the job's"
                        " native code made (a call without the GIL, an object it holds no reference to)")
        if aborted and asserted is None and crashed is not None and _heap_state_check(crashed):
            summary += (" — glibc found its heap corrupted while serving an allocation: an earlier write past a"
                        " chunk, by whatever code of the process made it")
        site = _fault_site(crashed.frames) if crashed and not at_own else None
        if site is not None and site.module and _library_module(site.module):
            # a library's own code faulted: its bug, or bad input the job handed it -- a lean, named
            summary += f" — the fault site is a library: {_frame_text(site)}"
        trace.append(f"{self.id}: {signal} at {e.ref.describe()}; the fault site is the job's own code: {at_own}"
                     + (f" (a library: {site.module})" if site is not None and site.module and _library_module(site.module)
                        else ""))
        refs = (crashed.ref,) if crashed else ()
        recursing = _recursion(crashed.frames) if crashed and signal == "SIGSEGV" and not at_own else None
        if recursing is not None:
            summary += (f" — {_frame_text(recursing[0])} called itself in {recursing[1]} frames in a row"
                        " (as far as the backtrace shows): unbounded recursion ran the thread out of stack")
            trace.append(f"{self.id}: {_frame_text(recursing[0])} repeats {recursing[1]} frames in a row below the fault")
        # The death and its own stack are one event: the fault site qualifies it, it is no second sign.
        sign = (SIGN.app_native_frames if at_own else SIGN.app_native_recursion if recursing is not None
                else SIGN.app_native_fault)
        if sign is not SIGN.app_native_fault and crashed is not None and _loader_worker_stack(crashed):
            # torch's worker signal handlers (or the worker loop) on the crashed stack: a DataLoader worker died
            summary = "a DataLoader worker (torch's worker signal handler is on its stack): " + summary
            trace.append(f"{self.id}: the crashed process is a DataLoader worker ({crashed.ref.describe()})")
            sign = SIGN.app_native_fault_in_loader_worker
        return sign_finding(k, sign, self.id, summary, [e], signal, extra_refs=refs)


def _loader_worker_stack(stack: Stack) -> bool:
    """The stack is a DataLoader worker process's: torch's worker signal handlers (installed by
    _worker_loop only, signals.toml app.native_fault_in_loader_worker) or the worker loop itself."""
    p = registry().signals[SIGN.app_native_fault_in_loader_worker.id].params
    loops = [tuple(w.rsplit(":", 1)) for w in p["worker_loops"]]
    for f in stack.frames:
        name = (f.function or "").split("(", 1)[0]
        if name in p["worker_handlers"] and any(m in (f.module or "") for m in p["worker_handler_modules"]):
            return True
        if any((f.file or "").replace("\\", "/").endswith(path) and f.function == fn for path, fn in loops):
            return True
    return False


def _own_site(case: Case, e: Event) -> Frame | None:
    """The innermost frame of the job's own files in the exception's traceback."""
    stack = _traceback_of(case, e)
    return next((f for f in (stack.frames if stack else ()) if _own_frame(f)), None)


def _raise_key(case: Case, e: Event, noise: re.Pattern[str]) -> tuple | None:
    """What two ranks' exceptions must share to be one failure of the program: the type, the
    message with its numbers aside, and the innermost frame of the job's own files."""
    site = _own_site(case, e)
    if site is None:
        return None
    etype = str(e.data.get("type") or "").rsplit(".", 1)[-1]
    return etype, noise.sub("#", str(e.data.get("message") or e.text or "").strip()), site.file, site.line


def _every_rank_alike(case: Case, exc: Event) -> list[Event]:
    """The other ranks' exception lines when every rank that printed a traceback raised what
    `exc` is, at the same line of the job's own code, and two ranks or more did (signals.toml
    app.exception_every_rank); [] otherwise.  Only for an exception app.exception itself reads
    as the job's (no errno, no storage or service reading): own_exception already set aside the
    fallout, communication and other causes' messages."""
    sign_id = SIGN.app_exception_every_rank.id
    if exception_sign(case, exc).cause != SIGN.app_exception.cause:
        return []
    # every link of its chain: a library wraps the OS call or the connection that failed in an
    # exception of its own, which prints the errno only in the chain's earlier links (audit 12 H1)
    chain = (*chain_links(case).get((exc.ref.path, exc.ref.line), ()), exc)
    if any(_shared_state_failed(case, link, sign_id) for link in chain):
        return []
    noise = re.compile("|".join(_param(sign_id, "message_noise")))
    key = _raise_key(case, exc, noise)
    if key is None:
        return []
    launcher = set(_param(sign_id, "launcher_types"))
    handlers = handler_fallout(case)
    ranks: set[tuple] = set()
    alike: list[Event] = []
    for e in events_of(case, KIND.py_exception):
        if str(e.data.get("type") or "").rsplit(".", 1)[-1] in launcher or (e.ref.path, e.ref.line) in handlers:
            continue
        other = _raise_key(case, e, noise)
        if other is None:
            continue   # no frame of the job's: a launcher's or a helper's own traceback
        if other != key:
            return []  # a rank raised something else: not every rank alike
        if e.rank is not None:
            ranks.add((e.host, e.rank))
        if e is not exc:
            alike.append(e)
    return alike if len(ranks) >= 2 else []


def _imported_from_own_file(case: Case, e: Event) -> str | None:
    """The module file an ImportError's 'cannot import name N from M (<path>)' names, when it is
    one of the job's own files (signals.toml app.import_from_own_file): under a folder of the
    job's own Python files and not below an environment's library folder there; None otherwise."""
    if str(e.data.get("type") or "").rsplit(".", 1)[-1] != "ImportError":
        return None
    message = str(e.data.get("message") or "").strip()
    for pattern in _param(SIGN.app_import_from_own_file.id, "import_from"):
        m = re.search(pattern, message)
        if m is None:
            continue
        path = m.group(1)
        home = next((d for d in _job_dirs(case) if path.startswith(d)), None)
        if home is not None and not _LIBRARY_FILE.search(path) and not _LIBRARY_DIR_BELOW.search("/" + path[len(home):]):
            return path
    return None


def _shared_state_failed(case: Case, e: Event, sign_id: str) -> bool:
    """One link of an exception's chain reports a state every rank shares rather than the
    program (signals.toml app.exception_every_rank): an OS call's failure, any OSError (a file, a
    connection, a remote service -- catalogs/python_exceptions.json os_error_classes: a library's
    'not found in the cache' FileNotFoundError carries no errno), memory running out, a
    communication fallout type or text, or a raise site in the device's or process group's code."""
    etype = str(e.data.get("type") or "")
    if _os_call_failed(e) or _resource_exhausted(e, sign_id) or etype in _os_error_classes():
        return True
    fallout_text = re.compile("|".join(_param(SIGN.app_exception.id, "fallout_text")) or r"(?!)")
    if etype.rsplit(".", 1)[-1] in _param(SIGN.app_exception.id, "fallout_types") or fallout_text.search(e.text or ""):
        return True
    stack = _traceback_of(case, e)
    site = (stack.frames[0].file or "").replace("\\", "/") if stack and stack.frames else ""
    return any(p in site for p in _param(sign_id, "not_raised_in"))


@functools.cache
def _os_error_classes() -> frozenset[str]:
    from postmortem.knowledge import catalog  # here, not at the top: startup time (issue 17)

    return catalog.os_error_classes()


def _resource_exhausted(e: Event, sign_id: str) -> bool:
    """The exception reports memory (or the stack) running out (signals.toml
    app.exception_every_rank resource_types / resource_text)."""
    etype = str(e.data.get("type") or "").rsplit(".", 1)[-1]
    text = str(e.data.get("message") or e.text or "")
    return etype in _param(sign_id, "resource_types") or any(re.search(p, text) for p in _param(sign_id, "resource_text"))


def _os_call_failed(e: Event) -> bool:
    """The exception reports a failed OS call: CPython's "[Errno N]", or the C library's text for
    an errno inside a library's own message (torch's C++ 'open file failed with strerror: Read-only
    file system'; catalogs/python_exceptions.json strerror)."""
    if _errno_of(e) is not None:
        return True
    text = str(e.data.get("message") or e.text or "")
    return any(t in text for t in _strerror_texts())


@functools.cache
def _strerror_texts() -> tuple[str, ...]:
    from postmortem.knowledge import catalog  # here, not at the top: startup time (issue 17)

    return tuple(sorted(catalog.strerror_texts()))


def _recursion(frames) -> tuple[Frame, int] | None:
    """The longest run of one native function calling itself below the signal handler, when it is
    at least signals.toml app.native_recursion recursion_frames long and not a library's (CUDA,
    NCCL, the driver): (its first frame, the run's length)."""
    runs = [(run[0], len(run)) for key, group in itertools.groupby(
                _below_handler(frames), key=lambda f: (f.function, f.module) if f.language != "python" and f.function else None)
            if key is not None for run in [list(group)]]
    best = max(runs, key=lambda r: r[1], default=None)
    if best is None or best[1] < registry().signals[SIGN.app_native_recursion.id].params["recursion_frames"]:
        return None
    return None if best[0].module and _library_module(best[0].module) else best


def _with_native_frames(crashed: Stack | None, stacks, signal: str) -> Stack | None:
    """The crashing stack as a native debugger printed it, when the chosen one is Python-only.
    CPython's faulthandler (Python/faulthandler.c faulthandler_fatal_error -> dump_traceback)
    prints only Python frames: a native call made from Python (ctypes, an extension) shows as
    the Python line that made it, so it cannot say where the fault was.  gdb's `bt` on the core
    of the same death (its "Program terminated with signal SIGSEGV") prints the native frames
    below `<signal handler called>`: the same crash, read to the instruction that faulted."""
    if crashed is None or crashed.origin in stack_code.NATIVE_ORIGINS:
        return crashed
    native = [s for s in stacks if s.crashed and s.origin in stack_code.NATIVE_ORIGINS
              and signal in (s.title or "") and any("signal handler" in (f.note or "") for f in s.frames)]
    return native[0] if len(native) == 1 else crashed


def _assert_caller(stack: Stack, job_dirs: tuple[str, ...] = ()) -> Frame | None:
    """The frame whose call glibc aborted on: the caller of its assert failure (the frame after
    the last __assert_fail* frame), the function whose own stack frame its stack protector or
    fortify check found overrun (after __stack_chk_fail / __chk_fail), the function that threw the C++
    exception nothing caught or destroyed a joinable std::thread (past std::terminate and the C++
    library's frames), or of the allocator call in which a heap check failed
    (malloc_printerr: "free(): double free detected in tcache 2", "free(): invalid pointer" --
    the frame after malloc_printerr and the allocator's own frames), when that caller is not in
    the system or GPU runtime; None without such a frame, and None for a check of the heap's
    state run inside malloc ("malloc(): corrupted top size"), which finds an earlier overflow."""
    frames = list(stack.frames)
    names = _param(SIGN.app_native_fault.id, "assert_frames")
    hits = [i for i, f in enumerate(frames) if (f.function or "") in names]
    # glibc's stack protector and fortify checks (__stack_chk_fail, __chk_fail): the caller is
    # the function whose own frame was overrun, past glibc's checked wrappers (__memcpy_chk ...)
    guarded = _param(SIGN.app_native_fault.id, "overflow_check_frames")
    overflow = [i for i, f in enumerate(frames) if (f.function or "") in guarded]
    if overflow and (not hits or overflow[-1] > hits[-1]):
        by_name, by_file = (re.compile(p) for p in _param(SIGN.app_native_fault.id, "checked_wrappers"))
        i = overflow[-1] + 1
        while i < len(frames) and (by_name.match(frames[i].function or "") or by_file.search(frames[i].file or "")):
            i += 1
        hits = [i - 1]
    heap = _param(SIGN.app_native_fault.id, "heap_check_frames")
    checks = [i for i, f in enumerate(frames) if (f.function or "") in heap]
    if checks and (not hits or checks[-1] > hits[-1]):
        if _heap_state_check(stack):
            return None   # a check of the heap's state: the allocator's caller is a victim (audit 7 M10)
        allocator = set(_param(SIGN.app_native_fault.id, "allocator_frames"))
        i = checks[-1] + 1
        while i < len(frames) and (frames[i].function or "") in allocator:
            i += 1
        hits = [i - 1]
    # libstdc++'s std::terminate (an uncaught throw, a joinable std::thread destroyed): past the
    # C++ library's own frames, the function that threw or destroyed it
    terminating = _param(SIGN.app_native_fault.id, "terminate_frames")
    ends = [i for i, f in enumerate(frames) if (f.function or "").split("(", 1)[0] in terminating]
    if ends and (not hits or ends[-1] > hits[-1]):
        i = ends[-1] + 1
        while i < len(frames) and _cxx_library_frame(frames[i]):
            i += 1
        hits = [i - 1]
    if not hits:
        return _interpreter_fatal_caller(stack, job_dirs)
    if hits[-1] + 1 >= len(frames):
        return None
    caller = frames[hits[-1] + 1]
    if _c_library_frame(caller) or (caller.module and not _own_module(caller.module, job_dirs)):
        return None   # glibc's own assertions (a mutex owner check ...) and a library's are not the job's
    return caller if caller.function else None


def _cxx_library_frame(f: Frame) -> bool:
    """A frame of the C++ standard library: its module, or its headers inlined into a caller."""
    return bool(_CXX_LIBRARY.search(f.module or "") or _CXX_LIBRARY.search(f.file or ""))


_CXX_LIBRARY = re.compile("|".join(_param(SIGN.app_native_fault.id, "cxx_library")) or r"(?!)")


def _interpreter_fatal_caller(stack: Stack, job_dirs: tuple[str, ...] = ()) -> Frame | None:
    """The job's native function whose call made CPython stop on a broken invariant (signals.toml
    app.native_fault interpreter_fatal_frames): past the outermost fatal-error frame, the first frame
    outside the interpreter and the C library, when it is the job's and the walk did not pass the
    eval loop; None otherwise."""
    frames = list(stack.frames)
    fatal = [i for i, f in enumerate(frames)
             if (f.function or "") in _param(SIGN.app_native_fault.id, "interpreter_fatal_frames")]
    if not fatal:
        return None
    rest = frames[fatal[-1] + 1:]
    own = {id(f) for f in _own_frames(frames, job_dirs)}
    caller = next((f for f in rest if not _interpreter_frame(f) and not _c_library_frame(f)), None)
    if caller is None or id(caller) not in own:
        return None
    evaluating = set(_param(SIGN.app_native_frames.id, "eval_frames"))
    return None if any((f.function or "") in evaluating for f in rest[:rest.index(caller)]) else caller


def _heap_state_check(stack: Stack) -> bool:
    """glibc aborted on a check of its heap's state, run inside an allocation (signals.toml
    heap_state_frames: the function that called malloc_printerr)."""
    frames = list(stack.frames)
    checks = [i for i, f in enumerate(frames) if (f.function or "") in _param(SIGN.app_native_fault.id, "heap_check_frames")]
    return bool(checks) and checks[-1] + 1 < len(frames) and (
        frames[checks[-1] + 1].function in set(_param(SIGN.app_native_fault.id, "heap_state_frames")))


def _own_frames(frames, job_dirs: tuple[str, ...] = ()) -> list[Frame]:
    """The job's own frames of a stack: those _own_frame says, and a native function that
    ctypes called (its caller is libffi's trampoline) outside the C library's sources and
    outside the libraries -- Python code calling its own shared library (gdb names no module
    for a frame it has line information for)."""
    frames = list(frames)
    out = []
    for i, f in enumerate(frames):
        caller = frames[i + 1] if i + 1 < len(frames) else None
        via_ctypes = (f.language != "python" and caller is not None
                      and _FFI_MODULE.search(caller.module or "") is not None and f.function
                      and not f.function.startswith("_") and not _C_LIBRARY_SOURCE.match(f.file or "")
                      and not (f.module and _library_module(f.module)))
        if _own_frame(f, job_dirs) or via_ctypes:
            out.append(f)
    return out


# libffi: ctypes' call trampoline; glibc's own source tree as its debug info names it.
_FFI_MODULE = re.compile(r"(?:^|/)libffi[.-]")
_C_LIBRARY_SOURCE = re.compile(r"^\.{0,2}/?(?:nptl|sysdeps|stdlib|string|libio|malloc|posix|signal|elf|misc|assert|io|csu)/")


def _c_library_frame(f: Frame) -> bool:
    """A frame of the C library: its module, or (gdb names no module where it has debug info)
    a function from glibc's source tree."""
    return bool(_C_LIBRARY_MODULE.search(f.module or "") or _C_LIBRARY_SOURCE.match(f.file or ""))


_C_LIBRARY_MODULE = re.compile(r"(?:^|/)(?:" + _C_LIBRARIES + r")[.-]")


def _below_handler(frames) -> list[Frame]:
    frames = list(frames)
    handler = [i for i, f in enumerate(frames) if "signal handler" in (f.note or "")]
    return frames[handler[-1] + 1:] if handler else frames


def _fault_site(frames) -> Frame | None:
    """The frame that faulted: below the signal handler's frames, the first outside the C library."""
    return next((f for f in _below_handler(frames) if not _c_library_frame(f)), None)


def _fault_site_is_own(frames, job_dirs: tuple[str, ...] = ()) -> bool:
    """The frame that faulted is the job's own native code: below the signal handler's frames
    (gdb's `<signal handler called>`), the first frame outside the C library (memcpy faulting on
    a pointer its caller passed is the caller's fault) is one of the job's native frames."""
    below = _below_handler(frames)
    own = {id(f) for f in _own_frames(below, job_dirs)}
    site = _fault_site(below)
    if site is not None and site.language == "python":
        # A Python-only dump (faulthandler) shows the frame that called into native code; only
        # ctypes' own wrappers (string_at, memmove ...) say the native code works on what its
        # caller handed it: then the caller's frame is the fault site.
        rest = below[below.index(site):]
        caller = next((f for f in rest if not _CTYPES_FILE.search(f.file or "")), None)
        return caller is not site and caller is not None and id(caller) in own
    if site is not None and id(site) not in own and _interpreter_frame(site):
        return _interpreter_called_by_own(below, site, own)
    return site is not None and id(site) in own


def _interpreter_called_by_own(below: list[Frame], site: Frame, own: set[int]) -> bool:
    """The fault site is the Python interpreter's C code and the native function that called it
    (past the interpreter's and the C library's frames, not through the eval loop) is the job's
    (signals.toml app.native_frames interpreter_modules/interpreter_sources/eval_frames)."""
    rest = below[below.index(site):]
    caller = next((f for f in rest if not _interpreter_frame(f) and not _c_library_frame(f)), None)
    if caller is None or id(caller) not in own:
        return False
    evaluating = set(_param(SIGN.app_native_frames.id, "eval_frames"))
    return not any((f.function or "") in evaluating for f in rest[:rest.index(caller)])


def _interpreter_frame(f: Frame) -> bool:
    """A native frame of the Python interpreter itself: its module, or its source tree."""
    return f.language != "python" and bool(
        _INTERPRETER_MODULE.search(f.module or "") or _INTERPRETER_SOURCE.search(f.file or ""))


_INTERPRETER_MODULE = re.compile("|".join(_param(SIGN.app_native_frames.id, "interpreter_modules")) or r"(?!)")
_INTERPRETER_SOURCE = re.compile("|".join(_param(SIGN.app_native_frames.id, "interpreter_sources")) or r"(?!)")


_CTYPES_FILE = re.compile(r"/ctypes/[^/]*\.py$")


def _own_frame(f: Frame, job_dirs: tuple[str, ...] = ()) -> bool:
    """A frame of the job's own code: a Python file outside the libraries, or a native
    module the job built (_own_module: by inclusion, never by being off a list)."""
    if f.language == "python":
        return bool(f.file) and not _LIBRARY_FILE.search(f.file or "") and not (
            f.function == "<module>" and _CONSOLE_SCRIPT.search(f.file or ""))
    return bool(f.module) and _own_module(f.module or "", job_dirs)


def _raised_in_own_code(case: Case, e: Event) -> bool:
    """The innermost frame of the exception's traceback is the job's own code."""
    stack = _traceback_of(case, e)
    return bool(stack and stack.frames and _own_frame(stack.frames[0]))


def _raised_by_distributed_layer(case: Case, e: Event) -> bool:
    """The exception was raised inside torch.distributed's launcher, rendezvous or c10d code (or
    the socket and connection modules under them) and its traceback holds no frame of the job's
    own: torchrun's or the elastic agent's own run failed on what it was given to connect to
    (a rendezvous endpoint it cannot parse, a store it cannot reach) -- the launch environment,
    not the job's code (signals.toml app.exception environment_raise_sites)."""
    stack = _traceback_of(case, e)
    if stack is None or not stack.frames or any(_own_frame(f) for f in stack.frames):
        return False
    site = (stack.frames[0].file or "").replace("\\", "/")
    return any(re.search(p, site) for p in _param(SIGN.app_exception.id, "environment_raise_sites"))


def _parent_gone_at_start(case: Case, e: Event) -> bool:
    """A spawned child's load of its start-up data from the parent's pipe hit the stream's end
    (signals.toml app.exception parent_gone_raise_sites/_texts): the parent died while starting it."""
    stack = _traceback_of(case, e)
    if stack is None or not stack.frames or not any(t in (e.text or "") for t in _param(SIGN.app_exception.id, "parent_gone_texts")):
        return False
    site = stack.frames[0]
    return any((site.file or "").replace("\\", "/").endswith(path) and site.function == fn
               for path, fn in (w.rsplit(":", 1) for w in _param(SIGN.app_exception.id, "parent_gone_raise_sites")))


def _in_dataset_fetch(stack: Stack) -> bool:
    """The traceback passes through the DataLoader's fetch (signals.toml app.exception_in_dataset):
    the job's Dataset or collate function raised it."""
    wanted = [w.rpartition(":") for w in _param(SIGN.app_exception_in_dataset.id, "fetch_frames")]
    return any(f.language == "python" and (f.file or "").replace("\\", "/").endswith(path) and f.function == fn
               for f in stack.frames for path, _, fn in wanted)


def _argument_error(e: Event) -> bool:
    """A built-in argument error (signals.toml app.exception_argument_error), or a standard
    library class that is one by inheritance under the name the traceback prints for it
    (catalogs/python_exceptions.json: json.decoder.JSONDecodeError, UnicodeDecodeError,
    ZeroDivisionError ...): the library the job called refused what the job handed it."""
    printed = str(e.data.get("type") or "")
    etype = printed.rsplit(".", 1)[-1]
    return ((etype in _param(SIGN.app_exception_argument_error.id, "argument_error_types")
             or printed in _argument_error_subclasses()) and not _os_error(e))


def _path_errno(e: Event, stack: Stack) -> bool:
    """An OSError whose errno answers for the path the caller passed, not for the device or the
    file server under it (signals.toml app.exception_argument_error path_errnos: ENOENT, EEXIST,
    ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP) -- a path the message names (path_named: an errno
    without a name is a call whose name the job never chose), not one of the kernel's or a shared
    memory object's (path_errno_not_on), and not raised by multiprocessing's own IPC
    (path_errno_not_raised_in: its semaphores and sockets; audit 11 M1)."""
    sign = SIGN.app_exception_argument_error.id
    message = str(e.data.get("message") or e.text or "")
    site = (stack.frames[0].file or "").replace("\\", "/") if stack.frames else ""
    return (_errno_of(e) in _param(sign, "path_errnos")
            and any(re.search(p, message) for p in _param(sign, "path_named"))
            and not any(p in message for p in _param(sign, "path_errno_not_on"))
            and not any(site.endswith(p) for p in _param(sign, "path_errno_not_raised_in")))


def _missing_name(e: Event) -> bool:
    """An import of a module the job's environment does not have (signals.toml
    app.exception_argument_error missing_name_types: ModuleNotFoundError)."""
    etype = str(e.data.get("type") or "").rsplit(".", 1)[-1]
    return etype in _param(SIGN.app_exception_argument_error.id, "missing_name_types")


@functools.cache
def _argument_error_subclasses() -> frozenset[str]:
    """The standard library's argument-error classes by printed name (read once, when an exception
    is first examined: startup time, issue 17)."""
    from postmortem.knowledge import catalog  # here, not at the top: startup time (issue 17)

    return catalog.argument_error_classes()


_ERRNO = re.compile(r"\[Errno (\d{1,4})\]")


def _errno_of(e: Event) -> int | None:
    """The errno an OSError prints ("OSError: [Errno 5] Input/output error")."""
    m = _ERRNO.search(str(e.data.get("message") or e.text or ""))
    return int(m.group(1)) if m else None


def _writes_own_output(e: Event) -> bool:
    """The call that raised is a write to the job's own stdout/stderr (print, sys.stdout.write,
    logging): signals.toml app.exception own_output_writes; a socket send or a child's stdin is not."""
    source = str(e.data.get("source") or "")
    return any(re.search(p, source) for p in _param(SIGN.app_exception.id, "own_output_writes"))


def _terminal_call(e: Event) -> bool:
    """The failed call was on the job's terminal or its own output, not on storage: print() or
    sys.stdout into a terminal that hung up raises EIO, open('/dev/tty') without a controlling
    terminal ENXIO (signals.toml storage.job_io_errno terminal_text; audit 8 H9)."""
    text = f"{e.data.get('message') or ''}"
    return _writes_own_output(e) or any(re.search(p, text) for p in _param(SIGN.storage_job_io_errno.id, "terminal_text"))


def _remote_service_failure(e: Event) -> bool:
    """A library's report that a remote service failed the request (HTTP 5xx/429, a gateway or
    read timeout, an object store's throttling): signals.toml storage.remote_service_error."""
    more = str(e.data.get("continuation") or "")
    text = f"{e.data.get('type') or ''}: {e.data.get('message') or ''}\n{more}"
    return any(re.search(p, text) for p in _param(SIGN.storage_remote_service_error.id, "service_text"))


def _os_error(e: Event) -> bool:
    """The exception reports a failed OS call ("[Errno N] ..."): the environment, not the data."""
    message = str(e.data.get("message") or "")
    return any(re.search(p, message) for p in _param(SIGN.app_exception_in_dataset.id, "os_error_text"))


def _who(e: Event) -> str:
    parts = [f"rank {e.rank}" if e.rank is not None else "", f"on {e.host}" if e.host else "",
             f"(pid {e.pid})" if e.pid is not None else ""]
    return " ".join(p for p in parts if p) or "a process of the job"


def _traceback_of(case: Case, e: Event) -> Stack | None:
    """The traceback that ends in this exception line (stacks.traceback_of)."""
    return stack_code.traceback_of(case.stacks, e)


def _frame_text(f: Frame) -> str:
    name = f.function or "??"
    if f.file:
        return f"{name} ({f.file.rsplit('/', 1)[-1]}:{f.line})" if f.line else f"{name} ({f.file.rsplit('/', 1)[-1]})"
    return f"{name} ({f.module.rsplit('/', 1)[-1]})" if f.module else name


# numpy's _size_to_string and torch's CPU allocator print binary units (bytes, KiB .. EiB): their
# first letter keys the project's one table of powers of 1024
_REQUEST_SIZE = tuple(re.compile(p) for p in _param(SIGN.app_request_beyond_host.id, "sizes"))


def _requested_bytes(text: str) -> float | None:
    m = next((m for m in (r.search(text) for r in _REQUEST_SIZE) if m), None)
    return float(m.group("n")) * UNITS[m.group("unit")[0].upper()] if m else None


def _host_memory(case: Case) -> tuple[float, tuple[Fact, Fact]] | None:
    """The largest MemTotal + SwapTotal one artifact of the bundle reports (meminfo, free), with the
    two facts.  A bare number from `free` is not read: its unit is not printed (KiB by default, MiB
    with -m, GiB with -g), except 0, which is none in any unit."""
    def sized(f: Fact) -> bool:
        text = str(f.text or "").strip()
        return bool(re.search(r"[A-Za-z]", text)) or text in ("0", "0.0")

    best = None
    for total in (f for f in case.facts if f.name == "mem.total_bytes" and sized(f)):
        swap = next((f for f in case.facts if f.name == "swap.total_bytes" and f.ref.path == total.ref.path and sized(f)), None)
        if swap is None or not isinstance(total.value, (int, float)) or not isinstance(swap.value, (int, float)):
            continue
        if best is None or total.value + swap.value > best[0]:
            best = (float(total.value + swap.value), (total, swap))
    return best


def request_beyond_host(case: Case) -> tuple[Event, float, float, tuple[Fact, Fact]] | None:
    """The first refused allocation whose printed size exceeds the host's RAM + swap:
    (its event, the bytes asked for, the host's bytes, the facts they come from)."""
    refused = events_of(case, frozenset(_param(SIGN.app_request_beyond_host.id, "refused_allocations")))
    if not refused:
        return None
    host = _host_memory(case)
    if host is None:
        return None
    for e in refused:
        asked = _requested_bytes(e.text or "")
        if asked is not None and asked > host[0]:
            return e, asked, host[0], host[1]
    return None


class RequestBeyondHost(Rule):
    """An allocation refused for asking more than the host's RAM and swap together (signals.toml
    app.request_beyond_host): Linux refuses such a request outright, so it is the size the job
    asked for, not memory running out -- a lean to the job's code (counter.request_beyond_host
    lowers host_oom's reading of the same line)."""

    id = "request-beyond-host"

    def findings(self, case, k, trace):
        found = request_beyond_host(case)
        if found is None:
            return []
        e, asked, host, (total, swap) = found
        gib = 1 << 30
        trace.append(f"{self.id}: {e.ref.describe()} asked for {asked / gib:,.1f} GiB; the host has "
                     f"{host / gib:,.1f} GiB of RAM and swap ({total.ref.describe()}, {swap.ref.describe()})")
        summary = (f"{_who(e)} asked for {asked / gib:,.1f} GiB in one allocation ({e.ref.describe()}), more than the "
                   f"host's RAM and swap together ({host / gib:,.1f} GiB: {total.ref.describe()}, {swap.ref.describe()}): "
                   "Linux refuses such a request whatever is free -- the size the job computed, not memory running out")
        return [sign_finding(k, SIGN.app_request_beyond_host, self.id, summary, [e], "request",
                             extra_refs=(total.ref, swap.ref))]


_TORCH_FILE = re.compile(r"(?:^|/)torch/")


class CollectiveInLoaderWorker(Rule):
    """A torch.distributed collective called inside a DataLoader worker process (signals.toml
    stacks.collective_in_loader_worker): the worker is a forked copy of its rank, no rank itself,
    so its collective can pair with nothing -- the job's dataset code calls torch.distributed."""

    id = "collective-in-loader-worker"

    def findings(self, case, k, trace):
        params = SIGN.stacks_collective_in_loader_worker.params
        loops = [tuple(w.rsplit(":", 1)) for w in params["worker_loops"]]
        hits = []
        for s in case.stacks:
            frames = list(s.frames)
            loop = next((i for i, f in enumerate(frames)
                         if any((f.file or "").replace("\\", "/").endswith(path) and f.function == fn for path, fn in loops)), None)
            if loop is None:
                continue
            call = next((f for f in frames[:loop]
                         if any((f.file or "").replace("\\", "/").endswith(c) for c in params["c10d_files"])
                         and (f.function or "").rsplit(".", 1)[-1] in params["collectives"]), None)
            if call is not None:
                hits.append((s, call, frames[:loop]))
        if not hits:
            return []
        s, call, inner = hits[0]
        # the frame that made the call: past torch's own (py-spy prints sys.path-relative files, torch/...)
        caller = next((f for f in inner[inner.index(call):] if not _TORCH_FILE.search(f.file or "")), None)
        where = f" from {_frame_text(caller)}" if caller else ""
        pids = sorted({h[0].pid for h in hits if h[0].pid is not None})
        trace.append(f"{self.id}: {len(hits)} DataLoader worker stack(s) in {call.function}{where} "
                     f"({', '.join(h[0].ref.describe() for h in hits[:4])})")
        summary = (f"DataLoader worker process{'es' if len(pids) > 1 else ''} "
                   f"{', '.join(map(str, pids[:6])) or ''} called torch.distributed's {call.function}{where} "
                   f"({s.ref.describe()}): a loader worker is a forked copy of its rank, no rank of the group -- "
                   "its collective pairs with nothing; the rank's main thread waiting for a batch and its peers "
                   "waiting for the rank are the fallout")
        return [sign_finding(k, SIGN.stacks_collective_in_loader_worker, self.id, summary, [], "collective-in-worker",
                             extra_refs=tuple(h[0].ref for h in hits[:4]))]
